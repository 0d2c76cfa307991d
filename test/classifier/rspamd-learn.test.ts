/**
 * rspamd controller's learnspam/learnham on the rspamd listener, driven by the real `rspamc` client
 * (Debian's rspamd package), and spamd's TELL driven by the real `spamc -L` (Debian's spamc): each
 * message becomes a classifier sample, and a training run follows.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ClassifierStore, debouncedLearner, SpamClassifier } from '../../src/classifier/index.js';
import { MemoryStore } from '../../src/lookup/index.js';
import { SpamEnginePool, startScanServer } from '../../src/server/index.js';
import { hamMessage, spamMessage } from './helpers.js';
import { raw } from '../server/harness.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'spamrule-rspamd-learn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rspamc learn_spam / learn_ham', () => {
  it('stores each message as a sample and trains once the burst is over', async () => {
    const classifier = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings: { minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
    const learner = debouncedLearner(classifier, 60_000);
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const server = await startScanServer({ pool, rspamd: { host: '127.0.0.1', port: 0 }, learner, allowLearn: true });
    try {
      const hostPort = server.addresses.rspamd!.replace(/^http:\/\//, '');
      const spam = Array.from({ length: 10 }, (_, i) => join(dir, `spam${i}.eml`));
      const ham = Array.from({ length: 10 }, (_, i) => join(dir, `ham${i}.eml`));
      spam.forEach((f, i) => writeFileSync(f, spamMessage(i)));
      ham.forEach((f, i) => writeFileSync(f, hamMessage(i)));
      const a = await run('rspamc', ['-h', hostPort, 'learn_spam', ...spam], { timeout: 60_000 });
      expect(a.stdout).toMatch(/success.*true/i);
      await run('rspamc', ['-h', hostPort, 'learn_ham', ...ham], { timeout: 60_000 });
      expect(await classifier.store.lastSampleId()).toBe(20);
      expect(classifier.generation).toBe(0);
      await learner.flush();
      expect(classifier.generation).toBe(1);
      // The same message again with the same class: rspamd's "already learned" (208), nothing stored;
      // with the other class it is stored again (training keeps the latest label).
      const again = await run('rspamc', ['-h', hostPort, 'learn_spam', spam[0]!], { timeout: 60_000 });
      expect(again.stdout).toMatch(/^error = "sample \d+ has been already learned as spam, ignore it";$/m);
      expect(await classifier.store.lastSampleId()).toBe(20);
      await run('rspamc', ['-h', hostPort, 'learn_ham', spam[0]!], { timeout: 60_000 });
      expect(await classifier.store.lastSampleId()).toBe(21);
      expect((await classifier.store.getSample(21))?.spam).toBe(false);
    } finally {
      await server.close(1000);
      await pool.close();
    }
  }, 120_000);
});

/** `spamc -L KIND` (or `-C KIND`) with the message on stdin; its output and exit code. */
function spamcLearn(port: number, kind: string, message: string, extra: string[] = [], flag = '-L'): Promise<{ out: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn('spamc', ['-d', '127.0.0.1', '-p', String(port), ...extra, flag, kind], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) => resolve({ out, code }));
    p.stdin.end(message);
  });
}

describe('spamc -L spam / ham (spamd TELL)', () => {
  it('stores each message as a sample with --allow-tell, forgets one with -L forget, and refuses without it', async () => {
    const classifier = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings: { minHamSamples: 2, minSpamSamples: 2 }, refreshMs: 0 });
    const learner = debouncedLearner(classifier, 60_000);
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const any = { host: '127.0.0.1', port: 0 };
    const server = await startScanServer({ pool, spamd: any, learner, allowTell: true });
    const closed = await startScanServer({ pool, spamd: any, learner });
    const port = (s: typeof server): number => Number(s.addresses.spamd!.split(':').pop());
    const tell = async (p: number, head: string, body: string): Promise<string> =>
      (await raw('127.0.0.1', p, `TELL SPAMC/1.5\r\n${head}Content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, { halfClose: true })).reply.toString('latin1');
    try {
      for (let i = 0; i < 3; i++) {
        const r = await spamcLearn(port(server), 'spam', spamMessage(i));
        expect(r).toEqual({ out: 'Message successfully un/learned\n', code: 0 });
      }
      for (let i = 0; i < 3; i++) expect((await spamcLearn(port(server), 'ham', hamMessage(i))).code).toBe(0);
      // Learned already with this class: no DidSet, as from spamd, and nothing stored.
      expect(await spamcLearn(port(server), 'spam', spamMessage(0))).toEqual({ out: 'Message was already un/learned\n', code: 0 });
      expect(await classifier.store.lastSampleId()).toBe(6);
      expect((await classifier.store.getSample(1))?.spam).toBe(true);
      expect((await classifier.store.getSample(6))?.spam).toBe(false);
      await learner.flush();
      expect(classifier.generation).toBe(1);
      expect((await classifier.store.loadTrainer())?.spam.totalSeen).toBe(3);

      // -L forget removes the message's sample, and the next run rebuilds the model without it.
      expect(await spamcLearn(port(server), 'forget', spamMessage(1))).toEqual({ out: 'Message successfully un/learned\n', code: 0 });
      expect(await classifier.store.getSample(2)).toBeUndefined();
      expect((await classifier.store.getSample(1))?.spam).toBe(true);
      await learner.flush();
      expect(classifier.generation).toBe(2);
      const state = await classifier.store.loadTrainer();
      expect(state?.spam.totalSeen).toBe(2);
      expect(state?.spam.buffer).not.toContain(2);
      expect(state?.ham.totalSeen).toBe(3);
      // A message not (or no longer) learned: no DidRemove, which spamc reports as "already un/learned".
      expect(await spamcLearn(port(server), 'forget', spamMessage(1))).toEqual({ out: 'Message was already un/learned\n', code: 0 });
      expect(await tell(port(server), 'Remove: local\r\n', spamMessage(1))).toBe('SPAMD/1.1 0 EX_OK\r\n\r\n');
      expect(await tell(port(server), 'Remove: local\r\n', hamMessage(2))).toBe('SPAMD/1.1 0 EX_OK\r\nDidRemove: local\r\n\r\n');
      expect(await classifier.store.getSample(6)).toBeUndefined();

      // Remote reporting, Set and Remove together, and TELL on a listener that does not allow it: refused,
      // nothing stored or removed. (spamc reads any reply without DidSet as "already learned", exit 0.)
      expect(await tell(port(server), 'Remove: remote\r\n', spamMessage(0))).toMatch(/^SPAMD\/1\.1 69 EX_UNAVAILABLE only local learning/);
      expect(await tell(port(server), 'Message-class: spam\r\nSet: remote\r\n', spamMessage(0))).toMatch(/^SPAMD\/1\.1 69 EX_UNAVAILABLE only local learning/);
      expect(await tell(port(server), 'Message-class: spam\r\nSet: local\r\nRemove: local\r\n', spamMessage(0))).toMatch(/^SPAMD\/1\.1 76 EX_PROTOCOL TELL with both Set: local and Remove: local/);
      const before = await classifier.store.lastSampleId();
      // spamc -C report (Set: local, remote) and -C revoke (Set: local, Remove: remote): learned locally, as
      // spamd does without remote reporting configured.
      const report = await spamcLearn(port(server), 'report', spamMessage(8), [], '-C');
      const revoke = await spamcLearn(port(server), 'revoke', spamMessage(9), [], '-C');
      // spamc says so when the remote part was not done (no DidSet/DidRemove: remote), which is true here.
      expect([report, revoke]).toEqual([0, 1].map(() => ({ out: 'Unable to report/revoke message\n', code: 0 })));
      expect(await classifier.store.lastSampleId()).toBe(before + 2);
      expect((await classifier.store.getSample(before + 1))?.spam).toBe(true);
      expect((await classifier.store.getSample(before + 2))?.spam).toBe(false);
      expect((await spamcLearn(port(closed), 'spam', spamMessage(7))).out).not.toMatch(/successfully/);
      expect((await spamcLearn(port(closed), 'forget', spamMessage(0))).out).not.toMatch(/successfully/);
      for (const head of ['Message-class: spam\r\nSet: local\r\n', 'Remove: local\r\n']) {
        expect(await tell(port(closed), head, spamMessage(0))).toMatch(/^SPAMD\/1\.1 69 EX_UNAVAILABLE learning \(TELL\) needs serve --model and --allow-tell/);
      }
      expect((await classifier.store.getSample(1))?.spam).toBe(true);
      expect(await classifier.store.lastSampleId()).toBe(before + 2);
    } finally {
      await server.close(1000);
      await closed.close(1000);
      await pool.close();
    }
  }, 120_000);
});
