/**
 * The classifier's hand-written fast paths against their plain definitions, on many seeded random
 * inputs: the word memo (an open-addressing table keyed by a range of a text) against what was stored,
 * its bounds (long words, crafted hash collisions) included; eld's separator replacement by character
 * table against `text.replace(separators, ' ')`; and the typed-token cursor against itself (with and
 * without Space tokens), its ranges against its texts, and `typesTokenize`. These are the places where
 * an optimisation can silently change results, so each is checked against the simple form it replaces.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/classifier/train.js';
import { InternTable, MAX_SLOT_VALUE } from '../../src/classifier/intern-table.js';
import { foldedWordHash, MAX_PROBE, MAX_WORD, WordMemo, wordHash } from '../../src/classifier/word-memo.js';
import { MAX_KEY, MAX_VALUE, MIN_VALUE, SlotTable } from '../../src/classifier/slot-table.js';
import { separatorReplacer } from '../../src/classifier/eld-scores.js';
import { internBoundary, TokCounter, truncate16 } from '../../src/classifier/tokens.js';
import { urlPathWords } from '../../src/classifier/words.js';
import { compositeBudget, MAX_COMPOSITE_LOOKAHEAD, T, TypedTokens, typesTokenize, urlScanners } from '../../src/classifier/tokenizer.js';

/** The seeded PRNG of training (mulberry32): the same inputs on every run. */
const mulberry32 = prng;

/** A random string of `min`..`max` pieces drawn from `alphabet`. */
function randomString(rnd: () => number, alphabet: readonly string[], min: number, max: number): string {
  const n = min + Math.floor(rnd() * (max - min + 1));
  let s = '';
  for (let k = 0; k < n; k++) s += alphabet[Math.floor(rnd() * alphabet.length)]!;
  return s;
}

const WORD_CHARS = [...'abcdefghijklmnopqrstuvwxyzABCXYZ0123456789', 'é', 'ß', 'ж', '中', '文', '😀', '𝒜', '\u0301'];
const FILLER = [...'  .,;!-xyz', '\n', '中', '😀'];

describe('WordMemo', () => {
  it('finds ~50,000 words again from other texts, and no word never stored', () => {
    const rnd = mulberry32(1);
    const memo = new WordMemo();
    const words = new Set<string>();
    while (words.size < 50_000) words.add(randomString(rnd, WORD_CHARS, 1, 12));
    const list = [...words];
    const value = (i: number): number[] => (i % 3 === 0 ? [i] : i % 3 === 1 ? [i, i + 1, i + 2] : []);
    list.forEach((w, i) => {
      const pre = randomString(rnd, FILLER, 0, 9);
      const text = pre + w + randomString(rnd, FILLER, 0, 9);
      memo.set(text, pre.length, pre.length + w.length, wordHash(text, pre.length, pre.length + w.length), value(i));
    });
    expect(memo.size).toBe(list.length);
    const wrong: unknown[] = [];
    list.forEach((w, i) => {
      const pre = randomString(rnd, FILLER, 0, 20);
      const text = pre + w + '#';
      const got = memo.get(text, pre.length, pre.length + w.length, wordHash(w, 0, w.length));
      if (JSON.stringify(got) !== JSON.stringify(i % 3 === 0 ? i : value(i))) wrong.push({ w, got });
    });
    let absent = 0;
    while (absent < 20_000) {
      const w = randomString(rnd, WORD_CHARS, 1, 14);
      if (words.has(w)) continue;
      absent++;
      const text = `<${w}>`;
      const got = memo.get(text, 1, 1 + w.length, wordHash(text, 1, 1 + w.length));
      if (got !== undefined) wrong.push({ w, got, want: undefined });
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  }, 20_000);

  it('keeps a folded word once for all spellings of its ASCII letters, apart from the same word kept as it is', () => {
    const memo = new WordMemo();
    const fold = (w: string): number => foldedWordHash(w, 0, w.length);
    expect(fold('The')).toBe(fold('tHE'));
    expect(fold('the')).toBe(wordHash('the', 0, 3)); // lower-case words hash as they are
    memo.set('>>The<<', 2, 5, foldedWordHash('>>The<<', 2, 5), [1], true);
    for (const w of ['the', 'THE', 'tHe']) expect(memo.get(w, 0, 3, fold(w), true), w).toBe(1);
    expect(memo.size).toBe(1);
    memo.set('THE', 0, 3, fold('THE'), [2], true); // already kept: no second entry
    expect(memo.size).toBe(1);
    expect(memo.get('the', 0, 3, fold('the'), true)).toBe(1);
    // An unfolded key of the same characters and hash is another key, both ways.
    expect(memo.get('the', 0, 3, wordHash('the', 0, 3))).toBeUndefined();
    memo.set('the', 0, 3, wordHash('the', 0, 3), [3]);
    expect(memo.get('the', 0, 3, wordHash('the', 0, 3))).toBe(3);
    expect(memo.get('the', 0, 3, fold('the'), true)).toBe(1);
    expect(memo.get('The', 0, 3, wordHash('The', 0, 3))).toBeUndefined();
    // Only A–Z fold: other characters must match exactly.
    memo.set('ab[c', 0, 4, fold('ab[c'), [4], true);
    expect(memo.get('AB[C', 0, 4, fold('AB[C'), true)).toBe(4);
    expect(memo.get('ab{c', 0, 4, fold('ab{c'), true)).toBeUndefined();
    // Random words: every spelling finds its word, across growth.
    const rnd = mulberry32(5);
    const words = new Set<string>();
    while (words.size < 20_000) words.add(randomString(rnd, [...'abcdefghijklmnopqrstuvwxyz'], 1, 12));
    const m2 = new WordMemo();
    const list = [...words];
    list.forEach((w, i) => m2.set(w, 0, w.length, fold(w), [i], true));
    const wrong = list.filter((w, i) => {
      const spelled = [...w].map((c) => (rnd() < 0.5 ? c.toUpperCase() : c)).join('');
      return m2.get(spelled, 0, spelled.length, fold(spelled), true) !== i;
    });
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('finds ASCII words by their packed letters (getAscii) in both cases, among words of one hash, and none after clear()', () => {
    // A word's folded letters as getAscii takes them (the tokenizer makes them while reading the word).
    const packed = (w: string): [number, number] => {
      let lo = 0;
      let hi = 0;
      for (let k = 0; k < Math.min(w.length, 8); k++) {
        const c = w.toLowerCase().charCodeAt(k);
        if (k < 4) lo |= c << (8 * k);
        else hi |= c << (8 * (k - 4));
      }
      return [lo, hi];
    };
    const memo = new WordMemo();
    // One hash for all: every word shares one probe sequence.
    const h = 0x7fff1234;
    const words = ['a', 'ab', 'abc', 'abcd', 'abcde', 'abcdefgh', 'ba', 'stop', 'split', 'abcdefghi'];
    const value = (w: string): number[] => (w === 'stop' ? [] : w === 'split' ? [70, 71] : [words.indexOf(w)]);
    for (const w of words) memo.set(w, 0, w.length, h, value(w), true);
    const want = (w: string): unknown => (value(w).length === 1 ? value(w)[0] : value(w));
    // Each word in both cases of its letters, over several rounds.
    for (let round = 0; round < 3; round++) {
      for (const w of words) {
        for (const spelled of [w, w.toUpperCase(), w]) {
          const [lo, hi] = packed(spelled);
          expect(memo.getAscii(spelled, 0, spelled.length, h, lo, hi), spelled).toEqual(want(w));
        }
      }
    }
    for (const w of ['abd', 'abcdefg', 'b', 'stops']) {
      const [lo, hi] = packed(w);
      expect(memo.getAscii(w, 0, w.length, h, lo, hi), w).toBeUndefined();
    }
    memo.clear();
    for (const w of words) {
      const [lo, hi] = packed(w);
      expect(memo.getAscii(w, 0, w.length, h, lo, hi), w).toBeUndefined();
    }
  });

  it('tells apart words of one hash value by their characters, prefixes included', () => {
    const memo = new WordMemo();
    const h = 12345;
    const words = ['ab', 'abc', 'abd', 'abcd', 'b', 'ba'];
    words.forEach((w, i) => memo.set(`..${w}..`, 2, 2 + w.length, h, [i]));
    words.forEach((w, i) => expect(memo.get(w, 0, w.length, h)).toBe(i));
    for (const w of ['a', 'abe', 'abcde', 'bab']) expect(memo.get(w, 0, w.length, h)).toBeUndefined();
    // The same characters under another hash are another key.
    expect(memo.get('abc', 0, 3, h + 1)).toBeUndefined();
    const m2 = new WordMemo();
    m2.set('abc', 0, 3, h, [7]);
    expect(m2.get('ab', 0, 2, h)).toBeUndefined();
    expect(m2.get('abcd', 0, 4, h)).toBeUndefined();
    expect(m2.get('abcd', 0, 3, h)).toBe(7);
  });

  it('keeps the first MAX_PROBE words sharing one hash and gives up on the rest', () => {
    const memo = new WordMemo();
    const words = Array.from({ length: MAX_PROBE + 16 }, (_, i) => `w${i}`);
    words.forEach((w, i) => memo.set(w, 0, w.length, 99, [i]));
    words.forEach((w, i) => expect(memo.get(w, 0, w.length, 99)).toBe(i < MAX_PROBE ? i : undefined));
    expect(memo.size).toBe(MAX_PROBE);
    // Repeated lookups and insertions of the given-up words stay misses, and other words are unaffected
    // (one whose home slot, 700, is away from the cluster at 99).
    for (let r = 0; r < 1000; r++) {
      const w = words[MAX_PROBE + (r % 16)]!;
      memo.set(w, 0, w.length, 99, [r]);
      expect(memo.get(w, 0, w.length, 99)).toBeUndefined();
    }
    memo.set('other', 0, 5, 700, [1, 2]);
    expect(memo.get('other', 0, 5, 700)).toEqual([1, 2]);
    expect(memo.size).toBe(MAX_PROBE + 1);
  });

  it('keeps words of MAX_WORD code units, not longer ones', () => {
    expect(MAX_WORD).toBe(64);
    const memo = new WordMemo();
    const long = 'x'.repeat(MAX_WORD + 1);
    memo.set(long, 0, long.length, wordHash(long, 0, long.length), [1]);
    expect(memo.get(long, 0, long.length, wordHash(long, 0, long.length))).toBeUndefined();
    expect(memo.size).toBe(0);
    const max = '😀'.repeat(MAX_WORD / 2); // 64 code units
    memo.set(max, 0, max.length, wordHash(max, 0, max.length), [2]);
    expect(memo.get(max, 0, max.length, wordHash(max, 0, max.length))).toBe(2);
    expect(memo.size).toBe(1);
  });

  it('forgets everything on clear()', () => {
    const memo = new WordMemo();
    for (let i = 0; i < 3000; i++) memo.set(`k${i}`, 0, `k${i}`.length, wordHash(`k${i}`, 0, `k${i}`.length), i % 2 ? [i] : [i, i]);
    memo.clear();
    expect(memo.size).toBe(0);
    for (let i = 0; i < 3000; i++) expect(memo.get(`k${i}`, 0, `k${i}`.length, wordHash(`k${i}`, 0, `k${i}`.length))).toBeUndefined();
    memo.set('again', 0, 5, wordHash('again', 0, 5), []);
    expect(memo.get('again', 0, 5, wordHash('again', 0, 5))).toEqual([]);
    expect(memo.size).toBe(1);
  });

  it('wordHash of a range equals wordHash of that range cut out', () => {
    const rnd = mulberry32(2);
    for (let k = 0; k < 5000; k++) {
      const s = randomString(rnd, [...WORD_CHARS, ...FILLER], 0, 30);
      const a = Math.floor(rnd() * (s.length + 1));
      const b = a + Math.floor(rnd() * (s.length - a + 1));
      expect(wordHash(s, a, b)).toBe(wordHash(s.slice(a, b), 0, b - a));
    }
  });

  it('round trips non-ASCII and astral words (stop words as a frozen empty list)', () => {
    const memo = new WordMemo();
    const words = ['café', 'naïve', 'cafe\u0301', '中文', 'Ελληνικά', 'жизнь', '😀', '😁', '😀😀', '𝒜𝒷𝒸', 'a😀b'];
    words.forEach((w, i) => memo.set(`«${w}»`, 1, 1 + w.length, wordHash(w, 0, w.length), i === 0 ? [] : [i]));
    words.forEach((w, i) => {
      const text = `${'😀'.repeat(i)} ${w}`;
      const got = memo.get(text, text.length - w.length, text.length, wordHash(text, text.length - w.length, text.length));
      if (i === 0) {
        expect(got).toEqual([]);
        expect(Object.isFrozen(got)).toBe(true);
      } else expect(got).toBe(i);
    });
    expect(memo.get('😂', 0, 2, wordHash('😂', 0, 2))).toBeUndefined();
  });

  it('does not keep a word whose token id a slot cannot hold (it costs the work of a new word again)', () => {
    const memo = new WordMemo();
    memo.set('huge', 0, 4, wordHash('huge', 0, 4), [MAX_VALUE + 1]);
    memo.set('fits', 0, 4, wordHash('fits', 0, 4), [MAX_VALUE]);
    expect(memo.get('huge', 0, 4, wordHash('huge', 0, 4))).toBeUndefined();
    expect(memo.get('fits', 0, 4, wordHash('fits', 0, 4))).toBe(MAX_VALUE);
    expect(memo.size).toBe(1);
  });
});

describe('SlotTable', () => {
  /** ASCII folding as the table applies it (upper-case ASCII letters only). */
  const foldAscii = (k: string): string => k.replace(/[A-Z]/g, (c) => c.toLowerCase());

  it('keeps keys in the slot and in the pool alike (lengths 0-12, characters 255 and 256, folded or not), through growth', () => {
    const rnd = mulberry32(11);
    // ÿ is 255 (a byte), Ā is 256 (not): keys of up to 8 characters below 256 live in the slot.
    const alphabet = ['a', 'b', 'Z', 'Q', 'ÿ', 'Ā', 'é', '😀', '0', '\u0000'];
    const t = new SlotTable();
    const stored = new Map<string, { key: string; fold: boolean; value: number }>();
    for (let n = 0; stored.size < 20_000; n++) {
      const key = randomString(rnd, alphabet, 0, 12);
      const fold = rnd() < 0.5;
      const id = `${fold ? 'F' : 'U'}${fold ? foldAscii(key) : key}`;
      if (stored.has(id)) continue;
      const value = n % 3 === 0 ? MAX_VALUE - n : n % 3 === 1 ? MIN_VALUE + n : n;
      t.reserve();
      const h = fold ? foldedWordHash(key, 0, key.length) : wordHash(key, 0, key.length);
      const i = t.find(key, 0, key.length, h, fold);
      expect(i).toBeLessThan(0);
      t.insert(i, key, 0, key.length, h, value, fold);
      stored.set(id, { key, fold, value });
    }
    const wrong: unknown[] = [];
    for (const { key, fold, value } of stored.values()) {
      // Found inside another text, and (folded keys) under any case of their ASCII letters.
      const probe = fold ? key.replace(/[a-z]/g, (c) => c.toUpperCase()) : key;
      const text = `xy${probe}zw`;
      const h = fold ? foldedWordHash(text, 2, 2 + probe.length) : wordHash(text, 2, 2 + probe.length);
      const i = t.find(text, 2, 2 + probe.length, h, fold);
      if (i < 0 || t.valueAt(i) !== value) wrong.push({ key, fold, got: i < 0 ? i : t.valueAt(i), value });
      // A folded key is never found as an unfolded one, nor the other way round (unless also stored so).
      const other = `${fold ? 'U' : 'F'}${fold ? key : foldAscii(key)}`;
      if (!stored.has(other) && (fold || foldAscii(key) === key)) {
        const h2 = !fold ? foldedWordHash(key, 0, key.length) : wordHash(key, 0, key.length);
        if (t.find(key, 0, key.length, h2, !fold) >= 0) wrong.push({ key, fold, crossed: true });
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    // Values change in place and keep their bounds.
    const [first] = stored.values();
    const h = first!.fold ? foldedWordHash(first!.key, 0, first!.key.length) : wordHash(first!.key, 0, first!.key.length);
    const i = t.find(first!.key, 0, first!.key.length, h, first!.fold);
    t.setValue(i, -7);
    expect(t.valueAt(i)).toBe(-7);
    expect(() => t.setValue(i, MAX_VALUE + 1)).toThrow(RangeError);
    expect(() => t.setValue(i, MIN_VALUE - 1)).toThrow(RangeError);
    expect(t.valueAt(i)).toBe(-7);
    const long = 'x'.repeat(MAX_KEY + 1);
    expect(() => t.insert(t.find(long, 0, long.length, 1), long, 0, long.length, 1, 0)).toThrow(RangeError);
  }, 20_000);
});

describe('InternTable', () => {
  it('gives back the id of each of 150,000 values, long ones included, and −1 for values never added', () => {
    const rnd = mulberry32(7);
    const t = new InternTable();
    const values = new Set<string>();
    while (values.size < 150_000) values.add(randomString(rnd, WORD_CHARS, 1, values.size % 50 === 0 ? 90 : 14));
    const list = [...values];
    expect(list.some((v) => v.length > MAX_SLOT_VALUE)).toBe(true);
    list.forEach((v, i) => {
      expect(t.get(v)).toBe(-1);
      if (i % 2 === 0) t.add(v, i);
      else expect(t.getOrAdd(v, i)).toBe(i);
    });
    // getOrAdd answers the id a value has, and records nothing then.
    expect(list.every((v, i) => t.getOrAdd(v, i + 1_000_000) === i)).toBe(true);
    const wrong: unknown[] = [];
    list.forEach((v, i) => {
      // A copy built another way: the lookup compares characters, not string identity.
      const got = t.get([...v].join(''));
      if (got !== i) wrong.push({ v, got, want: i });
    });
    let absent = 0;
    while (absent < 20_000) {
      const v = randomString(rnd, WORD_CHARS, 1, 16);
      if (values.has(v)) continue;
      absent++;
      if (t.get(v) !== -1) wrong.push({ v, got: t.get(v), want: -1 });
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    t.clear();
    expect(list.slice(0, 1000).every((v) => t.get(v) === -1)).toBe(true);
    t.add(list[0]!, 3);
    expect(t.get(list[0]!)).toBe(3);
  }, 20_000);

  it('never loses a value: past MAX_PROBE values of one hash the rest go beside the slots (add and getOrAdd)', () => {
    const t = new InternTable(() => 42);
    const values = Array.from({ length: MAX_PROBE * 3 }, (_, i) => `v${i}`);
    values.forEach((v, i) => t.add(v, i));
    values.forEach((v, i) => expect(t.get(v)).toBe(i));
    values.forEach((v, i) => expect(t.getOrAdd(v, 5000 + i)).toBe(i));
    expect(t.get('v-1')).toBe(-1);
    expect(t.getOrAdd('v-1', 4000)).toBe(4000);
    expect(t.get('v-1')).toBe(4000);
    // Other values, colliding or not, are unaffected; adding a value again gives it the new id.
    t.add('v0', 1000);
    expect(t.get('v0')).toBe(1000);
    // Ids past what a slot holds (millions of tokens in one message) live beside the slots too.
    const u = new InternTable();
    u.add('big', MAX_VALUE + 5);
    expect(u.getOrAdd('bigger', MAX_VALUE + 6)).toBe(MAX_VALUE + 6);
    expect([u.get('big'), u.get('bigger'), u.getOrAdd('big', 1)]).toEqual([MAX_VALUE + 5, MAX_VALUE + 6, MAX_VALUE + 5]);
    // A value in the slots keeps its id when asked with an id past them, and a value given up on beside the
    // slots keeps its id once the slots have room for it again.
    u.add('small', 3);
    expect(u.getOrAdd('small', MAX_VALUE + 7)).toBe(3);
    expect(() => u.add('small', MAX_VALUE + 8)).toThrow(RangeError);
    expect(t.getOrAdd(values[MAX_PROBE + 2]!, 7000)).toBe(MAX_PROBE + 2);
    let collide = true;
    const w = new InternTable((v, a, b) => (collide ? 42 : wordHash(v, a, b)));
    for (let j = 0; j <= MAX_PROBE; j++) w.add(`c${j}`, j);
    collide = false; // the value beside the slots now hashes where the slots have room
    expect(w.getOrAdd(`c${MAX_PROBE}`, 999)).toBe(MAX_PROBE);
    expect(w.get(`c${MAX_PROBE}`)).toBe(MAX_PROBE);
    t.add(values[MAX_PROBE + 1]!, 1001);
    expect(t.get(values[MAX_PROBE + 1]!)).toBe(1001);
  });
});

describe('TokCounter', () => {
  /** A Map-based counter: the reference for counts and first-seen order. */
  const reference = (toks: number[]): Map<number, number> => {
    const m = new Map<number, number>();
    for (const t of toks) m.set(t, (m.get(t) ?? 0) + 1);
    return m;
  };

  it('counts in first-seen order, as a Map does, through table growth and with two counters filling at once', () => {
    const rnd = prng(11);
    for (const distinct of [1, 50, 1_500, 40_000]) {
      internBoundary();
      const a = new TokCounter(0);
      const b = new TokCounter(1);
      const ta: number[] = [];
      const tb: number[] = [];
      for (let i = 0; i < 3 * distinct; i++) {
        // Ids that share their low bits too (multiples of 4096), so probes run past taken slots.
        const t = rnd() < 0.3 ? 4096 * Math.floor(rnd() * distinct) : Math.floor(rnd() * distinct);
        a.add(t);
        ta.push(t);
        if (i % 3 === 0) {
          b.add(t + 7, 2);
          tb.push(t + 7, t + 7);
        }
      }
      const ra = reference(ta);
      expect(a.toks).toEqual([...ra.keys()]);
      expect(a.counts).toEqual([...ra.values()]);
      const rb = reference(tb);
      expect(b.toks).toEqual([...rb.keys()]);
      expect(b.counts).toEqual([...rb.values()]);
      for (const t of [...ra.keys()].slice(0, 200)) expect(a.has(t)).toBe(true);
      expect(a.has(-5)).toBe(false);
    }
  });

  it('places tokens by id, and scatters them once ids cluster (crafted or a long run of new ids)', () => {
    internBoundary();
    // The usual message: frequent tokens with small ids, a few new ones with consecutive large ids.
    const usual = new TokCounter(0);
    for (let i = 0; i < 300; i++) usual.add([3, 17, 40, 41, 250, 900][i % 6]! + (i % 50 === 0 ? 70_000 + i : 0));
    expect(usual.scattered).toBe(false);
    // Ids that share one slot in any table of up to 65,536 slots (multiples of 2^16; the table grows to
    // that for 20,000 tokens): placed by id, each would probe past all the others (quadratic work);
    // scattered, the counts are still a Map's.
    const ids = Array.from({ length: 20_000 }, (_, i) => i * 2 ** 16);
    const crafted = new TokCounter(0);
    for (const t of [...ids, ...ids.slice(0, 100)]) crafted.add(t);
    expect(crafted.scattered).toBe(true);
    expect(crafted.toks).toEqual(ids);
    expect(crafted.counts).toEqual(ids.map((_, i) => (i < 100 ? 2 : 1)));
    expect(crafted.has(ids[19_999]!)).toBe(true);
    expect(crafted.has(1)).toBe(false);
    // A long run of consecutive ids, then ids that land inside it.
    const run = new TokCounter(1);
    for (let t = 10_000; t < 11_000; t++) run.add(t);
    expect(run.scattered).toBe(false);
    for (let k = 0; k < 50; k++) run.add(10_000 + 4096 * (k + 1));
    expect(run.scattered).toBe(true);
    expect(run.toks.length).toBe(1_050);
    expect(run.has(10_500) && run.has(10_000 + 4096 * 50)).toBe(true);
  });

  it('starts empty for each new counter, whatever the previous one of its slot held', () => {
    internBoundary();
    const first = new TokCounter(0);
    for (let t = 0; t < 3_000; t++) first.add(t);
    const second = new TokCounter(0);
    expect(second.has(5)).toBe(false);
    second.add(5);
    second.add(5);
    expect(second.toks).toEqual([5]);
    expect(second.counts).toEqual([2]);
  });
});

describe('separatorReplacer', () => {
  async function eldSeparators(): Promise<RegExp> {
    const require = createRequire(import.meta.url);
    const dir = (require.resolve.paths('eld') ?? []).map((p) => join(p, 'eld', 'src')).find((p) => existsSync(join(p, 'languageDetector.js')));
    if (dir === undefined) throw new Error('eld not found');
    const { separators } = (await import(pathToFileURL(join(dir, 'regexPatterns.js')).href)) as { separators: RegExp };
    return separators;
  }

  it("equals text.replace(separators, ' ') for eld's pattern on 100,000 random strings and real sentences", async () => {
    const separators = await eldSeparators();
    const replace = separatorReplacer(separators);
    const alphabet = [...'abcXYZ', "'", '`', '’', ' ', '\t', '\n', '0', '7', '.', ',', '!', '-', '"', 'é', 'ü', '\u0301', '中', '文', 'д', 'Ж', '😀', '\u00a0', 'ª'];
    const rnd = mulberry32(3);
    const sentences = [
      "It's the users' choice — don't `quote` me’ please.",
      'Ça va très bien, merci ! Größe: 12,5 cm.',
      'Привет, мир! Это тест…',
      '我们的产品质量很好，欢迎购买。',
      "''' leading ’’ and trailing '",
      '',
    ];
    const mismatches: { text: string; got: string; want: string }[] = [];
    const check = (text: string): void => {
      const got = replace(text);
      const want = text.replace(separators, ' ');
      if (got !== want && mismatches.length < 5) mismatches.push({ text, got, want });
    };
    sentences.forEach(check);
    for (let k = 0; k < 100_000; k++) check(randomString(rnd, alphabet, 0, 12));
    expect(mismatches).toEqual([]);
  }, 20_000);

  it('falls back to the pattern itself for a pattern of another shape', () => {
    const rnd = mulberry32(4);
    const alphabet = [...'abzAZ09', "'", '’', ' ', '.', 'é', '😀'];
    const patterns = [/[^a-z]+/g, /[^a-z]+(?<![\x27\x60\u2019])/g, /[^a-z]+(?<![\x27\x60\u2019])/gu, /[^a-z][^b]+(?<![\x27\x60\u2019])/gu];
    for (const p of patterns) {
      const replace = separatorReplacer(p);
      const wrong: string[] = [];
      for (let k = 0; k < 5000; k++) {
        const text = randomString(rnd, alphabet, 0, 10);
        if (replace(text) !== text.replace(p, ' ')) wrong.push(text);
      }
      expect(wrong.slice(0, 5), String(p)).toEqual([]);
    }
  });
});

describe('TypedTokens', () => {
  const FRAGMENTS = [
    'a', 'example', 'com', '.', '@', ':', '//', '/', '+', '-', ' ', '\n', 'é', '中', ',', 'http', 'www', '.co.uk',
    '?q=1', '1.2', '-7', '192.168.1.1', 'foo@bar.net', '\u3000', '\u00a0',
  ];
  type Tok = { type: T; text: string; start: number; end: number };
  const WHITE = /^\s$/u;
  const SPACES = /^\s*$/u;
  const collect = (text: string, numbers: boolean, spaces: boolean, budget = compositeBudget()): Tok[] => {
    const c = new TypedTokens(text, numbers, spaces, budget);
    const out: Tok[] = [];
    if (c.src !== text) throw new Error('src is not the text');
    while (c.next()) out.push({ type: c.type, text: c.text, start: c.start, end: c.end });
    return out;
  };

  it('agrees with itself with and without spaces, with its ranges and with typesTokenize on 100,000 strings', () => {
    const rnd = mulberry32(5);
    const failures: string[] = [];
    const key = (t: { type: T; text: string }): string => `${t.type}:${t.text}`;
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const text = randomString(rnd, FRAGMENTS, 0, 10);
      const numbers = k % 2 === 0;
      const fail = (what: string): number => failures.push(`${what} in ${JSON.stringify(text)} numbers=${numbers}`);
      const all = collect(text, numbers, true);
      // (a) No Space tokens is the same tokens without the Space ones.
      const noSpace = collect(text, numbers, false).map(key).join('|');
      if (noSpace !== all.filter((t) => t.type !== T.Space).map(key).join('|')) fail('spaces=false differs');
      // (b) Ranges in order, not overlapping, each non-Space token's text its range; only white space between.
      let prev = 0;
      for (const t of all) {
        if (t.start < prev || t.end <= t.start) fail(`range [${t.start}, ${t.end}) after ${prev}`);
        if (t.type !== T.Space ? text.slice(t.start, t.end) !== t.text : !WHITE.test(text.slice(t.start, t.end))) fail(`range of ${key(t)}`);
        if (!SPACES.test(text.slice(prev, t.start))) fail(`characters left out before ${key(t)}`);
        prev = t.end;
      }
      if (!SPACES.test(text.slice(prev))) fail('characters left out at the end');
      // (c) typesTokenize is the cursor's tokens, Space included.
      if (typesTokenize(text, numbers).map(key).join('|') !== all.map(key).join('|')) fail('typesTokenize differs');
    }
    expect(failures).toEqual([]);
  }, 20_000);

  it('finds composite tokens wherever they start in a span (its triggers are read once per span)', () => {
    const kinds = (text: string): string[] => collect(text, false, false).map((t) => `${T[t.type]} ${t.text}`);
    // Words before, between and after the triggers of one span (no white space in it).
    expect(kinds('see,x.example.com/a,then@user@mail.example.org,end.')).toEqual([
      'Alphabetic see', 'Punctuation ,', 'UrlNoScheme x.example.com/a,then@user@mail.example.org,end', 'Punctuation .',
    ]);
    expect(kinds('a,b,c,http://d.example.net/e')).toEqual([
      'Alphabetic a', 'Punctuation ,', 'Alphabetic b', 'Punctuation ,', 'Alphabetic c', 'Punctuation ,', 'Url http://d.example.net/e',
    ]);
    expect(kinds('one(two)user@example.com;three')).toEqual([
      'Alphabetic one', 'Punctuation (', 'Alphabetic two', 'Punctuation )', 'Email user@example.com', 'Punctuation ;', 'Alphabetic three',
    ]);
    // After the span's last trigger, the words are plain.
    expect(kinds('x.example.com,after,more')).toEqual(['UrlNoScheme x.example.com', 'Punctuation ,', 'Alphabetic after', 'Punctuation ,', 'Alphabetic more']);
    // A span longer than the look-ahead (600 characters): a trigger is seen only within 600 characters of a word.
    const long = `${'ab,'.repeat(250)}host.example.com`;
    const toks = kinds(long);
    expect(toks.at(-1)).toBe('UrlNoScheme host.example.com');
    expect(toks.filter((t) => t.startsWith('Alphabetic ab')).length).toBe(250);
    expect(kinds(`start,${'ab,'.repeat(250)}host.example.com`)[0]).toBe('Alphabetic start');
  });

  it('sees a trigger within 600 characters of a word, in a span of any length', () => {
    // Three atoms of 255 characters joined by `.` before an `@`: an e-mail address may start at any word
    // of them, but a word is tried only when the `@` lies less than 600 characters ahead, so the address
    // starts at the first word that close to it (the host names the words before it give are not valid).
    const atom = `${'a-'.repeat(127)}a`;
    for (const lead of ['', 'q', 'qq', 'qqq-']) {
      const text = `${lead}${atom}.${atom}.${atom}@mail.example.com`;
      const at = text.indexOf('@');
      const words = [...text.matchAll(/[a-z]+/g)].map((m) => m.index);
      const first = words.find((k) => at - k < 600)!;
      const emails = collect(text, false, false).filter((t) => t.type === T.Email);
      expect(emails.map((t) => t.start), `lead ${JSON.stringify(lead)}`).toEqual([first]);
      expect(emails[0]!.text).toBe(text.slice(first));
      expect(at - first).toBeGreaterThanOrEqual(598);
      // White space ends the span: no word before it is tried.
      const cut = at - 300;
      const spaced = `${text.slice(0, cut)} ${text.slice(cut + 1)}`;
      expect(collect(spaced, false, false).filter((t) => t.type === T.Email).map((t) => t.start)).toEqual([cut + 1]);
    }
  });

  it('spends at most MAX_COMPOSITE_LOOKAHEAD characters of look-ahead on composite tokens per budget', () => {
    const kinds = (text: string, budget = compositeBudget()): string[] => collect(text, false, false, budget).map((t) => `${T[t.type]} ${t.text}`);
    const url = ' see http://example.com/page';
    const plainUrl = [
      'Alphabetic see', 'Alphabetic http', 'Punctuation :', 'Punctuation /', 'Punctuation /',
      'Alphabetic example', 'Punctuation .', 'Alphabetic com', 'Punctuation /', 'Alphabetic page',
    ];
    // A host-like run with no host in it (every host it gives ends in a one-letter label): every word is
    // tried, each charged the rest of its span (at most 16,640 characters), until the look-ahead is spent.
    const hostile = 'a.b-'.repeat(200_000);
    const budget = compositeBudget();
    const tried = kinds(hostile, budget);
    expect(budget.lookahead).toBe(0);
    expect(tried.filter((t) => t === 'Alphabetic a').length).toBe(200_000);
    expect(tried.every((t) => t === 'Alphabetic a' || t === 'Alphabetic b' || t === 'Punctuation .' || t === 'Punctuation -')).toBe(true);
    // A URL after it is then a plain word, in the same text or in another text drawing on the same budget.
    expect(kinds(hostile + url).slice(-10)).toEqual(plainUrl);
    expect(kinds(url, budget)).toEqual(plainUrl);
    // After a run too short to spend the look-ahead, and with a budget of its own, it is a URL.
    const short = compositeBudget();
    expect(kinds('a.b-'.repeat(100) + url, short).slice(-2)).toEqual(['Alphabetic see', 'Url http://example.com/page']);
    expect(short.lookahead).toBeGreaterThan(MAX_COMPOSITE_LOOKAHEAD - 50_000);
    expect(kinds(url).at(-1)).toBe('Url http://example.com/page');
    // Each attempt is charged the rest of its span: a URL alone in its span costs its own length.
    const one = compositeBudget();
    kinds('http://example.com/page', one);
    expect(MAX_COMPOSITE_LOOKAHEAD - one.lookahead).toBe('http://example.com/page'.length);
  });
});

describe('URL scanners (the loops that stand for the tokenizer\'s URL patterns on ASCII text)', () => {
  // The patterns as they were written before the loops replaced them.
  const AUTH_RE = /(?:\[[0-9A-Fa-f:.]{2,45}\]|[\p{Alphabetic}0-9.\-_~!$&'()*+,;=:%@]{0,512})/uy;
  const PATH_RE = /[/?][^\s<>"\\^`|\x00-\x1f\x7f]{0,4096}/uy;
  const LAST_LABEL_RE = /\.\p{Alphabetic}{2,63}$/u;
  const ALPHABET = [
    ...'aZ09.-_~!$&\'()*+,;=:%@/?#[]<>"\\^`|{} \t', 'fe80::1', '\u0000', '\u007f', 'é', '中', '😀', '\u00a0', '\u2028', '\ud800',
    'example', 'com', 'x'.repeat(520), 'y'.repeat(4100),
  ];
  const match = (re: RegExp, s: string, j: number): RegExpExecArray | null => {
    re.lastIndex = j;
    return re.exec(s);
  };

  it('give the lengths of the authority and path patterns at many positions of 20,000 random strings', () => {
    const { authLength, pathLength } = urlScanners;
    const rnd = mulberry32(11);
    const failures: string[] = [];
    for (let k = 0; k < 20_000 && failures.length < 5; k++) {
      const s = randomString(rnd, ALPHABET, 0, 12);
      // Every position of the first 40, then a few more (the long pieces make some strings 10,000 long).
      const starts = [...Array(Math.min(s.length, 40) + 1).keys(), ...Array.from({ length: 8 }, () => Math.floor(rnd() * (s.length + 1)))];
      for (const j of starts) {
        const auth = match(AUTH_RE, s, j)![0].length;
        if (authLength(s, j) !== auth) failures.push(`authLength ${JSON.stringify(s)} at ${j}: ${authLength(s, j)} ≠ ${auth}`);
        const path = match(PATH_RE, s, j)?.[0].length ?? -1;
        if (pathLength(s, j) !== path) failures.push(`pathLength ${JSON.stringify(s)} at ${j}: ${pathLength(s, j)} ≠ ${path}`);
      }
    }
    expect(failures).toEqual([]);
  }, 30_000);

  it('test a host\'s last label and drop its port as the patterns do', () => {
    const { alphaLastLabel, dropPort } = urlScanners;
    const rnd = mulberry32(12);
    const HOST = [...'abcXYZ019.-:', 'é', '中', 'com', 'co.uk', 'x'.repeat(62), '😀'];
    const failures: string[] = [];
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const h = randomString(rnd, HOST, 0, 8);
      if (alphaLastLabel(h) !== LAST_LABEL_RE.test(h)) failures.push(`alphaLastLabel ${JSON.stringify(h)}`);
      if (dropPort(h) !== h.replace(/:[0-9]*$/, '')) failures.push(`dropPort ${JSON.stringify(h)}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('urlPathWords (the URL path words of the token builder and of host-less URLs)', () => {
  it("equals path.split(/[/._]/) kept by byte length > 2 and alphabetic, cut to 16, on 100,000 random paths", () => {
    const ALPHA = /^\p{Alphabetic}+$/u;
    const PATH = [...'ab/._-09x?', 'é', '中', '😀', 'ǅ', 'abcdefghijklmnopqrstuv', '\ud800'];
    const rnd = mulberry32(13);
    const failures: string[] = [];
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const path = randomString(rnd, PATH, 0, 10);
      const want = path.split(/[/._]/).filter((p) => Buffer.byteLength(p, 'utf8') > 2 && ALPHA.test(p)).map((p) => '_' + truncate16(p));
      const got: string[] = [];
      urlPathWords(path, (w) => got.push(w));
      if (got.join('|') !== want.join('|')) failures.push(`${JSON.stringify(path)}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('collapsedLength (language detection\'s letter count)', () => {
  it('equals t.replace(/\\s+/g, " ").trim().length on random texts of every kind of white space', async () => {
    const { collapsedLength } = await import('../../src/classifier/language.js');
    const rnd = mulberry32(17);
    const parts = [' ', '\t', '\n', '\r', '\v', '\f', 'a', 'é', '中', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b', '\u0085', 'x y'];
    for (let k = 0; k < 50_000; k++) {
      const t = randomString(rnd, parts, 0, 12);
      if (collapsedLength(t) !== t.replace(/\s+/g, ' ').trim().length) expect.fail(`collapsedLength(${JSON.stringify(t)})`);
    }
  });
});

describe('word memo key made by the tokenizer', () => {
  it('is the folded hash, the folded letters as bytes and the all-upper-case flag of each ASCII word, and finds what get finds', () => {
    const rnd = prng(17);
    const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const words: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      let w = '';
      for (let n = 1 + Math.floor(rnd() * 14); n > 0; n--) w += letters[Math.floor(rnd() * (i % 5 === 0 ? 26 : letters.length)) + (i % 5 === 0 ? 26 : 0)];
      words.push(w);
    }
    words.push('É', 'caféS', 'ÀB', 'Straße', 'ABCD', 'abcdefgh', 'ABCDEFGHI');
    const text = words.map((w, i) => (i % 3 === 0 ? `${w}, ` : i % 3 === 1 ? `(${w}) ` : `${w}\n`)).join('');
    const memo = new WordMemo();
    let checked = 0;
    for (const t = new TypedTokens(text, false, false); t.next(); ) {
      if (t.type !== T.Alphabetic) continue;
      const w = t.text;
      const ascii = /^[\x00-\x7f]*$/.test(w);
      expect(t.ascii, w).toBe(ascii);
      if (!ascii) continue;
      checked++;
      expect(t.foldHash, w).toBe(foldedWordHash(t.src, t.start, t.end));
      expect(t.allUpper, w).toBe(/^[A-Z]+$/.test(w));
      const bytes = [...w.toLowerCase().slice(0, 8)].map((c) => c.charCodeAt(0));
      const lo = bytes.slice(0, 4).reduce((x, c, k) => x | (c << (8 * k)), 0);
      const hi = bytes.slice(4, 8).reduce((x, c, k) => x | (c << (8 * k)), 0);
      expect([t.lo, t.hi], w).toEqual([lo, hi]);
      // Kept under one spelling, found under any other by both look-ups.
      if (memo.get(t.src, t.start, t.end, t.foldHash, true) === undefined) memo.set(t.src, t.start, t.end, t.foldHash, [checked], true);
      expect(memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi)).toEqual(memo.get(t.src, t.start, t.end, t.foldHash, true));
      expect(memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi)).toBeDefined();
    }
    expect(checked).toBeGreaterThan(2_900);
    // Another spelling of a kept word is found; an unknown word is not.
    const probe = (w: string): unknown => {
      const t = new TypedTokens(w, false, false);
      t.next();
      return memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi);
    };
    expect(probe(words[1]!.toUpperCase())).toEqual(probe(words[1]!.toLowerCase()));
    expect(probe('zzzzzzzzzzzzzzzzq')).toBeUndefined();
  });
});
