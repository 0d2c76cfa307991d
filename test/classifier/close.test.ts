/**
 * `SpamClassifier.close()` (README, "Closing"): waits for a training run in progress, then closes
 * the model store, so that nothing the classifier opened keeps the process alive.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openClassifier, sqliteModelConfig } from '../../src/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-close-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('SpamClassifier.close', () => {
  it('lets a running training run finish, then closes the model store; a second close is harmless', async () => {
    const classifier = await openClassifier(sqliteModelConfig(join(dir, 'model.sqlite')), { settings: { minHamSamples: 3, minSpamSamples: 3 } });
    for (let i = 0; i < 3; i++) await classifier.learn(spamMessage(i), true);
    for (let i = 0; i < 3; i++) await classifier.learn(hamMessage(i), false);
    const training = classifier.train({ seed: 1 });
    await classifier.close();
    await expect(training).resolves.toMatchObject({ ready: true, generation: 1 });
    await expect(classifier.learn(spamMessage(9), true)).rejects.toThrow(/closed/);
    await expect(classifier.close()).resolves.toBeUndefined();
  });
});
