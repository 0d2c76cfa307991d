/**
 * Learning over the mail-path protocols (security review F6): rspamd's `/learnspam` and `/learnham`
 * on the rspamd listener are off unless the server allows them (`--allow-learn`), and with it, or
 * spamd's `TELL` with `--allow-tell`, samples are capped: `limits.maxLearnSize` per sample (refused
 * before the body is read when its length says so) and `limits.learnPerMinute` for all clients
 * together (refused before the body is read). The real `rspamc` and `spamc` see the refusals (spamc
 * as "already learned", the only words it has for a TELL that set nothing).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LearnGate } from '../../src/server/learn-gate.js';
import { createLogger, SpamEnginePool, startScanServer } from '../../src/server/index.js';
import { http, raw, run, startAll, type Started } from './harness.js';

const KB = 1024;
const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: cheap pills\r\n\r\nbuy now\r\n';
const dir = mkdtempSync(join(tmpdir(), 'spamrule-learning-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A learner that keeps what it is given. */
function recorder(): { learned: { spam: boolean; size: number }[]; learner: { learnNew(r: Uint8Array, spam: boolean): Promise<{ id: number; already: boolean }>; forgetMessage(): Promise<number> } } {
  const learned: { spam: boolean; size: number }[] = [];
  return {
    learned,
    learner: {
      learnNew: (r, spam) => {
        learned.push({ spam, size: r.length });
        return Promise.resolve({ id: learned.length, already: false });
      },
      forgetMessage: () => Promise.resolve(0),
    },
  };
}

async function learns(s: Started, protocol: string, outcome: string): Promise<number> {
  return (await s.server.metrics.learns.get()).values.find((v) => v.labels.protocol === protocol && v.labels.outcome === outcome)?.value ?? 0;
}

function rspamc(s: Started, args: string[]): Promise<string> {
  const { host, port } = s.hostPort('rspamd');
  return run('rspamc', ['-h', `${host}:${port}`, ...args], { timeout: 30_000 }).then(
    (r) => `${r.stdout}${r.stderr}`,
    (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
  );
}

describe('rspamd learnspam/learnham without --allow-learn', () => {
  it('answers 403 and stores nothing, also with a learner (serve --model alone); rspamc says so', async () => {
    const r = recorder();
    const s = await startAll({ workers: 1, learner: r.learner });
    try {
      const url = s.server.addresses.rspamd!;
      for (const path of ['/learnspam', '/learnham']) {
        const res = await http(`${url}${path}`, { method: 'POST', body: MSG });
        expect(res.status).toBe(403);
        expect(JSON.parse(res.body).error).toMatch(/--allow-learn/);
      }
      const file = join(dir, 'spam.eml');
      writeFileSync(file, MSG);
      expect(await rspamc(s, ['learn_spam', file])).toMatch(/403|--allow-learn/);
      expect(r.learned).toEqual([]);
      expect(await learns(s, 'rspamd', 'refused')).toBe(3);
      // Scanning on the same listener is unaffected.
      expect((await http(`${url}/checkv2`, { method: 'POST', body: MSG })).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('is never served on the --metrics listener', async () => {
    const r = recorder();
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const server = await startScanServer({ pool, metrics: { host: '127.0.0.1', port: 0 }, learner: r.learner, allowLearn: true, logger: createLogger({ level: 'silent' }) });
    try {
      const res = await http(`${server.addresses.metrics}/learnspam`, { method: 'POST', body: MSG });
      expect(res.status).toBe(404);
      expect(r.learned).toEqual([]);
    } finally {
      await server.close(1000);
      await pool.close();
    }
  });
});

describe('the caps on samples', () => {
  it('rspamd: 413 over maxLearnSize before the body is read, 429 with Retry-After past learnPerMinute', async () => {
    const r = recorder();
    const s = await startAll({ workers: 1, learner: r.learner, allowLearn: true, limits: { maxLearnSize: 64 * KB, learnPerMinute: 3 } });
    try {
      const url = s.server.addresses.rspamd!;
      const { host, port } = s.hostPort('rspamd');
      // Only the head: the refusal cannot wait for a body.
      const big = await raw(host, port, `POST /learnspam HTTP/1.1\r\nHost: x\r\nContent-Length: ${100 * KB}\r\n\r\nFrom: a@b\r\n`);
      expect(big.closedBy).toBe('server');
      expect(big.reply.toString()).toMatch(/^HTTP\/1\.1 413 .*limits\.maxLearnSize/s);
      // Streamed past the cap without a length: 413 as well (or the connection reset while sending).
      const streamed = await http(`${url}/learnspam`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: Buffer.alloc(100 * KB, 'x') }).then(
        (x) => x.status,
        (e: NodeJS.ErrnoException) => e.code,
      );
      expect([413, 'ECONNRESET', 'EPIPE']).toContain(streamed);
      expect(r.learned).toEqual([]);
      // The oversized request announced its size and took nothing from the allowance; the streamed one
      // took one (its size was not known before its body). Two of three are left.
      const ok = [await http(`${url}/learnspam`, { method: 'POST', body: MSG }), await http(`${url}/learnham`, { method: 'POST', body: MSG })];
      expect(ok.map((x) => x.status)).toEqual([200, 200]);
      const limited = await http(`${url}/learnspam`, { method: 'POST', body: MSG });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(limited.body).error).toMatch(/limits\.learnPerMinute/);
      const file = join(dir, 'ham.eml');
      writeFileSync(file, MSG);
      expect(await rspamc(s, ['learn_ham', file])).toMatch(/429/);
      expect(r.learned).toHaveLength(2);
      expect(await learns(s, 'rspamd', 'rate_limited')).toBe(2);
      expect(await learns(s, 'rspamd', 'too_large')).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('spamd TELL: 65 EX_DATAERR over maxLearnSize, 75 EX_TEMPFAIL past learnPerMinute (shared with rspamd); spamc -L reports it', async () => {
    const r = recorder();
    const s = await startAll({ workers: 1, learner: r.learner, allowTell: true, allowLearn: true, limits: { maxLearnSize: 64 * KB, learnPerMinute: 2 } });
    try {
      const sd = s.hostPort('spamd');
      const tell = (body: string): Promise<string> =>
        raw(sd.host, sd.port, `TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\nContent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, { halfClose: true }).then((x) =>
          x.reply.toString(),
        );
      expect(await tell('x'.repeat(100 * KB))).toMatch(/^SPAMD\/1\.1 65 EX_DATAERR training sample larger than the 65536 bytes limit/);
      expect(await tell(MSG)).toMatch(/^SPAMD\/1\.1 0 EX_OK\r\nDidSet: local/);
      // One allowance for both protocols: rspamd takes the second.
      expect((await http(`${s.server.addresses.rspamd}/learnham`, { method: 'POST', body: MSG })).status).toBe(200);
      expect(await tell(MSG)).toMatch(/^SPAMD\/1\.1 75 EX_TEMPFAIL too many training samples/);
      const out = await new Promise<{ text: string; code: number | null }>((resolve, reject) => {
        const p = spawn('spamc', ['-d', sd.host, '-p', String(sd.port), '-L', 'spam'], { stdio: ['pipe', 'pipe', 'pipe'] });
        let text = '';
        p.stdout.on('data', (d: Buffer) => (text += d.toString()));
        p.stderr.on('data', (d: Buffer) => (text += d.toString()));
        p.on('error', reject);
        p.on('exit', (code) => resolve({ text, code }));
        p.stdin.end(MSG);
      });
      // libspamc reads any TELL reply without DidSet as "already learned" and exits 0 (the code is not
      // read): it does not claim success, nothing is stored, and the log says why.
      expect(out).toEqual({ text: 'Message was already un/learned\n', code: 0 });
      expect(r.learned).toHaveLength(2);
      expect(s.logs.filter((l) => l.msg === 'not learned' && l.protocol === 'spamd').map((l) => String(l.error))).toEqual([
        expect.stringMatching(/larger than the 65536 bytes limit/),
        expect.stringMatching(/too many training samples/),
        expect.stringMatching(/too many training samples/),
      ]);
      // A scan is no learn: CHECK still works.
      expect((await raw(sd.host, sd.port, `CHECK SPAMC/1.5\r\nContent-length: ${MSG.length}\r\n\r\n${MSG}`, { halfClose: true })).reply.toString()).toMatch(/^SPAMD\/1\.1 0 EX_OK/);
    } finally {
      await s.close();
    }
  });
});

describe('LearnGate', () => {
  it('lets a burst of perMinute through, then one every 60/perMinute s; refuses an announced size over maxSize without taking', () => {
    let t = 0;
    const gate = new LearnGate(3, 100, () => t);
    expect(gate.admit(101)).toEqual({ reason: 'too_large', maxSize: 100 });
    expect([gate.admit(50), gate.admit(), gate.admit()]).toEqual([undefined, undefined, undefined]);
    expect(gate.admit()).toEqual({ reason: 'rate', retryAfterS: 20 });
    t += 19_999;
    expect(gate.admit()?.reason).toBe('rate');
    t += 1;
    expect(gate.admit()).toBeUndefined();
    t += 10 * 60_000;
    expect([gate.admit(), gate.admit(), gate.admit(), gate.admit()?.reason]).toEqual([undefined, undefined, undefined, 'rate']);
    const open = new LearnGate(0, 100, () => t);
    for (let i = 0; i < 1000; i++) expect(open.admit()).toBeUndefined();
  });
});
