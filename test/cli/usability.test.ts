/**
 * What a new user runs into first: output piped into `head`, error messages that name the flag and
 * the file they concern (one line, exit 2 for usage, 1 for runtime failures), commands that would
 * otherwise do nothing silently, and the help's layout.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run as conformance } from '../../src/cli/conformance.js';
import { run as evalCmd } from '../../src/cli/eval.js';
import { run as learn } from '../../src/cli/learn.js';
import { run as lists } from '../../src/cli/lists.js';
import { main } from '../../src/cli/main.js';
import { readRuleSet } from '../../src/cli/ruleset.js';
import { run as serve } from '../../src/cli/serve.js';
import { run as token } from '../../src/cli/token.js';
import { capture } from '../helpers/capture.js';
import { REPO_ROOT, hasSharedData, sharedPath } from '../helpers/shared-data.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-usability-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CLI = [process.execPath, '--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts')] as const;

/**
 * Runs the CLI as a process whose stdout is a pipe that the reader closes after the first chunk,
 * as `| head -1` does; resolves to the exit status and everything written on stderr.
 */
function runClosingStdout(args: string[]): Promise<{ code: number | null; stderr: string; firstChunk: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI[0], [...CLI.slice(1), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let firstChunk = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', (d: Buffer) => {
      firstChunk = d.toString();
      child.stdout.destroy();
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stderr, firstChunk }));
  });
}

describe('output piped into a reader that stops early (| head)', () => {
  // Enough output that the pipe fills long before the command is done.
  const vectors = join(dir, 'vectors.json');
  writeFileSync(vectors, JSON.stringify(Array.from({ length: 50_000 }, (_, i) => ({ id: `v${i}`, expr: `${i} + 1` }))));
  const mbox = join(dir, 'many.mbox');
  writeFileSync(
    mbox,
    Array.from({ length: 400 }, (_, i) => `From sender@example.org Mon Jan  1 00:00:00 2026\nFrom: sender${i}@example.org\nTo: you@example.com\nSubject: message ${i}\n\nhello ${i}\n`).join('\n'),
  );

  it.each([
    ['eval --batch', ['eval', '--batch', vectors]],
    ['classify --json', ['classify', '--json', '--no-progress', mbox]],
    ['classify (text)', ['classify', '--no-progress', mbox]],
  ])('%s stops quietly with the status of a SIGPIPE death (141), no stack on stderr', async (_name, args) => {
    const r = await runClosingStdout(args);
    expect(r.firstChunk.length).toBeGreaterThan(0);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(141);
  }, 60_000);
});

describe('one-line option errors', () => {
  it.each([
    [evalCmd, 'eval', ['--x', '1'], "spamrule eval: unknown option '--x' (see spamrule eval --help)\n"],
    [evalCmd, 'eval', ['--vars'], "spamrule eval: option '--vars' needs a value (see spamrule eval --help)\n"],
    [lists, 'lists', ['status', '--nope'], "spamrule lists: unknown option '--nope' (see spamrule lists --help)\n"],
    [conformance, 'conformance', ['--nope', 'x.json'], "spamrule conformance: unknown option '--nope' (see spamrule conformance --help)\n"],
    [token, 'token', ['list', '--nope'], "spamrule token: unknown option '--nope' (see spamrule token --help)\n"],
    [learn, 'learn', ['--model', 'm.sqlite', '--nope'], "spamrule learn: unknown option '--nope' (see spamrule learn --help)\n"],
    // A value left out before the next option: Node's three lines ("argument is ambiguous … use '--max-size=-XYZ'"),
    // found by test/cli/fuzz-args.test.ts, are one line that says what is missing.
    [serve, 'serve', ['--max-size', '--time-budget', '5'], "spamrule serve: option '--max-size' needs a value; one that starts with '-' is written --max-size=-… (see spamrule serve --help)\n"],
    [evalCmd, 'eval', ['1', '--vars', '-x'], "spamrule eval: option '--vars' needs a value; one that starts with '-' is written --vars=-… (see spamrule eval --help)\n"],
  ])('%#: spamrule %s %j prints one line, not the help, and exits 2', async (run, _cmd, argv, line) => {
    const r = await capture(() => run(argv));
    expect(r.result).toBe(2);
    expect(r.stderr).toBe(line);
    expect(r.stdout).toBe('');
  });

  it('eval: an expression that starts with "-" is pointed to "--", in the message and the help', async () => {
    const r = await capture(() => evalCmd(['- -1']));
    expect(r.result).toBe(2);
    expect(r.stderr).toBe(
      `spamrule eval: unknown option '- -1' (an expression that starts with "-" goes after "--": spamrule eval -- "- -1"; see spamrule eval --help)\n`,
    );
    const ok = await capture(() => evalCmd(['--', '- -1']));
    expect(ok.stdout).toBe('{"int":1}\n');
    expect((await capture(() => evalCmd(['--help']))).stdout).toContain(`An expression that starts with "-" goes after "--", which ends the options`);
  });

  it('eval: bad --vars / --globals JSON names the flag', async () => {
    const r = await capture(() => evalCmd(['x', '--vars', '{x']));
    expect(r.result).toBe(2);
    expect(r.stderr).toMatch(/^spamrule eval: --vars is not valid JSON \(.+\)\n$/);
    const g = await capture(() => evalCmd(['1', '--globals', 'nope']));
    expect(g.stderr).toMatch(/^spamrule eval: --globals is not valid JSON/);
  });
});

describe('serve refuses settings that cannot work, before starting anything', () => {
  it('verify without a resolver that can answer, and an unknown log level: exit 2', async () => {
    const cfg = join(dir, 'verify.json');
    writeFileSync(cfg, JSON.stringify({ rspamd: '127.0.0.1:0', analysis: { verify: true } }));
    const v = await capture(() => serve(['--config', cfg]));
    expect(v.result).toBe(2);
    expect(v.stderr).toBe('spamrule serve: analysis.verify needs --dns system (or analysis.dns "system" or "static:FILE"): without DNS nothing can be verified\n');
    const l = await capture(() => serve(['--rspamd', '127.0.0.1:0', '--log-level', 'loud']));
    expect(l.result).toBe(2);
    expect(l.stderr).toBe('spamrule serve: --log-level expects trace|debug|info|warn|error|fatal|silent, got "loud"\n');
  });
});

describe('standard input given twice', () => {
  it('is read once, and the second "-" is reported', async () => {
    const { expandInputs } = await import('../../src/cli/inputs.js');
    const r = expandInputs(['-', '-']);
    expect(r.files).toEqual([{ path: '-' }]);
    expect(r.problems).toEqual([{ path: '-', message: 'standard input ("-") is given more than once; it is read once' }]);
  });
});

describe('errors name the file and flag', () => {
  it('token: list and revoke in a --db that does not exist say so and create nothing', async () => {
    const typo = join(dir, 'typo.db');
    for (const args of [['list'], ['revoke', 'x']]) {
      const r = await capture(() => token([...args, '--db', typo]));
      expect(r.result).toBe(1);
      expect(r.stderr).toBe(`spamrule token: the --db database ${typo} does not exist\n`);
    }
    expect(existsSync(typo)).toBe(false);
  });

  it('token --help names every object a permission can be for', async () => {
    const { PERMISSIONS } = await import('../../src/jmap/index.js');
    const r = await capture(() => token(['--help']));
    const objects = new Set(PERMISSIONS.map((p) => /^sys(\w+?)(Get|Create|Update|Destroy|Query)$/.exec(p)![1]!));
    expect(objects.size).toBe(7);
    for (const o of objects) expect(r.stdout).toMatch(new RegExp(`\\b${o}\\b`));
  });

  it('token: a --db in a missing directory', async () => {
    const r = await capture(() => token(['create', '--db', join(dir, 'nodir', 'x.db'), '--permissions', 'all']));
    expect(r.result).toBe(1);
    expect(r.stderr).toBe(`spamrule token: cannot open the --db database ${join(dir, 'nodir', 'x.db')}: the directory ${join(dir, 'nodir')} does not exist\n`);
  });

  it('learn: a --model file that is not a database', async () => {
    const model = join(dir, 'corrupt.sqlite');
    writeFileSync(model, 'this is not an SQLite database, just text '.repeat(40));
    const r = await capture(() => learn(['--model', model, '--spam', join(REPO_ROOT, 'examples', 'mail', 'gtube.eml')]));
    expect(r.result).toBe(2);
    expect(r.stderr).toBe(`spamrule learn: cannot open the --model file ${model}: the file is not an SQLite database\n`);
  });

  it('--scores: a missing file, a bad line and bad JSON each name the file', () => {
    expect(() => readRuleSet({ scores: [join(dir, 'nope.txt')] })).toThrow(`cannot read scores file ${join(dir, 'nope.txt')}: ENOENT`);
    const bad = join(dir, 'bad-scores.txt');
    writeFileSync(bad, 'GOOD = 1\nno equals sign\n');
    expect(() => readRuleSet({ scores: [bad] })).toThrow(`scores file ${bad}: line 2: expected "TAG = score|reject|discard"`);
    const badJson = join(dir, 'bad-scores.json');
    writeFileSync(badJson, '[{');
    expect(() => readRuleSet({ scores: [badJson] })).toThrow(`scores file ${badJson} is not valid JSON: `);
  });
});

describe('commands that would do nothing say why', () => {
  /** A rule set with one remote list at `url`. */
  function remoteRules(name: string, url: string): string {
    const f = join(dir, `${name}.json`);
    writeFileSync(f, JSON.stringify({ HttpLookup: [{ namespace: 'remote_list', url, format: { '@type': 'List' } }] }));
    return f;
  }

  it('lists status / update / show without --rules: the built-in rule set has no lists, exit 2', async () => {
    const s = await capture(() => lists(['status']));
    expect(s.result).toBe(2);
    expect(s.stderr).toBe("spamrule lists status: the built-in rule set has no lookup lists: give --rules FILE (e.g. Stalwart's spam-filter-rules.json) or --list NS=FILE\n");
    const u = await capture(() => lists(['update']));
    expect(u.result).toBe(2);
    expect(u.stderr).toMatch(/^spamrule lists update: the built-in rule set has no remote lists: give --rules FILE/);
    const sh = await capture(() => lists(['show', 'stwt_free_domains', 'gmail.com']));
    expect(sh.result).toBe(2);
    expect(sh.stderr).toMatch(/^spamrule lists show: no list named "stwt_free_domains" in the built-in rule set: give --rules FILE/);
  });

  it('lists show on a remote list never downloaded says so (not "not found")', async () => {
    const rules = remoteRules('never', 'http://127.0.0.1:9/never.txt');
    const r = await capture(() => lists(['show', 'remote_list', 'gmail.com', '--rules', rules, '--cache-dir', join(dir, 'cache-never')]));
    expect(r.result).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('spamrule lists show: list "remote_list" has not been downloaded yet (run spamrule lists update with the same --rules and --cache-dir)\n');
  });

  it('lists update that fails gives the URL and the cause, and whether a cached copy is left', async () => {
    // A port that nothing listens on: a server bound and closed again.
    const server: Server = createServer((_req, res) => res.end('listed.example\nother.example\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/list.txt`;
    const rules = remoteRules('update', url);
    const cache = join(dir, 'cache-update');
    // The list server is on loopback, which a download reaches only when allowed.
    const refused = await capture(() => lists(['update', '--rules', rules, '--cache-dir', cache]));
    expect(refused.result).toBe(1);
    expect(refused.stdout).toBe(
      `remote_list: FAILED: ${url}: download refused: 127.0.0.1 (loopback) is not a public address (an internal list server needs its network in the allowed list networks: docs/lookup-stores.md, "Remote lists") (no cached copy: the list stays empty until a download succeeds)\n`,
    );
    const argv = ['update', '--rules', rules, '--cache-dir', cache, '--list-allow-network', '127.0.0.1'];
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const none = await capture(() => lists(argv));
    expect(none.result).toBe(1);
    expect(none.stdout).toBe(`remote_list: FAILED: ${url}: download failed: fetch failed: ECONNREFUSED (no cached copy: the list stays empty until a download succeeds)\n`);

    await new Promise<void>((resolve) => server.listen(Number(new URL(url).port), '127.0.0.1', resolve));
    const ok = await capture(() => lists(argv));
    expect(ok.result).toBe(0);
    expect(ok.stdout).toMatch(/^remote_list: 2 entries in \d+ ms\n$/);
    const found = await capture(() => lists(['show', 'remote_list', 'listed.example', '--rules', rules, '--cache-dir', cache]));
    expect(found.result).toBe(0);
    await new Promise<void>((resolve) => server.close(() => resolve()));

    const cached = await capture(() => lists(argv));
    expect(cached.result).toBe(1);
    expect(cached.stdout).toMatch(new RegExp(`^remote_list: FAILED: ${url.replace(/[.]/g, '\\.')}: download failed: fetch failed: ECONNREFUSED \\(the cached copy of \\S+Z \\(2 entries\\) stays in use\\)\\n$`));
  });

  it.skipIf(!hasSharedData)('conformance --file / --id that match no case: exit 2, naming them and the files there are', async () => {
    const suite = sharedPath('stalwart-antispam-suite', 'cases.json');
    const f = await capture(() => conformance([suite, '--file', 'nosuch']));
    expect(f.result).toBe(2);
    expect(f.stdout).toBe('');
    expect(f.stderr).toMatch(/^spamrule conformance: --file nosuch matches no case in .*cases\.json \(files: .*\bfrom\b.*; ids are FILE#N, e\.g\. \S+#\d+\)\n$/);
    const i = await capture(() => conformance([suite, '--id', 'nosuch#1', '--id', 'from#999']));
    expect(i.result).toBe(2);
    expect(i.stderr).toMatch(/^spamrule conformance: --id nosuch#1, --id from#999 match no case in /);
  });

  it.skipIf(!hasSharedData)('conformance --rules takes the rule folder too; a suite copied elsewhere is told to give --rules', async () => {
    const suite = sharedPath('stalwart-antispam-suite', 'cases.json');
    const folder = await capture(() => conformance([suite, '--id', 'from#0', '--rules', sharedPath('stalwart-spam-filter')]));
    const file = await capture(() => conformance([suite, '--id', 'from#0', '--rules', sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')]));
    expect([folder.result, folder.stderr]).toEqual([0, '']);
    expect(folder.stdout).toMatch(/^\{"id":"from#0",/);
    expect(folder.stdout).toBe(file.stdout);
    const copy = join(dir, 'cases.json');
    writeFileSync(copy, readFileSync(suite));
    const moved = await capture(() => conformance([copy, '--id', 'from#0']));
    expect(moved.result).toBe(1);
    expect(moved.stderr).toMatch(/cannot read rule set .*stalwart-spam-filter.*\(give Stalwart's spam-filter-rules\.json, or the folder holding it, with --rules\)\n$/);
  });
});

describe('spamrule --help', () => {
  it('lines every command summary up in one column', async () => {
    const r = await capture(() => main(['--help']));
    const rows = r.stdout.split('\n').filter((l) => /^ {2}[a-z]+ {2,}\S/.test(l));
    expect(rows.map((l) => l.trim().split(/\s+/)[0])).toContain('conformance');
    const columns = new Set(rows.map((l) => /^ {2}[a-z]+ +/.exec(l)![0].length));
    expect(columns.size).toBe(1);
  });
});
