/**
 * Unicode word boundaries on an engine that has none. RE2 (re2js) knows only ASCII `\b` and no
 * look-ahead, while Rust's `\b \B \< \> \b{start}…` look at Unicode word characters (`\w`:
 * Alphabetic, M, Nd, Pc, Join_Control) on both sides. A pattern with such an assertion is therefore
 * searched in a marked copy of the subject: before every character, and at the end, one mark
 * character says what Rust's assertions need to know at that position (is the character before
 * / after a word character, Unicode and ASCII; the start or end of the haystack; a LF before or
 * after). An assertion then reads the mark (consumes it, or looks one character behind when the
 * mark was already consumed), and every character the pattern matches may be preceded by a mark
 * (`mark? char`). Marks are lone low surrogates U+DC00–U+DCFF, which no subject holds (a lone
 * surrogate in a subject is replaced by U+FFFD, as Rust strings cannot hold one) and no pattern
 * atom matches; they are removed from the match and its groups.
 */

/** First mark: U+DC00 + the 8 bits below. */
const MARK = 0xdc00;
const PREV_U = 1;
const NEXT_U = 2;
const PREV_A = 4;
const NEXT_A = 8;
const START = 16;
const END = 32;
const PREV_LF = 64;
/** Each NEXT_* bit is its PREV_* bit shifted one place up (`markSubject` relies on it). */
const NEXT_LF = 128;

/** The code points marks use, so that pattern atoms can leave them out. */
export const MARK_RANGE: readonly [number, number] = [MARK, MARK + 255];

const WORD_U = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]/u;
/**
 * Per BMP code unit, the bits of {@link PREV_U}/{@link PREV_A}/{@link PREV_LF} the character gives the
 * mark after it; the mark before it takes the same bits shifted one place up (NEXT_* = PREV_* << 1).
 * Built on first use (about 10 ms).
 */
let bmpBits: Uint8Array | undefined;

function bmpTable(): Uint8Array {
  const t = new Uint8Array(0x10000);
  for (let c = 0; c < 0x80; c++) {
    if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f) t[c] = PREV_U | PREV_A;
  }
  t[10] = PREV_LF;
  for (let c = 0x80; c <= 0xffff; c++) if (WORD_U.test(String.fromCharCode(c))) t[c] = PREV_U;
  return t;
}

let lastIn: string | undefined;
let lastOut = '';
/** Reused for subjects up to this many code units of output; a larger one gets its own buffer. */
const SHARED_UNITS = 1 << 16;
let shared: Uint16Array | undefined;

/**
 * The subject with a mark before each character and one at the end (the last result is cached). Built
 * in a typed array and turned into a string in slices: about 3 ns a character, where an array of
 * one-character strings joined cost 60 (a Body rule with `\b` pays this once per part).
 */
export function markSubject(s: string): string {
  if (s === lastIn) return lastOut;
  const table = (bmpBits ??= bmpTable());
  const n = s.length;
  const units = 2 * n + 1;
  const buf = units <= SHARED_UNITS ? (shared ??= new Uint16Array(SHARED_UNITS)) : new Uint16Array(units);
  let o = 0;
  let prev = START; // the previous character's bits as PREV_*
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    let bits: number;
    if (c >= 0xd800 && c <= 0xdfff) {
      if (c <= 0xdbff && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        // An astral character: two code units after its mark.
        const c2 = s.charCodeAt(i + 1);
        bits = WORD_U.test(String.fromCharCode(c, c2)) ? PREV_U : 0;
        buf[o++] = MARK + prev + (bits << 1);
        buf[o++] = c;
        buf[o++] = c2;
        prev = bits;
        i++;
        continue;
      }
      // A lone surrogate becomes U+FFFD (Rust strings cannot hold one; marks are lone surrogates).
      c = 0xfffd;
    }
    bits = table[c]!;
    buf[o++] = MARK + prev + (bits << 1);
    buf[o++] = c;
    prev = bits;
  }
  buf[o++] = MARK + prev + END;
  let out = '';
  for (let k = 0; k < o; k += 8192) out += String.fromCharCode.apply(null, buf.subarray(k, Math.min(o, k + 8192)) as unknown as number[]);
  lastIn = s;
  lastOut = out;
  return out;
}

const MARKS = /(?<![\ud800-\udbff])[\udc00-\udcff]/g;

/** A matched string without its marks. */
export const unmark = (s: string): string => s.replace(MARKS, '');

/** The assertions of `regex-syntax.ts` as a test of a mark's bits. */
export function markTest(kind: string, unicode: boolean): (bits: number) => boolean {
  const [p, n] = unicode ? [PREV_U, NEXT_U] : [PREV_A, NEXT_A];
  switch (kind) {
    case 'start': return (b) => (b & START) !== 0;
    case 'end': return (b) => (b & END) !== 0;
    case 'lineStart': return (b) => (b & (START | PREV_LF)) !== 0;
    case 'lineEnd': return (b) => (b & (END | NEXT_LF)) !== 0;
    case 'word': return (b) => ((b & p) === 0) !== ((b & n) === 0);
    case 'notWord': return (b) => ((b & p) === 0) === ((b & n) === 0);
    case 'wordStart': return (b) => (b & p) === 0 && (b & n) !== 0;
    case 'wordEnd': return (b) => (b & p) !== 0 && (b & n) === 0;
    case 'wordStartHalf': return (b) => (b & p) === 0;
    default: return (b) => (b & n) === 0; // wordEndHalf
  }
}

/** The RE2 class of the marks passing `test`, as ranges. */
export function markClass(test: (bits: number) => boolean): string {
  let out = '';
  for (let b = 0; b < 256; b++) {
    if (!test(b)) continue;
    let e = b;
    while (e + 1 < 256 && test(e + 1)) e++;
    out += e === b ? `\\x{${(MARK + b).toString(16)}}` : `\\x{${(MARK + b).toString(16)}}-\\x{${(MARK + e).toString(16)}}`;
    b = e;
  }
  return out === '' ? '[^\\x{0}-\\x{10ffff}]' : `[${out}]`;
}

/** Any mark. */
export const ANY_MARK = `[\\x{${MARK.toString(16)}}-\\x{${(MARK + 255).toString(16)}}]`;
