/**
 * The Stalwart expression value model (docs/expression-language.md).
 *
 * Representation, chosen so that the common cases (strings and 0/1 integers) are plain JS values:
 *
 * | Stalwart type | JS representation                                   |
 * |---------------|-----------------------------------------------------|
 * | String        | `string`                                            |
 * | Integer (i64) | `number`, always integral (saturated to ±(2^63−1)) |
 * | Float (f64)   | {@link Float} (a box, so `2.0` stays distinct from `2`) |
 * | Array         | `Value[]` (treat as immutable once built)           |
 * | Constant      | {@link Constant} (one interned instance per name)   |
 *
 * Integers are JS doubles: exact up to 2^53, which rules never approach (spec §2.8 allows this).
 * There is no null: the "missing" value is the empty string `""` (§2.1).
 */
import { MAX_VALUE_CHARS, tooLarge } from './limits.js';

/** A Stalwart f64 value. Boxed so that Float 2.0 and Integer 2 stay different types. */
export class Float {
  constructor(readonly value: number) {}
}

/** An opaque ExpressionConstant (§3.2): truthy, never `==` anything, ordered by enum ordinal. */
export class Constant {
  private constructor(
    readonly name: string,
    readonly ordinal: number,
  ) {}
  private static readonly byName = new Map<string, Constant>();
  /** The 19 names of the schema enum `ExpressionConstant`, in enum order. */
  static readonly NAMES: readonly string[] = [
    'relaxed', 'strict', 'disable', 'optional', 'require', 'ipv4_only', 'ipv6_only', 'ipv6_then_ipv4',
    'ipv4_then_ipv6', 'hourly', 'daily', 'weekly', 'login', 'plain', 'xoauth2', 'oauthbearer', 'mixer',
    'stanag4406', 'nsep',
  ];
  /** Returns the interned constant, or `undefined` for a name that is not an ExpressionConstant. */
  static of(name: string): Constant | undefined {
    let c = Constant.byName.get(name);
    if (c === undefined) {
      const i = Constant.NAMES.indexOf(name);
      if (i < 0) return undefined;
      c = new Constant(name, i);
      Constant.byName.set(name, c);
    }
    return c;
  }
}

export type Value = string | number | Float | Constant | Value[];

/** i64::MAX / i64::MIN as the nearest doubles; used for saturating integer arithmetic (§2.8). */
export const I64_MAX = 9223372036854775807;
export const I64_MIN = -9223372036854775808;

export function saturate(n: number): number {
  if (n > I64_MAX) return I64_MAX;
  if (n < I64_MIN) return I64_MIN;
  return n === 0 ? 0 : n; // never produce -0 for an Integer
}

export function isInteger(v: Value): v is number {
  return typeof v === 'number';
}

/** Truthiness (§2.2). */
export function toBool(v: Value): boolean {
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'number') return v !== 0;
  if (v instanceof Float) return v.value !== 0; // NaN is truthy
  if (Array.isArray(v)) return v.length > 0;
  return true; // Constant
}

/** Float → string as Rust compact_str/zmij formats it for `to_string` (§9.2). */
export function floatToString(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const neg = x < 0;
  const exp = Math.abs(x).toExponential(); // "d.ddde±k"
  const [mant, e] = exp.split('e') as [string, string];
  const digits = mant.replace('.', '');
  const n = digits.length;
  const kk = Number(e) + 1; // value = 0.d1..dn × 10^kk
  let out: string;
  if (Number.isInteger(x) && kk <= 16) {
    out = digits + '0'.repeat(Math.max(0, kk - n)) + '.0';
  } else if (kk > 0 && kk <= 16) {
    out = digits.slice(0, kk) + '.' + digits.slice(kk);
  } else if (kk > -5 && kk <= 0) {
    out = '0.' + '0'.repeat(-kk) + digits;
  } else {
    const k = kk - 1;
    out = digits[0]! + (n > 1 ? '.' + digits.slice(1) : '') + 'e' + (k >= 0 ? '+' : '-') + Math.abs(k);
  }
  return neg ? '-' + out : out;
}

/** Float → string as Rust `Display` formats it, used only by `+` concatenation (§9.3). */
export function floatToDisplay(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const neg = x < 0;
  const [mant, e] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mant.replace('.', '');
  const point = Number(e) + 1; // digits before the decimal point
  let out: string;
  if (point <= 0) out = '0.' + '0'.repeat(-point) + digits;
  else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
  else out = digits.slice(0, point) + '.' + digits.slice(point);
  return neg ? '-' + out : out;
}

/**
 * `to_string()` (§2.3 format 1): arrays are CRLF-joined, a CRLF being added before an element
 * only when the text so far is non-empty; nested arrays contribute nothing.
 * @throws ExprEvalError when the joined text would exceed MAX_VALUE_CHARS (limits.ts)
 */
export function toStr(v: Value): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (v instanceof Float) return floatToString(v.value);
  if (v instanceof Constant) return v.name;
  let out = '';
  for (const el of v) {
    if (out.length > 0) out += '\r\n';
    if (!Array.isArray(el)) out += toStr(el);
    // The join is where values grow (2 characters per element): `split(…, '')` of a join of a
    // `split(…, '')` triples the size at every level.
    if (out.length > MAX_VALUE_CHARS) tooLarge('a string', out.length, MAX_VALUE_CHARS);
  }
  return out;
}

/** `Display` (§2.3 format 2) for scalars; used by `+` only. */
export function toDisplay(v: Value): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (v instanceof Float) return floatToDisplay(v.value);
  if (v instanceof Constant) return v.name;
  return toStr(v);
}

const INT_RE = /^[+-]?[0-9]+$/;
/**
 * Rust's f64 grammar. Each character has one way to match: the mantissa is digits with an optional
 * fraction, or a fraction alone. (Written `[0-9]+\.?[0-9]*` the digits could be shared between the two
 * runs in n ways, and V8 tried each before failing, so `'0' × 40,000 + 'x'` — a header compared with
 * a number — took 0.9 s, quadratic in the digits.)
 */
const FLOAT_RE = /^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)$/i;

/** Rust `str::parse::<i64>()`; `undefined` on failure (including overflow). */
export function parseI64(s: string): number | undefined {
  if (!INT_RE.test(s)) return undefined;
  const neg = s.charCodeAt(0) === 45; /* - */
  const digits = significant(s.charCodeAt(0) <= 45 ? s.slice(1) : s); // after a `+` or `-`
  // More than 19 significant digits is out of range whatever they are; BigInt only sees at most 19
  // (its parse is superlinear: 4 Mi digits of a header compared with a number took 2.4 s).
  if (digits.length > 19) return undefined;
  const b = BigInt(neg ? '-' + digits : digits);
  if (b > 9223372036854775807n || b < -9223372036854775808n) return undefined;
  return saturate(Number(b));
}

/** ASCII digits without their leading zeros (`'007'` → `'7'`, `'000'` → `'0'`). */
function significant(digits: string): string {
  let i = 0;
  while (i < digits.length - 1 && digits.charCodeAt(i) === 48) i++;
  return i === 0 ? digits : digits.slice(i);
}

/** Rust `str::parse::<f64>()`; `undefined` on failure. */
export function parseF64(s: string): number | undefined {
  if (!FLOAT_RE.test(s)) return undefined;
  const t = s.toLowerCase().replace(/^\+/, '');
  if (t === 'inf' || t === 'infinity') return Infinity;
  if (t === '-inf' || t === '-infinity') return -Infinity;
  if (t === 'nan' || t === '-nan') return NaN;
  return Number(t);
}

/** `parse_number` (§2.4): Integer or Float. */
export function parseNumber(v: Value): number | Float {
  if (typeof v === 'number' || v instanceof Float) return v;
  if (typeof v === 'string') {
    if (v.length === 0) return 0;
    const i = parseI64(v);
    if (i !== undefined) return i;
    const f = parseF64(v);
    return f !== undefined ? new Float(f) : 0;
  }
  if (Array.isArray(v)) return v.length === 0 ? 1 : 0; // sic
  return 0; // Constant
}

/** The numeric value of an Integer or Float. */
export function num(v: number | Float): number {
  return typeof v === 'number' ? v : v.value;
}

/** `==` (§2.5), the `PartialEq` impl. */
export function looseEq(a: Value, b: Value): boolean {
  if (typeof a === 'string') {
    if (typeof b === 'string') return a === b;
    if (typeof b === 'number' || b instanceof Float) return num(parseNumber(a)) === num(b);
    return false;
  }
  if (typeof a === 'number' || a instanceof Float) {
    if (typeof b === 'number' || b instanceof Float) return num(a) === num(b);
    if (typeof b === 'string') return num(a) === num(parseNumber(b));
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!looseEq(a[i]!, b[i]!)) return false;
    return true;
  }
  return false; // Constant never equals anything
}

function cmpNum(x: number, y: number): number | undefined {
  if (Number.isNaN(x) || Number.isNaN(y)) return undefined;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Byte-wise (UTF-8) lexicographic comparison of two strings. */
export function cmpBytes(a: string, b: string): number {
  if (a === b) return 0;
  // UTF-16 order differs from UTF-8 order only around surrogates; compare code points.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * `PartialOrd` (§2.5): −1, 0, 1, or `undefined` when the comparison is undefined (NaN).
 */
export function partialCmp(a: Value, b: Value): number | undefined {
  const aNum = typeof a === 'number' || a instanceof Float;
  const bNum = typeof b === 'number' || b instanceof Float;
  if (aNum && bNum) return cmpNum(num(a as number | Float), num(b as number | Float));
  if (typeof a === 'string' && typeof b === 'string') return cmpBytes(a, b);
  if (typeof a === 'string' && bNum) return cmpNum(num(parseNumber(a)), num(b as number | Float));
  if (aNum && typeof b === 'string') return cmpNum(num(a as number | Float), num(parseNumber(b)));
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) {
      const c = partialCmp(a[i]!, b[i]!);
      if (c !== 0) return c;
    }
    return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
  }
  if (Array.isArray(a) || typeof a === 'string') return 1;
  if (a instanceof Constant && b instanceof Constant) return a.ordinal < b.ordinal ? -1 : a.ordinal > b.ordinal ? 1 : 0;
  return -1;
}

/** `cmp` used by `sort`: the partial order with "undefined" treated as Greater. */
export function totalCmp(a: Value, b: Value): number {
  return partialCmp(a, b) ?? 1;
}

/** `into_array` (§2.9): Array → itself, `""` → `[]`, anything else → `[v]`. */
export function intoArray(v: Value): Value[] {
  if (Array.isArray(v)) return v;
  if (v === '') return [];
  return [v];
}

const USIZE_MAX = 18446744073709551615n;

/** `to_usize` for indexes (§2.9). Negative integers wrap to huge values (→ out of range). */
export function toUsize(v: Value): number {
  if (typeof v === 'number') return v < 0 ? Number.MAX_SAFE_INTEGER : v;
  if (v instanceof Float) {
    const x = v.value;
    if (Number.isNaN(x) || x <= 0) return 0;
    return Math.trunc(x);
  }
  if (typeof v === 'string') {
    if (!/^\+?[0-9]+$/.test(v)) return 0;
    const digits = significant(v.charCodeAt(0) === 43 /* + */ ? v.slice(1) : v);
    // `parse::<usize>` fails on overflow (a 64-bit usize), and a failed parse is index 0 (§2.9).
    // Compared by length first: BigInt's parse of millions of digits is superlinear (see parseI64).
    if (digits.length > 20 || (digits.length === 20 && BigInt(digits) > USIZE_MAX)) return 0;
    return Number(digits);
  }
  return 0;
}

/** `to_integer`: Integer; Float truncated; a non-empty String parsed as i64; otherwise `undefined`. */
export function toInteger(v: Value): number | undefined {
  if (typeof v === 'number') return v;
  if (v instanceof Float) {
    if (Number.isNaN(v.value)) return 0;
    return saturate(Math.trunc(v.value));
  }
  if (typeof v === 'string' && v.length > 0) return parseI64(v);
  return undefined;
}

/** Is this a Stalwart String value? */
export function isString(v: Value): v is string {
  return typeof v === 'string';
}
