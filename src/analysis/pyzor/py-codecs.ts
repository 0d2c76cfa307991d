/**
 * `bytes.decode(charset, 'ignore')` as Python 3.11 does it, for the pyzor-mode digest (pyzor/digest.py's
 * `DataDigester.digest_payloads` decodes every text part so), and the transfer decodings of Python's
 * `email.message.Message.get_payload(decode=True)` (quoted-printable by `binascii.a2b_qp`, base64 by
 * `email._encoded_words.decode_b`).
 *
 * Charset names are looked up as `codecs.lookup` does (lower case, then `encodings.normalize_encoding`:
 * runs of characters other than letters, digits and `.` become one `_`, then the alias table). Decoders:
 * `ascii` and `latin_1` here; the ASCII-compatible single-byte codecs from Python's own tables
 * (py-codec-data.ts, generated); UTF-8, UTF-16 and the CJK codecs by TextDecoder, with the bytes it cannot
 * decode dropped ("ignore"). Where TextDecoder's table is a superset of Python's (WHATWG `gbk` for `gb2312`,
 * `big5` with HKSCS for `big5`, `euc-kr` as windows-949 for `euc_kr`, `shift_jis` as windows-31j), bytes Python
 * refuses are decoded rather than dropped. The Python codecs that are neither (EBCDIC code pages, `utf_7`,
 * `utf_32`, `hz`, `johab`, `iso2022_kr`, the escape codecs) decode as `ascii` here.
 */
import { ALIASES, DBCS_PATCHES, SINGLE_BYTE } from './py-codec-data.js';

/** A codec: what it cannot decode is dropped (Python's "ignore" error handler) or, with `replace`, U+FFFD ("replace"). */
type Decode = (bytes: Uint8Array, replace?: boolean) => string;

/** TextDecoder labels for Python's multi-byte codecs (and the nearest one for their variants). */
const TEXT_DECODER: Readonly<Record<string, string>> = {
  utf_16: 'utf-16le', utf_16_le: 'utf-16le', utf_16_be: 'utf-16be',
  big5hkscs: 'big5', gb18030: 'gb18030',
  euc_jp: 'euc-jp', euc_jis_2004: 'euc-jp', euc_jisx0213: 'euc-jp',
  shift_jis: 'shift_jis', cp932: 'shift_jis', shift_jis_2004: 'shift_jis', shift_jisx0213: 'shift_jis',
  iso2022_jp: 'iso-2022-jp', iso2022_jp_1: 'iso-2022-jp', iso2022_jp_2: 'iso-2022-jp', iso2022_jp_2004: 'iso-2022-jp',
  iso2022_jp_3: 'iso-2022-jp', iso2022_jp_ext: 'iso-2022-jp',
};

const trail2 = (b: number): boolean => (b >= 0x40 && b <= 0x7e) || (b >= 0xa1 && b <= 0xfe);
const euc = (a: number, b: number): boolean => a >= 0xa1 && a <= 0xfe && b >= 0xa1 && b <= 0xfe;

/**
 * Python's double-byte codecs, decoded pair by pair as CPython's `_codecs_cn`, `_codecs_tw` and `_codecs_kr` do:
 * a byte below 0x80 is ASCII, a pair in the table is its character, anything else drops one byte and reads on
 * (an error of length 1 under "ignore"). Each table is TextDecoder's decoding of the pairs in the codec's
 * ranges (private-use results left out; for `cp949`, KS X 1001 plus the Hangul syllables it lacks in UHC
 * order), patched where Python's differs (py-codec-data.ts, `DBCS_PATCHES`).
 */
export const DBCS: Readonly<Record<string, { label: string; pair: (a: number, b: number) => boolean }>> = {
  gb2312: { label: 'gbk', pair: (a, b) => a <= 0xf7 && euc(a, b) },
  gbk: { label: 'gbk', pair: () => true },
  big5: { label: 'big5', pair: (a, b) => a >= 0xa1 && a <= 0xf9 && trail2(b) },
  cp950: { label: 'big5', pair: (a, b) => a >= 0x81 && a <= 0xfe && trail2(b) },
  euc_kr: { label: 'euc-kr', pair: euc },
  cp949: { label: 'euc-kr', pair: euc },
};

/** A double-byte codec's table before Python's patches: `lead * 256 + trail` → character. */
export function dbcsBaseTable(codec: string): Map<number, string> {
  const { label, pair } = DBCS[codec]!;
  const dec = new TextDecoder(label, { fatal: true });
  const table = new Map<number, string>();
  const bytes = new Uint8Array(2);
  for (let a = 0x80; a < 0x100; a++) {
    for (let b = 0; b < 0x100; b++) {
      if (!pair(a, b)) continue;
      bytes[0] = a;
      bytes[1] = b;
      let s: string;
      try {
        s = dec.decode(bytes);
      } catch {
        continue;
      }
      if (s.length === 1 && !(s >= '\ue000' && s <= '\uf8ff')) table.set(a * 256 + b, s);
    }
  }
  if (codec === 'cp949') {
    // UHC: the 8,822 Hangul syllables KS X 1001 lacks, in code point order, at the pairs outside its A1-FE square.
    const inKs = new Set(table.values());
    const trails = Array.from({ length: 0xfe - 0x41 + 1 }, (_, i) => 0x41 + i).filter((b) => b <= 0x5a || (b >= 0x61 && b <= 0x7a) || b >= 0x81);
    let cp = 0xac00;
    for (let a = 0x81; a <= 0xfe && cp <= 0xd7a3; a++) {
      for (const b of trails) {
        if (a >= 0xa1 && b >= 0xa1) continue;
        while (cp <= 0xd7a3 && inKs.has(String.fromCharCode(cp))) cp++;
        if (cp > 0xd7a3) break;
        table.set(a * 256 + b, String.fromCharCode(cp++));
      }
    }
  }
  return table;
}

function dbcs(codec: string): Decode {
  const table = dbcsBaseTable(codec);
  for (const p of (DBCS_PATCHES[codec] ?? '').split(' ')) {
    if (p === '') continue;
    const key = parseInt(p.slice(0, 4), 16);
    if (p.length > 5) table.set(key, p.slice(5));
    else table.delete(key);
  }
  return (b, replace = false) => {
    const out: string[] = [];
    for (let i = 0; i < b.length; ) {
      const c = b[i]!;
      if (c < 0x80) {
        out.push(String.fromCharCode(c));
        i++;
        continue;
      }
      const ch = i + 1 < b.length ? table.get(c * 256 + b[i + 1]!) : undefined;
      if (ch === undefined) {
        if (replace) out.push('\ufffd');
        i++;
      } else {
        out.push(ch);
        i += 2;
      }
    }
    return out.join('');
  };
}

/** alias → codec module, from py-codec-data.ts (each module is its own alias). */
const MODULE_OF: ReadonlyMap<string, string> = (() => {
  const m = new Map<string, string>();
  for (const [mod, names] of Object.entries(ALIASES)) {
    for (const a of names.split(' ')) if (a !== '') m.set(a, mod);
  }
  return m;
})();
const MODULES: ReadonlySet<string> = new Set(Object.keys(ALIASES));

/** Python's `encodings.normalize_encoding` of a lower-cased name. */
function normalizeEncoding(name: string): string {
  let out = '';
  let punct = false;
  for (const c of name) {
    if (/^[\p{L}\p{N}.]$/u.test(c)) {
      if (punct && out !== '') out += '_';
      if (c.charCodeAt(0) < 128) out += c;
      punct = false;
    } else punct = true;
  }
  return out;
}

/**
 * The Python codec module (`latin_1`, `cp1252`, `utf_8`, …) `name` is looked up as, or `undefined` where
 * Python raises `LookupError` (an unknown name, or a codec that is not a text encoding: `quopri`, `base64`, …).
 */
export function pythonCodec(name: string): string | undefined {
  const norm = normalizeEncoding(name.toLowerCase());
  const aliased = MODULE_OF.get(norm) ?? MODULE_OF.get(norm.replaceAll('.', '_'));
  for (const mod of aliased !== undefined ? [aliased, norm] : [norm]) {
    if (mod !== '' && !mod.includes('.') && MODULES.has(mod)) return mod;
  }
  return undefined;
}

const ascii: Decode = (b, replace = false) => {
  const s = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
  return replace ? s.replace(/[\x80-\xff]/g, '\ufffd') : s.replace(/[\x80-\xff]+/g, '');
};

const latin1: Decode = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');

function singleByte(high: string): Decode {
  const table = Array.from({ length: 256 }, (_, i) => (i < 128 ? String.fromCharCode(i) : high[i - 128]!));
  return (b, replace = false) => {
    const parts: string[] = [];
    for (let i = 0; i < b.length; i++) {
      const c = table[b[i]!]!;
      if (c !== '\ufffe') parts.push(c);
      else if (replace) parts.push('\ufffd');
    }
    return parts.join('');
  };
}

/** TextDecoder, the U+FFFD it puts for undecodable bytes dropped unless `replace` (none of these codecs maps a byte sequence to U+FFFD). */
function viaTextDecoder(label: string, bom = false): Decode {
  return (b, replace = false) => {
    const s = new TextDecoder(label, { ignoreBOM: !bom }).decode(b);
    return replace ? s : s.replaceAll('\ufffd', '');
  };
}

/**
 * UTF-8 with invalid sequences dropped (an encoded U+FFFD, EF BF BD, in the input is kept), or with `replace` one
 * U+FFFD for each maximal invalid subsequence, as TextDecoder and Python both replace.
 */
function utf8(b: Uint8Array, sig = false, replace = false): string {
  const dec = new TextDecoder('utf-8', { ignoreBOM: !sig });
  if (replace) return dec.decode(b);
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i + 2 < b.length; i++) {
    if (b[i] === 0xef && b[i + 1] === 0xbf && b[i + 2] === 0xbd) {
      out.push(dec.decode(b.subarray(from, i)).replaceAll('\ufffd', ''), '\ufffd');
      from = i + 3;
      i += 2;
    }
  }
  out.push(dec.decode(b.subarray(from)).replaceAll('\ufffd', ''));
  return out.join('');
}

const decoders = new Map<string, Decode>();

/** The decoder of a Python codec module (as {@link pythonCodec} returns it); `ascii` for the codecs not backed here. */
function decoderOf(mod: string): Decode {
  let d = decoders.get(mod);
  if (d !== undefined) return d;
  if (mod === 'latin_1' || mod === 'iso8859_1') d = latin1;
  else if (mod === 'utf_8') d = (b, replace) => utf8(b, false, replace);
  else if (mod === 'utf_8_sig') d = (b, replace) => utf8(b, true, replace);
  else if (mod === 'utf_16') d = viaTextDecoder('utf-16le', true);
  else if (DBCS[mod] !== undefined) d = dbcs(mod);
  else if (TEXT_DECODER[mod] !== undefined) d = viaTextDecoder(TEXT_DECODER[mod]);
  else if (SINGLE_BYTE[mod] !== undefined && SINGLE_BYTE[mod] !== '') d = singleByte(SINGLE_BYTE[mod]);
  else d = ascii;
  decoders.set(mod, d);
  return d;
}

/**
 * `bytes.decode(charset, errors)` with `errors` `'ignore'` (default) or `'replace'`; `undefined` where Python
 * raises `LookupError` (see {@link pythonCodec}). The `utf_16` codec reads a BOM, and without one reads
 * little-endian (Python's native order on x86 and ARM).
 */
export function pythonDecode(bytes: Uint8Array, charset: string, errors: 'ignore' | 'replace' = 'ignore'): string | undefined {
  const mod = pythonCodec(charset);
  return mod === undefined ? undefined : decoderOf(mod)(bytes, errors === 'replace');
}

/** Python's `bytes.decode('ascii', 'ignore')`. */
export const asciiIgnore: Decode = ascii;

const hexVal = (c: number): number => (c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : c >= 97 && c <= 102 ? c - 87 : -1);

/**
 * `binascii.a2b_qp(data)` (what `quopri.decodestring` runs): `=XX` hex pairs decoded, `=` before CR or LF a
 * soft line break (after `=` CR everything up to the next LF is skipped), `==` one `=`, a final `=` dropped,
 * any other `=` kept; line ends and trailing white space kept as they are.
 */
export function a2bQp(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(data.length);
  let o = 0;
  let i = 0;
  const n = data.length;
  while (i < n) {
    if (data[i] !== 61 /* = */) {
      out[o++] = data[i++]!;
      continue;
    }
    i++;
    if (i >= n) break;
    const c = data[i]!;
    if (c === 10 || c === 13) {
      if (c !== 10) while (i < n && data[i] !== 10) i++;
      if (i < n) i++;
    } else if (c === 61) {
      out[o++] = 61;
      i++;
    } else if (i + 1 < n && hexVal(c) >= 0 && hexVal(data[i + 1]!) >= 0) {
      out[o++] = (hexVal(c) << 4) | hexVal(data[i + 1]!);
      i += 2;
    } else out[o++] = 61;
  }
  return out.subarray(0, o);
}

const B64 = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++) B64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/** `binascii.a2b_base64(data, strict_mode=False)`: other bytes skipped, a complete padding ends it; `undefined` for `binascii.Error`. */
function a2bBase64(data: Uint8Array, extraPad = 0): Uint8Array | undefined {
  const out = new Uint8Array(Math.floor(((data.length + extraPad) * 3) / 4) + 3);
  let o = 0;
  let quad = 0;
  let left = 0;
  let pads = 0;
  const n = data.length + extraPad;
  for (let i = 0; i < n; i++) {
    const ch = i < data.length ? data[i]! : 61;
    if (ch === 61) {
      if (quad >= 2 && quad + ++pads >= 4) return out.subarray(0, o);
      continue;
    }
    const v = B64[ch]!;
    if (v < 0) continue;
    pads = 0;
    if (quad === 0) {
      left = v;
      quad = 1;
    } else if (quad === 1) {
      out[o++] = (left << 2) | (v >> 4);
      left = v & 0x0f;
      quad = 2;
    } else if (quad === 2) {
      out[o++] = ((left << 4) | (v >> 2)) & 0xff;
      left = v & 0x03;
      quad = 3;
    } else {
      out[o++] = ((left << 6) | v) & 0xff;
      quad = 0;
    }
  }
  return quad === 0 ? out.subarray(0, o) : undefined;
}

/**
 * `email._encoded_words.decode_b` of a base64 body whose line breaks (CR, LF, CRLF) are removed: the
 * lenient decoding, with up to two `=` added when the padding is short; the input itself when even that
 * fails (a length one more than a multiple of 4).
 */
export function decodeB(data: Uint8Array): Uint8Array {
  const joined = data.filter((c) => c !== 10 && c !== 13);
  return a2bBase64(joined) ?? a2bBase64(joined, 2) ?? joined;
}
