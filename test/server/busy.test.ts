/**
 * Every scan slot and the waiting room full (`maxConcurrentScans` 1, `maxWaitingScans` 0, one scan
 * holding the slot): each listener refuses the next message as a temporary failure, never passes it on as
 * scanned. The milter answers tempfail by default, so the MTA defers the message (an attacker who floods the
 * filter gets nothing through unscanned), and with `milterBusyAction: 'accept'` lets it continue with an
 * `X-Spam-Note`, as before; rspamd answers 503 with `Retry-After`, spamd 75 `EX_TEMPFAIL`. Each refusal is
 * counted as a `busy` scan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdSlot, http, milterOptneg, milterPacket, milterReplies, raw, slotHolderSpec, startAll, startSilentRedis, type Started } from './harness.js';

const MESSAGE = 'From: a@example.org\r\nTo: b@example.org\r\nSubject: hello\r\n\r\nhello there\r\n';
const HOLD_MS = 3_000;
const LIMITS = { maxConcurrentScans: 1, maxWaitingScans: 0 };

/** A whole milter transaction of MESSAGE, ending with end of message and quit. */
const milterMessage = Buffer.concat([
  milterOptneg(),
  milterPacket('M', '<a@example.org>\0'),
  milterPacket('R', '<b@example.org>\0'),
  milterPacket('L', 'Subject\0hello\0'),
  milterPacket('L', 'X-Spam-Note\0forged\0'),
  milterPacket('N'),
  milterPacket('B', 'hello there\r\n'),
  milterPacket('E'),
  milterPacket('Q'),
]);

async function busyScans(s: Started, protocol: string): Promise<number> {
  return (await s.server.metrics.scans.get()).values.find((v) => v.labels.protocol === protocol && v.labels.action === 'busy')?.value ?? 0;
}

let redis: Awaited<ReturnType<typeof startSilentRedis>>;
beforeAll(async () => {
  redis = await startSilentRedis();
});
afterAll(() => redis?.close());

describe('busy, with the default milterBusyAction (tempfail)', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, limits: LIMITS, spec: slotHolderSpec(redis.port, HOLD_MS) });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('milter: SMFIR_TEMPFAIL at end of message, no header added; rspamd: 503 with Retry-After; spamd: 75 EX_TEMPFAIL', async () => {
    const held = await holdSlot(s);
    const m = s.hostPort('milter');
    const milter = milterReplies((await raw(m.host, m.port, milterMessage)).reply);
    // O, M, R, L, L, N, B answered; then the end of message: tempfail alone (no header added or deleted).
    expect(milter.slice(0, 7).map((r) => r[0])).toEqual(['O', 'c', 'c', 'c', 'c', 'c', 'c']);
    expect(milter.slice(7)).toEqual([['t', '']]);

    const rspamd = await http(`http://${s.hostPort('rspamd').host}:${s.hostPort('rspamd').port}/checkv2`, { method: 'POST', body: MESSAGE });
    expect(rspamd.status).toBe(503);
    expect(rspamd.headers['retry-after']).toBe('5');
    expect(JSON.parse(rspamd.body)).toEqual({ error: 'too many scans at once; try again later' });

    const d = s.hostPort('spamd');
    const spamd = await raw(d.host, d.port, `CHECK SPAMC/1.5\r\nContent-length: ${MESSAGE.length}\r\n\r\n${MESSAGE}`, { halfClose: true });
    expect(spamd.reply.toString('latin1')).toMatch(/^SPAMD\/1\.1 75 EX_TEMPFAIL too many scans at once/);

    for (const p of ['milter', 'rspamd', 'spamd']) expect(await busyScans(s, p), p).toBe(1);
    // The holder's own scan still ends with a verdict.
    expect((await held.done).reply.toString('latin1')).toMatch(/^SPAMD\/1\.1 0 EX_OK/);
    // A slot free again: the same milter message is scanned and gets our headers.
    const again = milterReplies((await raw(m.host, m.port, milterMessage)).reply);
    expect(again.slice(7).map((r) => r[0])).toEqual(['m', 'h', 'h', 'c']);
  }, 60_000);
});

describe('busy, with milterBusyAction accept (fail open, the old behaviour)', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, limits: LIMITS, spec: slotHolderSpec(redis.port, HOLD_MS), milterBusyAction: 'accept' });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('milter: the message continues with X-Spam-Note saying why, the forged note deleted', async () => {
    const held = await holdSlot(s);
    const m = s.hostPort('milter');
    const milter = milterReplies((await raw(m.host, m.port, milterMessage)).reply);
    expect(milter.slice(7)).toEqual([
      ['m', '\0\0\0\x01X-Spam-Note\0\0'],
      ['h', 'X-Spam-Note\0 not scanned: too many scans at once; try again later\0'],
      ['c', ''],
    ]);
    expect(await busyScans(s, 'milter')).toBe(1);
    await held.done;
  }, 60_000);
});

describe('milterBusyAction is checked', () => {
  it('an unknown value is a TypeError naming the choices', async () => {
    await expect(startAll({ workers: 1, milterBusyAction: 'reject' as never })).rejects.toThrow(/busyAction must be one of tempfail, accept, not "reject"/);
  }, 60_000);
});
