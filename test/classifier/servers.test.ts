/**
 * The classifier over the shared stores the project supports besides SQLite: a real PostgreSQL and a
 * real Redis started on loopback. Two classifiers share one model; training runs in a child process
 * that opens its own connection from the store's configuration. The CLI's `--model URL` reads and
 * trains a model kept there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClassifier, sampleFeatures, trainInWorker, DEFAULT_SETTINGS, type SpamClassifier } from '../../src/classifier/index.js';
import { run as classify } from '../../src/cli/classify.js';
import { run as learn } from '../../src/cli/learn.js';
import { capture } from '../helpers/capture.js';
import { startPostgres, startRedis, type PostgresServer, type RedisServer } from '../servers/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { minHamSamples: 10, minSpamSamples: 10 };
let pg: PostgresServer;
let redis: RedisServer;
const opened: SpamClassifier[] = [];

beforeAll(async () => {
  [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
}, 120_000);
afterAll(async () => {
  await Promise.all(opened.map((c) => c.store.store.close()));
  await Promise.all([pg?.stop(), redis?.stop()]);
});

async function shareOneModel(config: () => Record<string, unknown>): Promise<void> {
  const a = await openClassifier(config(), { settings, refreshMs: 0 });
  const b = await openClassifier(config(), { settings, refreshMs: 0 });
  opened.push(a, b);
  for (let i = 0; i < 11; i++) await a.learn(spamMessage(i), true);
  for (let i = 0; i < 10; i++) await b.learn(hamMessage(i), false);
  const r = await a.train({ seed: 1 }); // worker thread, own connection
  expect(r).toMatchObject({ ready: true, generation: 1, spam: 11, ham: 10 });
  expect(b.generation).toBe(0);
  expect(await b.reload()).toBe(true);
  const f = await sampleFeatures(spamMessage(50), { ...DEFAULT_SETTINGS, ...settings });
  expect(b.model!.predict(f)).toBeCloseTo(a.model!.predict(f), 6);
  expect(b.model!.predict(f)).toBeGreaterThan(0.85);
}

describe('classifier store on PostgreSQL', () => {
  it('shares samples and the model between classifiers; trains in a worker', async () => {
    await shareOneModel(() => ({
      '@type': 'PostgreSql', host: pg.host, port: pg.port, database: pg.database, authUsername: pg.user,
      authSecret: { '@type': 'Value', secret: 'ignored-by-trust-auth' }, timeout: 5000,
    }));
  }, 120_000);
});

describe('classifier store on Redis', () => {
  it('shares samples and the model between classifiers; trains in a worker', async () => {
    await shareOneModel(() => ({ '@type': 'Redis', url: redis.url, timeout: 5000 }));
  }, 120_000);

  it('spamrule learn --redis URL and --pg URL keep the model there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-learn-servers-'));
    try {
      const files = Array.from({ length: 3 }, (_, i) => join(dir, `${i}.eml`));
      files.forEach((f, i) => writeFileSync(f, spamMessage(100 + i)));
      const r = await capture(() => learn(['--redis', `${redis.url}/3`, '--spam', ...files]));
      expect(r.stderr).toMatch(/stored 3 spam and 0 ham samples/);
      const p = await capture(() => learn(['--pg', `postgres://${pg.user}@${pg.host}:${pg.port}/${pg.database}`, '--spam', ...files]));
      expect(p.stderr).toMatch(/stored 3 spam and 0 ham samples/);
      expect(p.result).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('--model postgres:// and redis:// URLs', () => {
  it('learn trains into the URL, classify --model URL adds the model\'s PROB_* tag, an empty store is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-model-url-'));
    try {
      const spam = Array.from({ length: 10 }, (_, i) => join(dir, `s${i}.eml`));
      const ham = Array.from({ length: 10 }, (_, i) => join(dir, `h${i}.eml`));
      spam.forEach((f, i) => writeFileSync(f, spamMessage(200 + i)));
      ham.forEach((f, i) => writeFileSync(f, hamMessage(200 + i)));
      const probe = join(dir, 'probe.eml');
      writeFileSync(probe, spamMessage(300));
      const urls = [`${redis.url}/4`, `postgres://${pg.user}@${pg.host}:${pg.port}/${pg.database}`];
      for (const url of urls) {
        const l = await capture(() => learn(['--model', url, '--min-samples', '10', '--spam', ...spam, '--ham', ...ham]));
        expect(l.stderr).toMatch(/stored 10 spam and 10 ham samples/);
        expect(l.result).toBe(0);
        const c = await capture(() => classify(['--model', url, '--json', probe]));
        expect(c.result).toBe(0);
        const verdict = JSON.parse(c.stdout.trim().split('\n')[0]!) as { classifier?: { tag: string; generation: number } };
        // (The PostgreSQL database already holds the shared model of the tests above: a later generation.)
        expect(verdict.classifier).toMatchObject({ tag: 'PROB_SPAM_HIGH', generation: expect.any(Number) });
      }
      // A store without a trained model: refused, as a missing model file is (a typo would classify without it).
      const empty = await capture(() => classify(['--model', `${redis.url}/5`, probe]));
      expect(empty.result).toBe(2);
      expect(empty.stderr).toMatch(/redis:\/\/.*\/5 holds no trained spamrule model \(train one with "spamrule learn --redis URL"\)/);
      // A password in the URL is not repeated in messages.
      const masked = await capture(() => classify(['--model', `redis://:hunter2@${new URL(redis.url).host}/6`, probe]));
      expect(masked.result).toBe(2);
      expect(masked.stderr).not.toContain('hunter2');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('training worker', () => {
  it('rejects for a store it cannot reach, leaving nothing changed', async () => {
    await expect(trainInWorker({ '@type': 'Redis', url: 'redis://127.0.0.1:1', timeout: 500 }, { ...DEFAULT_SETTINGS, ...settings }, { seed: 1 })).rejects.toThrow();
  }, 60_000);
});
