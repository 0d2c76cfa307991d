/**
 * fast-check arbitraries of mutations of a raw RFC 5322 message (test/message/fuzz.test.ts,
 * test/engine/classify-fuzz.test.ts). A mutation is a pure function of the message bytes, built from
 * generated numbers, so fast-check shrinks it; positions are fractions of the current length, so one
 * mutation applies to any message. The message is handled as a latin1 string (one char per byte), which
 * keeps every byte as it is.
 *
 * Kinds: byte flips, insertions, deletions, truncation; duplicated, dropped, folded, unfolded header lines;
 * line-end rewrites (CRLF, LF, CR, mixed); NULs and invalid UTF-8; MIME boundary damage; bogus
 * Content-Transfer-Encoding, charset and Content-Type parameters; deep multipart nesting; huge header
 * values; RFC 2047 encoded-word soup; malformed addresses; broken HTML.
 */
import fc from 'fast-check';
import { loadCorpus, type CorpusMessage } from './corpus.js';

/** One mutation: a name for the shrunk counterexample, and the function. */
export interface Mutation {
  readonly name: string;
  apply(msg: string): string;
}

const mut = (name: string, apply: (msg: string) => string): Mutation => ({ name, apply, toString: () => name } as Mutation);

/** A position in [0, len] from a fraction in [0, 1). */
const at = (f: number, len: number): number => Math.min(len, Math.floor(f * (len + 1)));
const frac = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

/** Where the header block ends (index of the blank line), or the whole message. */
function headerEnd(msg: string): number {
  const m = /\r?\n\r?\n|\r\r/.exec(msg);
  return m ? m.index : msg.length;
}

/** Lines with their line ends kept. */
const linesOf = (s: string): string[] => s.match(/[^\r\n]*(?:\r\n|\n|\r|$)/g)!.filter((l) => l !== '');

/** Replaces the index-th (modulo count) match of `re` in msg, or appends `fallback` to the headers. */
function replaceNth(msg: string, re: RegExp, f: number, by: (m: string) => string, fallback?: string): string {
  const hits = [...msg.matchAll(new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g'))];
  if (hits.length === 0) return fallback === undefined ? msg : fallback + msg;
  const h = hits[Math.floor(f * hits.length)]!;
  return msg.slice(0, h.index) + by(h[0]) + msg.slice(h.index! + h[0].length);
}

const latin1 = (bytes: number[]): string => String.fromCharCode(...bytes);
const bytesArb = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 16 });

/** Pieces that tend to matter to a mail parser, used by several mutations. */
const PIECES = [
  '\r\n', '\n', '\r', '\r\n\r\n', '\r\n ', '\r\n\t', ':', ';', '"', '\\', '<', '>', '@', ',', '=?', '?=', '=?utf-8?B?', '=?utf-8?Q?',
  '--', '--b', 'boundary=', 'charset=', '=\r\n', '=ZZ', '=3D', '\x00', '\xff', '\xc3', '\xed\xa0\x80', '\xef\xbb\xbf', '\u00e9',
  'Content-Type: multipart/mixed; boundary="x"\r\n', 'Content-Transfer-Encoding: base64\r\n', 'http://', 'mailto:', '&#', '<a href=',
  '(', ')', '[', ']', '%', '*0*=', "''", 'begin 644 x\r\n', 'Received: from x by y;\r\n',
];
const pieceArb = fc.constantFrom(...PIECES);
const soupArb = fc.array(fc.oneof(pieceArb, fc.string({ maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 6 })), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));

const CTE = ['base64', 'quoted-printable', '7bit', '8bit', 'binary', 'x-uuencode', 'uuencode', '', ' base64 base64', 'BASE64', 'Quoted-Printable; x', 'x-bogus', '"base64"', '\x00'];
const CHARSETS = ['utf-8', 'UTF-8', 'us-ascii', 'iso-8859-1', 'windows-1252', 'koi8-r', 'shift_jis', 'iso-2022-jp', 'gb2312', 'big5', 'euc-kr', 'utf-16', 'utf-16le', 'utf-16be', 'utf-7', 'x-unknown', '', '"', "utf-8''", 'x-user-defined', 'replacement', 'a'.repeat(300), 'unicode-1-1-utf-7', '\u00e9'];
const TYPES = ['text/plain', 'text/html', 'multipart/mixed', 'multipart/alternative', 'multipart/related', 'multipart/report', 'message/rfc822', 'message/global', 'application/octet-stream', 'image/png', 'text', '/', 'multipart/', 'x/y/z', '', 'text/html; charset'];
const PARAMS = [
  '; boundary=', '; boundary=""', '; boundary="', '; charset=', '; name="a.exe"', "; name*=utf-8''%E2%82%AC.exe", '; name*0*=utf-8\'\'%E2; name*1*=%82%AC',
  "; filename*=x-unknown'en'%FF%FE", '; name="=?utf-8?B?ZXZpbC5leGU=?="', '; a=b; a=c', ';;;;', '; =x', '; x="unterminated', '; format=flowed; delsp=yes', '; boundary=b(c)',
];
const HTML = [
  '<a href=', '<a href="http://x.example/', '<!--', '-->', '<script>', '</script>', '<style>', '<<<>>>', '&#xFFFFFFFF;', '&#0;', '&#x110000;', '&amp', '<base href="http://b.example/">',
  '<img src=cid:x>', '<a href="mailto:a@b?c=d">', '<html><head><title>', '</head><body>', '<![CDATA[', '<?xml ?>', '<a href=\'x\' href="y">', '<' + 'div>'.repeat(50), '<p', '"', '\'', '=',
];
const ADDRESSES = [
  '', '<>', '<@>', 'a@', '@b', '"a@b" <c@d>', 'a@b@c', '<a@[127.0.0.1]>', '=?utf-8?B?QGV2aWw=?= <a@b.example>', 'undisclosed-recipients:;', 'g: a@b, c@d;', '(comment) a@b (x)',
  '"unterminated <a@b>', 'a@b, , ,c@d', '<<a@b>>', 'a@-b-.example', 'x'.repeat(300) + '@example.com', 'a@' + 'b.'.repeat(200) + 'com', '\u00e9@\u00e9.example', 'a@b.example\x00',
];

/** Encoded words: valid, invalid and adjacent, with odd charsets and encodings. */
const encodedWordArb = fc
  .tuple(fc.constantFrom(...CHARSETS, 'utf-8*en', 'iso-8859-1*'), fc.constantFrom('B', 'Q', 'b', 'q', 'X', ''), fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 })), fc.boolean())
  .map(([cs, enc, text, asBase64]) => `=?${cs}?${enc}?${asBase64 ? Buffer.from(text).toString('base64') : text.replace(/\?=/g, '')}?=`);
const encodedSoupArb = fc.array(fc.oneof(encodedWordArb, fc.constantFrom(' ', '', '\r\n ', '=?', '?=', 'plain', '"')), { minLength: 1, maxLength: 20 }).map((a) => a.join(''));

const headerNameArb = fc.constantFrom('Subject', 'From', 'To', 'Cc', 'Reply-To', 'Content-Type', 'Message-ID', 'Date', 'Received', 'X-Mailer', 'Content-Disposition', 'List-Unsubscribe', 'Authentication-Results', 'Sender');

/** Every mutation kind. */
export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(frac, fc.integer({ min: 1, max: 255 })).map(([f, x]) => mut(`flip(${f},${x})`, (m) => {
    const i = Math.min(m.length - 1, Math.floor(f * m.length));
    return i < 0 ? m : m.slice(0, i) + String.fromCharCode(m.charCodeAt(i) ^ x) + m.slice(i + 1);
  })),
  fc.tuple(frac, bytesArb).map(([f, b]) => mut(`insertBytes(${f},${JSON.stringify(b)})`, (m) => m.slice(0, at(f, m.length)) + latin1(b) + m.slice(at(f, m.length)))),
  fc.tuple(frac, soupArb).map(([f, s]) => mut(`insert(${f},${JSON.stringify(s)})`, (m) => m.slice(0, at(f, m.length)) + s + m.slice(at(f, m.length)))),
  fc.tuple(frac, fc.integer({ min: 1, max: 4096 })).map(([f, n]) => mut(`delete(${f},${n})`, (m) => m.slice(0, at(f, m.length)) + m.slice(at(f, m.length) + n))),
  frac.map((f) => mut(`truncate(${f})`, (m) => m.slice(0, at(f, m.length)))),
  fc.tuple(frac, fc.integer({ min: 1, max: 50 })).map(([f, k]) => mut(`dupHeader(${f},${k})`, (m) => {
    const hs = linesOf(m.slice(0, headerEnd(m)));
    if (hs.length === 0) return m;
    const i = Math.floor(f * hs.length);
    return [...hs.slice(0, i + 1), ...Array<string>(k).fill(hs[i]!), ...hs.slice(i + 1)].join('') + m.slice(headerEnd(m));
  })),
  frac.map((f) => mut(`dropHeader(${f})`, (m) => {
    const hs = linesOf(m.slice(0, headerEnd(m)));
    const i = Math.floor(f * hs.length);
    return [...hs.slice(0, i), ...hs.slice(i + 1)].join('') + m.slice(headerEnd(m));
  })),
  fc.tuple(frac, fc.constantFrom('\r\n ', '\r\n\t', '\n ', '\r ', '\r\n')).map(([f, fold]) => mut(`fold(${f},${JSON.stringify(fold)})`, (m) =>
    replaceNth(m.slice(0, headerEnd(m)), /[ ;,]/, f, (s) => (s === ' ' ? fold : s + fold)) + m.slice(headerEnd(m)))),
  fc.constant(mut('unfold', (m) => m.slice(0, headerEnd(m)).replace(/\r?\n[ \t]+/g, ' ') + m.slice(headerEnd(m)))),
  fc.tuple(fc.constantFrom('\r\n', '\n', '\r', 'mixed'), fc.integer()).map(([eol, seed]) => mut(`eol(${JSON.stringify(eol)},${seed})`, (m) => {
    let k = seed;
    const ends = ['\r\n', '\n', '\r', '\n\r'];
    return m.replace(/\r\n|\n|\r/g, () => (eol === 'mixed' ? ends[(k = (k * 1103515245 + 12345) & 0x7fffffff) % 4]! : eol));
  })),
  fc.tuple(frac, fc.constantFrom('\x00', '\x00'.repeat(64), '\xff\xfe', '\xc3', '\xc3\x28', '\xed\xa0\x80', '\xf4\x90\x80\x80', '\xc0\xaf', '\x80\x80\x80', '\xef\xbb\xbf'))
    .map(([f, b]) => mut(`badBytes(${f},${JSON.stringify(b)})`, (m) => m.slice(0, at(f, m.length)) + b + m.slice(at(f, m.length)))),
  fc.tuple(frac, fc.constantFrom('drop', 'dup', 'close', 'unclose', 'rename', 'prefix', 'empty')).map(([f, how]) => mut(`boundary(${f},${how})`, (m) => {
    const b = /boundary="?([^";\r\n]{0,200})/i.exec(m)?.[1];
    if (b === undefined) return m;
    const line = new RegExp(`^--${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(--)?[ \t]*$`, 'm');
    switch (how) {
      case 'drop': return replaceNth(m, line, f, () => '');
      case 'dup': return replaceNth(m, line, f, (s) => `${s}\r\n${s}`);
      case 'close': return replaceNth(m, line, f, (s) => (s.endsWith('--') ? s : s + '--'));
      case 'unclose': return m.replace(new RegExp(`--${b.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}--`, 'g'), `--${b}`);
      case 'rename': return m.replace(/boundary="?[^";\r\n]*"?/i, 'boundary="other"');
      case 'prefix': return m.replace(/boundary="?[^";\r\n]*"?/i, `boundary="${b.slice(0, Math.floor(b.length * f))}"`);
      default: return m.replace(/boundary="?[^";\r\n]*"?/i, 'boundary=""');
    }
  })),
  fc.tuple(frac, fc.constantFrom(...CTE)).map(([f, v]) => mut(`cte(${f},${JSON.stringify(v)})`, (m) =>
    replaceNth(m, /^Content-Transfer-Encoding:[^\r\n]*/im, f, () => `Content-Transfer-Encoding: ${v}`, `Content-Transfer-Encoding: ${v}\r\n`))),
  fc.tuple(frac, fc.constantFrom(...CHARSETS)).map(([f, v]) => mut(`charset(${f},${JSON.stringify(v)})`, (m) =>
    replaceNth(m, /charset="?[^";\s]*"?/i, f, () => `charset=${v}`, `Content-Type: text/plain; charset=${v}\r\n`))),
  fc.tuple(frac, fc.constantFrom(...TYPES), fc.array(fc.constantFrom(...PARAMS), { maxLength: 4 })).map(([f, t, ps]) => mut(`contentType(${f},${t},${JSON.stringify(ps)})`, (m) =>
    replaceNth(m, /^Content-Type:[^\r\n]*/im, f, (s) => (f < 0.3 ? `Content-Type: ${t}${ps.join('')}` : s + ps.join('')), `Content-Type: ${t}${ps.join('')}\r\n`))),
  fc.tuple(fc.integer({ min: 1, max: 200 }), fc.boolean()).map(([depth, closed]) => mut(`nest(${depth},${closed})`, (m) => {
    const he = headerEnd(m);
    let body = m.slice(he).replace(/^(\r?\n)+/, '');
    let head = m.slice(0, he).replace(/^Content-Type:[^\r\n]*(\r?\n[ \t][^\r\n]*)*\r?\n?/gim, '');
    const inner = /^Content-Type:[^\r\n]*(\r?\n[ \t][^\r\n]*)*/im.exec(m.slice(0, he))?.[0] ?? 'Content-Type: text/plain';
    body = `${inner}\r\n\r\n${body}`;
    for (let i = depth - 1; i >= 0; i--) body = `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n${body}\r\n${closed ? `--n${i}--\r\n` : ''}`;
    head = head.replace(/(\r?\n)?$/, '\r\n');
    return head + body;
  })),
  fc.tuple(headerNameArb, fc.constantFrom('x', 'a b ', '=?utf-8?B?QQ==?=', 'a@b.example, ', '<x@y>', '(', '"', ';', 'from h ', '\x00', '\xe9', 'http://x.example/ '), fc.integer({ min: 1_000, max: 100_000 }))
    .map(([name, unit, len]) => mut(`hugeHeader(${name},${JSON.stringify(unit)},${len})`, (m) => `${name}: ${unit.repeat(Math.ceil(len / unit.length))}\r\n${m}`)),
  fc.tuple(headerNameArb, encodedSoupArb, fc.boolean()).map(([name, soup, replace]) => mut(`encodedWords(${name},${JSON.stringify(soup)},${replace})`, (m) =>
    replace ? replaceNth(m, new RegExp(`^${name}:[^\\r\\n]*`, 'im'), 0, () => `${name}: ${soup}`, `${name}: ${soup}\r\n`) : `${name}: ${soup}\r\n${m}`)),
  fc.tuple(fc.constantFrom('From', 'To', 'Cc', 'Reply-To', 'Sender', 'Disposition-Notification-To', 'Return-Path'), fc.array(fc.oneof(fc.constantFrom(...ADDRESSES), soupArb), { minLength: 1, maxLength: 5 }))
    .map(([name, parts]) => mut(`address(${name},${JSON.stringify(parts)})`, (m) =>
      replaceNth(m, new RegExp(`^${name}:[^\\r\\n]*`, 'im'), 0, () => `${name}: ${parts.join(', ')}`, `${name}: ${parts.join(', ')}\r\n`))),
  fc.tuple(frac, fc.array(fc.oneof(fc.constantFrom(...HTML), fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 12 })).map(([f, bits]) => mut(`html(${f},${JSON.stringify(bits)})`, (m) => {
    const he = headerEnd(m);
    const i = he + at(f, m.length - he);
    return m.slice(0, i) + bits.join('') + m.slice(i);
  })),
);

/** One to five mutations, applied in order. */
export const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 5 });

/** Applies mutations to raw bytes; returns the new bytes. */
export function applyMutations(raw: Buffer, ms: readonly Mutation[]): Buffer {
  let s = raw.toString('latin1');
  for (const m of ms) s = m.apply(s);
  return Buffer.from(s, 'latin1');
}

/**
 * A fixed sample of the corpus (every 10th message, in corpus order): the first 12 multipart, 10 HTML and
 * 8 base64/quoted-printable messages of it and 10 others, spam and ham alike. Deterministic.
 */
export function mutationSample(): CorpusMessage[] {
  const kinds: [RegExp | undefined, number][] = [
    [/^Content-Type:\s*multipart\//im, 12],
    [/^Content-Type:\s*text\/html/im, 10],
    [/^Content-Transfer-Encoding:\s*(base64|quoted-printable)/im, 8],
    [undefined, 10],
  ];
  const out: CorpusMessage[] = [];
  for (const c of loadCorpus({ step: 10 })) {
    const text = c.raw.toString('latin1');
    const k = kinds.find(([re, n]) => n > 0 && (re === undefined || re.test(text)));
    if (k === undefined || c.raw.length > 200_000) continue;
    k[1]--;
    out.push(c);
  }
  return out;
}

/** Snippets whose repetition a linear parser must take in its stride, for the scaling checks. */
export const SCALING_SNIPPETS = ['=?utf-8?B?QQ==?=', '<a href=', '<!--', 'a@b, ', '(', '"', '\r\n ', '--b\r\n', '=\r\n', '&#x', ';', '<<', 'http://x.example/ ', 'from h by h; ', '\\'];
/** Where a scaling snippet goes: a header of that name, or an HTML body. */
export const SCALING_PLACES = ['Subject', 'From', 'To', 'Received', 'Content-Type', 'body'];

/** A message with `snippet` repeated `k` times at `where` (one of {@link SCALING_PLACES}). */
export function scalingMessage(snippet: string, where: string, k: number): Buffer {
  const s = snippet.repeat(k);
  return Buffer.from(
    where === 'body'
      ? `From: a@example.com\r\nContent-Type: text/html\r\n\r\n${s}\r\n`
      : `From: a@example.com\r\n${where}: ${where === 'Content-Type' ? 'multipart/mixed; boundary=b; x=' : ''}${s}\r\n\r\n--b\r\nbody\r\n`,
    'latin1',
  );
}
