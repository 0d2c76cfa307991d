/**
 * Fuzzing the command lines of the subcommands that can run in-process without side effects: argument
 * vectors generated from each command's OPTIONS (its own flags, with and without values, `--flag=value`,
 * repeated), mixed with unknown flags, short flags, `--`, stray positionals and odd values (empty,
 * blank, negative, `1e309`, `NaN`, `0x10`, unicode, values that look like options).
 *
 * Invariants: `run(argv)` resolves (never rejects: an uncaught error would be a stack trace in a shell);
 * the status is one the command's --help documents; a failure is said on stderr in lines that start
 * with `spamrule <command>: ` and never show a stack, "undefined" or "[object Object]"; a usage error
 * (status 2) says it in one line, not the whole help. Commands that write files or connect somewhere
 * with any value (learn, mass-check --log, token, rules, stores, import, lists update) are left to
 * their own tests; `serve` is fuzzed without a listener, --db or --config, so it always stops before
 * listening (its flags are all checked before that).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { run as classify, OPTIONS as CLASSIFY } from '../../src/cli/classify.js';
import { run as conformance, OPTIONS as CONFORMANCE } from '../../src/cli/conformance.js';
import { run as evalCmd, OPTIONS as EVAL } from '../../src/cli/eval.js';
import { run as learn } from '../../src/cli/learn.js';
import { run as lint, OPTIONS as LINT } from '../../src/cli/lint.js';
import { run as massCheck } from '../../src/cli/mass-check.js';
import { run as serve, OPTIONS as SERVE } from '../../src/cli/serve.js';
import { capture } from '../helpers/capture.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-fuzz-args-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const rulesFile = join(dir, 'rules.json');
writeFileSync(rulesFile, JSON.stringify([{ '@type': 'Any', name: 'R1', condition: { match: [{ if: 'true', then: "'T1'" }], else: 'false' } }]));
const scoresFile = join(dir, 'scores.txt');
writeFileSync(scoresFile, 'T1 = 2\n');
const missing = join(dir, 'missing', 'x.eml');

type Options = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

/** Values an operator (or a script with an unset variable) may give a flag. */
const VALUE = fc.oneof(
  fc.constantFrom('', ' ', '0', '1', '-1', '-0.5', '1e309', '-1e309', 'NaN', 'Infinity', '0x10', '1.5', '1M', '-', '--', '-h', '--help', 'x=y', '=x', 'a:b', '127.0.0.1:0'),
  fc.constantFrom('é', '\u200b', '\ud800', '日本語', '%s', '${X}', 'undefined', 'null', '[]', '{}', '{"a":1}', '\n', 'a\u0000b'),
  fc.constantFrom(rulesFile, scoresFile, missing, dir, `T1=${scoresFile}`),
  fc.string({ maxLength: 12 }),
);
const UNKNOWN = fc.constantFrom('--nope', '--RULES', '--rule', '-z', '-', '--', '---', '--=x', '-hx', '--no-such-flag=1', '--help=1');

/** One argument vector for a command with these options (`omit`: flags never generated). */
function argv(options: Options, omit: readonly string[] = []): fc.Arbitrary<string[]> {
  const names = Object.keys(options).filter((n) => !omit.includes(n));
  const token = fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...names), VALUE, fc.integer({ min: 0, max: 3 })).map(([n, val, form]) => {
      // --flag VALUE, --flag=VALUE, --flag alone (missing value, or a boolean), --flag twice.
      if (form === 0 || options[n]!.type === 'boolean') return form === 1 ? [`--${n}=${val}`] : [`--${n}`];
      return form === 1 ? [`--${n}=${val}`] : form === 2 ? [`--${n}`, val, `--${n}`, val] : [`--${n}`, val];
    }) },
    { weight: 1, arbitrary: UNKNOWN.map((u) => [u]) },
    { weight: 1, arbitrary: VALUE.map((p) => [p]) },
  );
  return fc.array(token, { maxLength: 6 }).map((ts) => ts.flat());
}

/**
 * Runs one command line and checks the invariants common to all; returns status and stderr.
 * `statuses`: what the command's --help documents.
 */
async function check(name: string, run: (a: string[]) => Promise<number>, args: string[], statuses: readonly number[]): Promise<{ code: number; stderr: string }> {
  let r;
  try {
    // A command line that hangs (reads stdin, waits for a server) fails the property with its arguments.
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer in 10 s')), 10_000)));
    r = await capture(() => Promise.race([run(args), hang])).finally(() => clearTimeout(timer));
  } catch (e) {
    throw new Error(`spamrule ${name} ${JSON.stringify(args)} threw: ${(e as Error).stack}`);
  }
  const ctx = `spamrule ${name} ${JSON.stringify(args)} → ${r.result}\n${r.stderr}`;
  // --help (or -h) among the options prints the help and exits 0, whatever else is there.
  const options = args.indexOf('--') < 0 ? args : args.slice(0, args.indexOf('--'));
  const help = options.includes('--help') || options.includes('-h');
  expect(help ? [...statuses, 0] : statuses, ctx).toContain(r.result);
  // What the user typed may be quoted back; the rest must not show a stack, "undefined" or "NaN".
  const typed = [...args, ...args.flatMap((a) => a.split('='))].sort((a, b) => b.length - a.length);
  const ours = typed.reduce((s, a) => (a.length > 1 ? s.split(a).join('') : s), r.stderr);
  expect(ours, ctx).not.toMatch(/\n\s+at |\[object Object\]|\bundefined\b|\bNaN\b/);
  if (r.result === 2) {
    expect(r.stderr, ctx).toMatch(new RegExp(`^spamrule ${name}: \\S`));
    // One line for a usage error; a command that has nothing to do adds its usage after it.
    const lines = r.stderr.trimEnd().split('\n');
    // (A value with a line break, quoted back, may make more.)
    if (lines.length > 1 && !args.some((a) => a.includes('\n'))) expect(lines.slice(1, 3).join('\n'), ctx).toMatch(/^\n?usage: spamrule /);
  }
  return { code: r.result, stderr: r.stderr };
}

describe('generated command lines (in-process)', () => {
  it('eval: 0, 1 or 2 with a clear message', async () => {
    await fc.assert(fc.asyncProperty(argv(EVAL as Options), async (a) => void (await check('eval', evalCmd, a, [0, 1, 2]))), fuzzParams(150));
  }, 60_000);

  it('lint: 0, 1 or 2 with a clear message', async () => {
    // With --rules (the small file) unless generated otherwise: the built-in rule set takes longer to compile.
    const lintArgv = argv(LINT as Options).map((a) => [...a, '--rules', rulesFile]);
    await fc.assert(fc.asyncProperty(lintArgv, async (a) => void (await check('lint', lint, a, [0, 1, 2]))), fuzzParams(60));
  }, 60_000);

  it('classify: 1 (the missing message) or 2, never a stack', async () => {
    // A missing path at the end, so that no case reads stdin; the rule set is the small file.
    // `-` (a positional) is stdin.
    const classifyArgv = argv(CLASSIFY as Options, ['help', 'stdin', 'dns']).map((a) => [...a.filter((x) => x !== '-'), '--rules', rulesFile, '--', missing]);
    await fc.assert(fc.asyncProperty(classifyArgv, async (a) => void (await check('classify', classify, a, [1, 2]))), fuzzParams(60));
  }, 60_000);

  it('conformance: 1 or 2 for files that do not exist', async () => {
    const confArgv = argv(CONFORMANCE as Options, ['help']).map((a) => [...a, missing]);
    await fc.assert(fc.asyncProperty(confArgv, async (a) => void (await check('conformance', conformance, a, [1, 2]))), fuzzParams(60));
  }, 60_000);

  it('serve without a listener or --db: 0 for --help, else 2 before anything listens', async () => {
    const serveArgv = argv(SERVE as Options, ['rspamd', 'milter', 'spamd', 'metrics', 'db', 'pg', 'config']);
    await fc.assert(fc.asyncProperty(serveArgv, async (a) => void (await check('serve', serve, a, [2]))), fuzzParams(200));
  }, 60_000);
});

describe('blank numeric values are refused, not read as 0', () => {
  // Number('') and Number(' ') are 0: `--scan-timeout "$T"` with T unset turned the timeout off, and the
  // server started; `--score-spam ''` made every message spam.
  it.each([
    ['serve', serve, ['--rspamd', '127.0.0.1:0', '--scan-timeout', ''], '--scan-timeout expects an integer ≥ 0, got ""'],
    ['serve', serve, ['--rspamd', '127.0.0.1:0', '--workers', ' '], '--workers expects an integer ≥ 1, got " "'],
    ['serve', serve, ['--rspamd', '127.0.0.1:0', '--score-spam', ' '], '--score-spam expects a number, got " "'],
    ['classify', classify, ['--score-reject', '', missing], '--score-reject expects a number, got ""'],
    ['mass-check', massCheck, ['--min-hits', '', '--spam', missing, '--ham', missing], '--min-hits expects a whole number of messages (0 or more), got ""'],
    ['learn', learn, ['--model', join(dir, 'm.sqlite'), '--min-samples', '', '--spam', missing], '--min-samples needs a non-negative integer'],
  ] as const)('spamrule %s %j exits 2', async (_name, run, args, message) => {
    const r = await capture(() => run([...args]));
    expect(r.result).toBe(2);
    expect(r.stderr).toContain(message);
  });
});

describe('a few command lines in a real process', () => {
  // In-process runs cannot see what the entry point adds (its catch-all, the exit status it sets).
  const badConfig = join(dir, 'bad-config.json');
  writeFileSync(badConfig, '{"limits": {"maxSize": "0"},\n "rules": x}');
  it.each([
    [['lint', '--rules'], "spamrule lint: option '--rules' needs a value (see spamrule lint --help)\n"],
    [['serve', '--config', badConfig, '--rspamd', '127.0.0.1:0'], `spamrule serve: ${badConfig}: line 2, column 11: unexpected token 'x'\n`],
    [['classify', '--score-spam', '', missing], 'spamrule classify: --score-spam expects a number, got ""\n'],
  ])('spamrule %j', (args, stderr) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe(stderr);
    expect(r.status).toBe(2);
  }, 40_000);
});
