/**
 * Charset decoding as mail-parser does it (the Rust MIME parser Stalwart reads mail with; 0.11.7,
 * built with the `full_encoding` feature, which backs the multi-byte charsets with encoding_rs).
 * One table serves MIME bodies, RFC 2047 encoded words and RFC 2231 parameter values, because
 * mail-parser's `charset_decoder` (src/decoders/charsets/map.rs) serves all three.
 *
 * The rule: a label is looked up with ASCII letters lower-cased, `-` read as `_` and only its first
 * 45 characters; a label the table knows gets its decoder, any other label (the UTF-8 labels
 * included, which the table leaves out) is read as UTF-8 with invalid bytes as U+FFFD. The table
 * and what each decoder does are listed in docs/message-analysis.md ("Charsets").
 *
 * Decoders come from Node's TextDecoder (full ICU) wherever it gives mail-parser's result; the
 * single-byte tables are TextDecoder's with the few bytes where mail-parser's own tables
 * (src/decoders/charsets/single_byte.rs) differ patched; what TextDecoder lacks (windows-1252 as a
 * real code page on Node 20, ISO-8859-16, IBM850, UTF-7, x-user-defined, replacement) is here.
 */

/** A decoder from bytes to text. Never throws. */
type Decode = (bytes: Uint8Array) => string;

/** mail-parser reads at most this many characters of a label (longer ones are cut, not rejected). */
const MAX_LABEL_CHARS = 45;

/** What each decoder of the table is called by, as normalised labels (lower case, `_` for `-`). */
const LABELS: ReadonlyArray<readonly [string, string]> = [
  ['cp1250', 'cp1250 cswindows1250 windows_1250 x_cp1250'],
  ['cp1251', 'cp1251 cswindows1251 windows_1251 x_cp1251'],
  [
    'cp1252',
    'ansi_x3.4_1968 ascii cp1252 cp819 csisolatin1 cswindows1252 ibm819 iso88591 iso8859_1 iso_8859_1 ' +
      'iso_8859_1:1987 iso_ir_100 l1 latin1 us_ascii windows_1252 x_cp1252',
  ],
  ['cp1253', 'cp1253 cswindows1253 windows_1253 x_cp1253'],
  ['cp1254', 'cp1254 cswindows1254 windows_1254 x_cp1254'],
  ['cp1255', 'cp1255 cswindows1255 windows_1255 x_cp1255'],
  ['cp1256', 'cp1256 cswindows1256 windows_1256 x_cp1256'],
  ['cp1257', 'cp1257 cswindows1257 windows_1257 x_cp1257'],
  ['cp1258', 'cp1258 cswindows1258 windows_1258 x_cp1258'],
  ['iso-8859-2', 'csisolatin2 iso88592 iso8859_2 iso_8859_2 iso_8859_2:1987 iso_ir_101 l2 latin2'],
  ['iso-8859-3', 'csisolatin3 iso88593 iso8859_3 iso_8859_3 iso_8859_3:1988 iso_ir_109 l3 latin3'],
  ['iso-8859-4', 'csisolatin4 iso88594 iso8859_4 iso_8859_4 iso_8859_4:1988 iso_ir_110 l4 latin4'],
  ['iso-8859-5', 'csisolatincyrillic cyrillic iso88595 iso8859_5 iso_8859_5 iso_8859_5:1988 iso_ir_144'],
  [
    'iso-8859-6',
    'arabic asmo_708 csiso88596e csiso88596i csisolatinarabic ecma_114 iso88596 iso8859_6 iso_8859_6 ' +
      'iso_8859_6:1987 iso_8859_6_e iso_8859_6_i iso_ir_127',
  ],
  [
    'iso-8859-7',
    'csisolatingreek ecma_118 elot_928 greek greek8 iso88597 iso8859_7 iso_8859_7 iso_8859_7:1987 iso_ir_126 sun_eu_greek',
  ],
  [
    'iso-8859-8',
    'csiso88598e csiso88598i csisolatinhebrew hebrew iso88598 iso8859_8 iso_8859_8 iso_8859_8:1988 iso_8859_8_e ' +
      'iso_8859_8_i iso_ir_138 logical visual',
  ],
  ['iso-8859-9', 'csisolatin5 iso88599 iso8859_9 iso_8859_9 iso_8859_9:1989 iso_ir_148 l5 latin5'],
  ['iso-8859-10', 'csisolatin6 iso885910 iso8859_10 iso_8859_10 iso_8859_10:1992 iso_ir_157 l6 latin6'],
  ['iso-8859-13', 'csiso885913 iso885913 iso8859_13 iso_8859_13'],
  ['iso-8859-14', 'csiso885914 iso885914 iso8859_14 iso_8859_14 iso_8859_14:1998 iso_celtic iso_ir_199 l8 latin8'],
  ['iso-8859-15', 'csiso885915 csisolatin9 iso885915 iso8859_15 iso_8859_15 l9 latin_9'],
  ['iso-8859-16', 'csiso885916 iso_8859_16 iso_8859_16:2001 iso_ir_226 l10 latin10'],
  ['tis-620', 'cstis620 iso885911 iso8859_11 iso_8859_11 tis_620'],
  ['windows-874', 'cswindows874 dos_874 windows_874'],
  ['koi8-r', 'cskoi8r koi koi8 koi8_r'],
  ['koi8-u', 'cskoi8u koi8_ru koi8_u'],
  ['ibm866', '866 cp866 csibm866 ibm866'],
  ['ibm850', '850 cp850 cspc850multilingual ibm850'],
  ['macintosh', 'csmacintosh mac macintosh x_mac_roman'],
  ['x-mac-cyrillic', 'x_mac_cyrillic x_mac_ukrainian'],
  ['big5', 'big5 big5_hkscs cn_big5 csbig5 x_x_big5'],
  ['gbk', 'chinese cp936 csgb2312 csgbk csiso58gb231280 gb_2312 gb_2312_80 gbk iso_ir_58 ms936 windows_936 x_gbk'],
  ['gb18030', 'csgb18030 gb18030 gb2312'],
  ['euc-jp', 'cseucpkdfmtjapanese euc_jp extended_unix_code_packed_format_for_japanese x_euc_jp'],
  ['iso-2022-jp', 'csiso2022jp iso_2022_jp'],
  ['shift_jis', 'csshiftjis ms932 ms_kanji shift_jis sjis windows_31j x_sjis'],
  [
    'euc-kr',
    'cseuckr csksc56011987 euc_kr iso_ir_149 korean ks_c_5601_1987 ks_c_5601_1989 ksc5601 ksc_5601 windows_949',
  ],
  ['replacement', 'csiso2022kr hz_gb_2312 iso_2022_cn iso_2022_cn_ext iso_2022_kr replacement'],
  ['utf-16', 'csunicode csutf16 iso_10646_ucs_2 ucs_2 unicode unicodefeff utf_16'],
  ['utf-16be', 'csutf16be unicodefffe utf_16be'],
  ['utf-16le', 'csutf16le utf_16le'],
  ['utf-7', 'csutf7 utf_7'],
  ['x-user-defined', 'x_user_defined'],
];

const LABEL_TO_DECODER: ReadonlyMap<string, string> = new Map(
  LABELS.flatMap(([decoder, labels]) => labels.split(' ').map((l) => [l, decoder] as const)),
);

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const utf16le = new TextDecoder('utf-16le', { ignoreBOM: true });
const utf16be = new TextDecoder('utf-16be', { ignoreBOM: true });

/** Lossy UTF-8: what mail-parser gives for a missing or unknown charset. */
function decodeUtf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** A 256-entry table of UTF-16 code units (all BMP) applied byte by byte. */
function singleByte(build: () => Uint16Array): Decode {
  let table: Uint16Array | undefined;
  return (bytes) => {
    table ??= build();
    const units = new Uint16Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) units[i] = table[bytes[i]!]!;
    // (A Uint16Array is little-endian on every platform Node runs on.)
    return utf16le.decode(units);
  };
}

/** `table` with `patch` (byte → code unit) applied. */
function patched(table: Uint16Array, patch: Readonly<Record<number, number>>): Uint16Array {
  for (const [b, u] of Object.entries(patch)) table[Number(b)] = u;
  return table;
}

/** TextDecoder's table for a single-byte encoding, with `patch` applied. */
function whatwgTable(label: string, patch: Readonly<Record<number, number>> = {}): Uint16Array {
  const text = new TextDecoder(label).decode(Uint8Array.from({ length: 256 }, (_, i) => i));
  return patched(Uint16Array.from({ length: 256 }, (_, i) => text.charCodeAt(i)), patch);
}

/** Latin-1 (byte = code point) below `from`, then one code unit of `high` per byte. */
function highTable(high: string, from: number): Uint16Array {
  const table = Uint16Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0; i < high.length; i++) table[from + i] = high.charCodeAt(i);
  return table;
}

const FFFD = 0xfffd;

/**
 * Windows code pages from TextDecoder, with mail-parser's U+FFFD where the code page assigns
 * nothing: TextDecoder (the WHATWG tables) gives the C1 control of the same value there.
 */
function windowsTable(label: string, patch: Readonly<Record<number, number>> = {}): Uint16Array {
  const table = whatwgTable(label, patch);
  for (let b = 0x80; b <= 0x9f; b++) if (table[b] === b) table[b] = FFFD;
  return table;
}

/**
 * Code page 1252 at 0x80–0x9F (U+FFFD at the five unassigned bytes). Not TextDecoder: Node 20
 * decodes `windows-1252` as Latin-1, turning “ ” € … into C1 controls.
 */
const CP1252_HIGH = '€\ufffd‚ƒ„…†‡ˆ‰Š‹Œ\ufffdŽ\ufffd\ufffd‘’“”•–—˜™š›œ\ufffdžŸ';

/**
 * ISO-8859-16 from 0xA0 (Node's ICU has no such decoder). mail-parser's table has « at 0xA5 and „
 * at 0xAB, the standard the other way round; mail-parser's is kept.
 */
const ISO_8859_16_HIGH =
  '\u00a0ĄąŁ€«Š§š©Ș„Ź\u00adźŻ°±ČłŽ”¶·žčș»ŒœŸżÀÁÂĂÄĆÆÇÈÉÊËÌÍÎÏĐŃÒÓÔŐÖŚŰÙÚÛÜĘȚßàáâăäćæçèéêëìíîïđńòóôőöśűùúûüęțÿ';

/** IBM code page 850 from 0x80 (not a WHATWG encoding, so not in TextDecoder). */
const IBM850_HIGH =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜø£Ø×ƒáíóúñÑªº¿®¬½¼¡«»░▒▓│┤ÁÂÀ©╣║╗╝¢¥┐└┴┬├─┼ãÃ╚╔╩╦╠═╬¤ðÐÊËÈıÍÎÏ┘┌█▄¦Ì▀ÓßÔÒõÕµþÞÚÛÙýÝ¯´\u00ad±‗¾¶§÷¸°¨·¹³²■\u00a0';

/**
 * encoding_rs decoders sniff a byte order mark first (`Encoding::new_decoder`): a UTF-8 or UTF-16
 * BOM switches the whole text to that encoding. TextDecoder does not do that for legacy encodings.
 */
function bomSniffed(inner: Decode): Decode {
  return (bytes) => {
    if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return utf8.decode(bytes.subarray(3));
    if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return utf16le.decode(bytes.subarray(2));
    if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return utf16be.decode(bytes.subarray(2));
    return inner(bytes);
  };
}

/** An encoding_rs-backed decoder of mail-parser's (multi_byte.rs), here through TextDecoder. */
function encodingRs(label: string): Decode {
  let d: InstanceType<typeof TextDecoder> | undefined;
  return bomSniffed((bytes) => (d ??= new TextDecoder(label)).decode(bytes));
}

/** mail-parser's own UTF-16 reader: no BOM handling, an odd last byte dropped, unpaired surrogates as U+FFFD. */
function decodeUtf16(bytes: Uint8Array, bigEndian: boolean): string {
  if (bytes.length < 2) return '';
  return (bigEndian ? utf16be : utf16le).decode(bytes.subarray(0, bytes.length & ~1));
}

const B64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/**
 * UTF-7 (RFC 2152) as mail-parser's reader decodes it (utf.rs), quirks included: the character
 * that ends a base64 run is dropped whatever it is (not only `-`); `+-` stays `+-`; a run of less
 * than one UTF-16 unit gives U+FFFD, an odd byte after whole units is dropped; a run still open at
 * the end gives nothing; bytes outside runs are read as Latin-1.
 */
function decodeUtf7(bytes: Uint8Array): string {
  let out = '';
  let inRun = false;
  let acc = 0;
  let n = 0;
  const run: number[] = [];
  for (const b of bytes) {
    if (!inRun) {
      if (b === 0x2b) inRun = true;
      else out += String.fromCharCode(b);
      continue;
    }
    const v = b < 128 ? B64[b]! : -1;
    if (v >= 0) {
      acc = (acc << 6) | v;
      if (++n === 4) {
        run.push((acc >> 16) & 0xff, (acc >> 8) & 0xff, acc & 0xff);
        acc = 0;
        n = 0;
      }
      continue;
    }
    // End of the run: a partial group gives one byte for one or two characters, two for three.
    if (n === 1) run.push((acc << 2) & 0xff);
    else if (n === 2) run.push((acc >> 4) & 0xff);
    else if (n === 3) run.push((acc >> 10) & 0xff, (acc >> 2) & 0xff);
    if (run.length >= 2) out += utf16be.decode(Uint8Array.from(run.slice(0, run.length & ~1)));
    else if (run.length === 1) out += '\ufffd';
    else out += '+' + String.fromCharCode(b);
    run.length = 0;
    acc = 0;
    n = 0;
    inRun = false;
  }
  return out;
}

/** The decoders of the table, by the names LABELS uses. */
const DECODERS: Readonly<Record<string, Decode>> = {
  cp1250: singleByte(() => windowsTable('windows-1250')),
  cp1251: singleByte(() => windowsTable('windows-1251')),
  cp1252: singleByte(() => highTable(CP1252_HIGH, 0x80)),
  cp1253: singleByte(() => windowsTable('windows-1253', { 0xaa: FFFD })),
  cp1254: singleByte(() => windowsTable('windows-1254')),
  cp1255: singleByte(() => windowsTable('windows-1255')),
  cp1256: singleByte(() => windowsTable('windows-1256')),
  cp1257: singleByte(() => windowsTable('windows-1257')),
  cp1258: singleByte(() => windowsTable('windows-1258')),
  'iso-8859-2': singleByte(() => whatwgTable('iso-8859-2')),
  'iso-8859-3': singleByte(() => whatwgTable('iso-8859-3')),
  'iso-8859-4': singleByte(() => whatwgTable('iso-8859-4')),
  'iso-8859-5': singleByte(() => whatwgTable('iso-8859-5')),
  'iso-8859-6': singleByte(() => whatwgTable('iso-8859-6')),
  // mail-parser's table is the 1987 edition: no € ₯ ͺ (added in 2003).
  'iso-8859-7': singleByte(() => whatwgTable('iso-8859-7', { 0xa4: FFFD, 0xa5: FFFD, 0xaa: FFFD })),
  'iso-8859-8': singleByte(() => whatwgTable('iso-8859-8')),
  // ISO-8859-9 itself, not windows-1254 as the WHATWG label (and so TextDecoder) reads it.
  'iso-8859-9': singleByte(() =>
    patched(highTable('', 0x100), { 0xd0: 0x11e, 0xdd: 0x130, 0xde: 0x15e, 0xf0: 0x11f, 0xfd: 0x131, 0xfe: 0x15f }),
  ),
  'iso-8859-10': singleByte(() => whatwgTable('iso-8859-10')),
  'iso-8859-13': singleByte(() => whatwgTable('iso-8859-13')),
  'iso-8859-14': singleByte(() => whatwgTable('iso-8859-14')),
  'iso-8859-15': singleByte(() => whatwgTable('iso-8859-15')),
  'iso-8859-16': singleByte(() => highTable(ISO_8859_16_HIGH, 0xa0)),
  // TIS-620 proper: windows-874 without its additions at 0x80–0xA0.
  'tis-620': singleByte(() => whatwgTable('windows-874').map((u, i) => (i >= 0x80 && i <= 0xa0 ? FFFD : u))),
  'windows-874': encodingRs('windows-874'),
  'koi8-r': singleByte(() => whatwgTable('koi8-r')),
  'koi8-u': singleByte(() => whatwgTable('koi8-u')),
  ibm866: singleByte(() => whatwgTable('ibm866')),
  ibm850: singleByte(() => highTable(IBM850_HIGH, 0x80)),
  // mail-parser's table: a private-use character for the Apple logo, nothing at 0xF6/0xF7.
  macintosh: singleByte(() => whatwgTable('macintosh', { 0xf0: 0xe01e, 0xf6: FFFD, 0xf7: FFFD })),
  'x-mac-cyrillic': encodingRs('x-mac-cyrillic'),
  big5: encodingRs('big5'),
  gbk: encodingRs('gbk'),
  gb18030: encodingRs('gb18030'),
  'euc-jp': encodingRs('euc-jp'),
  'iso-2022-jp': encodingRs('iso-2022-jp'),
  shift_jis: encodingRs('shift_jis'),
  'euc-kr': encodingRs('euc-kr'),
  // encoding_rs's replacement decoder: one U+FFFD for any non-empty input.
  replacement: bomSniffed((bytes) => (bytes.length > 0 ? '\ufffd' : '')),
  'x-user-defined': bomSniffed(singleByte(() => Uint16Array.from({ length: 256 }, (_, i) => (i < 0x80 ? i : 0xf780 + i - 0x80)))),
  // mail-parser's own UTF-16 readers: `utf-16` reads a BOM (and drops it), little-endian without one.
  'utf-16': (bytes) =>
    bytes[0] === 0xfe && bytes[1] === 0xff
      ? decodeUtf16(bytes.subarray(2), true)
      : decodeUtf16(bytes[0] === 0xff && bytes[1] === 0xfe ? bytes.subarray(2) : bytes, false),
  'utf-16be': (bytes) => decodeUtf16(bytes, true),
  'utf-16le': (bytes) => decodeUtf16(bytes, false),
  'utf-7': decodeUtf7,
};

/** mail-parser's lookup key: the first 45 characters, ASCII letters lower-cased, `-` as `_`. */
function normalize(label: string): string {
  const cut = label.length > MAX_LABEL_CHARS ? label.slice(0, MAX_LABEL_CHARS) : label;
  return cut.replace(/[A-Z-]/g, (c) => (c === '-' ? '_' : String.fromCharCode(c.charCodeAt(0) + 32)));
}

const cache = new Map<string, Decode | null>();

/**
 * The decoder mail-parser uses for a charset label, or undefined when its table does not know the
 * label (the caller then reads UTF-8). Labels come from messages: the cache stays bounded.
 */
export function charsetDecoder(label: string): Decode | undefined {
  let d = cache.get(label);
  if (d === undefined) {
    const name = LABEL_TO_DECODER.get(normalize(label));
    d = name === undefined ? null : DECODERS[name]!;
    if (cache.size < 512) cache.set(label, d);
  }
  return d ?? undefined;
}

/**
 * Text of `bytes` in charset `label` as mail-parser gives it: the label's decoder, or lossy UTF-8
 * (invalid bytes as U+FFFD) when the label is missing, empty or not in mail-parser's table.
 * Used for MIME bodies, RFC 2047 encoded words and RFC 2231 parameter values alike.
 */
export function decodeCharset(bytes: Uint8Array, label: string | undefined): string {
  const d = label === undefined ? undefined : charsetDecoder(label);
  return d === undefined ? decodeUtf8(bytes) : d(bytes);
}
