/**
 * The Pyzor digest as pyzor 1.0.0 computes it (`digest: 'pyzor'`; pyzor/digest.py, `DataDigester`, run on
 * `email.message_from_bytes` of the message, as `pyzor digest` and `pyzor check` do), the digest the pyzor
 * client and SpamAssassin's Pyzor plugin report to public.pyzor.org:
 *
 * 1. The payloads, walking every part of the message depth first (attached messages included, Python's
 *    `Message.walk`; src/analysis/pyzor/py-email.ts): a `text/*` part's payload with its transfer encoding
 *    undone (quoted-printable, base64, uuencode) and decoded with its charset, `ascii` without one, dropping
 *    what does not decode (a charset Python does not know: `ascii`; py-codecs.ts); a `text/html` one reduced
 *    to its text by Python's HTMLParser (py-html.ts); a part that is neither text nor multipart **as it
 *    stands**, transfer encoding and all (base64 lines are then removed as long words, but a 7-bit attachment
 *    counts); multipart containers and `message/*` wrappers themselves give nothing.
 * 2. Each payload is split into lines as Python's `str.splitlines` splits (CR, LF, CRLF, VT, FF, FS, GS, RS,
 *    NEL, U+2028, U+2029). A line is normalised by removing, in this order, runs of 10 or more non-space
 *    characters (`\S{10,}`), then runs around an `@` (`\S+@\S+`), then `scheme:` runs (`[a-z]+:\S+`, any
 *    case), then all white space; characters, not bytes, are counted, and white space is Python's (Unicode).
 * 3. Normalised lines of 8 characters or more are kept. Four kept lines or fewer are all hashed; more: three
 *    from 20% of the way and three from 60% (`digest_spec` 20,3 and 60,3), as in Stalwart's digest.
 * 4. The digest is the lowercase hexadecimal SHA-1 of the chosen lines' UTF-8 bytes, concatenated.
 *
 * A message with no line kept has the digest of nothing (`da39a3ee…`), which the pyzor client would send and the
 * Pyzor step (src/analysis/pyzor.ts) does not: every such message shares it.
 */
import { createHash } from 'node:crypto';
import { sampleLines } from './digest.js';
import { a2bQp, asciiIgnore, decodeB, pythonDecode } from './py-codecs.js';
import { messageFromBytes, payloadBytes, PY_WS, PyEmailError, type PyMessage } from './py-email.js';
import { htmlStripperText, PyHtmlError } from './py-html.js';

/** pyzor's `min_line_length`, in characters (code points). */
export const PYZOR_MIN_LINE_CHARS = 8;

const LONG_RUN = new RegExp(`[^${PY_WS}]{10,}`, 'gu');
const EMAIL = new RegExp(`[^${PY_WS}]+@[^${PY_WS}]+`, 'gu');
// re.IGNORECASE makes Python's [a-z] match İ, ı, ſ and the Kelvin sign too.
const URL = new RegExp(`[a-zA-Z\\u0130\\u0131\\u017f\\u212a]+:[^${PY_WS}]+`, 'gu');
const SPACE = new RegExp(`[${PY_WS}]`, 'gu');
const LINE_BREAK = /\r\n|[\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029]/;
const LONE_SURROGATE = /\p{Cs}/gu;

/** pyzor's `DataDigester.normalize` of one line. */
export function pyzorNormalize(line: string): string {
  let s = line.replace(LONG_RUN, '');
  if (s.includes('@')) s = s.replace(EMAIL, '');
  if (s.includes(':')) s = s.replace(URL, '');
  return s.replace(SPACE, '');
}

/** Python's `str.splitlines()`: no empty last line after a final break. */
function splitLines(text: string): string[] {
  const lines = text.split(LINE_BREAK);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** Length in code points (Python's `len`). */
function chars(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!(c >= 0xdc00 && c <= 0xdfff && i > 0 && (s.charCodeAt(i - 1) & 0xfc00) === 0xd800)) n++;
  }
  return n;
}

/** `binascii.a2b_uu` of one line (its first character gives the length); `undefined` where Python raises. */
function a2bUu(line: Uint8Array): Uint8Array | undefined {
  if (line.length === 0) return new Uint8Array(0);
  let len = (line[0]! - 32) & 63;
  const out = new Uint8Array(len);
  let o = 0;
  let i = 1;
  let left = 0;
  let bits = 0;
  for (; len > 0; i++) {
    let c = i < line.length ? line[i]! : 0;
    if (c === 10 || c === 13 || i >= line.length) c = 0;
    else if (c < 32 || c > 96) return undefined; // "Illegal char"
    else c = (c - 32) & 63;
    left = (left << 6) | c;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (left >> bits) & 0xff;
      left &= (1 << bits) - 1;
      len--;
    }
  }
  for (; i < line.length; i++) {
    const c = line[i]!;
    if (c !== 32 && c !== 96 && c !== 10 && c !== 13) return undefined; // "Trailing garbage"
  }
  return out;
}

/** `email.message._decode_uu`; `undefined` where it raises `ValueError` (the payload is then kept as is). */
function decodeUu(data: Uint8Array): Uint8Array | undefined {
  const lines = Buffer.from(data).toString('latin1').split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  // `begin MODE …` where MODE is an octal number (Python's int(mode, 8): white space, sign and `_` allowed).
  let i = lines.findIndex((l) => l.startsWith('begin ') && /^\s*[+-]?[0-7](?:_?[0-7])*\s*$/.test(l.slice(6).split(' ')[0]!));
  if (i < 0) return undefined;
  const out: Uint8Array[] = [];
  for (i++; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') return undefined; // "Truncated input"
    if (line.replace(/^[ \t\r\n\f]+|[ \t\r\n\f]+$/g, '') === 'end') break;
    const bytes = Buffer.from(line, 'latin1');
    const decoded = a2bUu(bytes) ?? a2bUu(bytes.subarray(0, Math.floor((((bytes[0]! - 32) & 63) * 4 + 5) / 3)));
    if (decoded === undefined) return undefined;
    out.push(decoded);
  }
  return Buffer.concat(out);
}

/** `get_payload(decode=True)` of a non-multipart part: the payload's bytes with its Content-Transfer-Encoding undone. */
function decodedPayload(part: PyMessage): Uint8Array {
  const bytes = payloadBytes(part.payload as string);
  const cte = (part.get('content-transfer-encoding') ?? '').toLowerCase(); // not stripped: "base64 " is no encoding
  if (cte === 'quoted-printable') return a2bQp(bytes);
  if (cte === 'base64') return decodeB(bytes);
  if (cte === 'x-uuencode' || cte === 'uuencode' || cte === 'uue' || cte === 'x-uue') return decodeUu(bytes) ?? bytes;
  return bytes;
}

/** `get_payload()` of a non-text part: the text as it stands, 8-bit bytes decoded with the charset parameter ("replace"). */
function rawPayload(part: PyMessage): string {
  const s = part.payload as string;
  if (!/[\udc80-\udcff]/.test(s)) return s;
  const param = part.param('charset');
  const charset = typeof param === 'string' ? param : 'ascii';
  return pythonDecode(payloadBytes(s), charset, 'replace') ?? pythonDecode(payloadBytes(s), 'ascii', 'replace')!;
}

/** pyzor's `digest_payloads`: the text of each part it reads, in walk order. */
export function pyzorPayloads(msg: PyMessage): string[] {
  const out: string[] = [];
  for (const part of msg.walk()) {
    if (part.maintype() === 'text') {
      const bytes = decodedPayload(part);
      const text = pythonDecode(bytes, part.contentCharset() || 'ascii') ?? asciiIgnore(bytes);
      out.push(part.subtype() === 'html' ? htmlStripperText(text) : text);
    } else if (!part.isMultipart()) out.push(rawPayload(part));
  }
  return out;
}

/** The lines pyzor hashes (what `pyzor predigest` prints), in order. Throws where pyzor fails (see {@link pyzorModeDigest}). */
export function pyzorModeLines(raw: Uint8Array): string[] {
  const kept: string[] = [];
  for (const payload of pyzorPayloads(messageFromBytes(raw))) {
    for (const line of splitLines(payload)) {
      const norm = pyzorNormalize(line);
      if (chars(norm) >= PYZOR_MIN_LINE_CHARS) kept.push(norm.replace(LONE_SURROGATE, '')); // encode("utf8", "ignore")
    }
  }
  return sampleLines(kept);
}

/** What {@link pyzorModeDigest} gives: the digest and the number of lines hashed, or why pyzor has none. */
export type PyzorModeResult = { digest: string; lines: number } | { error: string };

/**
 * The pyzor 1.0.0 digest of a raw RFC 5322 message (lowercase hex SHA-1) and how many lines went into it
 * (0: the digest of nothing). `{ error }` where pyzor itself fails on the message (HTML that Python's parser
 * raises on, parts nested deeper than 100 levels), so that no pyzor client can have reported it. Never throws.
 */
export function pyzorModeDigest(raw: Uint8Array): PyzorModeResult {
  let lines: string[];
  try {
    lines = pyzorModeLines(raw);
  } catch (e) {
    if (e instanceof PyHtmlError || e instanceof PyEmailError) return { error: e.message };
    return { error: `digest failed: ${String(e)}` };
  }
  const h = createHash('sha1');
  for (const line of lines) h.update(line, 'utf8');
  return { digest: h.digest('hex'), lines: lines.length };
}
