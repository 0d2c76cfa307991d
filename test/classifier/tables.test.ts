/**
 * The classifier's hand-written tables against their plain definitions, on many seeded random inputs: the
 * word memo (an open-addressing table keyed by a range of a text) against what was stored, its bounds (long
 * words, crafted hash collisions) included; the slot table under it; the intern table; and the per-message
 * token counter against a Map. These are places where an optimisation can silently change results, so each
 * is checked against the simple form it replaces.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/util/index.js';
import { InternTable, MAX_SLOT_VALUE } from '../../src/classifier/intern-table.js';
import { foldedWordHash, MAX_PROBE, MAX_WORD, WordMemo, wordHash } from '../../src/classifier/word-memo.js';
import { MAX_KEY, MAX_VALUE, MIN_VALUE, SlotTable } from '../../src/classifier/slot-table.js';
import { internBoundary, TokCounter } from '../../src/classifier/tokens.js';
import { randomString, WORD_CHARS, FILLER } from '../helpers/random-text.js';

describe('WordMemo', () => {
  it('finds ~50,000 words again from other texts, and no word never stored', () => {
    const rnd = prng(1);
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
    const rnd = prng(5);
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
    const rnd = prng(2);
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
    const rnd = prng(11);
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
    const rnd = prng(7);
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
