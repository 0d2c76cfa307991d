/**
 * The token builder's warm-up (warm-up.ts, `englishWarmUpWords`): its made-up English words reach every
 * ending of the English stemmer and are stemmed as the reference Snowball stemmer does, and the warm-up
 * leaves nothing behind: the same messages give the same tokens and predictions after it as before.
 * Its own file: the warm-up restarts this thread's intern table.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { buildTokens, trainFacts } from '../../src/classifier/index.js';
import { buildTokenCounts } from '../../src/classifier/features.js';
import { englishWarmUpWords, loadLanguageDetector, WordStemTokenizer } from '../../src/classifier/language.js';
import { ClassifierModel, predictCounts, vectorize } from '../../src/classifier/model.js';
import { internedCount } from '../../src/classifier/tokens.js';
import { warmUpTokenBuilder } from '../../src/classifier/warm-up.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { hamMessage, spamMessage } from './helpers.js';

describe('English warm-up words', () => {
  it('are the same for the same seed, end in every Porter2 ending, and stem as Snowball stems them', async () => {
    const words = englishWarmUpWords(40_000);
    expect(words).toHaveLength(40_000);
    expect(englishWarmUpWords(40_000)).toEqual(words);
    expect(englishWarmUpWords(1_000, 2)).not.toEqual(words.slice(0, 1_000));
    // Step 2, 3 and 4 endings (the branches a real message would otherwise meet first).
    for (const e of ['ational', 'tional', 'enci', 'anci', 'izer', 'ization', 'ation', 'ator', 'alism', 'aliti', 'alli', 'fulness', 'ousli', 'ousness',
      'iveness', 'iviti', 'biliti', 'ogi', 'fulli', 'lessli', 'alize', 'icate', 'iciti', 'ative', 'ical', 'ness', 'ement', 'ment', 'ance', 'ence',
      'able', 'ible', 'ism', 'iti', 'ous', 'ive', 'ize', 'ion', 'eedly', 'ingly', 'edly', 'sses', 'ied', 'ies', "'s'"]) {
      expect(words.some((w) => w.endsWith(e)), e).toBe(true);
    }
    for (const x of ['skies', 'dying', 'gently', 'news', 'atlas', 'inning', 'succeed']) expect(words).toContain(x);
    expect(words.some((w) => w.startsWith('gener')) && words.some((w) => w.startsWith('commun')) && words.some((w) => w.startsWith("'"))).toBe(true);

    const snowball = (createRequire(import.meta.url)('snowball-stemmers') as { newStemmer(n: string): { stem(w: string): string } }).newStemmer('english');
    await loadLanguageDetector();
    const english = new WordStemTokenizer('this is plainly an english sentence about the weather and the markets today');
    expect(english.lang).toBe('eng');
    const differ = words.filter((w) => english.tokenize(w)[0] !== undefined && english.tokenize(w)[0] !== snowball.stem(w));
    expect(differ).toEqual([]);
  }, 60_000);
});

describe('token builder warm-up', () => {
  it('forgets every token it made, and messages give the same tokens and predictions after it', async () => {
    const raws = [spamMessage(1), hamMessage(2), 'From: a@b.example\r\nSubject: Café à Paris\r\n\r\nVisit http://www.example.com/offer now! 3.5% off, call 555-1234.\r\n'];
    const ms = await Promise.all(raws.map(async (r) => messageContextOf(await analyzeMessage(r))));
    let seed = 5;
    const w = Float32Array.from({ length: 2 ** 16 }, () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
    const model = new ClassifierModel(16, w, 0.1, 0);
    const run = async (): Promise<{ maps: string[]; predictions: number[] }> => {
      const maps: string[] = [];
      const predictions: number[] = [];
      for (const m of ms) {
        const map = await buildTokens(m, trainFacts(m), () => false);
        maps.push(JSON.stringify([...map]));
        const counts = await buildTokenCounts(m, trainFacts(m), () => false);
        const p = predictCounts(model, counts);
        expect(p).toBe(model.predict(vectorize(map, 16)));
        predictions.push(p);
      }
      return { maps, predictions };
    };
    const before = await run();
    expect(internedCount()).toBeGreaterThan(20);

    warmUpTokenBuilder(model);
    // Only the tokens the builder keeps for itself (`_allcaps`, `!ip`) are interned again after the restart.
    expect(internedCount()).toBeLessThanOrEqual(2);

    expect(await run()).toEqual(before);
  }, 60_000);
});
