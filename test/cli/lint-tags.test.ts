/**
 * `spamrule lint`'s tag checks: scores for tags nothing sets, the "no scores at all" note, and
 * `$TAG` reads resolved against the rule set, its DNSBL servers, the built-in modules' catalogue
 * (src/lint, read from the modules' own code), the classifier and `--tag`.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MODULE_NAMES } from '../../src/analysis/index.js';
import { run as lint, type LintFinding } from '../../src/cli/lint.js';
import { SpamTagTable } from '../../src/engine/tags.js';
import { branchTags, builtinTagCatalogue, catalogueFrom, readTags, sourceLiterals } from '../../src/lint/index.js';
import { capture } from '../helpers/capture.js';
import { hasSharedData, REPO_ROOT, sharedPath } from '../helpers/shared-data.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-lint-'));
let n = 0;
function file(content: unknown): string {
  const p = join(dir, `f${n++}.${typeof content === 'string' ? 'txt' : 'json'}`);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}
let prio = 100;
/** A rule of its own priority (two at one priority are an info of their own). */
const rule = (name: string, then: string, iff = 'true') => ({ '@type': 'Any', name, priority: prio++, condition: { match: [{ if: iff, then }], else: 'false' } });
const score = (tag: string, s = 1) => ({ '@type': 'Score' as const, tag, score: s });

async function lintJson(args: string[]): Promise<{ result: number; findings: LintFinding[] }> {
  const { result, stdout } = await capture(() => lint([...args, '--json']));
  return { result, findings: (JSON.parse(stdout) as { findings: LintFinding[] }).findings };
}

describe('lint: scores for tags nothing sets', () => {
  it('warns about a score line for a tag no rule emits (T9), with the exit status unchanged', async () => {
    const rules = file([rule('R1', "'T1'")]);
    const scores = file('T1 = 1\nT9 = 2\n');
    const { result, stdout } = await capture(() => lint(['--rules', rules, '--scores', scores]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/^warning score for T9, which no rule in this set emits and no built-in module sets$/m);
    expect(stdout).not.toMatch(/score for T1\b/);
    expect(stdout).toMatch(/1 rule, 0 DNSBL servers, 2 scores: 0 errors, 1 warning$/m);
    const { findings } = await lintJson(['--rules', rules, '--scores', scores]);
    expect(findings).toEqual([{ level: 'warning', tag: 'T9', message: 'score for T9, which no rule in this set emits and no built-in module sets' }]);
  });

  it('does not warn for tags set by a module, the classifier, a DNSBL server, a computed rule name, --tag, or a glob over them', async () => {
    const bundle = file({
      SpamRule: [rule('R1', "'T1'"), rule('FREE', "'FREEMAIL_' + to_uppercase(location)"), rule('EITHER', "if_then(true, 'PICK_A', 'PICK_B')")],
      SpamDnsblServer: [
        {
          '@type': 'Ip',
          name: 'BL',
          zone: { match: [], else: "ip_reverse + '.bl.example'" },
          tag: { match: [{ if: 'octets[3] == 2', then: "'RBL_EXAMPLE'" }], else: 'false' },
        },
      ],
      SpamTag: [
        score('T1'),
        score('HTML_SHORT_1'), // html module (ctx.tag literal)
        score('SPF_FAIL'), // dmarc module (SPF_TAGS table)
        score('RCVD_COUNT_SEVEN'), // received module (COUNT_TAGS array)
        score('SOURCE_ASN_15169'), // ip module (`SOURCE_ASN_${asn}`)
        score('X_HDR_X_MAILER'), // headers module (headerTag)
        score('PROB_SPAM_HIGH'), // classifier
        score('RBL_EXAMPLE'), // the set's DNSBL server
        score('FREEMAIL_FROM'), // 'FREEMAIL_' + …
        score('PICK_B'), // if_then(…, 'PICK_A', 'PICK_B')
        score('UPSTREAM_VERDICT'), // --tag
        score('RBL_*'), // glob over RBL_EXAMPLE
        score('X_HDR_*'), // glob over the X_HDR_ family
        score('NOBODY_*'), // glob over nothing
      ],
    });
    const { result, findings } = await lintJson(['--rules', bundle, '--tag', 'UPSTREAM_VERDICT']);
    expect(result).toBe(0);
    const warnings = findings.filter((f) => f.level === 'warning');
    expect(warnings).toEqual([{ level: 'warning', tag: 'NOBODY_*', message: 'score for NOBODY_*, which no rule in this set emits and no built-in module sets' }]);
    // Without --tag, the upstream tag's score is reported.
    const again = await lintJson(['--rules', bundle]);
    expect(again.findings.filter((f) => f.level === 'warning').map((f) => f.tag)).toEqual(['UPSTREAM_VERDICT', 'NOBODY_*']);
  });

  it('downgrades to info when a rule computes a tag name with no literal in it', async () => {
    const bundle = file({ SpamRule: [rule('ANY', 'to_uppercase(subject)')], SpamTag: [score('T9')] });
    const { findings } = await lintJson(['--rules', bundle]);
    expect(findings).toContainEqual({
      level: 'info',
      tag: 'T9',
      message: 'score for T9, which no rule in this set emits by name and no built-in module sets (unless the computed tag name of ANY produces it)',
    });
    expect(findings.filter((f) => f.level === 'warning')).toEqual([]);
  });

  it('counts a tag scored twice (a --scores file over a bundle) once, warns about it once, and says which value is used', async () => {
    const bundle = file({ SpamRule: [rule('R1', "'T1'")], SpamTag: [score('T1', 1), score('T9', 2), score('RBL_*', 3)] });
    const scores = file('T1 = 4\nT9 = 2\nRBL_* = reject\n');
    const { result, stdout } = await capture(() => lint(['--rules', bundle, '--scores', scores]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/1 rule, 0 DNSBL servers, 3 scores: 0 errors, 2 warnings$/m);
    const { findings } = await lintJson(['--rules', bundle, '--scores', scores]);
    expect(findings.filter((f) => f.tag === 'T9')).toEqual([{ level: 'warning', tag: 'T9', message: 'score for T9, which no rule in this set emits and no built-in module sets' }]);
    expect(findings.filter((f) => f.level === 'info' && / is scored /.test(f.message))).toEqual([
      { level: 'info', tag: 'T1', message: 'T1 is scored 2 times (1, 4): the last, 4, is used' },
      { level: 'info', tag: 'RBL_*', message: 'RBL_* is scored 2 times (3, reject): the last, reject, is used' },
    ]);
  });
});

describe('SpamTagTable: a later entry replaces an earlier one', () => {
  it('for an exact tag and for a glob alike, the glob keeping its place among the patterns', () => {
    const t = new SpamTagTable().add([score('RBL_*', 1), score('RBL_X*', 5), score('EXACT', 1)]);
    t.add([score('RBL_*', 2), { '@type': 'Reject', tag: 'EXACT' }]);
    expect(t.lookup('RBL_FOO')).toEqual({ kind: 'score', score: 2 });
    // RBL_* still comes first in load order, so it answers for RBL_XY too.
    expect(t.lookup('RBL_XY')).toEqual({ kind: 'score', score: 2 });
    expect(t.lookup('EXACT')).toEqual({ kind: 'reject' });
    expect(t.size).toBe(3);
  });
});

describe('lint: tags without a score', () => {
  it('with no scores at all, says once that the score checks were skipped (info), instead of passing silently', async () => {
    const rules = file([rule('R4', "'T4'"), rule('R5', "'T5'")]);
    const { result, stdout } = await capture(() => lint(['--rules', rules]));
    expect(result).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines).toEqual([
      'info    no SpamTag scores (none in the rule files, no --scores): the score checks were skipped',
      '2 rules, 0 DNSBL servers, 0 scores: 0 errors, 0 warnings',
    ]);
  });

  it('checks against the SpamTag objects the bundle itself carries, without --scores', async () => {
    const bundle = file({ SpamRule: [rule('R3', "'T3'"), rule('R4', "'T4'")], SpamTag: [score('T3')] });
    const { result, stdout } = await capture(() => lint(['--rules', bundle]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/^warning R4: tag T4 has no SpamTag score$/m);
    expect(stdout).not.toMatch(/T3 has no/);
    expect(stdout).not.toMatch(/score checks were skipped/);
  });
});

describe('lint: $TAG reads', () => {
  const reads = (iff: string) => [rule('READER', "'OUT'", iff)];

  it('does not report a tag a built-in module sets, nor one the set emits', async () => {
    const rules = file([rule('EMIT', "'MINE'"), ...reads('$HTML_SHORT_1 || $X_HDR_X_MAILER || $SOURCE_ASN_64500 || $DKIM_ALLOW || $MINE')]);
    const { findings } = await lintJson(['--rules', rules, '--scores', file('OUT = 1\nMINE = 1\n')]);
    expect(findings).toEqual([]);
  });

  it('reports a truly unknown tag as info (only upstream can set it), unless --tag names it', async () => {
    const rules = file(reads('$NOWHERE_TAG'));
    const scores = file('OUT = 1\n');
    const { stdout } = await capture(() => lint(['--rules', rules, '--scores', scores]));
    expect(stdout).toMatch(
      /^info {4}READER: reads \$NOWHERE_TAG, which no rule or DNSBL server in this set emits and no built-in module sets \(only an upstream tag can: classify --tag, the session's tags\)$/m,
    );
    expect(stdout).not.toMatch(/upstream or built-in tag\?/);
    const { findings } = await lintJson(['--rules', rules, '--scores', scores, '--tag', 'NOWHERE_TAG']);
    expect(findings).toEqual([]);
  });

  it("warns that rules never see the classifier's PROB_* tags", async () => {
    const { findings } = await lintJson(['--rules', file(reads('$PROB_SPAM_HIGH')), '--scores', file('OUT = 1\n')]);
    expect(findings).toEqual([
      { level: 'warning', rule: 'READER', tag: 'PROB_SPAM_HIGH', message: 'reads $PROB_SPAM_HIGH, which only the statistical classifier sets, after the rules run: rules never see it' },
    ]);
  });

  it('reads `$` inside string literals as text, not as a tag', async () => {
    const { findings } = await lintJson(['--rules', file(reads("contains(subject, '$NOT_A_TAG')")), '--scores', file('OUT = 1\n')]);
    expect(findings).toEqual([]);
  });
});

describe('lint --help', () => {
  it('says what is checked, at which level', async () => {
    const { result, stdout } = await capture(() => lint(['--help']));
    expect(result).toBe(0);
    for (const s of ['has no SpamTag score', 'a score (SpamTag) for a tag that', 'nothing sets', 'built-in analysis module', '$PROB_*', '--tag NAME', 'score checks are then skipped', 'Exit status: 0'])
      expect(stdout).toContain(s);
  });
});

describe('the built-in tag catalogue (src/lint)', () => {
  const cat = builtinTagCatalogue();

  it("reads every module's source, and holds every tag a module sets with a literal ctx.tag('…')", () => {
    expect(cat.unreadModules).toEqual([]);
    for (const m of MODULE_NAMES) {
      const src = readFileSync(join(REPO_ROOT, 'src', 'analysis', `${m}.ts`), 'utf8');
      const literal = [...src.matchAll(/\bctx\.tag\('([A-Z0-9_]+)'\)/g)].map((x) => x[1]!);
      for (const t of literal) expect(cat.sourceOf(t)?.kind, `${m}: ${t}`).toBe('module');
      expect([...cat.tags.values()].some((s) => s.kind === 'module' && s.module === m) || cat.prefixes.some(([, s]) => s.kind === 'module' && s.module === m), m).toBe(true);
    }
    for (const t of ['HTML_SHORT_1', 'SPF_FAIL', 'DKIM_NA', 'RCVD_COUNT_ZERO', 'MID_CONTAINS_FROM', 'RCPT_COUNT_GT_50', 'PHISHING'])
      expect(cat.sourceOf(t)?.kind, t).toBe('module');
    expect(cat.sourceOf('SOURCE_ASN_15169')).toEqual({ kind: 'module', module: 'ip' });
    expect(cat.sourceOf('X_HDR_X_MAILER')).toEqual({ kind: 'module', module: 'headers' });
    expect([...cat.tags].filter(([, s]) => s.kind === 'classifier').map(([t]) => t).sort()).toEqual(
      ['PROB_HAM_HIGH', 'PROB_HAM_LOW', 'PROB_HAM_MEDIUM', 'PROB_SPAM_HIGH', 'PROB_SPAM_LOW', 'PROB_SPAM_MEDIUM', 'PROB_SPAM_UNCERTAIN'],
    );
    expect(cat.sourceOf('DCC_BULK')).toBeUndefined();
    expect(cat.sourceOf('SOURCE_ASN_')).toBeUndefined();
  });

  it('names a module whose source is missing', () => {
    const c = catalogueFrom([
      ['a', "ctx.tag('A_TAG'); // 'COMMENTED_OUT'"],
      ['b', undefined],
    ]);
    expect(c.unreadModules).toEqual(['b']);
    expect(c.sourceOf('A_TAG')).toEqual({ kind: 'module', module: 'a' });
    expect(c.sourceOf('COMMENTED_OUT')).toBeUndefined();
  });

  it('sourceLiterals: strings and template heads, not comments or regular expressions', () => {
    const src = [
      "const A = 'ONE'; // 'TWO'",
      '/* "THREE" */ const re = /it\'s [/"]/g; const d = a / b / "FOUR";',
      'ctx.tag(`FIVE_${x}`); const t = `SIX`; const u = `${y}SEVEN`;',
      'if (x) return /"/.test(s) ? "EIGHT" : `a${ { k: "NINE" }.k }b`;',
    ].join('\n');
    expect(sourceLiterals(src)).toEqual({ strings: ['ONE', 'FOUR', 'SIX', 'EIGHT', 'NINE'], templateHeads: ['FIVE_', '', 'a'] });
  });

  it('branchTags / readTags read the expression tree', () => {
    expect(branchTags("'GTUBE'")).toEqual({ exact: 'GTUBE', candidates: [], prefixes: [], computed: false, opaque: false });
    expect(branchTags('false')).toMatchObject({ computed: false });
    expect(branchTags("if_then(location == 'tcp', 'RBL_X', 'RECEIVED_X')")).toMatchObject({ candidates: expect.arrayContaining(['RBL_X', 'RECEIVED_X']), computed: true, opaque: false });
    expect(branchTags("'FREEMAIL_' + to_uppercase(location)")).toMatchObject({ candidates: [], prefixes: ['FREEMAIL_'], opaque: false });
    expect(branchTags('to_uppercase(subject)')).toMatchObject({ computed: true, opaque: true });
    expect(readTags("$A && !$B_C || contains(subject, '$NOT')").sort()).toEqual(['A', 'B_C']);
  });
});

describe.skipIf(!hasSharedData)("lint on Stalwart's rule set", () => {
  it('reports no module tag as unset; the remaining findings are counted', async () => {
    const bundle = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
    const { result, stdout } = await capture(() => lint(['--rules', bundle]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/^66 rules, 18 DNSBL servers, 403 scores: 0 errors, 6 warnings$/m);
    // Before: ~70 "reads $HTML_SHORT_1, which no rule in this set emits (upstream or built-in tag?)" infos.
    expect(stdout).not.toMatch(/HTML_SHORT_1|upstream or built-in tag/);

    const { findings } = await lintJson(['--rules', bundle]);
    const cat = builtinTagCatalogue();
    const reads = findings.filter((f) => f.message.startsWith('reads $'));
    for (const f of reads) expect(cat.sourceOf(f.tag!), f.tag).toBeUndefined();
    expect(reads.map((f) => f.tag).sort()).toEqual(['DCC_BULK', 'MANY_INVISIBLE_PARTS']);
    const count = (level: string) => findings.filter((f) => f.level === level).length;
    expect({ error: count('error'), warning: count('warning'), info: count('info') }).toEqual({ error: 0, warning: 6, info: 3 });
    // Tags of Stalwart features spamrule does not implement (DCC, …); PYZOR, SPAM_TRAP and LLM_* have modules now.
    const unset = findings.filter((f) => f.message.startsWith('score for ')).map((f) => f.tag);
    expect(cat.sourceOf('LLM_COMMERCIAL_HIGH')).toEqual({ kind: 'module', module: 'llm' });
    expect(unset).toEqual([
      'DCC_BULK',
      'MANY_INVISIBLE_PARTS',
      'RBL_SEM_IPV6',
      'RBL_SENDERSCORE_REPUT_UNKNOWN',
      'TRUSTED_REPLY',
    ]);
    expect(findings.filter((f) => f.level === 'warning' && !f.message.startsWith('score for ')).map((f) => f.rule)).toEqual(['STWT_BLOCKED_DOMAIN']);
  });
});

describe('lint: a rule written with "scope" instead of "@type"', () => {
  it('says the scope is "@type", and reports the missing "@type" once', async () => {
    const { '@type': _type, ...rest } = rule('SCOPED', "'T1'");
    const { result, findings } = await lintJson(['--rules', file([{ ...rest, scope: 'Any' }])]);
    expect(result).toBe(1);
    const errors = findings.filter((f) => f.level === 'error');
    expect(errors.map((f) => [f.rule, f.path])).toEqual([['SCOPED', 'scope'], ['SCOPED', '@type']]);
    expect(errors[0]!.message).toMatch(/^unknown property: a rule's scope is its "@type" \(e\.g\. "@type": "Any"\)/);
  });
});
