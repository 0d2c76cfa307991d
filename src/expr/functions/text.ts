/**
 * Text functions (docs/expression-language.md; Stalwart `functions/text.rs`), emulating the Rust
 * `str` primitives they call (§9.1): UTF-8 byte lengths, Unicode White_Space, `split("")` at every
 * char boundary, `lines`, ASCII-only case folding where Rust uses it.
 */
import { looseEq, toInteger, toStr, toUsize, type Value } from '../value.js';
import { checkedLength, MAX_ARRAY_ELEMENTS, tooLarge } from '../limits.js';
import type { SyncFunctionDef } from './types.js';
import { eqIgnoreAsciiCase, int, transform, trim, trimEnd, trimStart, WS_ALL, WS_SPLIT } from './util.js';

function sync(arity: number, fn: SyncFunctionDef['fn']): SyncFunctionDef {
  return { arity, async: false, fn };
}

/** An alphabetic char that is not Uppercase (negated class = Alphabetic ∧ ¬Uppercase). */
const NOT_UPPER = /[^\P{Alphabetic}\p{Uppercase}]/u;
const NOT_LOWER = /[^\P{Alphabetic}\p{Lowercase}]/u;
const UPPER_ALL = /[^\P{Alphabetic}\P{Uppercase}]/gu;
const LOWER_ALL = /[^\P{Alphabetic}\P{Lowercase}]/gu;
const ASCII_DIGIT = /[0-9]/;
const ALNUM_WORD = /^[\p{Alphabetic}\p{N}]+$/u;

/** Code units matched at a time by {@link countMatches}. */
const COUNT_CHUNK = 65536;

/**
 * Number of matches of a global regex of one character (a code point) in `s`, matched a chunk at a
 * time: `s.match` over the whole text built an array of every match first, 8 bytes each, so
 * `count_spaces` of a 32 Mi-character text of spaces ran out of a 200 MB heap (and took 1.9 GB for
 * the 64 Mi limit). A chunk never ends between the two halves of a surrogate pair, so every code
 * point is matched whole, in one chunk.
 */
function countMatches(s: string, re: RegExp): number {
  let n = 0;
  for (let i = 0; i < s.length; ) {
    let end = Math.min(s.length, i + COUNT_CHUNK);
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end++;
    const m = (end - i === s.length ? s : s.slice(i, end)).match(re);
    if (m !== null) n += m.length;
    i = end;
  }
  return n;
}

/** Unicode scalar values in `s` (a high surrogate followed by a low one is one), counted without building an array. */
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * Rust `str::split(sep)`: an empty separator matches at every char boundary, both ends included.
 * @throws ExprEvalError for more than MAX_ARRAY_ELEMENTS parts (limits.ts)
 */
export function rustSplit(s: string, sep: string): string[] {
  // JS `split`'s limit stops the work at the cap instead of building a huge array first.
  if (sep !== '') return checkedLength(s.split(sep, MAX_ARRAY_ELEMENTS + 1));
  if (s.length + 2 > MAX_ARRAY_ELEMENTS) {
    const n = codePoints(s) + 2;
    if (n > MAX_ARRAY_ELEMENTS) tooLarge('an array', n, MAX_ARRAY_ELEMENTS);
  }
  return ['', ...s, ''];
}

/** The UTF-16 code units of `s` in reverse order: `p` ends at i in `s` where `mirror(p)` starts at `s.length - i` in `mirror(s)`. */
function mirror(s: string): string {
  return s.length < 2 ? s : s.split('').reverse().join('');
}

/**
 * Rust `str::rsplit(sep)`: the parts from the right, the separator searched from the right, so a
 * separator that overlaps itself splits where Rust does (`rsplit('aaa','aa')` → `['','a']`, not
 * the reverse of `split`'s `['','a']` → `['a','']`). An empty separator is `split`'s reversed.
 *
 * Searching from the right is searching the mirrored text from the left (each match is the
 * rightmost one left of the previous), which is how a separator longer than one code unit is
 * handled: V8's `lastIndexOf` compares backwards naively, in time text × separator (a separator of
 * 40,000 `a`s and a `b` over 80,000 `a`s took 0.8 s), where `split` searches in linear time.
 * @throws ExprEvalError for more than MAX_ARRAY_ELEMENTS parts (limits.ts)
 */
export function rustRsplit(s: string, sep: string): string[] {
  if (sep === '') return rustSplit(s, sep).reverse();
  if (sep.length > 1) return checkedLength(mirror(s).split(mirror(sep), MAX_ARRAY_ELEMENTS + 1)).map(mirror);
  const out: string[] = [];
  let end = s.length;
  while (end >= sep.length) {
    const at = s.lastIndexOf(sep, end - sep.length);
    if (at < 0) break;
    if (out.length + 2 > MAX_ARRAY_ELEMENTS) tooLarge('an array', out.length + 2, MAX_ARRAY_ELEMENTS);
    out.push(s.slice(at + sep.length, end));
    end = at;
  }
  out.push(s.slice(0, end));
  return out;
}
/** Rust `str::lines`: split on LF; a CR is removed only before a LF; no final empty line. */
export function rustLines(s: string): string[] {
  if (s === '') return [];
  // One more than the cap, so that a final empty part popped below cannot hide an overflow.
  const parts = s.split('\n', MAX_ARRAY_ELEMENTS + 2);
  if (parts.length > MAX_ARRAY_ELEMENTS + 1 || (parts.length === MAX_ARRAY_ELEMENTS + 1 && parts[MAX_ARRAY_ELEMENTS] !== '')) {
    tooLarge('an array', parts.length, MAX_ARRAY_ELEMENTS);
  }
  if (parts[parts.length - 1] === '') parts.pop();
  const last = s.endsWith('\n') ? parts.length : parts.length - 1;
  for (let i = 0; i < last; i++) {
    const p = parts[i]!;
    if (p.endsWith('\r')) parts[i] = p.slice(0, -1);
  }
  return parts;
}

/** Upper bound of `split_n` iterations on an empty separator, where Stalwart would loop forever. */
export const SPLIT_N_EMPTY_SEP_MAX = 1024;

/**
 * Stalwart's `split_n`: `n` times `split_once(sep)` from the left, then the remainder, so at most
 * n+1 parts. An empty separator yields `""` each time (`split_n('ab','',2)` → `['','','ab']`); its
 * count is capped at {@link SPLIT_N_EMPTY_SEP_MAX} because the Rust loop never ends for a huge n.
 */
export function splitN(s: string, sep: string, n: number): string[] {
  const out: string[] = [];
  if (sep === '') {
    const k = Math.min(n, SPLIT_N_EMPTY_SEP_MAX);
    for (let i = 0; i < k; i++) out.push('');
    out.push(s);
    return out;
  }
  let rest = s;
  for (let i = 0; i < n; i++) {
    const at = rest.indexOf(sep);
    if (at < 0) break;
    if (out.length + 2 > MAX_ARRAY_ELEMENTS) tooLarge('an array', out.length + 2, MAX_ARRAY_ELEMENTS);
    out.push(rest.slice(0, at));
    rest = rest.slice(at + sep.length);
  }
  out.push(rest);
  return out;
}

/** Start of the last `sep` in `s`, or -1; linear in time for any separator (see {@link rustRsplit}). */
function lastIndex(s: string, sep: string): number {
  if (sep.length <= 1) return s.lastIndexOf(sep);
  const m = mirror(s).indexOf(mirror(sep));
  return m < 0 ? -1 : s.length - m - sep.length;
}

/** `Some([a, b])` at the first (or last) occurrence; an empty separator splits at 0 (or the end). */
function splitOnce(s: string, sep: string, last: boolean): Value {
  const at = last ? lastIndex(s, sep) : s.indexOf(sep);
  if (at < 0) return '';
  return [s.slice(0, at), s.slice(at + sep.length)];
}

export const TEXT_FUNCTIONS: Record<string, SyncFunctionDef> = {
  /** Element-wise; always Strings (`trim(5)` → `'5'`). White_Space excludes U+FEFF. */
  trim: sync(1, ([v]) => transform(v!, trim)),
  trim_start: sync(1, ([v]) => transform(v!, trimStart)),
  trim_end: sync(1, ([v]) => transform(v!, trimEnd)),
  /** String → UTF-8 byte length; Array → element count; other → byte length of `ts(v)`. */
  len: sync(1, ([v]) => {
    if (Array.isArray(v)) return v.length;
    return Buffer.byteLength(typeof v === 'string' ? v : toStr(v!), 'utf8');
  }),
  to_lowercase: sync(1, ([v]) => transform(v!, (s) => s.toLowerCase())),
  to_uppercase: sync(1, ([v]) => transform(v!, (s) => s.toUpperCase())),
  /** Element-wise: every alphabetic char is Uppercase (vacuously 1). */
  is_uppercase: sync(1, ([v]) => transform(v!, (s) => int(!NOT_UPPER.test(s)))),
  is_lowercase: sync(1, ([v]) => transform(v!, (s) => int(!NOT_LOWER.test(s)))),
  /** Element-wise: contains an ASCII digit. */
  has_digits: sync(1, ([v]) => transform(v!, (s) => int(ASCII_DIGIT.test(s)))),
  /** White_Space chars in `ts(v)` (the CRLF of array joins count). */
  count_spaces: sync(1, ([v]) => countMatches(toStr(v!), WS_ALL)),
  count_uppercase: sync(1, ([v]) => countMatches(toStr(v!), UPPER_ALL)),
  count_lowercase: sync(1, ([v]) => countMatches(toStr(v!), LOWER_ALL)),
  /** Unicode scalar values in `ts(v)`. */
  count_chars: sync(1, ([v]) => codePoints(toStr(v!))),
  /** String → substring test; Array → membership under `==`; other → substring test on `ts(h)`. */
  contains: sync(2, ([h, n]) => {
    if (typeof h === 'string') return int(h.includes(typeof n === 'string' ? n : toStr(n!)));
    if (Array.isArray(h)) {
      for (let i = 0; i < h.length; i++) if (looseEq(h[i]!, n!)) return 1;
      return 0;
    }
    return int(toStr(h!).includes(toStr(n!)));
  }),
  /**
   * String → Unicode-lowercased substring test; Array → some String element equals `ts(n)`
   * ignoring ASCII case (whole element); other → case-sensitive substring test on `ts(h)`.
   */
  contains_ignore_case: sync(2, ([h, n]) => {
    const needle = toStr(n!);
    if (typeof h === 'string') return int(h.toLowerCase().includes(needle.toLowerCase()));
    if (Array.isArray(h)) {
      for (let i = 0; i < h.length; i++) {
        const el = h[i]!;
        if (typeof el === 'string' && eqIgnoreAsciiCase(el, needle)) return 1;
      }
      return 0;
    }
    return int(toStr(h!).includes(needle));
  }),
  /** ASCII-only case-insensitive equality of `ts(a)` and `ts(b)`. */
  eq_ignore_case: sync(2, ([a, b]) => int(eqIgnoreAsciiCase(toStr(a!), toStr(b!)))),
  starts_with: sync(2, ([a, b]) =>
    int((typeof a === 'string' ? a : toStr(a!)).startsWith(typeof b === 'string' ? b : toStr(b!))),
  ),
  ends_with: sync(2, ([a, b]) =>
    int((typeof a === 'string' ? a : toStr(a!)).endsWith(typeof b === 'string' ? b : toStr(b!))),
  ),
  /** String → Array of lines (Rust `str::lines`); non-String → unchanged. */
  lines: sync(1, ([v]) => (typeof v === 'string' ? rustLines(v) : v!)),
  /** Skip `start` chars of `ts(s)`, take `n` (indices via `to_usize`). */
  substring: sync(3, ([s, start, n]) => {
    const from = toUsize(start!);
    const count = toUsize(n!);
    let out = '';
    let i = 0;
    for (const ch of toStr(s!)) {
      if (i >= from + count) break;
      if (i >= from) out += ch;
      i++;
    }
    return out;
  }),
  /** Element-wise; an absent prefix gives `""`; an empty prefix returns the input. */
  strip_prefix: sync(2, ([v, p]) => {
    const pre = toStr(p!);
    return transform(v!, (s) => (s.startsWith(pre) ? s.slice(pre.length) : ''));
  }),
  strip_suffix: sync(2, ([v, p]) => {
    const suf = toStr(p!);
    return transform(v!, (s) => (s.endsWith(suf) ? s.slice(0, s.length - suf.length) : ''));
  }),
  split: sync(2, ([s, sep]) => rustSplit(toStr(s!), toStr(sep!))),
  rsplit: sync(2, ([s, sep]) => rustRsplit(toStr(s!), toStr(sep!))),
  split_once: sync(2, ([s, sep]) => splitOnce(toStr(s!), toStr(sep!), false)),
  rsplit_once: sync(2, ([s, sep]) => splitOnce(toStr(s!), toStr(sep!), true)),
  /** `n` via `to_integer` (failure → 0) cast to usize, so a negative n is effectively unlimited. */
  split_n: sync(3, ([s, sep, n]) => {
    const k = toInteger(n!) ?? 0;
    return splitN(toStr(s!), toStr(sep!), k < 0 ? Number.MAX_SAFE_INTEGER : k);
  }),
  /** Whitespace-separated words made only of Alphabetic/Numeric chars. */
  split_words: sync(1, ([v]) => checkedLength(toStr(v!).split(WS_SPLIT, MAX_ARRAY_ELEMENTS + 1)).filter((w) => ALNUM_WORD.test(w))),
};
