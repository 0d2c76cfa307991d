/**
 * `spamrule serve --config FILE`: fuzzing found these; each case is the shrunk input.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run as serve } from '../../src/cli/serve.js';
import { readServeConfig } from '../../src/server/config.js';
import { MAX_TIMER_MS, parseSize, resolveLimits } from '../../src/server/limits.js';
import { capture } from '../helpers/capture.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-fuzz-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** Writes `data` (an object as JSON, or text as it is) to a new config file; returns its path. */
function configFile(data: unknown, ext = 'json'): string {
  const file = join(dir, `c${n++}.${ext}`);
  writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data));
  return file;
}

/** `spamrule serve` on a config file with an rspamd listener on a free port: must fail before listening. */
async function serveFails(config: string, ...flags: string[]): Promise<string> {
  const r = await capture(() => serve(['--config', config, '--rspamd', '127.0.0.1:0', ...flags]));
  expect(r.result, r.stderr).toBe(2);
  return r.stderr;
}

describe('timeouts no timer can wait are refused', () => {
  // Node fires a timer of more than 2^31 - 1 ms after 1 ms: `scanTimeoutMs: 3000000000` (about 35 days,
  // "practically none") made every scan time out at once; 1.5 made AbortSignal.timeout throw on every scan.
  it('limits.scanTimeoutMs 3000000000 in the file, and --scan-timeout 3000000000', async () => {
    expect(await serveFails(configFile({ limits: { scanTimeoutMs: 3_000_000_000 } }))).toMatch(
      /^spamrule serve: limits\.scanTimeoutMs must be whole milliseconds from 0 to 2147483647 \(about 24\.8 days\), not 3000000000\n$/,
    );
    expect(await serveFails(configFile({}), '--scan-timeout', '3000000000')).toContain('limits.scanTimeoutMs must be whole milliseconds');
  });

  it.each([
    ['idleTimeoutMs', 2 ** 31],
    ['milterIdleTimeoutMs', 1e300],
    ['headTimeoutMs', 1.5],
    ['requestTimeoutMs', 2 ** 32],
    ['milterMessageTimeoutMs', 4e9],
    ['shutdownGraceMs', 3e9],
    ['scanTimeoutMs', 0.5],
  ])('limits.%s %d', async (key, value) => {
    expect(await serveFails(configFile({ limits: { [key]: value } }))).toContain(`limits.${key} must be whole milliseconds`);
    expect(() => resolveLimits(1, { [key]: value })).toThrow(RangeError);
  });

  it('the largest timer and 0 (none) are taken', () => {
    const l = resolveLimits(1, { scanTimeoutMs: MAX_TIMER_MS, headTimeoutMs: 0, idleTimeoutMs: MAX_TIMER_MS });
    expect([l.scanTimeoutMs, l.headTimeoutMs, l.idleTimeoutMs]).toEqual([MAX_TIMER_MS, 0, MAX_TIMER_MS]);
    expect(() => resolveLimits(1, { idleTimeoutMs: 0 })).toThrow(/limits\.idleTimeoutMs must be whole milliseconds from 1/);
  });
});

describe('sizes under one byte are refused', () => {
  // The number 0 was refused but the string "0" (and 0.5, "0.1") became a maxSize of 0 bytes: the server
  // started and passed every message on unscanned as "over maxSize".
  it.each([['0'], ['0.1'], ['0k'], [0.5]])('limits.maxSize %j', async (size) => {
    expect(await serveFails(configFile({ limits: { maxSize: size } }))).toMatch(/^spamrule serve: --max-size \(limits\.maxSize\): expected a positive size, got "?0/);
    expect(() => parseSize(size)).toThrow(/expected a positive size/);
  });

  it('--max-size 0', async () => {
    expect(await serveFails(configFile({}), '--max-size', '0')).toContain('expected a positive size, got "0"');
  });

  it('one byte and fractions that round to one are taken', () => {
    expect([parseSize('1'), parseSize(1.9), parseSize('0.001k')]).toEqual([1, 1, 1]);
  });
});

describe('lists: namespaces and files as they are written', () => {
  // Both forms become NS=FILE specs split at the first "=": {"a=b": "f"} was namespace "a" with file "b=f",
  // and {"": "f"} failed later as `--list expects NAMESPACE=FILE, got "=…"`, naming a flag never given.
  it.each([
    [{ 'a=b': 'f.txt' }, 'lists["a=b"]: a namespace is not empty and has no "="'],
    [{ '': 'f.txt' }, 'lists[""]: a namespace is not empty and has no "="'],
    [{ x: '' }, 'lists.x: expected the path of a list file'],
    [{ x: ['a.txt', ''] }, 'lists.x.1: expected the path of a list file'],
    [['x=a.txt', '=b.txt'], 'lists.1: expected "NAMESPACE=FILE"'],
    [['x='], 'lists.0: expected "NAMESPACE=FILE"'],
  ])('lists %j', (lists, message) => {
    const file = configFile({ lists });
    expect(() => readServeConfig(file)).toThrow(`${file}: ${message}`);
  });

  it('a file name may hold "=" (split at the first)', () => {
    const file = configFile({ lists: { x: 'a=b.txt' } });
    expect(readServeConfig(file).lists).toEqual([`x=${join(dir, 'a=b.txt')}`]);
  });
});

describe('a value no member of a union takes is explained, not "Invalid input"', () => {
  it.each([
    [{ rules: [1] }, 'rules.0: Invalid input: expected string, received number'],
    [{ rules: 5 }, 'rules: expected string or array, received number'],
    [{ lists: { x: [1] } }, 'lists.x.0: Invalid input: expected string, received number'],
    [{ analysis: { followRedirects: { maxHops: 'x' } } }, 'analysis.followRedirects.maxHops: Invalid input: expected number, received string'],
    [{ analysis: { followRedirects: 'yes' } }, 'analysis.followRedirects: expected boolean or object, received string'],
    [{ limits: { maxSize: true } }, 'limits.maxSize: expected number or string, received boolean'],
  ])('%j', (data, message) => {
    const file = configFile(data);
    expect(() => readServeConfig(file)).toThrow(`${file}: ${message}`);
  });
});

describe('engine options are checked before the workers start', () => {
  // An unknown module in analysis.disabledModules (or --no-module) passed the config file and started the
  // server; every worker's `new SpamEngine` then refused it. The pool now checks the options in the caller's thread.
  it.each([
    [['--config', 'CONFIG']],
    [['--no-module', 'htlm']],
  ])('%j', async (flags) => {
    const config = configFile({ analysis: { disabledModules: ['htlm'] } });
    const empty = configFile({});
    const r = await capture(() => serve([...flags.map((f) => (f === 'CONFIG' ? config : f)), ...(flags[0] === '--config' ? [] : ['--config', empty]), '--rspamd', '127.0.0.1:0', '--workers', '1']));
    expect(r.result).toBe(2);
    expect(r.stderr).toBe('spamrule serve: SpamEngine: analysis.modules: unknown module "htlm" (did you mean "html"?)\n');
  });
});

describe('a setting of the file is named as the file writes it', () => {
  // `log.level = "loud"` in the file was refused as `--log-level expects …`, a flag the operator never gave.
  it('log.level "loud"', async () => {
    expect(await serveFails(configFile({ log: { level: 'loud' } }))).toBe('spamrule serve: log.level expects trace|debug|info|warn|error|fatal|silent, got "loud"\n');
    expect(await serveFails(configFile({}), '--log-level', 'loud')).toBe('spamrule serve: --log-level expects trace|debug|info|warn|error|fatal|silent, got "loud"\n');
  });
});
