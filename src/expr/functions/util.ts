/**
 * Helpers shared by the function library: the element-wise `transform` rule and Rust's Unicode
 * `White_Space` set (docs/expression-language.md).
 */
import { toStr, type Value } from '../value.js';

/**
 * Rust `char::is_whitespace` (Unicode White_Space): U+0009–000D, U+0020, U+0085, U+00A0, U+1680,
 * U+2000–200A, U+2028, U+2029, U+202F, U+205F, U+3000. Unlike JS `\s` it excludes U+FEFF (§9.1).
 */
export const WS_CLASS = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const TRIM_START = new RegExp(`^[${WS_CLASS}]+`);
/** One White_Space code unit (every member of WS_CLASS is a single UTF-16 code unit). */
const WS_ONE = new RegExp(`^[${WS_CLASS}]$`);
/** Global so that `match` counts every occurrence; never used with `exec`/`test` (no lastIndex state). */
export const WS_ALL = new RegExp(`[${WS_CLASS}]`, 'g');
export const WS_SPLIT = new RegExp(`[${WS_CLASS}]+`);

/** Rust `str::trim_start` (White_Space, §9.1). */
export function trimStart(s: string): string {
  return s.replace(TRIM_START, '');
}
/**
 * Rust `str::trim_end`: a scan back from the end, linear in the white space removed. (The regex
 * `[…]+$` it replaces is quadratic in V8: it is tried at each position of a white-space run that
 * something else follows, so 80,000 spaces and an `x`, a sender-controlled body, took 2.7 s.)
 */
export function trimEnd(s: string): string {
  let end = s.length;
  while (end > 0 && WS_ONE.test(s[end - 1]!)) end--;
  return end === s.length ? s : s.slice(0, end);
}
/** Rust `str::trim`. */
export function trim(s: string): string {
  return trimEnd(trimStart(s));
}

/**
 * Stalwart's `transform` (§4 "element-wise"): String → f(s); Array → Array of f(to_string(el));
 * any other value → f(to_string(v)).
 */
export function transform(v: Value, f: (s: string) => Value): Value {
  if (typeof v === 'string') return f(v);
  if (Array.isArray(v)) {
    const out = new Array<Value>(v.length);
    for (let i = 0; i < v.length; i++) {
      const el = v[i]!;
      out[i] = f(typeof el === 'string' ? el : toStr(el));
    }
    return out;
  }
  return f(toStr(v));
}

/** Integer 1/0 for a predicate result (there is no boolean type, §2.1). */
export function int(b: boolean): number {
  return b ? 1 : 0;
}

/** Rust `eq_ignore_ascii_case`: ASCII letters fold, every other code unit must be identical. */
export function eqIgnoreAsciiCase(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 65 && x <= 90) x += 32;
    if (y >= 65 && y <= 90) y += 32;
    if (x !== y || x < 97 || x > 122) return false;
  }
  return true;
}
