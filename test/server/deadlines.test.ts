/**
 * Slow and silent clients on every listener: a connection that sends nothing is closed after the
 * idle timeout (the rspamd listener too, before it has seen a first line), a TCP probe that
 * connects and closes is let go at once, and a client that trickles a request in byte by byte
 * (slowloris) is cut off by the head or the whole-request deadline, each counted in
 * `spamrule_client_timeouts_total`. Meanwhile and afterwards the listeners answer.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http, milterOptneg, milterPacket, raw, startAll, trickle, type Started } from './harness.js';

let s: Started;

// Small limits so that every deadline passes within a test; trickled bytes come faster than the
// idle timeout, so only a deadline can end those connections.
const IDLE = 600;
const HEAD = 1000;
const REQUEST = 2000;
const MESSAGE = 2500;
const GAP = 150;

beforeAll(async () => {
  s = await startAll({ workers: 1, limits: { idleTimeoutMs: IDLE, headTimeoutMs: HEAD, requestTimeoutMs: REQUEST, milterMessageTimeoutMs: MESSAGE, maxConnections: 4 } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

async function timeouts(protocol: string, timeout: string): Promise<number> {
  const v = (await s.server.metrics.clientTimeouts.get()).values.find((x) => x.labels.protocol === protocol && x.labels.timeout === timeout);
  return v?.value ?? 0;
}

async function open(protocol: string): Promise<number> {
  return (await s.server.metrics.connections.get()).values.find((v) => v.labels.protocol === protocol)?.value ?? 0;
}

function closed(sock: Socket): Promise<void> {
  return new Promise((resolve) => (sock.destroyed ? resolve() : sock.once('close', () => resolve())));
}

/** The listeners still answer normal requests. */
async function stillServing(): Promise<void> {
  const p = await http(`${s.server.addresses.rspamd}/ping`);
  expect(p.body).toBe('pong\r\n');
  const c = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body: 'From: a@example.org\r\nSubject: hi\r\n\r\nhello\r\n' });
  expect(c.status).toBe(200);
  const sd = s.hostPort('spamd');
  expect((await raw(sd.host, sd.port, 'PING SPAMC/1.5\r\n\r\n')).reply.toString()).toMatch(/^SPAMD\/1\.5 0 PONG/);
}

/** `text` as one byte per part after `prefix`. */
const bytes = (prefix: string, text: string): string[] => [prefix, ...text];

describe('the rspamd listener before the first line', () => {
  it('closes connections that send nothing, or part of a line, after the idle timeout, and counts them meanwhile', async () => {
    const { host, port } = s.hostPort('rspamd');
    const before = await timeouts('rspamd', 'idle');
    // As many as maxConnections: while they are open nobody else would get in.
    const silent = Array.from({ length: 4 }, (_, i) => {
      const c = connect(port, host);
      c.on('error', () => undefined);
      if (i % 2 === 1) c.write('POST /checkv2 HT'); // a first line that never ends
      return c;
    });
    await Promise.all(silent.map((c) => new Promise((r) => c.once('connect', r))));
    const until = Date.now() + 5000;
    while ((await open('rspamd')) < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(await open('rspamd')).toBe(4);
    await Promise.all(silent.map(closed));
    expect(await timeouts('rspamd', 'idle')).toBe(before + 4);
    await stillServing();
  }, 30_000);

  it('lets a TCP probe (connect, then close) go at once instead of leaving it half-open', async () => {
    const { host, port } = s.hostPort('rspamd');
    const counted = async (): Promise<number> => (await timeouts('rspamd', 'idle')) + (await timeouts('rspamd', 'head'));
    const before = await counted();
    // More probes than maxConnections: each must be let go for the next to get in.
    for (let i = 0; i < 6; i++) {
      const c = connect(port, host, () => c.end());
      c.on('error', () => undefined);
      await closed(c);
    }
    const until = Date.now() + 5000;
    while ((await open('rspamd')) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(await open('rspamd')).toBe(0);
    // Closed because the client ended, not by a timeout.
    expect(await counted()).toBe(before);
    await stillServing();
  }, 30_000);
});

describe('slow clients (one byte every 150 ms, under the idle timeout)', () => {
  const cases: { name: string; listener: 'rspamd' | 'spamd' | 'milter'; protocol: string; timeout: 'head' | 'request'; parts: (string | Buffer)[] }[] = [
    { name: 'spamd request headers', listener: 'spamd', protocol: 'spamd', timeout: 'head', parts: bytes('CHECK SPAMC/1.5\r\nX-Pad: ', 'a'.repeat(100)) },
    { name: 'spamd body without Content-length', listener: 'spamd', protocol: 'spamd', timeout: 'request', parts: bytes('CHECK SPAMC/1.5\r\n\r\n', 'b'.repeat(100)) },
    {
      name: 'spamd body with Content-length',
      listener: 'spamd',
      protocol: 'spamd',
      timeout: 'request',
      parts: bytes('CHECK SPAMC/1.5\r\nContent-length: 1000\r\n\r\n', 'b'.repeat(100)),
    },
    { name: 'rspamd HTTP headers', listener: 'rspamd', protocol: 'rspamd', timeout: 'head', parts: bytes('POST /checkv2 HTTP/1.1\r\nHost: x\r\nX-Pad: ', 'a'.repeat(100)) },
    {
      name: 'rspamd HTTP body',
      listener: 'rspamd',
      protocol: 'rspamd',
      timeout: 'request',
      parts: bytes('POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n', 'b'.repeat(100)),
    },
    { name: 'rspamd legacy RSPAMC headers', listener: 'rspamd', protocol: 'rspamd', timeout: 'head', parts: bytes('CHECK RSPAMC/1.3\r\nX-Pad: ', 'a'.repeat(100)) },
    {
      name: 'a milter packet',
      listener: 'milter',
      protocol: 'milter',
      timeout: 'head',
      // A 1 MiB body chunk announced, then trickled.
      parts: [Buffer.concat([milterOptneg(), Buffer.from([0, 0, 0x10, 0, 0x42])]), ...'c'.repeat(100)],
    },
  ];

  for (const c of cases) {
    it(`cuts off a client trickling ${c.name} (${c.timeout} deadline)`, async () => {
      const before = await timeouts(c.protocol, c.timeout);
      const { host, port } = s.hostPort(c.listener);
      // 100 bytes at 150 ms would take 15 s; the deadline ends it long before.
      const r = await trickle(host, port, c.parts, GAP, 30_000);
      expect(r.closedBy).toBe('server');
      expect(await timeouts(c.protocol, c.timeout)).toBe(before + 1);
      await stillServing();
    }, 40_000);
  }

  it('times the next request on a keep-alive HTTP connection from the previous reply', async () => {
    const before = await timeouts('rspamd', 'head');
    const { host, port } = s.hostPort('rspamd');
    const first = 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n';
    const r = await trickle(host, port, [first, ...bytes('GET /ping HTTP/1.1\r\nHost: x\r\nX-Pad: ', 'a'.repeat(100))], GAP, 30_000);
    expect(r.closedBy).toBe('server');
    expect(r.reply.toString()).toMatch(/^HTTP\/1\.1 200 .*pong\r\n$/s);
    expect(await timeouts('rspamd', 'head')).toBe(before + 1);
  }, 40_000);

  it('leaves a connection alone once its request is in, and milter between packets', async () => {
    // A request that arrives in time is answered, though the connection lives past the deadlines.
    const sd = s.hostPort('spamd');
    const msg = 'From: a@example.org\r\nSubject: hi\r\n\r\nhello\r\n';
    const r = await trickle(sd.host, sd.port, [`CHECK SPAMC/1.5\r\nContent-length: ${msg.length}\r\n\r\n`, msg], GAP);
    expect(r.reply.toString()).toMatch(/^SPAMD\/1\.1 0 EX_OK/);
    // Milter: whole packets with pauses under the idle timeout, for longer than the head deadline.
    const ml = s.hostPort('milter');
    const packets = [
      milterOptneg(),
      milterPacket('C', 'client.example.net\x004\x00\x19127.0.0.1\x00'),
      milterPacket('H', 'client.example.net\x00'),
      milterPacket('M', '<a@example.org>\x00'),
      milterPacket('R', '<b@example.com>\x00'),
      milterPacket('L', 'Subject\x00hi\x00'),
      milterPacket('N'),
      milterPacket('B', 'hello\r\n'),
      milterPacket('E'),
      milterPacket('Q'),
    ];
    const m = await trickle(ml.host, ml.port, packets, 300);
    expect(m.closedBy).toBe('server');
    expect(m.reply.subarray(4, 5).toString()).toBe('O');
    expect(m.reply.toString('latin1')).toContain('X-Spam-Score');
  }, 40_000);

  it('closes a milter connection whose message content does not complete within milterMessageTimeoutMs, however steadily its packets come', async () => {
    const before = await timeouts('milter', 'request');
    const ml = s.hostPort('milter');
    // Whole body chunks, each in time for the head deadline, for longer than the message deadline.
    const head = [milterOptneg(), milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.com>\x00'), milterPacket('L', 'Subject\x00slow\x00'), milterPacket('N')];
    const body = Array.from({ length: 100 }, () => milterPacket('B', 'one more line\r\n'));
    const r = await trickle(ml.host, ml.port, [Buffer.concat(head), ...body], GAP, 30_000);
    expect(r.closedBy).toBe('server');
    expect(await timeouts('milter', 'request')).toBe(before + 1);
    // Dropped: no verdict was sent.
    expect(r.reply.toString('latin1')).not.toContain('X-Spam-Score');
    await stillServing();
  }, 40_000);

  it('closes a milter connection that never negotiates within headTimeoutMs (the idle timeout is two hours)', async () => {
    const before = await timeouts('milter', 'head');
    const ml = s.hostPort('milter');
    const silent = connect(ml.port, ml.host);
    silent.on('error', () => undefined);
    await closed(silent);
    expect(await timeouts('milter', 'head')).toBe(before + 1);
  }, 20_000);
});
