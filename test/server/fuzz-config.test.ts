/**
 * `spamrule serve --config FILE`: regressions (each names the shrunk input fuzzing found), then the
 * property. Configs are the documented example (examples/spamrule.toml, its rule files replaced by
 * small ones made here) with one to three mutations: a documented key set to a value of another type,
 * out of range, a size or duration written oddly (`1M`, `-1`, `1e309`, `0.5`, `3e9`), an unknown key
 * (unicode too), a deeply nested value, a huge array. serve runs in-process with an rspamd listener and
 * a bad `--metrics` address, which is checked after everything the file sets up to the worker pool:
 * so a config that is good ends on the `--metrics` error, one that is not on a message naming its key.
 * A small model of the documented constraints (docs/deployment.md) says which.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse as parseToml } from 'smol-toml';
import { afterAll, describe, expect, it } from 'vitest';
import { run as serve } from '../../src/cli/serve.js';
import { readServeConfig } from '../../src/server/config.js';
import { parseLookupStoreConfig } from '../../src/lookup/config.js';
import { MAX_TIMER_MS, parseSize, resolveLimits } from '../../src/server/limits.js';
import { capture } from '../helpers/capture.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

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

describe('other timeouts no timer can wait', () => {
  // The same 1 ms firing as the server limits: a store `timeout: 3000000000` made every lookup fail at
  // once, a Pyzor, LLM or redirect `timeoutMs` that large every check.
  it('a lookup store duration over 2^31 - 1 ms', () => {
    expect(parseLookupStoreConfig({ '@type': 'Redis', timeout: 3_000_000_000 })).toEqual({ ok: false, errors: [{ path: 'timeout', message: 'must be at most 2147483647 (about 24.8 days)' }] });
    expect(parseLookupStoreConfig({ '@type': 'Redis', timeout: MAX_TIMER_MS }).ok).toBe(true);
  });

  it.each([
    [{ pyzor: { host: 'pyzor.example', timeoutMs: 3e9 } }, 'analysis.pyzor: "timeoutMs" must be milliseconds (a number > 0, at most 2147483647), got 3000000000'],
    [{ llm: { url: 'http://127.0.0.1:1/v1/chat/completions', model: 'm', timeoutMs: 3e9 } }, 'analysis.llm: "timeoutMs" must be milliseconds (a number > 0, at most 2147483647), got 3000000000'],
    [{ dns: 'system', followRedirects: { timeoutMs: 3e9 } }, 'timeoutMs must be at most 2147483647, got 3000000000'],
  ])('analysis %j', async (analysis, message) => {
    expect(await serveFails(configFile({ analysis }), '--workers', '1')).toContain(message);
  });
});

// ---- the property ----

const rulesFile = join(dir, 'rules.json');
writeFileSync(rulesFile, JSON.stringify([{ '@type': 'Any', name: 'R1', condition: { match: [{ if: 'true', then: "'T1'" }], else: 'false' } }]));
const scoresFile = join(dir, 'scores.txt');
writeFileSync(scoresFile, 'T1 = 2\n');
const listFile = join(dir, 'trusted.txt');
writeFileSync(listFile, 'example.org\n');

/** The documented example, listeners left to the flags and its files replaced by ours. */
function baseConfig(): Record<string, unknown> {
  const c = parseToml(readFileSync(join(REPO_ROOT, 'examples/spamrule.toml'), 'utf8')) as Record<string, unknown>;
  for (const k of ['rspamd', 'milter', 'spamd', 'metrics']) delete c[k];
  return { ...JSON.parse(JSON.stringify(c)), rules: [rulesFile], scores: [scoresFile], lists: { 'trusted-domains': listFile }, listCacheDir: join(dir, 'cache') };
}

const MAX_TIMER = 2 ** 31 - 1;
const MiB = 1024 ** 2;
const isInt = (v: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
/** Bytes a size setting means (docs: bytes, or with a k, M or G suffix), or undefined when it is none. */
function bytes(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 1 ? Math.floor(v) : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmg]?)i?b?\s*$/i.exec(v);
  if (!m) return undefined;
  const n = Math.floor(Number(m[1]) * { '': 1, k: 1024, m: MiB, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g']);
  return n >= 1 ? n : undefined;
}

/** Documented keys and what the docs allow there. */
const LEAVES: { path: string[]; ok: (v: unknown) => boolean }[] = [
  { path: ['workers'], ok: (v) => isInt(v, 1) },
  ...['scoreSpam', 'scoreReject', 'scoreDiscard'].map((k) => ({ path: ['thresholds', k], ok: (v: unknown) => typeof v === 'number' && Number.isFinite(v) })),
  { path: ['limits', 'maxSize'], ok: (v) => bytes(v) !== undefined },
  { path: ['limits', 'maxLearnSize'], ok: (v) => bytes(v) !== undefined },
  ...['scanTimeoutMs', 'headTimeoutMs', 'requestTimeoutMs', 'milterMessageTimeoutMs', 'shutdownGraceMs'].map((k) => ({ path: ['limits', k], ok: (v: unknown) => isInt(v, 0, MAX_TIMER) })),
  ...['idleTimeoutMs', 'milterIdleTimeoutMs'].map((k) => ({ path: ['limits', k], ok: (v: unknown) => isInt(v, 1, MAX_TIMER) })),
  ...['maxConcurrentScans', 'maxConnections', 'maxConnectionsPerPeer'].map((k) => ({ path: ['limits', k], ok: (v: unknown) => isInt(v, 1) })),
  ...['maxWaitingScans', 'learnPerMinute'].map((k) => ({ path: ['limits', k], ok: (v: unknown) => isInt(v, 0) })),
  ...['timeBudgetMs', 'ruleWaitMs'].map((k) => ({ path: ['analysis', k], ok: (v: unknown) => isInt(v, 0) })),
  { path: ['analysis', 'regexWorkLimit'], ok: (v) => isInt(v, 1, 2 ** 36) },
  { path: ['analysis', 'regexCacheBytes'], ok: (v) => { const b = bytes(v); return b !== undefined && b >= MiB && b <= 16 * 1024 ** 3; } },
  ...['ip', 'domain', 'email', 'url'].map((k) => ({ path: ['analysis', 'dnsblLimits', k], ok: (v: unknown) => isInt(v, 0) })),
  ...['enabled', 'verify'].map((k) => ({ path: ['analysis', k], ok: (v: unknown) => typeof v === 'boolean' })),
  { path: ['refreshLists'], ok: (v) => typeof v === 'boolean' },
  { path: ['milterBusyAction'], ok: (v) => v === 'tempfail' || v === 'accept' },
  { path: ['milterErrorAction'], ok: (v) => v === 'tempfail' || v === 'accept' },
  { path: ['log', 'level'], ok: (v) => typeof v === 'string' && ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(v) },
  { path: ['analysis', 'allowedIps'], ok: (v) => Array.isArray(v) && v.every((e) => GOOD_IPS.includes(e as string)) },
  { path: ['analysis', 'disabledModules'], ok: (v) => Array.isArray(v) && v.every((e) => typeof e === 'string') },
];
const GOOD_IPS = ['192.0.2.0/24', '::1', '2001:db8::/32', '10.0.0.1'];
const BAD_IPS = ['10.1', '300.1.1.1', '1.2.3.4/33', '', 'example.org'];
/** Written as the literal 1e309 in the JSON text (JSON.stringify has no Infinity). */
const HUGE = '\u0000HUGE\u0000';

const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(-1, 0, 1, 0.5, 1.5, 2, 60_000, 3e9, MAX_TIMER, MAX_TIMER + 1, 2 ** 32, 1e308, 2 ** 36, 2 ** 36 + 1, MiB, 16 * 1024 ** 3, HUGE),
  fc.constantFrom('', '0', '1', '1M', '50M', '-1', '1e3', ' 5k ', '1.5G', '16G', '17G', '0.5', '0.1k', 'abc', '64M', '1MiB', '1Mb', '１M', 'info', 'accept', 'tempfail', 'ACCEPT', 'loud'),
  fc.constantFrom(null, true, false, [], {}, [1], { a: 1 }),
  fc.subarray([...GOOD_IPS, ...BAD_IPS], { minLength: 0, maxLength: 3 }),
  fc.constantFrom(['html'], ['html', 'url'], Array.from({ length: 20_000 }, () => 'html')),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const unknownKey = fc.oneof(fc.constantFrom('maxsize', 'Workers', 'scoreSpam ', '', '__proto__', 'constructor', 'é', '日本'), fc.string({ minLength: 1, maxLength: 6 }));
/** A value nested `depth` levels deep (arrays and objects). */
const deep = (depth: number): unknown => Array.from({ length: depth }).reduce<unknown>((acc, _, i) => (i % 2 ? [acc] : { x: acc }), 1);

type Mutation = { kind: 'set'; leaf: number; value: unknown } | { kind: 'unknown'; parent: string[]; key: string; value: unknown };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), leaf: fc.nat(LEAVES.length - 1), value }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unknown' as const), parent: fc.constantFrom<string[]>([], ['limits'], ['analysis'], ['thresholds'], ['log'], ['analysis', 'dnsblLimits']), key: unknownKey, value: fc.oneof(value, fc.integer({ min: 1, max: 3000 }).map(deep)) }) },
);

/** As the messages write a key path: `limits.maxSize`, `lists["a=b"]`. */
const keyPath = (path: readonly string[]): string => path.map((k, i) => (/^[\w@-]+$/.test(k) ? `${i > 0 ? '.' : ''}${k}` : `[${JSON.stringify(k)}]`)).join('');

function at(obj: Record<string, unknown>, path: readonly string[]): Record<string, unknown> {
  let o = obj;
  for (const k of path) o = (o[k] ??= {}) as Record<string, unknown>;
  return o;
}

describe('generated configuration files', () => {
  it('a good file ends at the bad --metrics address; another is refused naming a key it got wrong', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (mutations) => {
        const c = baseConfig();
        for (const m of mutations) {
          if (m.kind === 'set') {
            const { path } = LEAVES[m.leaf]!;
            at(c, path.slice(0, -1))[path.at(-1)!] = m.value;
          } else Object.defineProperty(at(c, m.parent), m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
        }
        const text = JSON.stringify(c).replaceAll(JSON.stringify(HUGE), '1e309');
        // The model sees the file as JSON reads it (1e309 is Infinity).
        const parsed = JSON.parse(text) as Record<string, unknown>;
        const wrong: string[] = [];
        for (const m of mutations) {
          if (m.kind === 'unknown') {
            if (Object.hasOwn(at(parsed, m.parent), m.key)) wrong.push(`${keyPath(m.parent) || '(top level)'}: Unrecognized key`);
            continue;
          }
          const { path, ok } = LEAVES[m.leaf]!;
          const v = at(parsed, path.slice(0, -1))[path.at(-1)!];
          if (!ok(v)) wrong.push(keyPath(path));
        }
        // The buffer budget must hold one message of the largest size (docs: "at least maxSize").
        const limits = (parsed.limits ?? {}) as Record<string, unknown>;
        const budget = bytes(limits.maxBufferedBytes);
        if (limits.maxBufferedBytes !== undefined && budget !== undefined && budget < (bytes(limits.maxSize) ?? 0)) wrong.push('limits.maxBufferedBytes');
        const file = configFile(text);
        const r = await capture(() => serve(['--config', file, '--rspamd', '127.0.0.1:0', '--metrics', 'bogus', '--workers', '1']));
        const ctx = `${text.slice(0, 2000)}\n→ ${r.result} ${r.stderr}`;
        expect(r.result, ctx).toBe(2);
        expect(r.stderr, ctx).not.toMatch(/\n\s+at |\[object Object\]|\bundefined\b/);
        expect(r.stderr.trimEnd().split('\n'), ctx).toHaveLength(1);
        if (wrong.length === 0) expect(r.stderr, ctx).toBe('spamrule serve: --metrics: expected HOST:PORT or unix:PATH, got "bogus"\n');
        else expect(wrong.some((w) => r.stderr.includes(w)), `expected one of ${JSON.stringify(wrong)}: ${ctx}`).toBe(true);
      }),
      fuzzParams(300),
    );
  }, 120_000);
});
