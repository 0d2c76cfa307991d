/**
 * Transfer decoding of MIME part bodies as mail-parser's MIME reader does it (the reader Stalwart
 * parses mail with; src/message/mime-tree.ts uses these; charsets are src/message/charsets.ts).
 * Where its reader rejects a body (see {@link isCleanBase64}, {@link decodeQuotedPrintable}), the
 * part tree keeps the raw bytes instead. Bodies are given as latin1 strings (one character per
 * byte) with a range.
 */

/** Base64 alphabet, `=`, white space and single `-`: what mail-parser's base64 reader accepts. */
const B64_OK = new Uint8Array(256);
for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n-') B64_OK[ch.charCodeAt(0)] = 1;

/** Would mail-parser decode this base64 body without an encoding problem? (`--` is only valid as a delimiter.) */
export function isCleanBase64(bin: string, start: number, end: number): boolean {
  let last = 0;
  for (let i = start; i < end; i++) {
    const c = bin.charCodeAt(i);
    if (B64_OK[c] !== 1 || (c === 45 && last === 45)) return false;
    last = c;
  }
  return true;
}

const B64_VAL = new Int8Array(256).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((ch, i) => {
  B64_VAL[ch.charCodeAt(0)] = i;
});

/**
 * Base64 as mail-parser's MIME reader decodes it (the body was checked by {@link isCleanBase64}):
 * `=` flushes the bytes of the current group and decoding goes on after it; an incomplete group at
 * the end is dropped. (Node's decoder stops at the first `=` and keeps incomplete groups.)
 */
export function decodeBase64(bin: string, start: number, end: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(((end - start) * 3) / 4) + 3);
  let o = 0;
  let n = 0;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  for (let i = start; i < end; i++) {
    const c = bin.charCodeAt(i);
    const v = c < 256 ? B64_VAL[c]! : -1;
    if (v >= 0) {
      if (n === 0) s0 = v;
      else if (n === 1) s1 = v;
      else if (n === 2) s2 = v;
      else {
        out[o++] = (s0 << 2) | (s1 >> 4);
        out[o++] = ((s1 & 15) << 4) | (s2 >> 2);
        out[o++] = ((s2 & 3) << 6) | v;
      }
      n = (n + 1) & 3;
    } else if (c === 61 /* = */ && n > 0) {
      out[o++] = ((s0 << 2) | (n >= 2 ? s1 >> 4 : 0)) & 0xff;
      if (n === 3) out[o++] = ((s1 & 15) << 4) | (s2 >> 2);
      n = 0;
    }
  }
  return out.subarray(0, o);
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/**
 * Quoted-printable as mail-parser's MIME reader decodes it: `=XX` (either case), `=` + optional white
 * space + line break is a soft break, trailing white space of a line is dropped, CRs are dropped and
 * line breaks are written as CRLF once a CR has been seen (LF before). Returns undefined for what its
 * reader rejects: `=` not followed by two hex digits (white space may sit between `=` and a soft
 * break), or `==`.
 */
export function decodeQuotedPrintable(bin: string, start: number, end: number): Uint8Array | undefined {
  // Bare LFs after a CR grow to CRLF: at most twice the input.
  const out = new Uint8Array(2 * (end - start) + 16);
  let o = 0;
  let state = 0; // 0 none, 1 after '=', 2 after '=' and one hex digit
  let hex1 = 0;
  let ws = 0;
  let crlf = false;
  for (let i = start; i < end; i++) {
    const c = bin.charCodeAt(i);
    if (c === 61 /* = */) {
      if (state !== 0) return undefined;
      state = 1;
    } else if (c === 10) {
      // (A line break between the two hex digits is written and the digits still pair, as in mail-parser.)
      if (state === 1) state = 0;
      else {
        o -= ws;
        if (crlf) out[o++] = 13;
        out[o++] = 10;
      }
      ws = 0;
    } else if (c === 13) {
      crlf = true;
    } else if (state === 0) {
      ws = c === 32 || c === 9 || c === 12 ? ws + 1 : 0;
      out[o++] = c;
    } else if (state === 1) {
      const h = hexVal(c);
      if (h >= 0) {
        hex1 = h;
        state = 2;
      } else if (!(c === 32 || c === 9 || c === 12)) return undefined;
    } else {
      const h = hexVal(c);
      if (h < 0) return undefined;
      out[o++] = (hex1 << 4) | h;
      state = 0;
      ws = 0;
    }
  }
  return out.subarray(0, o);
}
