/**
 * Bad input on every listener (a truncated milter packet, a Content-length that lies, a 60 MB body,
 * a client that stops reading, malformed /checkv2 requests) gets a protocol error or the documented
 * action while good scans, interleaved with them, keep their results; and while a 20 MB message is
 * scanned, other connections are answered at once (the event loop is free).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCorpus } from '../helpers/corpus.js';
import { http, milterOptneg as optneg, milterPacket, milterReplies, raw, startAll, type Started } from './harness.js';

let s: Started;
let good: Buffer[];
let baseline: { score: number; symbols: string[] }[];

const MB = 1024 * 1024;

async function rspamdScan(body: Uint8Array | string): Promise<{ score: number; symbols: string[] }> {
  const r = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body });
  expect(r.status).toBe(200);
  const j = JSON.parse(r.body);
  return { score: j.score, symbols: Object.keys(j.symbols).sort() };
}

async function spamdCheck(body: Buffer): Promise<string> {
  const { host, port } = s.hostPort('spamd');
  const head = `CHECK SPAMC/1.5\r\nContent-length: ${body.length}\r\n\r\n`;
  const r = await raw(host, port, Buffer.concat([Buffer.from(head), body]), { halfClose: true });
  return r.reply.toString('latin1');
}

/** The packets of one milter transaction carrying `bodySize` bytes of body. */
function milterTransaction(bodySize: number): Buffer {
  const parts = [
    optneg(),
    milterPacket('C', 'client.example.net\x004\x00\x19127.0.0.1\x00'),
    milterPacket('H', 'client.example.net\x00'),
    milterPacket('M', '<a@example.org>\x00'),
    milterPacket('R', '<b@example.com>\x00'),
    milterPacket('L', 'Subject\x00big one\x00'),
    milterPacket('N'),
  ];
  const chunk = Buffer.alloc(65535, 'x');
  for (let left = bodySize; left > 0; left -= chunk.length) parts.push(milterPacket('B', left >= chunk.length ? chunk : chunk.subarray(0, left)));
  parts.push(milterPacket('E'), milterPacket('Q'));
  return Buffer.concat(parts);
}

beforeAll(async () => {
  s = await startAll({ workers: 2, limits: { idleTimeoutMs: 1500 } });
  good = loadCorpus({ step: 1500 }).map((m) => m.raw);
  baseline = [];
  for (const m of good) baseline.push(await rspamdScan(m));
}, 120_000);

afterAll(async () => {
  await s?.close();
});

describe('bad input, interleaved with good scans', () => {
  it('every listener answers bad input its own way and the good scans keep their results', async () => {
    const rs = s.hostPort('rspamd');
    const sd = s.hostPort('spamd');
    const ml = s.hostPort('milter');
    const sixty = 60 * MB;

    const hostile = {
      // A milter packet that announces 100 bytes and brings 10, then the MTA goes away.
      milterTruncated: raw(ml.host, ml.port, Buffer.concat([optneg(), Buffer.from([0, 0, 0, 100]), Buffer.from('Lheader\x00x')]), { halfClose: true }),
      // A length no milter packet can have: the connection is closed (protocol error).
      milterGarbage: raw(ml.host, ml.port, Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.from('garbage')])),
      // 60 MB of body over milter: not scanned, a note header, continue.
      milterHuge: raw(ml.host, ml.port, milterTransaction(sixty), { timeoutMs: 60_000 }),
      // Content-length says 5000, the body has 100 and the client half-closes.
      spamdLies: raw(sd.host, sd.port, `CHECK SPAMC/1.5\r\nContent-length: 5000\r\n\r\n${'x'.repeat(100)}`, { halfClose: true }),
      // Declares 60 MB: refused before the body is read.
      spamdHuge: raw(sd.host, sd.port, `CHECK SPAMC/1.5\r\nContent-length: ${sixty}\r\n\r\nFrom: a@b\r\n`),
      spamdGarbage: raw(sd.host, sd.port, 'HELLO THERE\r\n\r\n', { halfClose: true }),
      // rspamd: 60 MB announced, refused with 413 before the body is read.
      rspamdHuge: raw(rs.host, rs.port, `POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: ${sixty}\r\n\r\nFrom: a@b\r\n`),
      // rspamd: 60 MB streamed with no length: cut off at the cap (413 or a reset, never a crash).
      rspamdStream: http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: Buffer.alloc(sixty, 'y') }).then(
        (r) => r.status,
        (e: NodeJS.ErrnoException) => e.code,
      ),
      rspamdBadIp: http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', headers: { IP: 'not-an-ip' }, body: good[0]! }),
      rspamdEmpty: http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body: '' }),
      rspamdZstd: http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', headers: { Compression: 'zstd' }, body: 'xx' }),
      rspamdNotHttp: raw(rs.host, rs.port, 'BLAH\r\n\r\n'),
    };
    const goodScans = Promise.all([...good, ...good].map((m) => rspamdScan(m)));
    const goodSpamd = Promise.all(good.map((m) => spamdCheck(m)));

    const h = Object.fromEntries(await Promise.all(Object.entries(hostile).map(async ([k, p]) => [k, await p] as const))) as {
      [K in keyof typeof hostile]: Awaited<(typeof hostile)[K]>;
    };
    expect(h.milterTruncated.closedBy).toBe('server');
    expect(milterReplies(h.milterTruncated.reply).map((r) => r[0])).toEqual(['O']);
    expect(h.milterGarbage.closedBy).toBe('server');
    expect(h.milterGarbage.reply.length).toBe(0);
    const huge = milterReplies(h.milterHuge.reply);
    const note = huge.find((r) => r[0] === 'h');
    expect(note?.[1]).toMatch(/^ ?X-Spam-Note\0.*larger than the 52428800 bytes limit/);
    expect(huge.at(-1)![0]).toBe('c');
    expect(h.spamdLies.reply.toString()).toMatch(/^SPAMD\/1\.1 76 EX_PROTOCOL Content-length says 5000 bytes but the body has 100/);
    expect(h.spamdHuge.reply.toString()).toMatch(/^SPAMD\/1\.1 65 EX_DATAERR message larger than/);
    expect(h.spamdGarbage.reply.toString()).toMatch(/^SPAMD\/1\.1 76 EX_PROTOCOL bad request line/);
    expect(h.rspamdHuge.reply.toString()).toMatch(/^HTTP\/1\.1 413 /);
    expect([413, 'ECONNRESET', 'EPIPE']).toContain(h.rspamdStream);
    expect(h.rspamdBadIp.status).toBe(400);
    expect(JSON.parse(h.rspamdBadIp.body).error).toBe('IP header: "not-an-ip" is not an IP address');
    expect(h.rspamdEmpty.status).toBe(200); // scanned, as rspamd does
    expect(h.rspamdZstd.status).toBe(415);
    expect(h.rspamdNotHttp.reply.toString()).toMatch(/^HTTP\/1\.1 400 /);

    expect(await goodScans).toEqual([...baseline, ...baseline]);
    for (const [i, r] of (await goodSpamd).entries()) {
      expect(r).toMatch(/^SPAMD\/1\.1 0 EX_OK\r\nSpam: (True|False) ; /);
      expect(Number(/; (-?[\d.]+) \//.exec(r)![1])).toBeCloseTo(baseline[i]!.score, 2);
    }
    // Refusals are counted per protocol.
    const scans = await s.server.metrics.scans.get();
    const tooLarge = scans.values.filter((v) => v.labels.action === 'too_large').map((v) => v.labels.protocol);
    expect(new Set(tooLarge)).toEqual(new Set(['milter', 'spamd', 'rspamd']));
  }, 120_000);

  it('a client that stops reading is disconnected after the idle timeout; others are served meanwhile', async () => {
    const { host, port } = s.hostPort('spamd');
    const big = Buffer.concat([Buffer.from('From: a@example.org\r\nSubject: big\r\n\r\n'), Buffer.alloc(8 * MB, 'line of text\r\n')]);
    const sock = connect(port, host);
    let closed = false;
    sock.on('close', () => (closed = true));
    sock.on('error', () => undefined);
    sock.pause(); // never reads the PROCESS reply (8 MB and more)
    sock.write(`PROCESS SPAMC/1.5\r\nContent-length: ${big.length}\r\n\r\n`);
    sock.end(big);
    // Meanwhile, other clients get their answers.
    expect(await rspamdScan(good[0]!)).toEqual(baseline[0]);
    const until = Date.now() + 20_000;
    const open = async (): Promise<number> => (await s.server.metrics.connections.get()).values.find((v) => v.labels.protocol === 'spamd')?.value ?? 0;
    while ((await open()) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await open()).toBe(0);
    sock.destroy();
    expect(closed || sock.destroyed).toBe(true);
  }, 60_000);
});

describe('the event loop stays free', () => {
  it('answers /ping and a small message within 50 ms while a 20 MB message is scanned', async () => {
    const lines: string[] = [];
    for (let i = 0; lines.length * 60 < 20 * MB; i++) lines.push(`Line ${i}: visit http://host${i % 5000}.example.com/path?id=${i} now\r\n`);
    const big = `From: a@example.org\r\nTo: b@example.com\r\nSubject: twenty megabytes\r\nContent-Type: text/plain\r\n\r\n${lines.join('')}`;
    expect(big.length).toBeGreaterThan(20 * MB);
    let bigDone = false;
    const bigScan = rspamdScan(big).then(
      () => (bigDone = true),
      () => (bigDone = true),
    );
    // Wait until the whole message has reached the server and is with a worker.
    while (s.server.scanner.depth === 0 && !bigDone) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    expect(bigDone).toBe(false);
    const small = `From: a@example.org\r\nSubject: hi\r\n\r\nhello\r\n`;
    const pings: number[] = [];
    const smalls: number[] = [];
    for (let i = 0; i < 5 && !bigDone; i++) {
      let t = performance.now();
      const p = await http(`${s.server.addresses.rspamd}/ping`);
      pings.push(performance.now() - t);
      expect(p.body).toBe('pong\r\n');
      t = performance.now();
      await rspamdScan(small);
      smalls.push(performance.now() - t);
    }
    expect(bigDone).toBe(false); // every measurement above happened during the big scan
    pings.sort((a, b) => a - b);
    expect(pings[Math.floor(pings.length / 2)]).toBeLessThan(50);
    // A shared 2-core machine may stall any one request; the best of five shows the loop is free.
    expect(Math.min(...smalls)).toBeLessThan(50);
    await bigScan;
  }, 120_000);
});
