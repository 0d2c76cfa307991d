/**
 * FTRL training and classification: Stalwart's schedule on the suite's training set (the spam case
 * clears 0.85), determinism given a seed, minimum counts, class balancing, PROB_* tags in the engine.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ClassifierStore, epochsFor, probTag, sampleFeatures, SpamClassifier, trainRun, DEFAULT_SETTINGS } from '../../src/classifier/index.js';
import { runSuite } from '../../src/conformance/index.js';
import { SpamEngine } from '../../src/engine/index.js';
import { MemoryStore } from '../../src/lookup/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { ...DEFAULT_SETTINGS, minHamSamples: 10, minSpamSamples: 10 };

async function trained(spam: string[], ham: string[], seed = 1, s = settings): Promise<SpamClassifier> {
  const c = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings: s, refreshMs: 0 });
  for (const m of spam) await c.learn(m, true);
  for (const m of ham) await c.learn(m, false);
  await c.train({ seed });
  return c;
}

describe('confidence → PROB_* tag (Stalwart\'s table)', () => {
  it.each([
    [0.05, 'PROB_HAM_HIGH'], [0.15, 'PROB_HAM_MEDIUM'], [0.2499, 'PROB_HAM_MEDIUM'], [0.25, 'PROB_HAM_LOW'], [0.4, 'PROB_SPAM_UNCERTAIN'],
    [0.59, 'PROB_SPAM_UNCERTAIN'], [0.6, 'PROB_SPAM_LOW'], [0.75, 'PROB_SPAM_MEDIUM'], [0.85, 'PROB_SPAM_HIGH'], [Number.NaN, 'PROB_SPAM_UNCERTAIN'],
  ])('%s → %s', (p, tag) => expect(probTag(p)).toBe(tag));

  it('epochs follow the smaller class: ≤ 50 → 3, ≤ 200 → 2, else 1', () => {
    expect([epochsFor(10), epochsFor(50), epochsFor(51), epochsFor(200), epochsFor(201)]).toEqual([3, 3, 2, 2, 1]);
  });
});

describe.skipIf(!hasSharedData)('the suite\'s training set', () => {
  const suite = hasSharedData ? JSON.parse(readFileSync(sharedPath('stalwart-antispam-suite', 'cases.json'), 'utf8')) : {};
  const training = suite.classifierTraining as { spam: string[]; ham: string[] } | undefined;

  it('trains 3 epochs over 20 samples; spam clears 0.85 and ham stays under 0.15 over many seeds', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const c = await trained(training!.spam, training!.ham, seed);
      const m = c.model!;
      const spam = m.predict(await sampleFeatures(training!.spam[0]!, settings));
      const ham = m.predict(await sampleFeatures(training!.ham[3]!.replace(/^Message-ID:.*\r?\n/m, ''), settings));
      expect(spam, `seed ${seed}`).toBeGreaterThanOrEqual(0.85);
      expect(ham, `seed ${seed}`).toBeLessThan(0.15);
    }
  }, 60_000);

  it('runs the classifier file of the suite: every public case passes', async () => {
    const out = await runSuite(sharedPath('stalwart-antispam-suite', 'cases.json'), { files: ['classifier'] });
    expect(out.length).toBeGreaterThanOrEqual(2);
    for (const o of out) expect(o, o.id).toMatchObject({ pass: true });
  }, 60_000);
});

describe('training runs', () => {
  const spam = Array.from({ length: 15 }, (_, i) => spamMessage(i));
  const ham = Array.from({ length: 10 }, (_, i) => hamMessage(i));

  it('is deterministic given a seed', async () => {
    const a = (await trained(spam, ham, 7)).model!;
    const b = (await trained(spam, ham, 7)).model!;
    expect(a.bias).toBe(b.bias);
    expect(Buffer.from(a.weights.buffer).equals(Buffer.from(b.weights.buffer))).toBe(true);
  });

  it('balances the classes with replays from the smaller class\'s reservoir', async () => {
    const store = new ClassifierStore(new MemoryStore());
    for (const m of spam) await store.addSample(Buffer.from(m), true);
    for (const m of ham) await store.addSample(Buffer.from(m), false);
    const r = await trainRun(store, settings, { seed: 1 });
    expect(r).toMatchObject({ ready: true, spam: 15, ham: 10, replayed: 5, epochs: 3, generation: 1 });
  });

  it('builds no model below the minimum counts (no PROB_* tag), then one when they are reached', async () => {
    const s = { ...settings, minHamSamples: 12 };
    const c = await trained(spam, ham, 1, s);
    expect(c.model).toBeUndefined();
    const engine = new SpamEngine({ classifier: c });
    const r0 = await engine.classify(spamMessage(1));
    expect(r0.classifier).toBeUndefined();
    expect(r0.tags.filter((t) => t.startsWith('PROB_'))).toEqual([]);
    await c.learn(hamMessage(20), false);
    await c.learn(hamMessage(21), false);
    const r = await c.train({ seed: 1 });
    expect(r).toMatchObject({ ready: true, totalHam: 12, totalSpam: 15 });
    expect(c.generation).toBe(1);
  });

  it('adds its PROB_* tag and confidence to the engine\'s result after the rules, except for a spam trap', async () => {
    const c = await trained(spam, ham);
    const engine = new SpamEngine({
      classifier: c,
      rules: [{ '@type': 'Any', name: 'sees-prob', condition: { match: [{ if: 'PROB_SPAM_HIGH', then: "'RULE_SAW_PROB'" }] } }],
      tags: [{ '@type': 'Score', tag: 'PROB_SPAM_HIGH', score: 8 }],
    });
    const r = await engine.classify(spamMessage(30));
    expect(r.classifier?.confidence).toBeGreaterThan(0.85);
    expect(r.classifier?.tag).toBe('PROB_SPAM_HIGH');
    expect(r.tags).toContain('PROB_SPAM_HIGH');
    expect(r.tags).not.toContain('RULE_SAW_PROB');
    expect(r.score).toBeGreaterThanOrEqual(8);
    const h = await engine.classify(hamMessage(30));
    expect(h.classifier?.tag).toMatch(/^PROB_HAM_/);
    const trap = await engine.classify(spamMessage(30), { tags: ['SPAM_TRAP'] });
    expect(trap.classifier).toBeUndefined();
  });
});
