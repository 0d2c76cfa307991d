/**
 * `spamrule lint`: checks a rule set the way `spamassassin --lint` / `rspamadm configtest` do:
 * every object validates against the schema JMAP `/set` applies (src/engine/schema.ts: priority
 * bounds, names, unknown properties, …) and every SpamRule condition and SpamDnsblServer zone/tag
 * compiles (exit 1 otherwise); every literal tag a rule emits has a SpamTag score; every score
 * names a tag that something sets (a rule or DNSBL server of the set, a built-in module, the
 * classifier, or `--tag` upstream); names are unique; and `$TAG` references are reported when
 * nothing sets them. What the built-in modules and the classifier set comes from src/lint's
 * catalogue, read from their own code.
 */
import { parseCliArgs } from '../util/index.js';
import { validateDnsblTag, type DnsblServerInput, type SpamRuleInput, type SpamTagInput } from '../engine/index.js';
import { compileCondition, normalizeCondition } from '../engine/rules.js';
import { missingNamespaces } from '../engine/namespaces.js';
import { SpamTagTable } from '../engine/tags.js';
import { Glob, isGlob, unescapeGlob } from '../lookup/glob.js';
import { branchTags, builtinTagCatalogue, readTags, type BranchTags, type TagCatalogue } from '../lint/index.js';
import { readRuleSet, RULESET_OPTIONS } from './ruleset.js';
import { optionError } from './errors.js';

const HELP = `usage: spamrule lint [--rules FILE]... [--scores FILE]... [--list NS=FILE]... [--tag NAME]... [--json]

Checks a rule set without running it (default: spamrule's built-in rule set). Tags "set" below
means: emitted by a rule of the set (a literal, or a computed name's literals and 'PREFIX_' + …
heads), by one of its SpamDnsblServer tag expressions, by a built-in analysis module, by the
statistical classifier (PROB_*), or named by --tag.

  error    an object the schema refuses (as JMAP /set and "spamrule import" do); a SpamRule
           condition or SpamDnsblServer zone/tag expression that does not compile
  warning  a literal tag a rule emits that has no SpamTag score; a score (SpamTag) for a tag that
           nothing sets; a rule name used more than once; a rule reading $PROB_* (the classifier
           sets it after the rules run); a lookup namespace that no list or store provides
  info     a rule reading a $TAG that nothing sets (only an upstream tag can); a rule emitting a
           computed tag name (its scores are not checked); two enabled rules of one scope with
           the same priority; no SpamTag scores at all (the score checks are then skipped)

  --rules FILE     SpamRule JSON (array, or a bundle such as Stalwart's spam-filter-rules.json, whose
                   SpamTag scores, SpamDnsblServers and lists count); repeatable
  --scores FILE    scores.txt ("TAG = 1.5|reject|discard") or SpamTag JSON; repeatable
  --list NS=FILE   a static lookup list the rules read; repeatable
  --tag NAME       a tag set upstream (as "classify --tag"): neither its reads nor its score are
                   reported; repeatable
  --json           one JSON object: rules, dnsblServers, errors, findings (level, rule, path, tag, message)
  --score-spam N, --score-reject N, --score-discard N, --cache-dir DIR
                   taken as "classify" takes them, so that its command line can be reused; they
                   change nothing here

Exit status: 0 if every rule compiles, 1 if any does not, 2 on usage errors.
`;

export interface LintFinding {
  level: 'error' | 'warning' | 'info';
  rule?: string;
  /** The tag a finding is about (a `$TAG` read, a score), when it is about one. */
  tag?: string;
  path?: string;
  message: string;
}

/** Lint options beyond the rule set itself. */
export interface LintOptions {
  /** Tags set upstream (`--tag`, as `classify --tag` / the session's tags): read and scored without a finding. */
  upstream?: Iterable<string>;
  /** The built-in tag catalogue (default: the modules' and the classifier's, src/lint). */
  catalogue?: TagCatalogue;
  /** The tag names of the set's SpamTag objects, for "score for a tag nothing sets" (unchecked when absent). */
  scoreTags?: Iterable<string>;
}

/** What the set's rules and DNSBL servers can emit, and who: exactly, among candidates, by prefix. */
interface Emitted {
  exact: Map<string, string>;
  prefixes: Map<string, string>;
  /** Rules with a computed tag name that names no literal (may emit anything). */
  opaque: string[];
}

function emittedBy(emitted: Emitted, tag: string): string | undefined {
  const e = emitted.exact.get(tag);
  if (e !== undefined) return e;
  for (const [p, by] of emitted.prefixes) if (tag.startsWith(p) && tag.length > p.length) return by;
  return undefined;
}

/** A score's tag (a glob when `*`/`?` occur) can be produced: by a known name, or a family it overlaps. */
function scoreUsed(tag: string, known: (t: string) => boolean, names: Iterable<string>, prefixes: Iterable<string>): boolean {
  if (!isGlob(tag)) return known(tag);
  const glob = new Glob(tag);
  for (const n of names) if (glob.matches(n)) return true;
  const head = unescapeGlob(tag.slice(0, tag.search(/(?<!\\)[*?]/)));
  for (const p of prefixes) if (p.startsWith(head) || head.startsWith(p)) return true;
  return false;
}

/**
 * Lints a rule set; pure, for tests. `hasScores`: the set carries SpamTag objects (bundle or
 * `--scores`); without any, the score checks are skipped and one info says so.
 */
export function lintRuleSet(rules: SpamRuleInput[], dnsbl: DnsblServerInput[], tags: SpamTagTable, hasScores: boolean, opts: LintOptions = {}): LintFinding[] {
  const out: LintFinding[] = [];
  const catalogue = opts.catalogue ?? builtinTagCatalogue();
  const upstream = new Set(opts.upstream ?? []);
  const names = new Map<string, number>();
  const emitted: Emitted = { exact: new Map(), prefixes: new Map(), opaque: [] };
  const referenced = new Map<string, string>();
  const prios = new Map<string, string>();
  const addBranch = (b: BranchTags, by: string): void => {
    if (b.exact !== undefined && !emitted.exact.has(b.exact)) emitted.exact.set(b.exact, by);
    for (const t of b.candidates) if (!emitted.exact.has(t)) emitted.exact.set(t, by);
    for (const p of b.prefixes) if (!emitted.prefixes.has(p)) emitted.prefixes.set(p, by);
  };
  for (const r of rules) {
    const name = String(r?.name ?? '(unnamed)');
    names.set(name, (names.get(name) ?? 0) + 1);
    const { errors } = compileCondition(r['@type'], r.condition);
    for (const e of errors) out.push({ level: 'error', rule: name, path: e.path, message: e.message });
    let cond;
    try {
      cond = normalizeCondition(r.condition);
    } catch {
      continue;
    }
    let computed = false;
    let opaque = false;
    for (const src of [...cond.match.map((m) => m.then), cond.else]) {
      const b = branchTags(src);
      addBranch(b, name);
      if (b.exact !== undefined && hasScores && !tags.has(b.exact)) out.push({ level: 'warning', rule: name, message: `tag ${b.exact} has no SpamTag score` });
      computed ||= b.computed;
      opaque ||= b.opaque;
    }
    if (computed) out.push({ level: 'info', rule: name, message: 'emits a computed tag name; its scores cannot be checked statically' });
    if (opaque) emitted.opaque.push(name);
    for (const src of [...cond.match.flatMap((m) => [m.if, m.then]), cond.else]) for (const t of readTags(src)) if (!referenced.has(t)) referenced.set(t, name);
    if (r.enable !== false) {
      const key = `${r['@type']}:${r.priority ?? 500}`;
      const other = prios.get(key);
      if (other !== undefined) out.push({ level: 'info', rule: name, message: `same ${r['@type']} priority ${r.priority ?? 500} as ${other}; ties run in load order` });
      else prios.set(key, name);
    }
  }
  for (const [n, c] of names) if (c > 1) out.push({ level: 'warning', rule: n, message: `rule name used ${c} times` });
  for (const s of dnsbl) {
    const zone = compileCondition(s['@type'], s.zone);
    for (const e of zone.errors) out.push({ level: 'error', rule: s.name, path: e.path.replace(/^condition/, 'zone'), message: e.message });
    for (const e of validateDnsblTag(s.tag)) out.push({ level: 'error', rule: s.name, path: e.path, message: e.message });
    let tagCond;
    try {
      tagCond = normalizeCondition(s.tag);
    } catch {
      continue; // reported just above
    }
    for (const src of [...tagCond.match.map((m) => m.then), tagCond.else]) addBranch(branchTags(src), s.name);
  }
  for (const [ref, by] of referenced) {
    if (emittedBy(emitted, ref) !== undefined || upstream.has(ref)) continue;
    const source = catalogue.sourceOf(ref);
    if (source?.kind === 'module') continue;
    if (source?.kind === 'classifier')
      out.push({ level: 'warning', rule: by, tag: ref, message: `reads $${ref}, which only the statistical classifier sets, after the rules run: rules never see it` });
    else
      out.push({
        level: 'info',
        rule: by,
        tag: ref,
        message: `reads $${ref}, which no rule or DNSBL server in this set emits and no built-in module sets (only an upstream tag can: classify --tag, the session's tags)`,
      });
  }
  if (!hasScores) {
    out.push({ level: 'info', message: 'no SpamTag scores (none in the rule files, no --scores): the score checks were skipped' });
    return out;
  }
  const known = (t: string): boolean => emittedBy(emitted, t) !== undefined || upstream.has(t) || catalogue.sourceOf(t) !== undefined;
  const allNames = [...emitted.exact.keys(), ...upstream, ...catalogue.tags.keys()];
  const allPrefixes = [...emitted.prefixes.keys(), ...catalogue.prefixes.map(([p]) => p)];
  const seen = new Set<string>();
  for (const t of opts.scoreTags ?? []) {
    if (seen.has(t)) continue;
    seen.add(t);
    if (scoreUsed(t, known, allNames, allPrefixes)) continue;
    if (emitted.opaque.length > 0)
      out.push({ level: 'info', tag: t, message: `score for ${t}, which no rule in this set emits by name and no built-in module sets (unless the computed tag name of ${emitted.opaque.join(', ')} produces it)` });
    else out.push({ level: 'warning', tag: t, message: `score for ${t}, which no rule in this set emits and no built-in module sets` });
  }
  return out;
}

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = { ...RULESET_OPTIONS, tag: { type: 'string', multiple: true }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCliArgs({ args: argv, options: OPTIONS });
  } catch (e) {
    process.stderr.write(optionError('lint', e));
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  let set;
  try {
    set = readRuleSet(args.values, { lenient: true });
  } catch (e) {
    process.stderr.write(`spamrule lint: ${(e as Error).message}\n`);
    return 2;
  }
  const table = new SpamTagTable().add(set.tags);
  // A tag scored twice (a --scores file over a bundle) is one score, the later one (SpamTagTable.add).
  const scored = distinctScores(set.tags);
  const findings = lintRuleSet(set.rules, set.dnsblServers, table, set.tags.length > 0, {
    upstream: args.values.tag ?? [],
    scoreTags: scored.keys(),
  });
  for (const [tag, given] of scored) {
    if (new Set(given).size > 1) findings.push({ level: 'info', tag, message: `${tag} is scored ${given.length} times (${given.join(', ')}): the last, ${given.at(-1)}, is used` });
  }
  const catalogue = builtinTagCatalogue();
  if (catalogue.unreadModules.length > 0) {
    findings.push({ level: 'info', message: `source of built-in module ${catalogue.unreadModules.join(', ')} not found: its tags count as unknown` });
  }
  // The schema JMAP `/set` and `import` apply (src/engine/schema.ts): what it refuses is an error here too.
  // A rule whose "@type" the schema refused has its scope reported once, not again by the compiler.
  const badType = new Set((set.problems ?? []).filter((p) => p.type === 'SpamRule' && p.path === '@type').map((p) => p.name));
  for (let i = findings.length - 1; i >= 0; i--) if (findings[i]!.path === '@type' && badType.has(findings[i]!.rule ?? '')) findings.splice(i, 1);
  for (const p of [...(set.problems ?? [])].reverse()) {
    // "scope" is what the docs call a rule's "@type" (Stalwart's property name): say so.
    const hint = p.type === 'SpamRule' && p.path === 'scope' && p.message === 'unknown property' ? ': a rule\'s scope is its "@type" (e.g. "@type": "Any")' : '';
    findings.unshift({ level: 'error', rule: p.name || `${p.type}[${p.index}]`, path: p.path, message: `${p.message}${hint} (${p.type} in ${p.file})` });
  }
  const provided = new Set([...set.lists.keys(), ...(set.httpLookups ?? []).filter((h) => h.enable !== false).map((h) => h.namespace)]);
  for (const [ns, by] of missingNamespaces(set.rules, (n) => provided.has(n))) {
    findings.push({ level: 'warning', rule: by.join(', '), message: `reads lookup namespace "${ns}", which no list or store in this set provides (its lookups answer "")` });
  }
  const errors = findings.filter((f) => f.level === 'error').length;
  if (args.values.json) process.stdout.write(JSON.stringify({ rules: set.rules.length, dnsblServers: set.dnsblServers.length, errors, findings }, null, 2) + '\n');
  else {
    for (const f of findings) {
      const where = [f.rule, f.path].filter(Boolean).join(' ');
      process.stdout.write(`${f.level.padEnd(7)} ${where === '' ? '' : `${where}: `}${f.message}\n`);
    }
    const warnings = findings.filter((f) => f.level === 'warning').length;
    const count = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
    process.stdout.write(
      `${count(set.rules.length, 'rule')}, ${count(set.dnsblServers.length, 'DNSBL server')}, ${count(scored.size, 'score')}: ` +
        `${count(errors, 'error')}, ${count(warnings, 'warning')}\n`,
    );
  }
  return errors > 0 ? 1 : 0;
}

/** Each scored tag (exact or glob) with the values it was given, in load order: `1.5`, `reject`, `discard`. */
function distinctScores(tags: readonly SpamTagInput[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const t of tags) {
    const v = t['@type'] === 'Reject' ? 'reject' : t['@type'] === 'Discard' ? 'discard' : String(Number(t.score ?? 0));
    const given = out.get(t.tag);
    if (given === undefined) out.set(t.tag, [v]);
    else given.push(v);
  }
  return out;
}
