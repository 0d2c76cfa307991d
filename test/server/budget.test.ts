/**
 * The buffer budget (`limits.maxBufferedBytes`): bytes every listener holds together stay under it
 * however many clients send bodies they never finish (security review F4). Past it, each protocol
 * answers its temporary failure (rspamd 503 with Retry-After, spamd and RSPAMC 75 EX_TEMPFAIL,
 * milter tempfail for the message, the connection kept for the next one); a request that fits is
 * still served meanwhile, and everything is served again once the holders go. The bound is read
 * from the server's own count (`spamrule_buffered_bytes_peak`), not from the process's memory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { deflateSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ByteBudget } from '../../src/server/budget.js';
import { defaultBufferBudget, resolveLimits } from '../../src/server/limits.js';
import { createLogger, SpamEnginePool, startScanServer } from '../../src/server/index.js';
import { http, milterOptneg, milterPacket, milterReplies, raw, run, startAll, type Started } from './harness.js';

const KB = 1024;
const MB = 1024 * KB;
const BUDGET = 2 * MB;
const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: hello\r\n\r\nhello world\r\n';

let s: Started;

beforeAll(async () => {
  s = await startAll({ workers: 1, limits: { maxSize: MB, maxBufferedBytes: BUDGET, idleTimeoutMs: 30_000 } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

/** Resolves once `cond()` holds (polled; the test's own timeout bounds the wait). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 20));
}

const used = (): number => s.server.scanner.budget.used;

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await s.server.metrics.render();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\w+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m?.[1] === name && want.every((w) => (m[2] ?? '').split(',').includes(w))) return Number(m[3]);
  }
  return 0;
}

/** A client that sends a head and `bytes` of a longer body, then waits: it holds them until closed. */
async function holder(listener: 'rspamd' | 'spamd', bytes: number): Promise<Socket> {
  const { host, port } = s.hostPort(listener);
  const sock = connect(port, host);
  sock.on('error', () => undefined);
  sock.on('data', () => undefined);
  await new Promise((r) => sock.once('connect', r));
  const before = used();
  sock.write(listener === 'rspamd' ? `POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${MB}\r\n\r\n` : `CHECK SPAMC/1.5\r\nContent-length: ${MB}\r\n\r\n`);
  sock.write(Buffer.alloc(bytes, 'h'));
  await until(() => used() >= before + bytes);
  return sock;
}

/** A milter connection inside a message whose body so far is `bytes`, in 64 KiB chunks. */
async function milterHolder(bytes: number): Promise<Socket> {
  const { host, port } = s.hostPort('milter');
  const sock = connect(port, host);
  sock.on('error', () => undefined);
  sock.on('data', () => undefined);
  await new Promise((r) => sock.once('connect', r));
  const before = used();
  const parts = [milterOptneg(), milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.com>\x00'), milterPacket('L', 'Subject\x00hold\x00'), milterPacket('N')];
  for (let left = bytes; left > 0; left -= 64 * KB) parts.push(milterPacket('B', Buffer.alloc(Math.min(64 * KB, left), 'm')));
  sock.write(Buffer.concat(parts));
  await until(() => used() >= before + bytes);
  return sock;
}

async function closeAll(socks: Socket[]): Promise<void> {
  for (const x of socks) x.destroy();
  await until(() => used() === 0);
}

/** Holders a failed test left open: closed before the next test, which needs the budget free. */
const cleanup: Socket[][] = [];
afterEach(async () => {
  for (const socks of cleanup.splice(0)) for (const x of socks) x.destroy();
  await until(() => used() === 0);
});

describe('the buffer budget', () => {
  it('rspamd: a body past the budget gets 503 with Retry-After and the connection closed; a small one is scanned meanwhile', async () => {
    const held = [await holder('rspamd', 900 * KB), await holder('rspamd', 900 * KB)];
    cleanup.push(held);
    const before = await metric('spamrule_buffer_refusals_total', { protocol: 'rspamd' });
    const { host, port } = s.hostPort('rspamd');
    const body = Buffer.alloc(400 * KB, 'x');
    const r = await raw(host, port, Buffer.concat([Buffer.from(`POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
    expect(r.closedBy).toBe('server');
    const reply = r.reply.toString();
    expect(reply).toMatch(/^HTTP\/1\.1 503 /);
    expect(reply).toMatch(/^retry-after: 5$/im);
    expect(reply).toMatch(/^connection: close$/im);
    expect(reply).toContain('limits.maxBufferedBytes');
    expect(await metric('spamrule_buffer_refusals_total', { protocol: 'rspamd' })).toBe(before + 1);
    expect(await metric('spamrule_scans_total', { protocol: 'rspamd', action: 'buffer_full' })).toBeGreaterThanOrEqual(1);
    // What fits is served: the budget refuses bytes, not clients.
    const small = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body: MSG });
    expect(small.status).toBe(200);
    await closeAll(held);
    const again = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body });
    expect(again.status).toBe(200);
  });

  it('spamd and RSPAMC: 75 EX_TEMPFAIL past the budget, also for a zlib body that inflates past it', async () => {
    const held = [await holder('spamd', 900 * KB), await holder('spamd', 900 * KB)];
    cleanup.push(held);
    const sd = s.hostPort('spamd');
    const body = Buffer.alloc(400 * KB, 'x');
    const plain = await raw(sd.host, sd.port, Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nContent-length: ${body.length}\r\n\r\n`), body]), { halfClose: true });
    expect(plain.reply.toString()).toMatch(/^SPAMD\/1\.1 75 EX_TEMPFAIL .*limits\.maxBufferedBytes/);
    // 700 KB of message in 1 KB of zlib: only the inflated bytes would overflow.
    const message = Buffer.from(MSG + 'a'.repeat(700 * KB));
    const zipped = deflateSync(message);
    expect(zipped.length).toBeLessThan(4 * KB);
    const inflated = await raw(sd.host, sd.port, Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: ${zipped.length}\r\n\r\n`), zipped]), { halfClose: true });
    expect(inflated.reply.toString()).toMatch(/^SPAMD\/1\.1 75 EX_TEMPFAIL /);
    const rs = s.hostPort('rspamd');
    const legacy = await raw(rs.host, rs.port, Buffer.concat([Buffer.from(`CHECK RSPAMC/1.3\r\nContent-length: ${body.length}\r\n\r\n`), body]), { halfClose: true });
    expect(legacy.reply.toString()).toMatch(/^RSPAMD\/1\.3 75 EX_TEMPFAIL /);
    const small = await raw(sd.host, sd.port, `SYMBOLS SPAMC/1.5\r\nContent-length: ${MSG.length}\r\n\r\n${MSG}`, { halfClose: true });
    expect(small.reply.toString()).toMatch(/^SPAMD\/1\.1 0 EX_OK/);
    await closeAll(held);
    const again = await raw(sd.host, sd.port, Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: ${zipped.length}\r\n\r\n`), zipped]), { halfClose: true });
    expect(again.reply.toString()).toMatch(/^SPAMD\/1\.1 0 EX_OK/);
  });

  it('milter: the message that does not fit gets tempfail for each content packet and its end; the connection serves the next message', async () => {
    const held = [await milterHolder(900 * KB), await milterHolder(900 * KB)];
    cleanup.push(held);
    const before = await metric('spamrule_scans_total', { protocol: 'milter', action: 'buffer_full' });
    const { host, port } = s.hostPort('milter');
    const chunk = Buffer.alloc(64 * KB, 'b');
    const big = Array.from({ length: 6 }, () => milterPacket('B', chunk));
    // One packet larger than what is left: its data is read past, never held.
    const huge = milterPacket('B', Buffer.alloc(600 * KB, 'c'));
    const next = [milterPacket('M', '<c@example.org>\x00'), milterPacket('R', '<d@example.com>\x00'), milterPacket('L', 'Subject\x00next\x00'), milterPacket('N'), milterPacket('B', 'hello\r\n'), milterPacket('E')];
    const r = await raw(
      host,
      port,
      Buffer.concat([
        milterOptneg(),
        milterPacket('M', '<a@example.org>\x00'),
        milterPacket('R', '<b@example.com>\x00'),
        milterPacket('L', 'Subject\x00big\x00'),
        milterPacket('N'),
        ...big,
        huge,
        milterPacket('E'),
        milterPacket('A'),
        ...next,
        milterPacket('Q'),
      ]),
      { timeoutMs: 15_000 },
    );
    const replies = milterReplies(r.reply).map((x) => x[0]);
    // O, M, R, L, N continue; the body chunks until the budget is full continue, then tempfail; the
    // huge packet and the end tempfail; after the abort, the next message is scanned (M R L N B
    // continue, its end adds our two headers).
    expect(replies.slice(0, 5).join('')).toBe('Occcc');
    const body = replies.slice(5, 5 + big.length + 2).join('');
    expect(body).toMatch(/^c*t+$/);
    expect(body.endsWith('tt')).toBe(true);
    expect(replies.slice(5 + big.length + 2).join('')).toBe('ccccchhc');
    expect(r.closedBy).toBe('server');
    expect(await metric('spamrule_scans_total', { protocol: 'milter', action: 'buffer_full' })).toBe(before + 1);
    await closeAll(held);
  });

  it('many clients each sending most of a maxSize body: the bytes held never pass the budget', async () => {
    const { host, port } = s.hostPort('rspamd');
    const sd = s.hostPort('spamd');
    const ml = s.hostPort('milter');
    const body = Buffer.alloc(900 * KB, 'z');
    const socks: Socket[] = [];
    cleanup.push(socks);
    const replies: Promise<string>[] = [];
    const open = (p: number, h: string, data: Buffer): void => {
      const sock = connect(p, h);
      socks.push(sock);
      let out = '';
      sock.on('error', () => undefined);
      replies.push(
        new Promise((resolve) => {
          sock.on('data', (d: Buffer) => (out += d.toString('latin1')));
          sock.on('close', () => resolve(out));
          // Each stops before the end of its body: none of them can be scanned.
          sock.write(data);
          setTimeout(() => resolve(out), 5_000).unref();
        }),
      );
    };
    for (let i = 0; i < 8; i++) {
      open(port, host, Buffer.concat([Buffer.from(`POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${MB}\r\n\r\n`), body]));
      open(sd.port, sd.host, Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nContent-length: ${MB}\r\n\r\n`), body]));
      const chunks = [];
      for (let o = 0; o < body.length; o += 64 * KB) chunks.push(milterPacket('B', body.subarray(o, o + 64 * KB)));
      open(ml.port, ml.host, Buffer.concat([milterOptneg(), milterPacket('M', '<a@b>\x00'), milterPacket('L', 'Subject\x00x\x00'), milterPacket('N'), ...chunks]));
    }
    const got = await Promise.all(replies);
    // About two bodies fit; the rest were refused in their protocol's words.
    expect(got.filter((g) => /^HTTP\/1\.1 503 /.test(g)).length).toBeGreaterThan(0);
    expect(got.filter((g) => /^SPAMD\/1\.1 75 EX_TEMPFAIL/.test(g)).length).toBeGreaterThan(0);
    expect(got.filter((g) => g.includes('\x00\x00\x00\x01t')).length).toBeGreaterThan(0);
    expect(s.server.scanner.budget.peak).toBeLessThanOrEqual(BUDGET);
    expect(await metric('spamrule_buffered_bytes_peak')).toBeLessThanOrEqual(BUDGET);
    expect(await metric('spamrule_buffered_bytes_limit')).toBe(BUDGET);
    await closeAll(socks);
    expect(await metric('spamrule_buffered_bytes')).toBe(0);
  });
});

describe('real clients against a full budget', () => {
  it('spamc passes the message on unchanged (its safe fallback) and exits 0; rspamc reports the 503', async () => {
    const held = [await holder('spamd', 900 * KB), await holder('spamd', 900 * KB)];
    cleanup.push(held);
    const sd = s.hostPort('spamd');
    const message = MSG + 'x'.repeat(400 * KB) + '\r\n';
    const out = await new Promise<{ stdout: string; code: number | null }>((resolve, reject) => {
      const p = spawn('spamc', ['-d', sd.host, '-p', String(sd.port), '-s', String(2 * MB)], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString('latin1')));
      p.on('error', reject);
      p.on('close', (code) => resolve({ stdout, code }));
      p.stdin.on('error', () => undefined);
      p.stdin.end(message);
    });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(message);
    // The budget is one for every listener: spamd's holders fill it for the rspamd listener too.
    const rs = s.hostPort('rspamd');
    const file = join(mkdtempSync(join(tmpdir(), 'spamrule-budget-')), 'm.eml');
    writeFileSync(file, message);
    const rspamc = await run('rspamc', ['-h', `${rs.host}:${rs.port}`, file], { timeout: 30_000 }).then(
      (r) => `${r.stdout}${r.stderr}`,
      (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
    );
    expect(rspamc).toMatch(/^HTTP error: 503, Service Unavailable$/m);
    await closeAll(held);
    rmSync(dirname(file), { recursive: true, force: true });
  });
});

describe('the budget itself', () => {
  it('defaults to 4 × maxSize, at least 64 MiB, at most a quarter of the memory, never below maxSize', () => {
    const GB = 1024 * MB;
    expect(defaultBufferBudget(50 * MB, 16 * GB)).toBe(200 * MB);
    expect(defaultBufferBudget(MB, 16 * GB)).toBe(64 * MB);
    // A 512 MiB container: a quarter of it.
    expect(defaultBufferBudget(50 * MB, 512 * MB)).toBe(128 * MB);
    expect(defaultBufferBudget(50 * MB, 100 * MB)).toBe(50 * MB);
    expect(resolveLimits(2, { maxSize: 10 * MB }).maxBufferedBytes).toBe(defaultBufferBudget(10 * MB));
    expect(resolveLimits(2, { maxSize: 10 * MB, maxBufferedBytes: 30 * MB }).maxBufferedBytes).toBe(30 * MB);
    expect(() => resolveLimits(2, { maxSize: 10 * MB, maxBufferedBytes: 5 * MB })).toThrow(RangeError);
  });

  it('takes what fits, gives back what a lease held, and remembers the peak', () => {
    const b = new ByteBudget(100);
    const one = b.lease();
    const two = b.lease();
    expect(one.take(60)).toBe(true);
    expect(two.take(50)).toBe(false);
    expect(two.held).toBe(0);
    expect(two.take(40)).toBe(true);
    expect(b.used).toBe(100);
    expect(one.resize(30)).toBe(true);
    expect(two.resize(80)).toBe(false);
    expect(two.resize(70)).toBe(true);
    one.release();
    one.release();
    two.release();
    expect(b.used).toBe(0);
    expect(b.peak).toBe(100);
    // An ended lease (its connection gone) takes nothing more.
    two.end();
    expect(two.take(1)).toBe(false);
    expect(two.resize(10)).toBe(false);
    expect(b.used).toBe(0);
  });
});

describe('a connection that closes while its message is scanned', () => {
  it('gives back every byte it held (milter, spamd with an inflated body)', async () => {
    // A classifier that holds each scan until the test lets it go: the client is gone by then.
    const waiting: (() => void)[] = [];
    const verdict = { action: 'allow', score: 0, tags: [], scores: {}, matches: [], errors: [], headers: { 'X-Spam-Result': '', 'X-Spam-Score': 'ham, score=0.00' } };
    const pool = {
      workers: 1,
      ruleSet: {},
      classify: () => new Promise((resolve) => waiting.push(() => resolve(verdict))),
      onStepBreakerChange: () => () => {},
    } as unknown as SpamEnginePool;
    const server = await startScanServer({ pool, milter: { host: '127.0.0.1', port: 0 }, spamd: { host: '127.0.0.1', port: 0 }, logger: createLogger({ level: 'silent' }) });
    try {
      const budget = server.scanner.budget;
      const port = (name: 'milter' | 'spamd'): number => Number(server.addresses[name]!.split(':').pop());
      const body = Buffer.alloc(300 * KB, 'q');
      const milter = Buffer.concat([
        milterOptneg(),
        milterPacket('C', 'client.example.net\x004\x00\x19127.0.0.1\x00'),
        milterPacket('M', '<a@example.org>\x00'),
        milterPacket('R', '<b@example.com>\x00'),
        milterPacket('L', 'Subject\x00gone\x00'),
        milterPacket('N'),
        milterPacket('B', body),
        milterPacket('E'),
      ]);
      const zipped = deflateSync(Buffer.from(MSG + 'z'.repeat(300 * KB)));
      const spamd = Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: ${zipped.length}\r\n\r\n`), zipped]);
      const socks = [connect(port('milter'), '127.0.0.1'), connect(port('spamd'), '127.0.0.1')];
      for (const x of socks) x.on('error', () => undefined);
      socks[0]!.write(milter);
      socks[1]!.end(spamd);
      await until(() => waiting.length === 2);
      expect(budget.used).toBeGreaterThan(600 * KB);
      // A reset: a spamd client that only half-closes is still waiting for its reply (spamc does).
      for (const x of socks) x.resetAndDestroy();
      // The scans end after their clients have gone: nothing they held stays taken, whichever comes
      // first, the end of the scan or the server seeing the reset (a paused socket sees it late).
      for (const go of waiting.splice(0)) go();
      await until(() => server.scanner.depth === 0 && budget.used === 0);
      await new Promise((r) => setTimeout(r, 50));
      expect(budget.used).toBe(0);
    } finally {
      await server.close(1000);
    }
  });
});
