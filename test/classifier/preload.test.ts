/**
 * A classifier that gets a model loads its language resources (detector, every stemmer and stop-word
 * list, jieba's dictionary, TinySegmenter) at once, so that no message pays for a load; with
 * `preload: false` they stay unloaded until a message needs them. Its own file: module state is per file.
 */
import { describe, expect, it } from 'vitest';
import { ClassifierStore, DEFAULT_SETTINGS, SpamClassifier } from '../../src/classifier/index.js';
import { loadedLanguageResources } from '../../src/classifier/language.js';
import { MemoryStore } from '../../src/lookup/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { ...DEFAULT_SETTINGS, minHamSamples: 10, minSpamSamples: 10 };

async function withModel(preload: boolean): Promise<SpamClassifier> {
  const c = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings, refreshMs: 0, preload });
  for (let i = 0; i < 12; i++) {
    await c.learn(spamMessage(i), true);
    await c.learn(hamMessage(i), false);
  }
  const report = await c.train({ seed: 1 });
  expect(report.ready).toBe(true);
  expect(c.generation).toBeGreaterThan(0);
  return c;
}

describe('loading language resources with the first model', () => {
  it('stays lazy with preload: false, then loads everything when a preloading classifier gets its model', async () => {
    await withModel(false);
    const lazy = loadedLanguageResources();
    expect(lazy.jieba).toBe(false);
    expect(lazy.tiny).toBe(false);
    expect(lazy.stemmers).not.toContain('turkish');

    await withModel(true);
    const loaded = loadedLanguageResources();
    expect(loaded.detector).toBe(true);
    expect(loaded.jieba).toBe(true);
    expect(loaded.tiny).toBe(true);
    for (const s of ['english', 'french', 'german', 'russian', 'turkish', 'arabic', 'tamil']) expect(loaded.stemmers).toContain(s);
    for (const s of ['english', 'german', 'spanish', 'hungarian']) expect(loaded.stopLists).toContain(s);
  });
});
