/**
 * The thread's budget for re2js's DFA caches (src/expr/regex-cache.ts): the least recently used
 * caches are dropped past it, a pattern under it keeps its cache, and no result depends on what the
 * caches hold.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  clearRegexCaches, DEFAULT_REGEX_CACHE_BYTES, PROGRAM_CACHE_BYTES, regexCacheStats, setRegexCacheBudget,
} from '../../src/expr/regex-cache.js';
import { compileRustRegex, type RustRegex } from '../../src/expr/regex.js';
import { prng } from '../../src/util/index.js';

const MiB = 1024 * 1024;

afterEach(() => {
  setRegexCacheBudget(DEFAULT_REGEX_CACHE_BYTES);
  clearRegexCaches();
});

/** Random a/b text: every new character a new state of `[ab]*a[ab]{k}c` (2^k of them). */
function abText(seed: number, length: number): string {
  const next = prng(seed);
  let s = 'c'; // the literal the prefilter looks for, where it cannot end a match
  for (let i = 0; i < length; i++) s += next() < 0.5 ? 'a' : 'b';
  return s;
}

/** A pattern whose DFA outgrows any cap on {@link abText}. */
const explosive = (i: number): RustRegex => compileRustRegex(`[ab]*a[ab]{${14 + i}}c`);

describe('regex cache budget', () => {
  it('tracks every program (the re2js fields it reads are there)', () => {
    compileRustRegex('(?i)\\bviagra\\b').test('buy viagra now');
    compileRustRegex('(?-u)\\b{start-half}ab').test('ab'); // a look-behind program, which re2js never runs on its DFA
    expect(regexCacheStats().untracked).toBe(0);
  });

  it('a pattern under the budget keeps its cache from one search to the next', () => {
    const re = compileRustRegex('(?i)(cheap|credit|casino) \\d+');
    const before = regexCacheStats().evictions;
    re.test('a cheap offer: 100 dollars'.repeat(50));
    const held = re.cacheBytes;
    expect(held).toBeGreaterThan(0);
    // Other patterns come and go, well under the budget: this one's cache stays as it was.
    for (let i = 0; i < 20; i++) compileRustRegex(`word${i}\\s+\\w+`).test(`some text with word${i} in it`);
    expect(re.cacheBytes).toBe(held);
    expect(regexCacheStats().evictions).toBe(before);
    expect(regexCacheStats().bytes).toBeGreaterThanOrEqual(held);
  });

  it("drops the least recently used caches when the total passes the budget, and caps each program at a quarter of it", () => {
    setRegexCacheBudget(4 * MiB);
    const res = Array.from({ length: 8 }, (_, i) => explosive(i));
    const before = regexCacheStats().evictions;
    res.forEach((re, i) => {
      re.test(abText(i, 20_000));
      expect(re.cacheBytes).toBeLessThanOrEqual(MiB);
      expect(regexCacheStats().bytes).toBeLessThanOrEqual(4 * MiB);
    });
    expect(regexCacheStats().evictions).toBeGreaterThan(before);
    // The last searched is kept, the first ones were dropped.
    expect(res[7]!.cacheBytes).toBeGreaterThan(0);
    expect(res[0]!.cacheBytes).toBe(0);
    // A search makes a program the most recent again: the next evictions spare it, not the ones searched before it.
    res[1]!.test(abText(100, 20_000));
    for (const i of [2, 3]) res[i]!.test(abText(i + 200, 20_000));
    expect(res[1]!.cacheBytes).toBeGreaterThan(0);
    expect(res[7]!.cacheBytes).toBe(0);
  });

  it('a lower budget drops the caches over it at once; the default cap is RE2\'s 8 MiB', () => {
    const re = explosive(0);
    re.test(abText(1, 40_000));
    expect(re.cacheBytes).toBeGreaterThan(2 * MiB);
    expect(re.cacheBytes).toBeLessThanOrEqual(PROGRAM_CACHE_BYTES);
    setRegexCacheBudget(2 * MiB);
    expect(regexCacheStats().bytes).toBeLessThanOrEqual(2 * MiB);
    expect(re.cacheBytes).toBe(0);
  });

  it.each([0, 1000, Number.NaN, -1, '64MB'])('refuses the budget %j', (bytes) => {
    expect(() => setRegexCacheBudget(bytes as number)).toThrow(TypeError);
  });
});

describe('results do not depend on the caches', () => {
  /** Small random patterns over a tiny alphabet (so that they match often), with groups and Unicode boundaries. */
  function randomPattern(next: () => number): string {
    const atoms = ['a', 'b', '[ab]', '.', '\\w', 'é', '(a|b)', '(?:ab)*', 'b+?', '\\b', '(?i:A)', '[^a]'];
    const pick = (): string => atoms[Math.floor(next() * atoms.length)]!;
    let p = '';
    const n = 1 + Math.floor(next() * 6);
    for (let i = 0; i < n; i++) p += pick() + (next() < 0.3 ? ['*', '+', '?', '{2}'][Math.floor(next() * 4)]! : '');
    return p;
  }
  function randomSubject(next: () => number): string {
    const chars = 'abé ab\nxA';
    let s = '';
    const n = Math.floor(next() * 40);
    for (let i = 0; i < n; i++) s += chars[Math.floor(next() * chars.length)];
    return s;
  }
  const show = (m: ReturnType<RustRegex['exec']>): unknown => (m === null ? null : [...m]);

  it('gives the same matches and groups warm, after every cache is dropped, and under a budget that keeps dropping them', () => {
    const next = prng(7);
    const cases: [RustRegex, string][] = [];
    for (let i = 0; i < 150; i++) {
      let re: RustRegex;
      try {
        re = compileRustRegex(randomPattern(next));
      } catch {
        continue; // e.g. a repetition of `\b`
      }
      for (let j = 0; j < 8; j++) cases.push([re, randomSubject(next)]);
    }
    expect(cases.length).toBeGreaterThan(800);
    const run = (): unknown[] => cases.map(([re, s]) => [re.test(s), show(re.exec(s))]);
    const warm = run();
    expect(run()).toEqual(warm); // from warm caches
    clearRegexCaches();
    expect(regexCacheStats().bytes).toBe(0);
    expect(run()).toEqual(warm); // rebuilt from empty ones
    setRegexCacheBudget(1 * MiB); // the smallest: with the explosive patterns, evictions at almost every search
    const big = [explosive(1), explosive(2)];
    const evictions = regexCacheStats().evictions;
    const churned = cases.map(([re, s], i) => {
      if (i % 50 === 0) for (const b of big) b.test(abText(i, 5_000));
      return [re.test(s), show(re.exec(s))];
    });
    expect(regexCacheStats().evictions).toBeGreaterThan(evictions);
    expect(churned).toEqual(warm);
  });
});
