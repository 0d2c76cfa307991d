/**
 * Membership under loose equality (`==`, §2.5) in linear time, for `dedup` and `is_intersect` on
 * sender-controlled arrays (a body split into words), where a scan per element was quadratic.
 *
 * Loose equality only relates a String to a String (exactly), a String to a number (through
 * `parse_number`), numbers to numbers (by value) and Arrays to Arrays (element-wise); a Constant
 * equals nothing. So two Sets answer every scalar question; Arrays keep a linear scan.
 */
import { Float, looseEq, num, parseNumber, type Value } from '../value.js';

/** A set of values answering "is some member `==` v". */
export class LooseSet {
  private readonly strings = new Set<string>();
  /** `parse_number` of the member Strings (NaN left out: it equals nothing). */
  private readonly stringNumbers = new Set<number>();
  /** Values of the member Integers and Floats (NaN left out). */
  private readonly numbers = new Set<number>();
  private readonly arrays: Value[][] = [];

  add(v: Value): void {
    if (typeof v === 'string') {
      this.strings.add(v);
      const n = num(parseNumber(v));
      if (!Number.isNaN(n)) this.stringNumbers.add(n);
    } else if (typeof v === 'number' || v instanceof Float) {
      const n = num(v);
      if (!Number.isNaN(n)) this.numbers.add(n);
    } else if (Array.isArray(v)) this.arrays.push(v);
  }

  /** Whether some member is `==` v (loose equality is symmetric, so the side does not matter). */
  has(v: Value): boolean {
    if (typeof v === 'string') {
      if (this.strings.has(v)) return true;
      if (this.numbers.size === 0) return false;
      const n = num(parseNumber(v));
      return !Number.isNaN(n) && this.numbers.has(n);
    }
    if (typeof v === 'number' || v instanceof Float) {
      const n = num(v);
      return !Number.isNaN(n) && (this.numbers.has(n) || this.stringNumbers.has(n));
    }
    if (Array.isArray(v)) return this.arrays.some((a) => looseEq(a, v));
    return false;
  }
}

/** Below this many comparisons a plain scan is cheaper than building Sets. */
const SCAN_LIMIT = 256;

/** `into_array` order kept, each element dropped when an earlier kept one is `==` it. */
export function dedupLoose(arr: readonly Value[]): Value[] {
  const out: Value[] = [];
  if (arr.length * arr.length <= SCAN_LIMIT) {
    for (const el of arr) if (!out.some((x) => looseEq(x, el))) out.push(el);
    return out;
  }
  if (arr.every((x) => typeof x === 'string')) {
    // Between Strings loose equality is exact equality.
    return [...new Set(arr as readonly string[])];
  }
  const seen = new LooseSet();
  for (const el of arr) {
    if (!seen.has(el)) {
      seen.add(el);
      out.push(el);
    }
  }
  return out;
}

/** Whether some element of `a` is `==` some element of `b`. */
export function intersectsLoose(a: readonly Value[], b: readonly Value[]): boolean {
  if (a.length * b.length <= SCAN_LIMIT) return a.some((x) => b.some((y) => looseEq(y, x)));
  const [small, large] = a.length <= b.length ? [a, b] : [b, a];
  const set = new LooseSet();
  for (const v of small) set.add(v);
  return large.some((v) => set.has(v));
}
