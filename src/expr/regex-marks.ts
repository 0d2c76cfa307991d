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
const PREV_LF = 32;
const END = 64;
const NEXT_LF = 128;

/** The code points marks use, so that pattern atoms can leave them out. */
export const MARK_RANGE: readonly [number, number] = [MARK, MARK + 255];

const WORD_U = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]/u;
/** Bit 0: Unicode word character; bit 1: ASCII word character. Built on first use. */
let bmpWord: Uint8Array | undefined;

function wordBits(cp: number): number {
  if (cp < 0x80) return (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f ? 3 : 0;
  if (cp > 0xffff) return WORD_U.test(String.fromCodePoint(cp)) ? 1 : 0;
  if (bmpWord === undefined) {
    bmpWord = new Uint8Array(0x10000);
    for (let c = 0x80; c <= 0xffff; c++) if (WORD_U.test(String.fromCharCode(c))) bmpWord[c] = 1;
  }
  return bmpWord[cp]!;
}

let lastIn: string | undefined;
let lastOut = '';

/** The subject with a mark before each character and one at the end (the last result is cached). */
export function markSubject(s: string): string {
  if (s === lastIn) return lastOut;
  const parts: string[] = [];
  let prev = START; // the previous character's bits as PREV_*
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    let ch: string;
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      cp = s.codePointAt(i)!;
      ch = s.slice(i, i + 2);
      i++;
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      cp = 0xfffd;
      ch = '\ufffd';
    } else ch = s[i]!;
    const w = wordBits(cp);
    const next = (w & 1 ? NEXT_U : 0) | (w & 2 ? NEXT_A : 0) | (cp === 10 ? NEXT_LF : 0);
    parts.push(String.fromCharCode(MARK + prev + next), ch);
    prev = (w & 1 ? PREV_U : 0) | (w & 2 ? PREV_A : 0) | (cp === 10 ? PREV_LF : 0);
  }
  parts.push(String.fromCharCode(MARK + prev + END));
  lastIn = s;
  lastOut = parts.join('');
  return lastOut;
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
