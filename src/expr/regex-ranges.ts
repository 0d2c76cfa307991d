/**
 * Character classes of a parsed Rust pattern as sorted code-point ranges, so that RE2 receives
 * plain ranges: it lacks some of Rust's properties (`White_Space`, `Alphabetic`), nested classes and
 * the set operations `&&`, `--`, `~~`. Properties are read from V8's own Unicode tables.
 *
 * Under `(?i)` the ranges are case-folded as Rust's `regex-syntax` folds them: each bracket, each
 * operand of a set operation and each `\p{…}` is closed under simple case folding
 * (`regex-fold.ts`) before it is negated or combined, so `(?i)[^a]` excludes `A` too and
 * `(?i)[a-z--C]` excludes `c`.
 *
 * A range list is a flat array `[lo0, hi0, lo1, hi1, …]`, sorted, disjoint, non-adjacent, of
 * Unicode scalar values (surrogates U+D800–U+DFFF never appear, as in Rust's `char`).
 */
import { foldAdditions } from './regex-fold.js';
import type { ClassItem, ClassSet } from './regex-syntax.js';

export type Ranges = readonly number[];

const MAX_CP = 0x10ffff;
const SUR_LO = 0xd800;
const SUR_HI = 0xdfff;

/** Sorts and merges overlapping or adjacent pairs; drops surrogates. */
export function normalize(pairs: number[]): number[] {
  const list: [number, number][] = [];
  for (let i = 0; i < pairs.length; i += 2) list.push([pairs[i]!, pairs[i + 1]!]);
  list.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of list) {
    const n = out.length;
    if (n > 0 && lo <= out[n - 1]! + 1) out[n - 1] = Math.max(out[n - 1]!, hi);
    else out.push(lo, hi);
  }
  return subtractRaw(out, [SUR_LO, SUR_HI]);
}

function subtractRaw(a: Ranges, b: Ranges): number[] {
  const out: number[] = [];
  let j = 0;
  for (let i = 0; i < a.length; i += 2) {
    let lo = a[i]!;
    const hi = a[i + 1]!;
    while (j < b.length && b[j + 1]! < lo) j += 2;
    let k = j;
    while (k < b.length && b[k]! <= hi && lo <= hi) {
      if (b[k]! > lo) out.push(lo, b[k]! - 1);
      lo = Math.max(lo, b[k + 1]! + 1);
      k += 2;
    }
    if (lo <= hi) out.push(lo, hi);
  }
  return out;
}

export const complement = (a: Ranges): number[] => subtractRaw(normalize([0, MAX_CP]), a);
export const subtract = (a: Ranges, b: Ranges): number[] => subtractRaw(a, b);
export const intersect = (a: Ranges, b: Ranges): number[] => subtractRaw(a, complement(b));
export const unite = (a: Ranges, b: Ranges): number[] => normalize([...a, ...b]);

/** Unicode's White_Space property (Rust's `\s`): small and stable, so written out. */
export const WHITE_SPACE: Ranges = [
  0x09, 0x0d, 0x20, 0x20, 0x85, 0x85, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a,
  0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000,
];

/** Every scalar value in order, once, for enumerating Unicode properties with V8's own tables. */
let allScalars: string | undefined;
const propCache = new Map<string, number[]>();

/** The ranges of a JS property escape such as `\p{Nd}` or `\P{White_Space}` (cached per source). */
function propertyRanges(src: string): number[] {
  const hit = propCache.get(src);
  if (hit !== undefined) return hit;
  if (src === '\\p{White_Space}') return [...WHITE_SPACE];
  if (src === '\\P{White_Space}') return complement(WHITE_SPACE);
  if (allScalars === undefined) {
    const parts: string[] = [];
    for (let cp = 0; cp <= MAX_CP; cp++) if (cp < SUR_LO || cp > SUR_HI) parts.push(String.fromCodePoint(cp));
    allScalars = parts.join('');
  }
  const out: number[] = [];
  // One scan: each run of consecutive members is one range (the string holds the scalars in order).
  for (const m of allScalars.matchAll(new RegExp(`[${src}]+`, 'gu'))) {
    const run = m[0];
    const last = run.codePointAt(run.length - (run.length >= 2 && run.charCodeAt(run.length - 1) >= 0xdc00 && run.charCodeAt(run.length - 1) <= SUR_HI ? 2 : 1))!;
    out.push(run.codePointAt(0)!, last);
  }
  const ranges = normalize(out);
  propCache.set(src, ranges);
  return ranges;
}

/** `r` closed under simple case folding (`regex-fold.ts`). */
export function caseFold(r: Ranges): number[] {
  const add = foldAdditions(r);
  return add.length === 0 ? [...r] : normalize([...r, ...add]);
}

function itemRanges(it: ClassItem, ci: boolean): number[] {
  switch (it.k) {
    case 'cp': return normalize([it.cp, it.cp]);
    case 'range': return normalize([it.lo, it.hi]);
    case 'prop':
      // Rust folds the property, then negates it: (?i)\P{Lu} excludes the lower-case letters too.
      if (ci && it.src.startsWith('\\P')) return complement(caseFold(propertyRanges(`\\p${it.src.slice(2)}`)));
      return propertyRanges(it.src);
    case 'set': return classRanges(it.set, ci);
  }
}

/**
 * The code points a parsed class matches; under `ci` (`(?i)`) closed under simple case folding at
 * each bracket and set operand before negation, as Rust's translator does.
 */
export function classRanges(set: ClassSet, ci = false): number[] {
  if (set.k === 'union') {
    const pairs: number[] = [];
    for (const it of set.items) pairs.push(...itemRanges(it, ci));
    const r = ci ? caseFold(normalize(pairs)) : normalize(pairs);
    return set.negated ? complement(r) : r;
  }
  // Both operands are already closed under folding, and so is what the operation makes of them.
  const l = classRanges(set.left, ci);
  const r = classRanges(set.right, ci);
  if (set.op === '&&') return intersect(l, r);
  if (set.op === '--') return subtract(l, r);
  return unite(subtract(l, r), subtract(r, l));
}
