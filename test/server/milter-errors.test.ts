/**
 * The milter's answer to a message whose scan failed, against the wire protocol (a real worker pool): a
 * scan over the pool's time limit (a rule waiting for a lookup in a Redis that never answers, 8 s, past
 * the 2 s `timeoutMs`) and a worker thread that ends mid-scan. With `milterErrorAction: 'tempfail'` the
 * MTA gets SMFIR_TEMPFAIL (it defers the message; nothing passes unscanned); with `accept`, the default,
 * the message continues with `X-Spam-Note` saying why and the forged note deleted, as before. Either way
 * the scan is counted and logged under its reason (`timeout`, `error`), and a message over `maxSize`
 * continues with the note whatever the setting. `spamrule serve` reads the setting from its config file
 * (`milterErrorAction`) and `--milter-error-action` (the flag wins), and refuses other values at start.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readServeConfig } from '../../src/server/config.js';
import { SpamEnginePool, startScanServer } from '../../src/server/index.js';
import {
  HOLD_SUBJECT,
  killWorkersMidScan,
  milterOptneg,
  milterPacket,
  milterReplies,
  raw,
  slotHolderSpec,
  spawnServe,
  startAll,
  startSilentRedis,
  threadsLoaded,
  type Started,
} from './harness.js';

const TIMEOUT_MS = 2_000;
const HOLD_MS = 8_000;
const MAX_SIZE = 4096;

/** A whole milter transaction with `subject` and `body`, a forged X-Spam-Note among its headers. */
function transaction(subject: string, body = 'hello there\r\n'): Buffer {
  return Buffer.concat([
    milterOptneg(),
    milterPacket('M', '<a@example.org>\0'),
    milterPacket('R', '<b@example.org>\0'),
    milterPacket('L', `Subject\0${subject}\0`),
    milterPacket('L', 'X-Spam-Note\0forged\0'),
    milterPacket('N'),
    milterPacket('B', body),
    milterPacket('E'),
    milterPacket('Q'),
  ]);
}

/** The replies to end of message (after those to O, M, R, L, L, N, B, each checked). */
async function endOfMessage(reply: Promise<{ reply: Buffer }>): Promise<[string, string][]> {
  const replies = milterReplies((await reply).reply);
  expect(replies.slice(0, 7).map((r) => r[0])).toEqual(['O', 'c', 'c', 'c', 'c', 'c', 'c']);
  return replies.slice(7);
}

function send(s: Pick<Started, 'hostPort'>, message: Buffer): Promise<{ reply: Buffer }> {
  const { host, port } = s.hostPort('milter');
  return raw(host, port, message, { timeoutMs: 30_000 });
}

async function counted(s: Started, action: string): Promise<number> {
  return (await s.server.metrics.scans.get()).values.find((v) => v.labels.protocol === 'milter' && v.labels.action === action)?.value ?? 0;
}

function logged(s: Started, action: string): Record<string, unknown>[] {
  return s.logs.filter((l) => l.msg === 'scan' && l.protocol === 'milter' && l.action === action);
}

const FORGED_NOTE_DELETED: [string, string] = ['m', '\0\0\0\x01X-Spam-Note\0\0'];

let redis: Awaited<ReturnType<typeof startSilentRedis>>;
beforeAll(async () => {
  redis = await startSilentRedis();
});
afterAll(() => redis?.close());

const start = (milterErrorAction?: 'accept' | 'tempfail'): Promise<Started> =>
  startAll({ workers: 1, timeoutMs: TIMEOUT_MS, spec: slotHolderSpec(redis.port, HOLD_MS), limits: { maxSize: MAX_SIZE }, milterErrorAction });

describe('milterErrorAction tempfail', () => {
  let s: Started;
  beforeAll(async () => {
    s = await start('tempfail');
    await threadsLoaded(s, 1);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('a scan over the time limit gets SMFIR_TEMPFAIL alone, and is counted and logged as timeout', async () => {
    expect(await endOfMessage(send(s, transaction(HOLD_SUBJECT)))).toEqual([['t', '']]);
    expect(await counted(s, 'timeout')).toBe(1);
    expect(logged(s, 'timeout')).toMatchObject([{ error: `scan timed out after ${TIMEOUT_MS} ms` }]);
  }, 60_000);

  it('a worker thread that ends mid-scan gets SMFIR_TEMPFAIL, counted as error; the next message is scanned', async () => {
    // The thread the time-out ended has been replaced (thread 2); this one is ended under the scan.
    await threadsLoaded(s, 2);
    const reply = send(s, transaction(HOLD_SUBJECT));
    await killWorkersMidScan(s);
    expect(await endOfMessage(reply)).toEqual([['t', '']]);
    expect(await counted(s, 'error')).toBe(1);
    expect(logged(s, 'error')).toMatchObject([{ error: expect.stringMatching(/^worker failed: worker exited/) }]);
    await threadsLoaded(s, 3);
    const next = await endOfMessage(send(s, transaction('an ordinary message')));
    expect(next.map((r) => r[0])).toEqual(['m', 'h', 'h', 'c']);
    expect(next[0]).toEqual(FORGED_NOTE_DELETED);
  }, 60_000);

  it('a message over maxSize still continues with X-Spam-Note (never deferred for its size)', async () => {
    const replies = await endOfMessage(send(s, transaction('large', 'x'.repeat(MAX_SIZE) + '\r\n')));
    expect(replies).toEqual([FORGED_NOTE_DELETED, ['h', `X-Spam-Note\0 message larger than the ${MAX_SIZE} bytes limit; not scanned\0`], ['c', '']]);
    expect(await counted(s, 'too_large')).toBe(1);
  }, 60_000);
});

describe('milterErrorAction accept (the default: fail open, as before)', () => {
  let s: Started;
  beforeAll(async () => {
    s = await start();
    await threadsLoaded(s, 1);
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('a scan over the time limit continues with X-Spam-Note saying why, the forged note deleted', async () => {
    expect(await endOfMessage(send(s, transaction(HOLD_SUBJECT)))).toEqual([
      FORGED_NOTE_DELETED,
      ['h', `X-Spam-Note\0 not scanned: scan timed out after ${TIMEOUT_MS} ms\0`],
      ['c', ''],
    ]);
    expect(await counted(s, 'timeout')).toBe(1);
  }, 60_000);

  it('a worker thread that ends mid-scan: the message continues with X-Spam-Note, counted as error', async () => {
    await threadsLoaded(s, 2);
    const reply = send(s, transaction(HOLD_SUBJECT));
    await killWorkersMidScan(s);
    const replies = await endOfMessage(reply);
    expect(replies.map((r) => r[0])).toEqual(['m', 'h', 'c']);
    expect(replies[0]).toEqual(FORGED_NOTE_DELETED);
    expect(replies[1]![1]).toMatch(/^X-Spam-Note\0 not scanned: worker failed: worker exited/);
    expect(await counted(s, 'error')).toBe(1);
  }, 60_000);
});

describe('milterErrorAction is checked', () => {
  it('an unknown value is a TypeError naming the choices, at start', async () => {
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    try {
      const any = { host: '127.0.0.1', port: 0 };
      await expect(startScanServer({ pool, milter: any, milterErrorAction: 'reject' as never })).rejects.toThrow(/errorAction must be one of accept, tempfail, not "reject"/);
    } finally {
      await pool.close();
    }
  }, 60_000);
});

describe('spamrule serve: milterErrorAction and --milter-error-action', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-milter-errors-'));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads milterErrorAction from the file, and refuses a value that is neither accept nor tempfail', () => {
    const file = join(dir, 'errors.json');
    writeFileSync(file, JSON.stringify({ milter: '127.0.0.1:0', milterErrorAction: 'tempfail' }));
    expect(readServeConfig(file).milterErrorAction).toBe('tempfail');
    writeFileSync(file, JSON.stringify({ milter: '127.0.0.1:0', milterErrorAction: 'reject' }));
    expect(() => readServeConfig(file)).toThrow('milterErrorAction: expected "accept" or "tempfail"');
  });

  it('refuses --milter-error-action other than accept or tempfail at start (exit 2)', async () => {
    const p = spawnServe(['--milter', '127.0.0.1:0', '--milter-error-action', 'defer'], children);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toMatch(/--milter-error-action expects accept or tempfail, got "defer"/);
  }, 60_000);

  it('--milter-error-action tempfail overrides the file (accept): a scan over --scan-timeout gets SMFIR_TEMPFAIL', async () => {
    const spec = slotHolderSpec(redis.port, HOLD_MS);
    writeFileSync(join(dir, 'holder.json'), JSON.stringify(spec.rules));
    const conf = join(dir, 'serve.json');
    const stores = Object.fromEntries(spec.stores!.map((x) => [x.namespace, x.config]));
    writeFileSync(conf, JSON.stringify({ milter: '127.0.0.1:0', workers: 1, rules: ['holder.json'], stores, analysis: { ruleWaitMs: HOLD_MS + 1000 }, limits: { scanTimeoutMs: TIMEOUT_MS }, milterErrorAction: 'accept' }));
    const p = spawnServe(['--config', conf, '--milter-error-action', 'tempfail', '--log-level', 'info', '--cache-dir', join(dir, 'lists')], children);
    const lines = (): Record<string, unknown>[] => p.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const until = Date.now() + 60_000; !lines().some((l) => l.msg === 'ready'); await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > until || p.child.exitCode !== null) throw new Error(`serve did not start: ${p.stderr()}`);
    }
    const address = String(lines().find((l) => l.msg === 'listening' && l.listener === 'milter')!.address);
    const at = address.lastIndexOf(':');
    const milter = { hostPort: () => ({ host: address.slice(0, at), port: Number(address.slice(at + 1)) }) };
    expect(await endOfMessage(send(milter, transaction(HOLD_SUBJECT)))).toEqual([['t', '']]);
    expect(lines().find((l) => l.msg === 'scan' && l.protocol === 'milter')).toMatchObject({ action: 'timeout', error: `scan timed out after ${TIMEOUT_MS} ms` });
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  }, 120_000);
});
