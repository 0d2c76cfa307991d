/**
 * mail-parser's `Received` header parser (its tokenizer and field rules), which Stalwart's received
 * analysis reads: the `from` host, the greeting host, the reverse-DNS name in the from clause's
 * comment, the `for` address, the TLS version, and whether anything was recognised at all.
 *
 * The tokenizer classifies each word by character counts (letters, digits, hex letters, dots, `@`,
 * …) and its alphanumerics, as mail-parser does, so odd headers parse the way Stalwart sees them,
 * quirks included: a folded line's first word keeps the blank before it, and a fold followed by
 * more blanks yields an empty word.
 */
import ipaddr from '../dns/ipaddr.js';
import type { RawHeader } from './headers.js';
import { ipv4Value } from './hostname.js';
import { MemoSlot } from '../util/index.js';

/** A host as the parser records it: an IP address (canonical text) or a name as written. */
export type ReceivedHost = { readonly ip: string; readonly name?: undefined } | { readonly name: string; readonly ip?: undefined };

/** The fields of one `Received:` header that the analysis uses. */
export interface ParsedReceived {
  /** Was any field recognised (from, by, for, with, id, TLS, helo, via, date, …)? mail-parser's "not empty". */
  readonly parsed: boolean;
  /** The host after `from`. */
  readonly from: ReceivedHost | undefined;
  /** The host after a `helo=`/`ehlo=` greeting inside the from clause's comment. */
  readonly helo: ReceivedHost | undefined;
  /** The last domain name inside a comment of the from clause (usually the PTR name). */
  readonly fromIprev: string | undefined;
  /** The connecting IP of the from clause. */
  readonly fromIp: string | undefined;
  /** The host after `by`. */
  readonly by: ReceivedHost | undefined;
  /** The address after `for`, as written. */
  readonly for: string | undefined;
  /** The first TLS version token inside a comment (`TLSv1.3`, `TLS1_2`, `SSLv3`, …), normalised. */
  readonly tlsVersion: string | undefined;
}

/** Characters of one Received value that are read (real ones are a few hundred). */
export const MAX_RECEIVED_CHARS = 16_384;

const enum K {
  BracketOpen, BracketClose, AngleOpen, AngleClose, ParenOpen, ParenClose, Semicolon, Colon, Equal, Slash,
  Quote, Comma, Ip, Integer, Text, Domain, Email, Month, Protocol, Greeting, Tls, Cipher, By, For, From, Id,
  Via, With, Ident,
}

interface Tok {
  k: K;
  /** The word is `s.slice(start, end)` of the value (see {@link textOf}); separators have start = end. */
  start: number;
  end: number;
  /** The word holds a non-ASCII character (a U+FFFD among them makes its text ''). */
  utf: boolean;
  comment: number;
  bracket: number;
  /** Ip: the address; Tls: the version. */
  value: string | undefined;
}

/**
 * A word token's text: '' when it is not valid UTF-8 in the raw bytes (a U+FFFD in our text). Cut
 * from the value only for the few tokens the parser keeps (hosts, the PTR name, the `for` address):
 * a copy per word showed in profiles.
 */
function textOf(s: string, t: Tok): string {
  const word = s.slice(t.start, t.end);
  return t.utf && word.includes('\ufffd') ? '' : word;
}

/** The first 16 letters and digits of word `s[start, end)`, lower-cased (mail-parser's keyword hash). */
function alnumKey(s: string, start: number, end: number): string {
  let key = '';
  for (let i = start; i < end && key.length < 16; i++) {
    const c = s.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 97 && c <= 122)) key += s[i];
    else if (c >= 65 && c <= 90) key += String.fromCharCode(c + 32);
  }
  return key;
}

/**
 * The keyword key of a word ({@link alnumKey}), or '' when it cannot be a keyword's nor start like a
 * cipher suite's (''  matches none): most words (host names, ids, day names) skip the copy and the
 * lookups. A word of ASCII letters and digits only is its own key (no per-character copy).
 */
function wordKey(s: string, start: number, end: number, total: number, alnum: number, upper: number, cipherShape: boolean): string {
  const len = alnum < 16 ? alnum : 16;
  if (alnum === total) {
    if (!mayBeKey(len, s.charCodeAt(start))) return '';
    const key = s.slice(start, end - start > 16 ? start + 16 : end); // ASCII letters and digits only
    return upper === 0 ? key : key.toLowerCase();
  }
  if (!cipherShape) {
    let i = start;
    while (i < end && !isAlnum(s.charCodeAt(i))) i++;
    if (i === end || !mayBeKey(len, s.charCodeAt(i))) return '';
  }
  return alnumKey(s, start, end);
}

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}

function isSeparator(k: K): boolean {
  return k <= K.Comma;
}

const SEP: Tok[] = [];
for (let k = K.BracketOpen; k <= K.Comma; k++) SEP.push({ k, start: 0, end: 0, utf: false, comment: 0, bracket: 0, value: undefined });

/** Separator character code → its token (an array: a Map lookup per separator showed in profiles). */
const SEP_OF: Tok[] = [];
for (const [c, k] of [[40, K.ParenOpen], [41, K.ParenClose], [60, K.AngleOpen], [62, K.AngleClose], [91, K.BracketOpen],
  [93, K.BracketClose], [61, K.Equal], [59, K.Semicolon], [47, K.Slash], [34, K.Quote], [44, K.Comma]] as const) SEP_OF[c] = SEP[k]!;

/** Character classes the tokenizer counts. */
const enum C { Other, Alpha, Hex, UpperAlpha, UpperHex, Digit, At, Dot, Plus, Minus, Lf, Colon, Sep, Blank, Underscore, Utf }

/** Class of each ASCII character (mail-parser counts a-f/A-F apart from the other letters). */
const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  CLASS[c] = c >= 97 && c <= 102 ? C.Hex : c >= 103 && c <= 122 ? C.Alpha : c >= 65 && c <= 70 ? C.UpperHex
    : c >= 71 && c <= 90 ? C.UpperAlpha : c >= 48 && c <= 57 ? C.Digit : C.Other;
}
CLASS[64] = C.At;
CLASS[46] = C.Dot;
CLASS[43] = C.Plus;
CLASS[45] = C.Minus;
CLASS[10] = C.Lf;
CLASS[58] = C.Colon;
CLASS[95] = C.Underscore;
CLASS[127] = C.Utf;
for (const c of [32, 9, 13]) CLASS[c] = C.Blank;
for (const c of [40, 41, 60, 62, 91, 93, 61, 59, 47, 34, 44]) CLASS[c] = C.Sep;

/** Words recognised by their exact alphanumerics (no dots, `@`, or other punctuation). */
const WORDS: ReadonlyMap<string, readonly [K, string?]> = new Map<string, readonly [K, string?]>([
  ...['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].map((m) => [m, [K.Month]] as const),
  ['by', [K.By]], ['for', [K.For]], ['from', [K.From]], ['id', [K.Id]], ['via', [K.Via]], ['with', [K.With]],
  ['ident', [K.Ident]], ['ehlo', [K.Greeting]], ['helo', [K.Greeting]], ['lhlo', [K.Greeting]],
  ...['bsmtp', 'esmtp', 'esmtpa', 'esmtps', 'http', 'httprest', 'imap', 'lmtp', 'lmtpa', 'local', 'lsmtp', 'pop3',
    'smtp', 'smtpd', 'smtpsvc', 'socket', 'stdin', 'asmtp', 'esmtpsa', 'lmtps', 'lmtpsa', 'mms', 'httpu', 'https',
    'utf8smtp', 'utf8smtpa', 'utf8smtps', 'utf8smtpsa', 'utf8lmtp', 'utf8lmtpa', 'utf8lmtps', 'utf8lmtpsa',
  ].map((p) => [p, [K.Protocol]] as const),
  ['ssl2', [K.Tls, 'SSLv2']], ['ssl3', [K.Tls, 'SSLv3']], ['sslv2', [K.Tls, 'SSLv2']], ['sslv3', [K.Tls, 'SSLv3']],
  ['tls1', [K.Tls, 'TLSv1.0']], ['tlsv1', [K.Tls, 'TLSv1.0']],
]);
/** Words recognised even with a `-` in them (`local-esmtp`, `esmtp-tls`). */
const HYPHEN_WORDS: ReadonlySet<string> = new Set(['localesmtp', 'localesmtps', 'localbsmtp', 'esmtptls']);
/** TLS versions written with punctuation allowed between the parts (`TLSv1.2`, `TLS1_2`, `DTLSv1.3`). */
const TLS_WORDS: ReadonlyMap<string, string> = new Map([
  ['tls10', 'TLSv1.0'], ['tls11', 'TLSv1.1'], ['tls12', 'TLSv1.2'], ['tls13', 'TLSv1.3'],
  ['tlsv10', 'TLSv1.0'], ['tlsv11', 'TLSv1.1'], ['tlsv12', 'TLSv1.2'], ['tlsv13', 'TLSv1.3'],
  ['dtls10', 'DTLSv1.0'], ['dtls12', 'DTLSv1.2'], ['dtls13', 'DTLSv1.3'],
  ['dtlsv10', 'DTLSv1.0'], ['dtlsv12', 'DTLSv1.2'], ['dtlsv13', 'DTLSv1.3'],
]);
/** A cipher-suite word starts (alphanumerics) with one of these. */
const CIPHER_PREFIXES: ReadonlySet<string> = new Set(['rsa', 'ecd', 'dhe', 'psk', 'srp', 'aes', 'des', 'tls']);
/**
 * Bit `first letter - 'a'` of entry `n` is set when some keyword key (of {@link WORDS},
 * {@link HYPHEN_WORDS}, {@link TLS_WORDS}) has length `n` and starts with that letter: most words
 * (host names, ids, day names) fail this test, and skip lower-casing and a Map lookup.
 */
const KEY_SHAPES = new Uint32Array(17);
for (const key of [...WORDS.keys(), ...HYPHEN_WORDS, ...TLS_WORDS.keys()]) KEY_SHAPES[key.length]! |= 1 << (key.charCodeAt(0) - 97);

/** Can a key of length `len` whose first character is `c` be a keyword key? */
function mayBeKey(len: number, c: number): boolean {
  const l = c | 32; // lower case (digits keep their code)
  return l >= 97 && l <= 122 && (KEY_SHAPES[len]! & (1 << (l - 97))) !== 0;
}

const I64_MAX = 9223372036854775807n;

/** Rust's `str::parse::<i64>` of `s[start, end)`: an optional sign, then ASCII digits only, in range. */
function isI64(s: string, start: number, end: number): boolean {
  let i = end > start && (s.charCodeAt(start) === 43 || s.charCodeAt(start) === 45) ? start + 1 : start;
  if (i === end) return false;
  for (; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  if (end - start < 19) return true;
  const v = BigInt(s.slice(start, end));
  return v <= I64_MAX && v >= -I64_MAX - 1n;
}

/** Rust's `Ipv6Addr::from_str`: plain or with an embedded IPv4, no zone. */
function parseIpv6(s: string): string | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || !ipaddr.IPv6.isValid(s)) return undefined;
  try {
    return ipaddr.IPv6.parse(s).toString();
  } catch {
    return undefined;
  }
}

/** Splits a Received value into mail-parser's tokens. */
function tokenize(s: string): Tok[] {
  const out: Tok[] = [];
  const n = s.length;
  let pos = 0;
  let eof = false;
  let inQuote = false;
  let inDate = false;
  let bracketDepth = 0;
  let commentDepth = 0;
  let pending: Tok | undefined;

  for (;;) {
    if (pending !== undefined) {
      out.push(pending);
      pending = undefined;
      continue;
    }
    if (eof) break;
    let alpha = 0, digit = 0, hex = 0, dot = 0, at = 0, other = 0, colon = 0, plus = 0, minus = 0, utf = 0;
    let upper = 0, underscore = 0, total = 0;
    const comment = commentDepth;
    const bracket = bracketDepth;
    let start = pos;
    let lfEnd = false;

    scan: while (pos < n) {
      const c = s.charCodeAt(pos++);
      switch (c < 128 ? CLASS[c]! : C.Utf) {
        case C.Alpha: alpha++; break;
        case C.Hex: hex++; break;
        case C.UpperAlpha: alpha++; upper++; break;
        case C.UpperHex: hex++; upper++; break;
        case C.Digit: digit++; break;
        case C.At: at++; break;
        case C.Dot: dot++; break;
        case C.Plus: plus++; break;
        case C.Minus: minus++; break;
        case C.Utf: utf++; break;
        case C.Underscore: underscore++; other++; break;
        case C.Other: other++; break;
        case C.Blank:
          if (total > 0) break scan;
          start++;
          continue;
        case C.Lf: {
          const nx = s.charCodeAt(pos);
          if (nx !== 32 && nx !== 9) {
            eof = true;
            break scan;
          }
          if (total > 0) {
            // A bare LF ends the word as the CR of a CRLF would (see parseReceivedValue); the line
            // break is then read again as the start of the next word.
            pos--;
            lfEnd = true;
            break scan;
          }
          pos++; // the folding blank goes with the line break
          start++; // (mail-parser counts this as a character of the next word)
          break;
        }
        case C.Colon:
          // Colons belong to the word only while it can still be an IPv6 address.
          if (inDate || at > 0 || dot > 0 || alpha > 0 || other > 0 || plus > 0 || minus > 0 || utf > 0 || colon === 7) {
            pending = SEP[K.Colon];
            break scan;
          }
          colon++;
          break;
        case C.Sep:
          // Every other separator ends the word and is a token of its own.
          if (c === 40 /* ( */) {
            if (!inQuote) commentDepth++;
          } else if (c === 41 /* ) */) {
            if (!inQuote && commentDepth > 0) commentDepth--;
          } else if (c === 91 /* [ */) {
            // mail-parser derives the bracket depth from the comment depth.
            if (!inQuote) bracketDepth = commentDepth + 1;
          } else if (c === 93 /* ] */) {
            if (!inQuote) bracketDepth = commentDepth > 0 ? commentDepth - 1 : 0;
          } else if (c === 59 /* ; */) {
            if (commentDepth === 0) inDate = true;
          } else if (c === 34 /* " */) {
            inQuote = !inQuote;
          }
          pending = SEP_OF[c];
          break scan;
      }
      total++;
    }
    if (total === 0) {
      if (pending === undefined) break;
      continue;
    }
    // The word ends one character before the read position (the character that ended it, or the
    // last one of the value, which mail-parser drops the same way).
    const end = lfEnd ? pos : pos - 1;
    const alnum = alpha + digit + hex;
    // Every token has the same shape (value set up front) so the parser's reads stay monomorphic.
    const tok: Tok = { k: K.Text, start, end, utf: utf > 0, comment, bracket, value: undefined };
    const plain = dot === 0 && at === 0 && other === 0 && colon === 0 && plus === 0 && utf === 0;
    if (alpha === 0 && digit >= 4 && digit <= 12 && hex === 0 && dot === 3 && at === 0 && other === 0 && colon === 0 && plus === 0 && minus === 0 && utf === 0) {
      // The counts already say 4–12 digits and 3 dots; valid octets make the text canonical.
      const text = s.slice(start, end);
      if (ipv4Value(text) !== undefined) {
        tok.k = K.Ip;
        tok.value = text;
      }
    } else if (alpha === 0 && at === 0 && other === 0 && plus === 0 && minus === 0 && utf === 0 && (
      (dot === 0 && colon >= 2 && ((hex >= 1 && hex <= 32) || (digit >= 1 && digit <= 32)))
      || (digit >= 4 && digit <= 12 && hex === 4 && dot === 3 && colon === 3))) {
      const ip = parseIpv6(s.slice(start, end));
      if (ip !== undefined) {
        tok.k = K.Ip;
        tok.value = ip;
      }
    } else if (alpha === 0 && digit >= 1 && hex === 0 && dot === 0 && at === 0 && other === 0 && colon === 0 && utf === 0 && plus + minus <= 1) {
      // Digits and at most one sign: no blank to trim (mail-parser's second try on the trimmed word).
      if (isI64(s, start, end)) tok.k = K.Integer;
    } else if (at === 1 && (alpha >= 1 || hex >= 1)) {
      tok.k = K.Email;
    } else {
      // Keywords are told apart by their letters and digits (the first 16, lower-cased); only words
      // short enough to be one need them, and only the words that get this far.
      const cipherShape = alpha + hex === upper && total > 6 && (underscore > 0 || minus > 0) && digit > 0;
      const hash = alnum <= 11 || (upper > 0 && digit > 0) ? wordKey(s, start, end, total, alnum, upper, cipherShape) : '';
      const w = plain && minus === 0 ? WORDS.get(hash) : undefined;
      const tls = w === undefined && at === 0 && colon === 0 && plus === 0 && utf === 0 ? TLS_WORDS.get(hash) : undefined;
      if (w !== undefined) {
        tok.k = w[0];
        if (w[1] !== undefined) tok.value = w[1];
      } else if (plain && HYPHEN_WORDS.has(hash)) {
        tok.k = K.Protocol;
      } else if (tls !== undefined && (minus === 0 || (hash.length === 5 && hash.startsWith('tls')))) {
        tok.k = K.Tls;
        tok.value = tls;
      } else if ((alpha >= 1 || hex >= 1) && dot >= 1 && at === 0 && other === 0 && colon === 0 && plus === 0) {
        tok.k = K.Domain;
      } else if (cipherShape && dot === 0 && at === 0 && plus === 0 && (other === 0 || other === underscore) && colon === 0
        && utf === 0 && CIPHER_PREFIXES.has(hash.slice(0, 3))) {
        tok.k = K.Cipher;
      }
    }
    out.push(tok);
  }
  return out;
}

const EMPTY: ParsedReceived = {
  parsed: false, from: undefined, helo: undefined, fromIprev: undefined, fromIp: undefined, by: undefined,
  for: undefined, tlsVersion: undefined,
};

const enum State { None, From, By, For, Id, With, Via, Date }

function host(s: string, t: Tok): ReceivedHost {
  return t.k === K.Ip ? { ip: t.value! } : { name: textOf(s, t) };
}

/**
 * Parses one Received value (the text after the colon, folding included) as mail-parser does.
 * Only the first {@link MAX_RECEIVED_CHARS} characters are read. Never throws.
 */
export function parseReceivedValue(raw: string): ParsedReceived {
  // Bare LF line ends (files saved with Unix line ends) are read as the CRLF that SMTP delivers:
  // mail-parser would keep the LF in the word before a fold ("host.example\n"), which makes HELO
  // and PTR names differ that do not. The tokenizer ends a word at a bare LF as at a CR, which
  // gives the tokens of the CRLF text without building it.
  const s = raw.length > MAX_RECEIVED_CHARS ? raw.slice(0, MAX_RECEIVED_CHARS) : raw;
  const toks = tokenize(s);
  let state = State.None;
  let from: ReceivedHost | undefined;
  let helo: ReceivedHost | undefined;
  let by: ReceivedHost | undefined;
  let fromIp: string | undefined;
  let fromIprev: string | undefined;
  let forAddr: string | undefined;
  let tlsVersion: string | undefined;
  let other = false; // with, id, via, ident, cipher or the greeting command: they only count as "parsed"
  let dateParts = 0;
  let i = 0;
  while (i < toks.length) {
    const t = toks[i++]!;
    switch (t.k) {
      case K.From:
        if (from !== undefined) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.BracketOpen) { i++; continue; }
          if (p.k === K.Ip || !isSeparator(p.k)) { from = host(s, p); i++; }
          break;
        }
        state = State.From;
        break;
      case K.By:
        if (t.comment !== 0) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.BracketOpen || p.k === K.AngleOpen) { i++; continue; }
          if (p.k === K.Ip || !isSeparator(p.k)) { by = host(s, p); i++; }
          break;
        }
        state = State.By;
        break;
      case K.For:
        if (t.comment !== 0) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.Equal || p.k === K.AngleOpen) { i++; continue; }
          if (p.k === K.Email) { forAddr = textOf(s, p); i++; }
          break;
        }
        state = State.For;
        break;
      case K.Semicolon:
        state = State.Date;
        break;
      case K.Id:
      case K.Via:
        if (t.comment !== 0) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.Equal || (t.k === K.Id && (p.k === K.AngleOpen || p.k === K.BracketOpen || p.k === K.Colon))) { i++; continue; }
          if (!isSeparator(p.k)) { other = true; i++; }
          break;
        }
        state = t.k === K.Id ? State.Id : State.Via;
        break;
      case K.With:
        if (t.comment !== 0) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.Protocol) { other = true; i++; break; }
          if (p.k === K.Semicolon || p.k === K.Tls || p.k === K.By || p.k === K.For || p.k === K.From || p.k === K.Id
            || p.k === K.Via || p.k === K.With) break;
          i++;
        }
        state = State.With;
        break;
      case K.Ident:
        if (t.comment === 0) break;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.Equal || p.k === K.AngleOpen || p.k === K.BracketOpen || p.k === K.Colon) { i++; continue; }
          if (!isSeparator(p.k)) { other = true; i++; }
          break;
        }
        break;
      case K.Greeting:
        if (state !== State.From || t.comment === 0) break;
        other = true;
        for (let p = toks[i]; p !== undefined; p = toks[i]) {
          if (p.k === K.Equal || p.k === K.BracketOpen || p.k === K.Colon) { i++; continue; }
          if (p.k === K.Ip || !isSeparator(p.k)) { helo = host(s, p); i++; }
          break;
        }
        break;
      case K.Ip:
        if (state === State.From && (t.bracket > 0 || (t.comment > 0 && fromIp === undefined))) fromIp = t.value;
        break;
      case K.Domain:
        if (state === State.From && t.comment > 0) fromIprev = textOf(s, t);
        break;
      case K.Email:
        if (state === State.From) other = true; // the ident
        break;
      case K.Integer:
      case K.Month:
        if (state === State.Date) dateParts++;
        break;
      case K.Cipher:
        other = true;
        break;
      case K.Tls:
        if (t.comment > 0 && tlsVersion === undefined) tlsVersion = t.value;
        break;
    }
  }
  // The date counts once its seconds field was read (six numbers or month names after the `;`).
  const parsed = from !== undefined || fromIp !== undefined || fromIprev !== undefined || by !== undefined
    || forAddr !== undefined || tlsVersion !== undefined || helo !== undefined || other || dateParts >= 6;
  if (!parsed) return EMPTY;
  return { parsed, from, helo, fromIprev, fromIp, by, for: forAddr, tlsVersion };
}

const memo = new MemoSlot<RawHeader, ParsedReceived>();

/** {@link parseReceivedValue} of a `Received:` header, computed once per header. */
export function parsedReceived(h: RawHeader): ParsedReceived {
  let r = memo.get(h);
  if (r === undefined) {
    r = parseReceivedValue(h.raw);
    memo.set(h, r);
  }
  return r;
}
