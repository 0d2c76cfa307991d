/**
 * Property-based fuzzing of the classifier's hand-written tables against Map-based references, under
 * adversarial keys: hash functions with a handful of values (so that whole sequences of keys collide
 * on one hash, past MAX_PROBE), keys at the 8-unit inline edge and the 64-unit word edge, characters above
 * 255 and lone surrogates, ids past the slots' MAX_VALUE, and clears in between.
 *
 * - InternTable: `getOrAdd`/`get`/`add` answer exactly what a Map from value to id answers (it never
 *   forgets a value: an id handed out is found again, however it collided);
 * - WordMemo: `get` answers either nothing (not kept: too long, given up, or a value the slots cannot
 *   hold) or exactly the first tokens kept for that word (folded keys: for its ASCII-lower-cased
 *   spelling; folded and unfolded keys apart), never another word's tokens;
 * - TokCounter: the same tokens, counts and first-seen order as a Map, for clustered and crafted ids.
 * Campaign: SPAMRULE_FUZZ_RUNS=5000 SPAMRULE_FUZZ_SEED=n npx vitest run test/classifier/fuzz-tables.test.ts
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InternTable } from '../../src/classifier/intern-table.js';
import { MAX_VALUE } from '../../src/classifier/slot-table.js';
import { internBoundary, TokCounter } from '../../src/classifier/tokens.js';
import { foldedWordHash, wordHash, WordMemo } from '../../src/classifier/word-memo.js';
import { fuzzParams, runs } from '../helpers/fuzz.js';

/** A test's timeout: 60 s, or `ms` per run when a campaign (SPAMRULE_FUZZ_RUNS) asks for more runs than `n`. */
const timeoutFor = (n: number, ms: number): number => Math.max(60_000, runs(n) * ms);

/** Characters of keys: ASCII letters in both cases, Latin-1, above 255, a lone surrogate. */
const keyChar = fc.constantFrom('a', 'b', 'A', 'B', 'z', 'Z', '0', 'é', 'É', 'ÿ', 'Ā', '中', '\ud800', '\udfff', '😀');
/** Keys around the edges: empty, 1–9 units (inline edge 8), 60–70 units (word edge 64, intern slot edge 64), up to 130 (slot key edge 127). */
const keyArb = fc.oneof(
  fc.string({ unit: keyChar, maxLength: 9 }),
  fc.string({ unit: keyChar, minLength: 60, maxLength: 70 }),
  fc.tuple(fc.constantFrom('a', 'A', 'é'), fc.integer({ min: 60, max: 130 })).map(([c, n]) => c.repeat(n)),
);

/** Hash functions that collide: constant, a few values, by length, or the real one. */
type Hash = (s: string, start: number, end: number) => number;
const hashArb: fc.Arbitrary<{ name: string; fn: Hash }> = fc.constantFrom(
  { name: 'constant', fn: () => 42 },
  { name: 'two values', fn: (s: string, a: number) => (s.charCodeAt(a) & 1) * 0x10001 },
  { name: 'by length', fn: (_s: string, a: number, b: number) => b - a },
  { name: 'low bits only', fn: (s: string, a: number, b: number) => wordHash(s, a, b) & 0x3 },
  { name: 'real', fn: wordHash },
);

describe('InternTable against a Map', () => {
  it('answers what a Map answers under colliding hashes, long values and ids past the slots', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('getOrAdd' as const), v: keyArb }),
      fc.record({ k: fc.constant('get' as const), v: keyArb }),
      fc.record({ k: fc.constant('jump' as const), to: fc.constantFrom(MAX_VALUE - 2, MAX_VALUE + 5, 2 ** 30) }),
    );
    fc.assert(
      fc.property(hashArb, fc.array(op, { maxLength: 400 }), (hash, ops) => {
        const t = new InternTable(hash.fn);
        const ref = new Map<string, number>();
        let next = 0;
        for (const o of ops) {
          if (o.k === 'jump') next = Math.max(next, o.to);
          else if (o.k === 'get') expect(t.get(o.v)).toBe(ref.get(o.v) ?? -1);
          else {
            const want = ref.get(o.v) ?? next;
            expect(t.getOrAdd(o.v, next), JSON.stringify(o.v)).toBe(want);
            if (!ref.has(o.v)) ref.set(o.v, next++);
          }
        }
        for (const [v, id] of ref) expect(t.get(v), JSON.stringify(v)).toBe(id);
      }),
      fuzzParams(300),
    );
  }, timeoutFor(300, 50));

  it('finds every value again after many colliding insertions and growths', () => {
    fc.assert(
      fc.property(hashArb, fc.uniqueArray(keyArb, { maxLength: 3000 }), (hash, values) => {
        const t = new InternTable(hash.fn);
        values.forEach((v, i) => expect(t.getOrAdd(v, i)).toBe(i));
        values.forEach((v, i) => expect(t.getOrAdd(v, 10 ** 6)).toBe(i));
        values.forEach((v, i) => expect(t.get(v)).toBe(i));
      }),
      fuzzParams(40),
    );
  }, timeoutFor(40, 50));
});

const foldAscii = (w: string): string => w.replace(/[A-Z]/g, (c) => c.toLowerCase());

describe('WordMemo against a Map', () => {
  it('gives nothing or the first tokens kept for the word, never another word\'s', () => {
    const toksArb = fc.oneof(
      fc.constant([] as number[]),
      fc.integer({ min: 0, max: MAX_VALUE + 3 }).map((n) => [n]),
      fc.array(fc.nat(1000), { minLength: 2, maxLength: 3 }),
    );
    const op = fc.record({ set: fc.boolean(), word: keyArb, fold: fc.boolean(), toks: toksArb, pre: fc.string({ maxLength: 3 }), clear: fc.integer({ min: 0, max: 60 }) });
    fc.assert(
      fc.property(fc.boolean(), fc.array(op, { maxLength: 300 }), (collide, ops) => {
        const memo = new WordMemo();
        const ref = new Map<string, readonly number[]>();
        for (const o of ops) {
          if (o.clear === 0) {
            memo.clear();
            ref.clear();
          }
          const text = `${o.pre}${o.word}|`;
          const a = o.pre.length;
          const b = a + o.word.length;
          // Colliding: every word of a length hashes alike (the probe gives up past MAX_PROBE).
          const h = collide ? o.word.length : o.fold ? foldedWordHash(text, a, b) : wordHash(text, a, b);
          const refKey = `${o.fold ? 'f' : 'u'}:${o.fold ? foldAscii(o.word) : o.word}`;
          if (o.set) {
            memo.set(text, a, b, h, o.toks, o.fold);
            if (!ref.has(refKey)) ref.set(refKey, o.toks);
          }
          const got = memo.get(text, a, b, h, o.fold);
          if (got !== undefined) {
            const want = ref.get(refKey);
            expect(want, `kept ${refKey} never set`).toBeDefined();
            expect(typeof got === 'number' ? [got] : [...got]).toEqual([...want!]);
          }
        }
      }),
      fuzzParams(300),
    );
  }, timeoutFor(300, 50));
});

describe('TokCounter against a Map', () => {
  it('counts clustered and crafted ids in first-seen order', () => {
    const idArb = fc.oneof(
      fc.nat(64),
      fc.nat(5000),
      fc.integer({ min: 0, max: 50 }).map((k) => k * 2048), // all on one home slot of the usual table
      fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(idArb, fc.integer({ min: 1, max: 3 })), { maxLength: 3000 }), fc.boolean(), (adds, run) => {
        internBoundary();
        const c = new TokCounter(0);
        const ref = new Map<number, number>();
        const all = run ? [...adds, ...Array.from({ length: 2000 }, (_, i) => [100_000 + i, 1] as [number, number])] : adds;
        for (const [tok, n] of all) {
          c.add(tok, n);
          ref.set(tok, (ref.get(tok) ?? 0) + n);
        }
        expect(c.toks).toEqual([...ref.keys()]);
        expect(c.counts).toEqual([...ref.values()]);
        for (const tok of ref.keys()) expect(c.has(tok)).toBe(true);
      }),
      fuzzParams(100),
    );
  }, timeoutFor(100, 50));
});
