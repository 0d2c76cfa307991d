/**
 * RFC 2047 encoded words and unstructured header text, decoded the way mail-parser (the Rust MIME
 * parser Stalwart uses) decodes them: an encoded word is recognised wherever `=?` starts one (no
 * white-space rule around it), charset `*language` suffixes are ignored, folded white space inside
 * a Q word is skipped, and the charset is read with the table bodies use (src/message/charsets.ts,
 * mail-parser's `charset_decoder`: an unknown charset is UTF-8). Works on header text already
 * decoded as (lossy) UTF-8; delimiters are ASCII, so offsets need no byte mapping.
 */

import { decodeCharset } from './charsets.js';

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

function pushChar(bytes: number[], s: string, i: number): number {
  // Non-ASCII text inside an encoded word (not allowed, but seen) keeps its UTF-8 bytes.
  const cp = s.codePointAt(i)!;
  if (cp < 0x80) {
    bytes.push(cp);
    return 1;
  }
  for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
  return cp > 0xffff ? 2 : 1;
}

/** Skips a fold (LF followed by white space, the white space included); returns the new index or -1. */
function skipFold(s: string, i: number): number {
  const c = s.charCodeAt(i + 1);
  if (c !== 32 && c !== 9) return -1;
  let j = i + 1;
  while (j < s.length && (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 9)) j++;
  return j;
}

/** Q-encoded data from `i` up to `?=`: the bytes and the index after `?=`, or undefined on bad data. */
function qWord(s: string, i: number): { bytes: number[]; end: number } | undefined {
  const bytes: number[] = [];
  const limit = Math.min(s.length, i + MAX_WORD_CHARS);
  while (i < limit) {
    const c = s.charCodeAt(i);
    if (c === 63 /* ? */) {
      if (s.charCodeAt(i + 1) === 61) return { bytes, end: i + 2 };
      bytes.push(63);
      i++;
    } else if (c === 61 /* = */) {
      const h1 = hexVal(s.charCodeAt(i + 1));
      const h2 = hexVal(s.charCodeAt(i + 2));
      if (h1 < 0 || h2 < 0) return undefined;
      bytes.push((h1 << 4) | h2);
      i += 3;
    } else if (c === 10) {
      const j = skipFold(s, i);
      if (j < 0) return undefined;
      i = j;
    } else if (c === 95 /* _ */) {
      bytes.push(32);
      i++;
    } else if (c === 13) {
      i++;
    } else {
      i += pushChar(bytes, s, i);
    }
  }
  return undefined;
}

/**
 * Longest encoded-text scanned for the closing `?=` (RFC 2047 allows 75 characters per word; real
 * mail exceeds that, never by this much). Bounds the work on a hostile header full of `=?` openers.
 */
export const MAX_WORD_CHARS = 16_384;

const B64_VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64_VALUES['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/**
 * B-encoded data from `i` up to `?=`, as mail-parser decodes it: blanks ignored, `=` ends a quantum
 * (more data may follow), a line break must be a fold, any other character fails the word.
 */
function bWord(s: string, i: number): { bytes: number[]; end: number } | undefined {
  const bytes: number[] = [];
  let acc = 0;
  let count = 0;
  const limit = Math.min(s.length, i + MAX_WORD_CHARS);
  while (i < limit) {
    const c = s.charCodeAt(i);
    if (c === 63 /* ? */) return s.charCodeAt(i + 1) === 61 ? { bytes, end: i + 2 } : undefined;
    if (c === 61 /* = */) {
      if (count === 1) bytes.push((acc << 2) & 0xff);
      else if (count === 2) bytes.push((acc >> 4) & 0xff);
      else if (count === 3) bytes.push((acc >> 10) & 0xff, (acc >> 2) & 0xff);
      acc = 0;
      count = 0;
      i++;
      continue;
    }
    if (c === 10) {
      const n = s.charCodeAt(i + 1);
      if (n !== 32 && n !== 9) return undefined;
      i += 2;
      continue;
    }
    if (c === 32 || c === 9 || c === 13) {
      i++;
      continue;
    }
    const v = c < 128 ? B64_VALUES[c]! : -1;
    if (v < 0) return undefined;
    acc = (acc << 6) | v;
    if (++count === 4) {
      bytes.push((acc >> 16) & 0xff, (acc >> 8) & 0xff, acc & 0xff);
      acc = 0;
      count = 0;
    }
    i++;
  }
  return undefined;
}

/**
 * Decodes the encoded word starting at `s[i] === '='` (followed by `?`). Returns the decoded text
 * (its charset read by {@link decodeCharset}, as bodies are) and the index just after its closing
 * `?=`, or undefined when it is not a well-formed encoded word (charset shorter than 2 characters,
 * encoding other than Q/B, line end inside the charset, bad data).
 */
export function decodeEncodedWord(s: string, i: number): { text: string; end: number } | undefined {
  if (s.charCodeAt(i) !== 61 || s.charCodeAt(i + 1) !== 63) return undefined;
  let j = i + 2;
  const csStart = j;
  let csEnd = -1;
  // Charsets are short; a cap keeps a hostile `=?aaaa…` from being rescanned at every `=?`.
  const limit = Math.min(s.length, j + 80);
  while (j < limit) {
    const c = s.charCodeAt(j);
    if (c === 63) break;
    if (c === 10) return undefined;
    if (c === 42 /* * */ && csEnd < 0) csEnd = j;
    j++;
  }
  if (j >= limit) return undefined;
  if (csEnd < 0) csEnd = j;
  if (csEnd - csStart < 2) return undefined;
  const enc = s.charCodeAt(j + 1);
  if (s.charCodeAt(j + 2) !== 63) return undefined;
  let bytes: number[];
  let end: number;
  if (enc === 81 || enc === 113) {
    const r = qWord(s, j + 3);
    if (r === undefined) return undefined;
    ({ bytes, end } = r);
  } else if (enc === 66 || enc === 98) {
    const r = bWord(s, j + 3);
    if (r === undefined) return undefined;
    ({ bytes, end } = r);
  } else {
    return undefined;
  }
  return { text: decodeCharset(Uint8Array.from(bytes), s.slice(csStart, csEnd)), end };
}

/**
 * Encoded words decoded where they stand in other text (parameter values, comma lists): each word
 * decoded on its own with {@link decodeEncodedWord} (as mail-parser decodes words: bytes are never
 * joined across words), white space between two encoded words dropped (RFC 2047 §6.2), all other
 * text kept as written. Reads the first 65,536 characters of `raw`, like {@link parseUnstructured}.
 */
export function decodeWords(raw: string): string {
  const s = raw.length > 65_536 ? raw.slice(0, 65_536) : raw;
  let out = '';
  let from = 0;
  let afterWord = false;
  for (let i = s.indexOf('=?'); i >= 0; ) {
    const w = decodeEncodedWord(s, i);
    if (w === undefined) {
      i = s.indexOf('=?', i + 1);
      continue;
    }
    const between = s.slice(from, i);
    if (!(afterWord && /^[ \t\r\n]*$/.test(between))) out += between;
    out += w.text;
    from = w.end;
    afterWord = true;
    i = s.indexOf('=?', from);
  }
  return out + s.slice(from);
}

/**
 * mail-parser's unstructured text (Subject, Comments): each line's text from its first to its last
 * non-blank character, lines joined with one space; encoded words decoded, a space put between
 * plain text and a following encoded word but not between two encoded words. White space produced
 * by an encoded word is kept (so a Subject can end in a space). `raw` is the header value after the
 * colon (folding kept). "" for an empty value.
 */
export function parseUnstructured(raw: string): string {
  const s = raw.length > 65_536 ? raw.slice(0, 65_536) : raw;
  const tokens: string[] = [];
  let tokStart = -1;
  let tokEnd = -1;
  let lastIsEncoded = true;
  const flush = (): void => {
    if (tokStart < 0) return;
    if (tokens.length > 0) tokens.push(' ');
    tokens.push(s.slice(tokStart, tokEnd));
    tokStart = -1;
    lastIsEncoded = false;
  };
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 10) {
      flush();
      const n = s.charCodeAt(i + 1);
      if (n !== 32 && n !== 9) break;
      i++;
      continue;
    }
    if (c === 32 || c === 9 || c === 13) {
      i++;
      continue;
    }
    if (c === 61 && s.charCodeAt(i + 1) === 63) {
      const w = decodeEncodedWord(s, i);
      if (w !== undefined) {
        flush();
        if (!lastIsEncoded) tokens.push(' ');
        tokens.push(w.text);
        lastIsEncoded = true;
        i = w.end;
        continue;
      }
    }
    if (tokStart < 0) tokStart = i;
    tokEnd = i + 1;
    i++;
  }
  flush();
  return tokens.join('');
}
