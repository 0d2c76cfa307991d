/**
 * The server's shutdown and clients that leave, on every listener: a request that has begun to
 * arrive when the shutdown starts is still received, scanned and answered within the grace period;
 * one still open when the grace period ends is told "shutting down" in its protocol's words (rspamd
 * 503, spamd 75 EX_TEMPFAIL, milter tempfail) instead of having its connection cut; and a scan whose
 * client has reset its connection while the scan waited for a slot is dropped, not run.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbandonedError, ScanGate, type RuleSetSpec } from '../../src/server/index.js';
import { milterOptneg, milterPacket, milterReplies, startAll, type Started } from './harness.js';

const MESSAGE = 'From: a@example.org\r\nTo: b@example.org\r\nSubject: shutdown\r\n\r\nhello there\r\n';
const SPEC: RuleSetSpec = {
  rules: [{ '@type': 'Any', name: 'marks', priority: 1, condition: { match: [{ if: "contains(subject, 'shutdown')", then: "'SHUTDOWN_SEEN'" }], else: 'false' } }],
};

/** A connection a test writes to piece by piece; `reply` collects what the server sends until it closes. */
interface Client {
  socket: Socket;
  reply: Promise<Buffer>;
  /** Resolves once the server has sent at least `n` bytes. */
  received(n: number): Promise<void>;
}

function client(port: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let size = 0;
    const waiters: { n: number; f: () => void }[] = [];
    const reply = new Promise<Buffer>((done) => socket.on('close', () => done(Buffer.concat(chunks))));
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      for (const w of waiters.filter((w) => size >= w.n)) w.f();
    });
    socket.on('error', () => undefined);
    socket.once('connect', () =>
      resolve({ socket, reply, received: (n) => (size >= n ? Promise.resolve() : new Promise((f) => waiters.push({ n, f }))) }),
    );
    socket.once('error', reject);
  });
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The milter packets of an MTA up to the first body chunk (negotiation, connect, MAIL, RCPT, headers). */
function milterUpToBody(): Buffer {
  return Buffer.concat([
    milterOptneg(),
    milterPacket('C', Buffer.concat([Buffer.from('mx.example.net\0' + '4', 'latin1'), Buffer.from([0, 25]), Buffer.from('192.0.2.7\0', 'latin1')])),
    milterPacket('M', '<a@example.org>\0'),
    milterPacket('R', '<b@example.org>\0'),
    milterPacket('L', 'From\0a@example.org\0'),
    milterPacket('L', 'Subject\0shutdown\0'),
    milterPacket('N'),
    milterPacket('B', 'hello '),
  ]);
}

async function scans(s: Started, action: string): Promise<number> {
  return (await s.server.metrics.scans.get()).values.filter((v) => v.labels.action === action).reduce((n, v) => n + v.value, 0);
}

describe('shutdown: a request already arriving is finished', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, spec: SPEC });
  }, 60_000);
  afterAll(async () => s?.pool.close());

  it('rspamd, spamd and milter requests begun before the shutdown are scanned and answered after it starts; one begun after it is refused', async () => {
    const body = Buffer.from(MESSAGE);
    const half = body.length >> 1;
    // Each protocol's request, with only part of the message sent.
    const rspamd = await client(s.hostPort('rspamd').port);
    rspamd.socket.write(`POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
    rspamd.socket.write(body.subarray(0, half));
    const spamd = await client(s.hostPort('spamd').port);
    spamd.socket.write(`SYMBOLS SPAMC/1.5\r\nContent-length: ${body.length}\r\n\r\n`);
    spamd.socket.write(body.subarray(0, half));
    const milter = await client(s.hostPort('milter').port);
    milter.socket.write(milterUpToBody());
    // Negotiation, connect, MAIL, RCPT, two headers, end of headers, body chunk: eight replies.
    await milter.received(8 * 5 + 8);
    // Connected, but its request starts only after the shutdown has.
    const late = await client(s.hostPort('spamd').port);
    await tick(100);

    const closed = s.server.close(10_000);
    let stopped = false;
    void closed.then(() => (stopped = true));
    await tick(300);
    // Still waiting for the three requests under way; new connections are refused.
    expect(stopped).toBe(false);
    await expect(client(s.hostPort('spamd').port)).rejects.toThrow(/ECONNREFUSED/);
    late.socket.end(`CHECK SPAMC/1.5\r\nContent-length: ${body.length}\r\n\r\n${MESSAGE}`);
    expect((await late.reply).toString('latin1')).toBe('SPAMD/1.1 75 EX_TEMPFAIL the server is shutting down\r\n\r\n');
    expect(stopped).toBe(false);

    rspamd.socket.write(body.subarray(half));
    spamd.socket.write(body.subarray(half));
    spamd.socket.end();
    milter.socket.write(Buffer.concat([milterPacket('B', 'there\r\n'), milterPacket('E')]));
    const [r, sp, m] = await Promise.all([rspamd.reply, spamd.reply, milter.received(8 * 5 + 8 + 5).then(() => milter.reply)]);

    const http = r.toString('utf8');
    expect(http).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(http.slice(http.indexOf('\r\n\r\n') + 4))).toMatchObject({ symbols: { SHUTDOWN_SEEN: expect.anything() } });
    expect(sp.toString('latin1')).toMatch(/^SPAMD\/1\.1 0 EX_OK\r\n[\s\S]*\r\n\r\n[A-Z_,0-9]*SHUTDOWN_SEEN/);
    const replies = milterReplies(m);
    // After the replies to the eight packets before and to the last body chunk: our headers, then continue.
    expect(replies.slice(9).map(([c]) => c)).toEqual(['h', 'h', 'c']);
    expect(replies[9]![1]).toMatch(/^X-Spam-Result\0[\s\S]*SHUTDOWN_SEEN/);
    await closed;
    expect(await scans(s, 'closing')).toBe(1);
    expect(await scans(s, 'allow')).toBe(3);
  }, 60_000);
});

describe('shutdown: the grace period ends with requests still open', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, spec: SPEC });
  }, 60_000);
  afterAll(async () => s?.pool.close());

  it('answers each in its protocol: rspamd 503, spamd 75 EX_TEMPFAIL, milter tempfail', async () => {
    const body = Buffer.from(MESSAGE);
    const rspamd = await client(s.hostPort('rspamd').port);
    rspamd.socket.write(`POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${MESSAGE.slice(0, 10)}`);
    const legacy = await client(s.hostPort('rspamd').port);
    legacy.socket.write(`CHECK RSPAMC/1.3\r\nContent-length: ${body.length}\r\n\r\n${MESSAGE.slice(0, 10)}`);
    const spamd = await client(s.hostPort('spamd').port);
    spamd.socket.write(`CHECK SPAMC/1.5\r\nContent-length: ${body.length}\r\n\r\n${MESSAGE.slice(0, 10)}`);
    const milter = await client(s.hostPort('milter').port);
    milter.socket.write(milterUpToBody());
    await milter.received(8 * 5 + 8);
    await tick(100);

    const t0 = performance.now();
    await s.server.close(500);
    // The grace period, not the 60 s idle timeout nor the 300 s request deadline, ended them.
    expect(performance.now() - t0).toBeLessThan(5_000);
    const [r, l, sp, m] = await Promise.all([rspamd.reply, legacy.reply, spamd.reply, milter.reply]);
    expect(r.toString('utf8')).toMatch(/^HTTP\/1\.1 503 [\s\S]*connection: close[\s\S]*"error":"the server is shutting down"/i);
    expect(l.toString('latin1')).toBe('RSPAMD/1.3 75 EX_TEMPFAIL the server is shutting down\r\n\r\n');
    expect(sp.toString('latin1')).toBe('SPAMD/1.1 75 EX_TEMPFAIL the server is shutting down\r\n\r\n');
    expect(milterReplies(m).slice(8)).toEqual([['t', '']]);
    expect(await scans(s, 'closing')).toBe(4);
    expect(s.logs.some((l) => l.msg === 'grace period over: requests still open were answered "shutting down"' && l.requests === 4)).toBe(true);
  }, 60_000);
});

describe('a client that leaves while its scan waits for a slot', () => {
  let s: Started;
  let silent: Server;
  const held: Socket[] = [];
  beforeAll(async () => {
    // A "Redis" that accepts and never answers: each lookup waits the store's timeout, so one scan
    // holds the only slot for about a second.
    silent = createServer((c) => {
      held.push(c);
      c.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    s = await startAll({
      workers: 1,
      limits: { maxConcurrentScans: 1 },
      spec: {
        rules: [{ '@type': 'Any', name: 'slow', priority: 1, condition: { match: [{ if: "key_exists('frozen', 'someone@example.org')", then: "'LISTED'" }], else: 'false' } }],
        stores: [{ namespace: 'frozen', config: { '@type': 'Redis', url: `redis://127.0.0.1:${port}`, timeout: 1_000 } }],
      },
    });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    for (const c of held) c.destroy();
    silent?.close();
  });

  it('is dropped from the queue (counted as abandoned) and the scan ahead of it still answers', async () => {
    const first = await client(s.hostPort('spamd').port);
    first.socket.end(`CHECK SPAMC/1.5\r\nContent-length: ${MESSAGE.length}\r\n\r\n${MESSAGE}`);
    await tick(200);
    const second = await client(s.hostPort('spamd').port);
    second.socket.write(`CHECK SPAMC/1.5\r\nContent-length: ${MESSAGE.length}\r\n\r\n${MESSAGE}`);
    await tick(200);
    expect(s.server.scanner.depth).toBe(2);
    // A reset: the client is gone for good (a FIN would be spamc's usual half-close).
    second.socket.resetAndDestroy();
    await tick(200);
    expect(s.server.scanner.depth).toBe(1);
    expect(await scans(s, 'abandoned')).toBe(1);
    expect((await first.reply).toString('latin1')).toMatch(/^SPAMD\/1\.1 0 EX_OK\r\n/);
    expect(await scans(s, 'allow')).toBe(1);
  }, 60_000);
});

describe('ScanGate', () => {
  it('a waiter whose signal aborts leaves the queue; the slot goes to the next one', async () => {
    const gate = new ScanGate(1, 10);
    const release = await gate.acquire();
    const ac = new AbortController();
    const leaving = gate.acquire(ac.signal);
    const staying = gate.acquire();
    expect(gate.depth).toBe(3);
    ac.abort();
    await expect(leaving).rejects.toBeInstanceOf(AbandonedError);
    expect(gate.depth).toBe(2);
    release();
    const next = await staying;
    expect(gate.depth).toBe(1);
    next();
    expect(gate.depth).toBe(0);
    await expect(gate.acquire(ac.signal)).rejects.toBeInstanceOf(AbandonedError);
    expect(gate.depth).toBe(0);
  });
});
