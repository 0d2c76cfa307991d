/**
 * `serve --model`: the worker threads of the mail-path pool classify with the model file's classifier
 * (each worker loads it from the store), and pick up a newer model by themselves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openClassifier, sqliteModelConfig } from '../../src/classifier/index.js';
import { SpamEnginePool } from '../../src/server/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-serve-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('SpamEnginePool with a classifier', () => {
  it('adds PROB_* tags in the worker threads once they have loaded the model', async () => {
    const file = join(dir, 'model.sqlite');
    const c = await openClassifier(sqliteModelConfig(file), { settings: { minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
    for (let i = 0; i < 10; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
    expect((await c.train({ seed: 1 })).generation).toBe(1);
    await c.store.store.close();

    const pool = new SpamEnginePool({
      rules: [],
      tags: [{ '@type': 'Score', tag: 'PROB_SPAM_HIGH', score: 8 }],
      classifier: { '@type': 'Sqlite', path: file },
      workers: 1,
    });
    try {
      let tags: string[] = [];
      // The worker loads the model in the background: the first scans may come before it.
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && !tags.includes('PROB_SPAM_HIGH')) {
        tags = (await pool.classify(spamMessage(60))).tags;
        if (!tags.includes('PROB_SPAM_HIGH')) await new Promise((r) => setTimeout(r, 100));
      }
      expect(tags).toContain('PROB_SPAM_HIGH');
      const ham = await pool.classify(hamMessage(60));
      expect(ham.tags.some((t) => t.startsWith('PROB_HAM_'))).toBe(true);
    } finally {
      await pool.close();
    }
  }, 120_000);
});
