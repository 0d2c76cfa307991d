/**
 * The CLI as the docs describe it, checked against the code (serve's configuration file: docs-config.test.ts):
 * - every `--flag` README.md and docs/*.md give a subcommand (in a `spamrule <sub> …` command line, a code span
 *   such as `learn --pg`, or a flags column of a table) is one that subcommand accepts, and a bare `--flag` in a
 *   code span is one some subcommand accepts;
 * - every flag a subcommand accepts (its parseArgs option descriptors, exported as `OPTIONS`) is in its `--help`
 *   and in README.md or docs/ (given to it, or bare in a section that names it), and its `--help` names no
 *   flag it refuses.
 * Only fenced blocks of commands, code spans and tables are read (test/helpers/doc-mentions.ts), not prose. A
 * failure names the doc and line, the flag and the subcommand.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINE_OPTIONS } from '../../src/cli/engine-setup.js';
import { main } from '../../src/cli/main.js';
import { capture } from '../helpers/capture.js';
import { flagMentions, helpFlags, invokedFlags, markdownTables, type FlagColumn, type FlagMention } from '../helpers/doc-mentions.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

type Options = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
type CommandModule = { OPTIONS: Options; run(argv: string[]): Promise<number> };

/** Each subcommand's module (the test checks that this is every command of `spamrule --help`). */
const MODULES: Record<string, () => Promise<CommandModule>> = {
  classify: () => import('../../src/cli/classify.js'),
  learn: () => import('../../src/cli/learn.js'),
  'mass-check': () => import('../../src/cli/mass-check.js'),
  lint: () => import('../../src/cli/lint.js'),
  eval: () => import('../../src/cli/eval.js'),
  serve: () => import('../../src/cli/serve.js'),
  rules: () => import('../../src/cli/rules.js'),
  stores: () => import('../../src/cli/stores.js'),
  token: () => import('../../src/cli/token.js'),
  import: () => import('../../src/cli/import.js'),
  lists: () => import('../../src/cli/lists.js'),
  conformance: () => import('../../src/cli/conformance.js'),
};
const COMMANDS = Object.keys(MODULES);

/** Flags a command takes outside its parseArgs options: mass-check's corpora, split off before parseArgs. */
const HAND_PARSED: Record<string, string[]> = { 'mass-check': ['spam', 'ham'] };

/**
 * Flags documented once, for another command: mass-check takes classify's rule-set, session and analysis flags
 * (both build their engine from ENGINE_OPTIONS, src/cli/engine-setup.ts), and docs/mass-check.md says so, in
 * the words `claim`, rather than list them again.
 */
const DOCUMENTED_WITH: Record<string, { command: string; flags: string[]; doc: string; claim: string }> = {
  'mass-check': { command: 'classify', flags: Object.keys(ENGINE_OPTIONS), doc: 'docs/mass-check.md', claim: 'every rule-set, session and analysis flag of `classify`' },
};

/** `spamrule` itself: `spamrule --help`, `spamrule --version` (src/cli/main.ts). */
const TOP_LEVEL = ['help', 'version'];

/** Table columns whose flags belong to one subcommand. */
const FLAG_COLUMNS: FlagColumn[] = [
  { doc: 'README.md', header: 'CLI flag', command: 'classify' },
  { doc: 'docs/deployment.md', header: 'Flag', command: 'serve' },
];

/**
 * Documented flags the code does not take, each with its reason; kept tiny (now empty). Another program's flag
 * needs no entry: the docs write it with its program (`node --trace-deopt`, `spamd --timeout-tcp`), which the
 * reader skips.
 */
const NOT_OURS: { doc: string; flag: string; why: string }[] = [];

const DOCS = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const read = (doc: string): string => readFileSync(join(REPO_ROOT, doc), 'utf8');

async function accepted(): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const [name, load] of Object.entries(MODULES)) out.set(name, new Set([...Object.keys((await load()).OPTIONS), ...(HAND_PARSED[name] ?? [])]));
  return out;
}

async function helpOf(command: string): Promise<string> {
  const r = await capture(() => main([command, '--help']));
  expect(r.result, `spamrule ${command} --help exits 0`).toBe(0);
  return r.stdout;
}

function mentions(): FlagMention[] {
  return DOCS.flatMap((doc) => flagMentions(doc, read(doc), COMMANDS, FLAG_COLUMNS));
}

const where = (m: FlagMention): string => `${m.doc}:${m.line}: --${m.flag}${m.command === undefined ? '' : ` (spamrule ${m.command})`} in \`${m.snippet}\``;

describe('the CLI in the docs', () => {
  it('knows every command of spamrule --help', async () => {
    const r = await capture(() => main(['--help']));
    const listed = [...r.stdout.matchAll(/^ {2}([a-z][\w-]*) {2,}/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...COMMANDS].sort());
  });

  it('finds the flag tables it reads, and flags attributed to every command', () => {
    for (const c of FLAG_COLUMNS) {
      expect(markdownTables(read(c.doc)).some((t) => t.header.includes(c.header)), `${c.doc}: a table with a "${c.header}" column`).toBe(true);
    }
    const all = mentions();
    for (const c of COMMANDS) expect(all.some((m) => m.command === c), `some doc gives spamrule ${c} a flag`).toBe(true);
  });

  it('documents only flags the commands accept', async () => {
    const byCommand = await accepted();
    const any = new Set([...byCommand.values()].flatMap((s) => [...s]));
    const wrong = mentions()
      .filter((m) => !NOT_OURS.some((e) => e.doc === m.doc && e.flag === m.flag))
      .filter((m) => (m.command === undefined ? !any.has(m.flag) : m.command === '' ? !TOP_LEVEL.includes(m.flag) : !byCommand.get(m.command)!.has(m.flag)))
      .map((m) => `${where(m)}: ${m.command === undefined ? 'no spamrule command takes' : m.command === '' ? 'spamrule takes no' : `spamrule ${m.command} takes no`} --${m.flag}`);
    expect(wrong).toEqual([]);
  });

  it("names in each command's --help exactly the flags it accepts", async () => {
    const byCommand = await accepted();
    const problems: string[] = [];
    for (const c of COMMANDS) {
      const help = await helpOf(c);
      const named = helpFlags(help, c, COMMANDS);
      for (const f of byCommand.get(c)!) if (f !== 'help' && !named.some((n) => n.command === c && n.flag === f)) problems.push(`spamrule ${c} --help does not name --${f}`);
      for (const n of named) if (!byCommand.get(n.command)!.has(n.flag)) problems.push(`spamrule ${c} --help names --${n.flag} for spamrule ${n.command}, which takes no such flag: "${n.line}"`);
    }
    expect(problems).toEqual([]);
  });

  it('mentions every flag of every command in README.md or docs/', async () => {
    const byCommand = await accepted();
    const all = mentions();
    // Given to the command, or bare in a section that names the command (`--diff` beside `spamrule conformance`).
    const documentedFor = (m: FlagMention, c: string): boolean => m.command === c || (m.command === undefined && m.section.includes(c));
    const missing: string[] = [];
    for (const [c, flags] of byCommand) {
      const shared = DOCUMENTED_WITH[c];
      for (const f of flags) {
        if (f === 'help') continue;
        const documented = (m: FlagMention): boolean => documentedFor(m, c) || (shared !== undefined && shared.flags.includes(f) && documentedFor(m, shared.command));
        if (!all.some((m) => m.flag === f && documented(m))) {
          const elsewhere = all.filter((m) => m.flag === f).map((m) => `${m.doc}:${m.line}`);
          missing.push(`spamrule ${c} --${f}: in no doc (README.md, docs/*.md)${elsewhere.length > 0 ? `, only where another command is meant (${elsewhere.slice(0, 3).join(', ')})` : ''}`);
        }
      }
    }
    expect(missing).toEqual([]);
    for (const [c, s] of Object.entries(DOCUMENTED_WITH)) {
      expect(read(s.doc).replace(/\s+/g, ' '), `${s.doc} says that spamrule ${c} takes the flags of spamrule ${s.command}`).toContain(s.claim);
      for (const f of s.flags) expect(byCommand.get(c)!.has(f) && byCommand.get(s.command)!.has(f), `spamrule ${c} and ${s.command} both take --${f}`).toBe(true);
    }
  });

  it('gives in examples/ (comments, the unit file) only flags the commands accept', async () => {
    const byCommand = await accepted();
    const files = readdirSync(join(REPO_ROOT, 'examples'), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && !/\.(eml|mbox)$/.test(e.name))
      .map((e) => join(e.parentPath, e.name));
    const found = files.flatMap((f) => invokedFlags(readFileSync(f, 'utf8'), COMMANDS).map((m) => ({ ...m, file: f.slice(REPO_ROOT.length + 1) })));
    expect(found.length).toBeGreaterThan(3);
    const wrong = found
      .filter((m) => (m.command === '' ? !TOP_LEVEL.includes(m.flag) : !byCommand.get(m.command)!.has(m.flag)))
      .map((m) => `${m.file}:${m.line}: spamrule ${m.command} takes no --${m.flag}: ${m.text}`);
    expect(wrong).toEqual([]);
  });

  it('takes every hand-parsed flag it lists (learn, mass-check)', async () => {
    for (const c of ['learn', 'mass-check']) {
      const mod = await MODULES[c]!();
      for (const f of [...Object.keys(mod.OPTIONS), ...(HAND_PARSED[c] ?? [])].filter((f) => f !== 'help')) {
        const r = await capture(() => mod.run([`--${f}`]));
        expect(r.stderr, `spamrule ${c} --${f}`).not.toMatch(/unknown option/i);
      }
      const r = await capture(() => mod.run(['--no-such-flag']));
      expect(r.stderr).toMatch(/unknown option '--no-such-flag'/i);
    }
  });
});

describe('reading commands out of Markdown (test/helpers/doc-mentions.ts)', () => {
  const doc = [
    '# A page',
    '',
    'Prose --not-a-flag is not read. `spamrule classify --json` and `--dns system` are; so is `learn --pg URL`,',
    'and a span over a line break: `spamrule mass-check',
    '--sort name`. Not `rspamc --connect x`, `spamc -L spam`, `node --trace-deopt` or `npm run bench -- --only learn`.',
    '',
    '```sh',
    "spamrule eval 'x --in-a-quote' --vars '{}' | jq --raw-output .  # --in-a-comment",
    'spamrule serve --milter 127.0.0.1:11332 \\',
    '  --rules r.json; postconf -e --bogus',
    'sa-learn --spam dir',
    '```',
    '',
    '```json',
    '{ "args": "--in-json" }',
    '```',
    '',
    '| Key | Flag |',
    '|---|---|',
    '| `workers` | `--workers N` |',
    '| `x` | `--a\\|--b` |',
    '',
    '## Another section',
    '',
    '`--json` beside `spamrule lists`.',
  ].join('\n');
  const found = flagMentions('x.md', doc, COMMANDS, [{ doc: 'x.md', header: 'Flag', command: 'serve' }]).map((m) => `${m.command ?? '?'} --${m.flag}`);

  it('gives each flag to the command it follows, a table column or none', () => {
    expect(found.sort()).toEqual(
      ['classify --json', '? --dns', 'learn --pg', 'mass-check --sort', 'eval --vars', 'serve --milter', 'serve --rules', 'serve --workers', 'serve --a', 'serve --b', '? --json'].sort(),
    );
  });

  it('gives each mention the commands its section names', () => {
    const sections = flagMentions('x.md', doc, COMMANDS, []).filter((m) => m.command === undefined);
    expect(sections.map((m) => [m.flag, m.section])).toEqual([
      ['workers', ['classify', 'learn', 'mass-check', 'eval', 'serve']],
      ['a', ['classify', 'learn', 'mass-check', 'eval', 'serve']],
      ['b', ['classify', 'learn', 'mass-check', 'eval', 'serve']],
      ['dns', ['classify', 'learn', 'mass-check', 'eval', 'serve']],
      ['json', ['lists']],
    ]);
  });

  it('reads spamrule command lines out of plain text (comments, a unit file)', () => {
    const text = '# spamrule: spamrule serve --milter x; useradd --home-dir /var/lib/spamrule --shell y spamrule\nExecStart=/usr/local/bin/spamrule serve --config f';
    expect(invokedFlags(text, COMMANDS).map((m) => `${m.line} ${m.command} --${m.flag}`)).toEqual(['1 serve --milter', '2 serve --config']);
  });

  it("gives a help text's flags to the command it names, else to its own", () => {
    const help = '  --scores FILE   as "classify --scores"; see "spamrule learn --model FILE"\nCreate a token first: spamrule token create --db PATH\n';
    expect(helpFlags(help, 'lint', COMMANDS).map((n) => `${n.command} --${n.flag}`)).toEqual(['classify --scores', 'learn --model', 'lint --scores', 'token --db']);
  });
});
