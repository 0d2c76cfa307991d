/**
 * `spamrule lint`: checks a rule set the way `spamassassin --lint` / `rspamadm configtest` do:
 * every object validates against the schema JMAP `/set` applies (src/engine/schema.ts: priority
 * bounds, names, unknown properties, …) and every SpamRule condition and SpamDnsblServer zone/tag
 * compiles (exit 1 otherwise), every literal
 * tag a rule can emit has a SpamTag score, scores name tags that some rule emits, names are unique,
 * and `$TAG` references are reported when nothing in the set produces them.
 */
import { parseArgs } from 'node:util';
import { compileCondition, normalizeCondition, type DnsblServerInput, type SpamRuleInput } from '../engine/index.js';
import { missingNamespaces } from '../engine/namespaces.js';
import { SpamTagTable } from '../engine/tags.js';
import { compileIfBlock, DNSBL_TAG_VARIABLES } from '../expr/index.js';
import { readRuleSet, RULESET_OPTIONS } from './ruleset.js';

const HELP = `usage: spamrule lint [--rules FILE]... [--scores FILE]... [--json]

Checks that every SpamRule (and SpamDnsblServer zone/tag) compiles, and reports tags without a
score, scores without a rule, duplicate names and unresolved $TAG references.
Exit status: 0 if every rule compiles, 1 if any does not, 2 on usage errors.
`;

export interface LintFinding {
  level: 'error' | 'warning' | 'info';
  rule?: string;
  path?: string;
  message: string;
}

const LITERAL_TAG = /^\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*$/;
const GLOBAL_REF = /\$([A-Za-z_][A-Za-z0-9_.]*)/g;

/** Tags a condition can emit as plain string literals, and whether some branch computes one. */
function emittedTags(rule: SpamRuleInput): { literal: string[]; dynamic: boolean } {
  const literal: string[] = [];
  let dynamic = false;
  let cond;
  try {
    cond = normalizeCondition(rule.condition);
  } catch {
    return { literal, dynamic };
  }
  for (const src of [...cond.match.map((m) => m.then), cond.else]) {
    const m = LITERAL_TAG.exec(src);
    if (m) literal.push(m[1] ?? m[2]!);
    else if (!/^\s*(false|true|0|1|)\s*$/.test(src)) dynamic = true;
  }
  return { literal, dynamic };
}

/** Lints a rule set; pure, for tests. */
export function lintRuleSet(rules: SpamRuleInput[], dnsbl: DnsblServerInput[], tags: SpamTagTable, hasScores: boolean): LintFinding[] {
  const out: LintFinding[] = [];
  const names = new Map<string, number>();
  const produced = new Set<string>();
  const referenced = new Map<string, string>();
  const prios = new Map<string, string>();
  for (const r of rules) {
    const name = String(r?.name ?? '(unnamed)');
    names.set(name, (names.get(name) ?? 0) + 1);
    const { errors } = compileCondition(r['@type'], r.condition);
    for (const e of errors) out.push({ level: 'error', rule: name, path: e.path, message: e.message });
    const { literal, dynamic } = emittedTags(r);
    for (const t of literal) {
      produced.add(t);
      if (hasScores && !tags.has(t)) out.push({ level: 'warning', rule: name, message: `tag ${t} has no SpamTag score` });
    }
    if (dynamic) out.push({ level: 'info', rule: name, message: 'emits a computed tag name; its scores cannot be checked statically' });
    let cond;
    try {
      cond = normalizeCondition(r.condition);
    } catch {
      continue;
    }
    for (const src of [...cond.match.flatMap((m) => [m.if, m.then]), cond.else])
      for (const m of src.matchAll(GLOBAL_REF)) if (!referenced.has(m[1]!)) referenced.set(m[1]!, name);
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
    let tagCond;
    try {
      tagCond = normalizeCondition(s.tag);
    } catch (e) {
      out.push({ level: 'error', rule: s.name, path: 'tag', message: (e as Error).message });
      continue;
    }
    const t = compileIfBlock(tagCond, { allowedVariables: DNSBL_TAG_VARIABLES });
    for (const e of t.errors) out.push({ level: 'error', rule: s.name, path: `tag/${e.path}`, message: e.message });
  }
  for (const [ref, by] of referenced)
    if (!produced.has(ref)) out.push({ level: 'info', rule: by, message: `reads $${ref}, which no rule in this set emits (upstream or built-in tag?)` });
  return out;
}

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({ args: argv, options: { ...RULESET_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    process.stderr.write(`spamrule lint: ${(e as Error).message}\n\n${HELP}`);
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
  const findings = lintRuleSet(set.rules, set.dnsblServers, table, set.tags.length > 0);
  // The schema JMAP `/set` and `import` apply (src/engine/schema.ts): what it refuses is an error here too.
  for (const p of [...(set.problems ?? [])].reverse()) {
    findings.unshift({ level: 'error', rule: p.name || `${p.type}[${p.index}]`, path: p.path, message: `${p.message} (${p.type} in ${p.file})` });
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
      process.stdout.write(`${f.level.padEnd(7)} ${where}: ${f.message}\n`);
    }
    const warnings = findings.filter((f) => f.level === 'warning').length;
    process.stdout.write(
      `${set.rules.length} rules, ${set.dnsblServers.length} DNSBL servers, ${set.tags.length} scores: ${errors} errors, ${warnings} warnings\n`,
    );
  }
  return errors > 0 ? 1 : 0;
}
