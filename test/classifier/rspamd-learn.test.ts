/**
 * rspamd controller's learnspam/learnham on the rspamd listener, driven by the real `rspamc` client
 * (Debian's rspamd package): each message becomes a classifier sample, and a training run follows.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ClassifierStore, debouncedLearner, SpamClassifier } from '../../src/classifier/index.js';
import { MemoryStore } from '../../src/lookup/index.js';
import { SpamEnginePool, startScanServer } from '../../src/server/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'spamrule-rspamd-learn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rspamc learn_spam / learn_ham', () => {
  it('stores each message as a sample and trains once the burst is over', async () => {
    const classifier = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings: { minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
    const learner = debouncedLearner(classifier, 60_000);
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const server = await startScanServer({ pool, rspamd: { host: '127.0.0.1', port: 0 }, learner });
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
    } finally {
      await server.close(1000);
      await pool.close();
    }
  }, 120_000);
});
