/**
 * Stalwart's `TypesTokenizer` as the classifier's token builder uses it (docs/classifier.md "Tokens"):
 * a text becomes typed tokens (alphabetic, alphanumeric, integer, float, URL, scheme-less URL, URL
 * without a host, IP address, e-mail, punctuation, other, space).
 *
 * Segmentation: a *word* is a maximal run of Unicode alphabetic characters and ASCII digits; every other
 * character is a one-character token (white-space runs give one Space). At each word, a URL with a
 * scheme, then an e-mail, then a scheme-less URL (a dotted host whose last label is a public suffix, or
 * a dotted quad) is tried; the first that matches wins. With `numbers` on, `-12` and `1.5` are numbers.
 * Linear in the input: every regex is anchored (sticky) at the current position and bounded.
 */
import { hasPublicSuffix } from '../message/hostname.js';
import { BASIS } from './slot-table.js';

export enum T {
  Alphabetic,
  Alphanumeric,
  Integer,
  Float,
  Url,
  UrlNoScheme,
  UrlNoHost,
  IpAddr,
  Email,
  Punctuation,
  Other,
  Space,
}

export interface TypedToken {
  readonly type: T;
  /** The token text as written (one character for Punctuation/Other, `' '` for Space). */
  readonly text: string;
}

/** Characters tokenized per text at most (UTF-16 code units): longer texts are cut. */
export const MAX_CLASSIFIER_TEXT = 1_000_000;

/**
 * Look-ahead (characters) that the attempts at composite tokens (URLs, e-mail addresses, host names, IP
 * addresses) may read in all, per {@link CompositeBudget} (the token builder keeps one per message; a
 * {@link TypedTokens} made without one has its own). Each attempt is charged the characters from its word
 * to the end of its span (the run up to white space), at most {@link COMPOSITE_CHARGE_MAX}: its patterns
 * read no further. Once spent, the remaining words are plain words.
 *
 * Why: a word is tried for a composite token when a trigger lies ahead of it in its span, and the
 * patterns then read on from that word. In a hostile text whose spans are host-like runs without white
 * space (`a.b-a.b-…`, `a.a.a.…`, which quoted-printable soft line breaks make one span however long),
 * every word is tried and re-reads hundreds of characters: 3–7 s for a megabyte. The most a message of
 * the SpamAssassin corpus uses is 158,188 characters (the raw message read as one text), so mail is not
 * affected (docs/classifier.md, "Differences from Stalwart").
 */
export const MAX_COMPOSITE_LOOKAHEAD = 2_000_000;

/** What is left of a {@link MAX_COMPOSITE_LOOKAHEAD} (characters), shared by the texts of one message. */
export interface CompositeBudget {
  lookahead: number;
}

/** A fresh {@link CompositeBudget}. */
export function compositeBudget(): CompositeBudget {
  return { lookahead: MAX_COMPOSITE_LOOKAHEAD };
}

/** The most one composite attempt is charged (about the farthest its patterns read: an e-mail address's 65 atoms of 255). */
const COMPOSITE_CHARGE_MAX = 16_640;

const WORD = String.raw`\p{Alphabetic}0-9`;
const SCHEME_RE = /[A-Za-z0-9]{1,8}(?:\+[A-Za-z0-9]{1,16})?:\/\//y;
/** The characters of an authority (after `://`), and of a path after its first `/` or `?`. */
const AUTH_CLASS = String.raw`[${WORD}.\-_~!$&'()*+,;=:%@]`;
/** Unicode White_Space as Rust's `char::is_whitespace` has it (JavaScript's `\s` adds U+FEFF and lacks U+0085). */
const SPACE_CLASS = String.raw`\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`;
const PATH_CLASS = String.raw`[^${SPACE_CLASS}<>"\\^` + '`' + String.raw`|\x00-\x1f\x7f]`;
const AUTH_RE = new RegExp(String.raw`(?:\[[0-9A-Fa-f:.]{2,45}\]|${AUTH_CLASS}{0,512})`, 'uy');
const PATH_RE = new RegExp(String.raw`[/?]${PATH_CLASS}{0,4096}`, 'uy');
const ATOM = String.raw`[${WORD}!#$%&'*+\-/=?^_` + '`' + String.raw`{|}~\u{80}-\u{10ffff}]{1,255}`;
const LABEL = String.raw`[${WORD}](?:[${WORD}\-]{0,61}[${WORD}])?`;
const HOST = String.raw`(?:${LABEL}\.){1,126}${LABEL}`;
const EMAIL_RE = new RegExp(String.raw`${ATOM}(?:\.${ATOM}){0,64}@(${HOST})`, 'uy');
const HOSTNAME_RE = new RegExp(HOST, 'uy');
const PORT_RE = /:[0-9]{1,5}/y;
const QUAD_RE = /^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/;
const WORD_CHAR_RE = /[\p{Alphabetic}0-9]/u;
const ALPHA_LAST_LABEL_RE = /\.\p{Alphabetic}{2,63}$/u;

function isWordChar(ch: string): boolean {
  const c = ch.charCodeAt(0);
  if (c < 0x80) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
  return WORD_CHAR_RE.test(ch);
}

/** A host of a URL or e-mail: a dotted quad, a bracketed IPv6 literal, or a dotted name ending in a public suffix. */
function validHost(host: string): boolean {
  if (host.startsWith('[')) return host.endsWith(']') && host.length > 2;
  if (QUAD_RE.test(host)) return true;
  return host.includes('.') && alphaLastLabel(host) && hasPublicSuffix(host.toLowerCase());
}

/**
 * `ALPHA_LAST_LABEL_RE.test(host)`: its last label (after the last `.`) is 2 to 63 alphabetic characters.
 * Only the last `.` can start a match (the letters after it run to the end), so an ASCII label is checked
 * by a loop; a label with another character goes to the pattern.
 */
function alphaLastLabel(host: string): boolean {
  const dot = host.lastIndexOf('.');
  if (dot < 0) return false;
  const len = host.length - dot - 1;
  for (let k = dot + 1; k < host.length; k++) {
    const c = host.charCodeAt(k) | 32;
    if (c >= 0x80) return ALPHA_LAST_LABEL_RE.test(host);
    if (c < 97 || c > 122) return false;
  }
  return len >= 2 && len <= 63;
}

/** The ASCII characters of {@link AUTH_CLASS} and of {@link PATH_CLASS} (1), read off the classes themselves. */
const AUTH_ASCII = new Uint8Array(128);
const PATH_ASCII = new Uint8Array(128);
{
  const auth = new RegExp(`^${AUTH_CLASS}$`, 'u');
  const path = new RegExp(`^${PATH_CLASS}$`, 'u');
  for (let c = 0; c < 128; c++) {
    AUTH_ASCII[c] = auth.test(String.fromCharCode(c)) ? 1 : 0;
    PATH_ASCII[c] = path.test(String.fromCharCode(c)) ? 1 : 0;
  }
}

/**
 * The length of `AUTH_RE`'s match at `j` (the authority after `://`). ASCII text is read by a loop with
 * the pattern's class as a table (no Unicode pattern to run: its compiled code is large and cold once
 * per message); a `[` (an IPv6 literal) or a non-ASCII character within the match goes to the pattern.
 */
function authLength(s: string, j: number): number {
  const end = Math.min(s.length, j + 512);
  let k = j;
  for (; k < end; k++) {
    const c = s.charCodeAt(k);
    if (c >= 0x80 || c === 91) return matchAt(AUTH_RE, s, j)![0].length;
    if (AUTH_ASCII[c] === 0) break;
  }
  return k - j;
}

/** The length of `PATH_RE`'s match at `j`, −1 for none; ASCII by a loop as {@link authLength}. */
function pathLength(s: string, j: number): number {
  const c0 = s.charCodeAt(j);
  if (c0 !== 47 && c0 !== 63) return -1;
  const end = Math.min(s.length, j + 1 + 4096);
  let k = j + 1;
  for (; k < end; k++) {
    const c = s.charCodeAt(k);
    if (c >= 0x80) return matchAt(PATH_RE, s, j)![0].length;
    if (PATH_ASCII[c] === 0) break;
  }
  return k - j;
}

/** `host.replace(/:[0-9]*$/, '')`: only the last `:` can be followed by digits to the end. */
function dropPort(host: string): string {
  const colon = host.lastIndexOf(':');
  if (colon < 0) return host;
  for (let k = colon + 1; k < host.length; k++) {
    const c = host.charCodeAt(k);
    if (c < 48 || c > 57) return host;
  }
  return host.slice(0, colon);
}

/** Trailing characters that end a sentence rather than a URL, and unbalanced closing brackets. */
function trimUrl(s: string): string {
  let end = s.length;
  for (;;) {
    const c = s[end - 1];
    if (c === undefined) break;
    if ('.,;:!?\''.includes(c)) {
      end--;
      continue;
    }
    const open = c === ')' ? '(' : c === ']' ? '[' : c === '}' ? '{' : undefined;
    if (open !== undefined) {
      const body = s.slice(0, end);
      if (body.split(open).length - 1 < body.split(c).length - 1) {
        end--;
        continue;
      }
    }
    break;
  }
  return s.slice(0, end);
}

function matchAt(re: RegExp, s: string, i: number): RegExpExecArray | null {
  re.lastIndex = i;
  return re.exec(s);
}

/** ASCII character classes: 1 = word character (letter, digit), 2 = white space (`\s`), 0 = other. */
const ASCII_CLASS = new Uint8Array(128);
for (let c = 48; c <= 57; c++) ASCII_CLASS[c] = 1;
for (let c = 65; c <= 90; c++) ASCII_CLASS[c] = ASCII_CLASS[c + 32] = 1;
for (const c of [9, 10, 11, 12, 13, 32]) ASCII_CLASS[c] = 2;
const NUMBER_RE = /-[0-9]+(?:\.[0-9]+)?(?![\p{Alphabetic}])/uy;
const FLOAT_RE = /[0-9]+\.[0-9]+(?![\p{Alphabetic}])/uy;

/**
 * The typed tokens of a text one at a time: `next()` moves to the next token and leaves its type and text
 * in `type` and `text`. The classifier reads each token once, so no token object and no array of them
 * is made per text (a mail body has hundreds of tokens).
 */
export class TypedTokens {
  type: T = T.Space;
  /** The current token's range in {@link src}; its {@link text} is `src.slice(start, end)` (a Space token: `' '`). */
  start = 0;
  end = 0;
  /** The text tokenized (cut at {@link MAX_CLASSIFIER_TEXT}). */
  readonly src: string;
  /**
   * For an Alphabetic token of ASCII letters only ({@link ascii} true), what the word memo looks it up
   * by, computed while the word was read: its `foldedWordHash` ({@link foldHash}), its first 8 letters
   * ASCII-lower-cased as bytes ({@link lo}: 1st–4th, {@link hi}: 5th–8th, little-endian; meaningful for a
   * word of at most 8 letters), and whether every letter is upper case ({@link allUpper}).
   */
  ascii = false;
  foldHash = 0;
  lo = 0;
  hi = 0;
  allUpper = false;
  private readonly numbers: boolean;
  private readonly spaces: boolean;
  private textMemo: string | undefined = '';
  private i = 0;
  private any = false;
  /**
   * A composite token needs `://`, or an `@` or `.` before a word character, before the next white
   * space: once a span up to white space is known to hold none, no word starting inside it is tried
   * again (no rescan per word).
   */
  private plainUntil = -1;
  /**
   * The span (up to white space) that holds the last word tried for a composite token: where it stops,
   * and the first position of each composite trigger (`://`; `@` or `.` before a word character) at or
   * after the last word tried, {@link spanStop} for none. Each is found again only when a word starts
   * past it, so the triggers of a span are read once however many words it holds: a span of a megabyte
   * without white space costs one pass, not one look-ahead of {@link SPAN_MAX} characters per word.
   */
  private spanStop = -1;
  private nextColon = -1;
  private nextAt = -1;
  private nextDot = -1;
  /** The look-ahead composite attempts may still read (see {@link MAX_COMPOSITE_LOOKAHEAD}). */
  private readonly budget: CompositeBudget;

  /**
   * `numbers`: recognise `-N` and `N.N` as numbers (Stalwart's default options). `spaces`: give Space
   * tokens (the token builder ignores them: a body has as many as words). `budget`: the look-ahead this
   * text's composite attempts draw on (shared with other texts of the same message; default: its own).
   */
  constructor(text: string, numbers: boolean, spaces = true, budget: CompositeBudget = compositeBudget()) {
    this.src = text.length > MAX_CLASSIFIER_TEXT ? text.slice(0, MAX_CLASSIFIER_TEXT) : text;
    this.numbers = numbers;
    this.spaces = spaces;
    this.budget = budget;
  }

  /** The current token's text, cut from the source on first use (a word found in a memo needs none). */
  get text(): string {
    let t = this.textMemo;
    if (t === undefined) t = this.textMemo = this.src.slice(this.start, this.end);
    return t;
  }

  private emit(type: T, text: string, start: number, next: number): true {
    this.type = type;
    this.textMemo = text;
    this.start = start;
    this.end = start + text.length;
    this.i = next;
    this.any = true;
    return true;
  }

  private emitRange(type: T, start: number, end: number): true {
    this.type = type;
    this.textMemo = undefined;
    this.start = start;
    this.end = end;
    this.i = end;
    this.any = true;
    return true;
  }

  /** Moves to the next token; false at the end of the text. */
  next(): boolean {
    const s = this.src;
    const n = s.length;
    let i = this.i;
    while (i < n) {
      const c0 = s.charCodeAt(i);
      if (c0 < 0x80) {
        // ASCII, most of a text: classified by table, and no string is cut for a character (a
        // punctuation token's text is cut only when read, as a word's).
        const cls = ASCII_CLASS[c0]!;
        if (cls === 1) return this.word(i);
        if (cls === 2) {
          // A run of white space is one Space token.
          if (this.spaces && (!this.any || this.type !== T.Space)) return this.emit(T.Space, ' ', i, i + 1);
          i++;
          continue;
        }
        if (c0 === 45 && this.numbers && i + 1 < n && s.charCodeAt(i + 1) >= 48 && s.charCodeAt(i + 1) <= 57 && (i === 0 || !isWordChar(s[i - 1]!))) {
          const m = matchAt(NUMBER_RE, s, i);
          if (m !== null) return this.emit(m[0].includes('.') ? T.Float : T.Integer, m[0], i, i + m[0].length);
        }
        return this.emitRange(T.Punctuation, i, i + 1);
      }
      // Others by their code point's properties.
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      if (WORD_CHAR_RE.test(ch)) return this.word(i);
      if (isUnicodeSpace(cp)) {
        if (this.spaces && (!this.any || this.type !== T.Space)) return this.emit(T.Space, ' ', i, i + ch.length);
        i += ch.length;
        continue;
      }
      return this.emit(T.Other, ch, i, i + ch.length);
    }
    this.i = i;
    return false;
  }

  /** The token at `i`, where a word character starts a word (or a composite token, or a number). */
  private word(i: number): true {
    const s = this.src;
    const n = s.length;
    // The raw word first: when white space (or the end) follows it, its span holds no `:`, `@` or `.`
    // and no composite token can start here (most words), so none is tried.
    let j = i;
    let letters = false;
    let digits = false;
    // The word memo's key of an ASCII word, made on the way (see `ascii`).
    let ascii = true;
    let h = BASIS;
    let lo = 0;
    let hi = 0;
    let upper = 0;
    while (j < n) {
      const c2 = s.charCodeAt(j);
      if (c2 < 0x80) {
        if (ASCII_CLASS[c2] !== 1) break;
        let f = c2;
        if (c2 <= 57) digits = true;
        else {
          letters = true;
          if (c2 <= 90) {
            f = c2 | 32;
            upper++;
          }
        }
        h = Math.imul(h ^ f, 0x01000193);
        const k = j - i;
        if (k < 4) lo |= f << (8 * k);
        else if (k < 8) hi |= f << (8 * (k - 4));
        j++;
        continue;
      }
      const w = String.fromCodePoint(s.codePointAt(j)!);
      if (!WORD_CHAR_RE.test(w)) break;
      letters = true;
      ascii = false;
      j += w.length;
    }
    this.ascii = ascii;
    this.foldHash = h;
    this.lo = lo;
    this.hi = hi;
    this.allUpper = upper === j - i;
    // A composite token needs a trigger (`://`, or `@` or `.` before a word character) in the span: when
    // the word is followed by one character and then white space or the end (`word,` `word.`: most words
    // not followed by white space), that character has nothing after it to make it a trigger.
    if (i >= this.plainUntil && j < n && !isSpanEnd(s.charCodeAt(j)) && j + 1 < n && !isSpanEnd(s.charCodeAt(j + 1))) {
      const composite = this.composite(i);
      if (typeof composite === 'number') this.plainUntil = composite;
      else if (composite !== undefined) return this.emit(composite.type, composite.text, i, i + composite.text.length);
    }
    if (!letters && this.numbers) {
      const f = matchAt(FLOAT_RE, s, i);
      if (f !== null) return this.emit(T.Float, f[0], i, i + f[0].length);
    }
    return this.emitRange(letters ? (digits ? T.Alphanumeric : T.Alphabetic) : T.Integer, i, j);
  }

  /**
   * The composite token at `i` ({@link compositeAt}), or undefined; or, when no trigger lies between `i`
   * and the span's end and that end is less than {@link SPAN_MAX} characters ahead, the span's end (a
   * number): no word starting before it can be a composite either. The triggers come from
   * {@link nextTriggers}, so no character of the span is read twice for them.
   */
  private composite(i: number): TypedToken | number | undefined {
    if (i >= this.spanStop) this.scanSpan(i);
    this.nextTriggers(i);
    const end = this.spanStop;
    // Triggers count only within SPAN_MAX characters ahead (and before the next white space).
    const long = end - i >= SPAN_MAX;
    const limit = long ? i + SPAN_MAX : end;
    const colon = this.nextColon < limit;
    const at = this.nextAt < limit;
    const dot = this.nextDot < limit;
    if (!colon && !at && !dot) return long ? undefined : end;
    const charge = Math.min(end - i, COMPOSITE_CHARGE_MAX);
    const budget = this.budget;
    if (charge > budget.lookahead) {
      budget.lookahead = 0;
      return undefined;
    }
    budget.lookahead -= charge;
    return compositeAt(this.src, i, colon, at, dot);
  }

  /** Finds the span from `i` to the next white space (or the end); its triggers are not read yet. */
  private scanSpan(i: number): void {
    const s = this.src;
    const n = s.length;
    let k = i;
    while (k < n && !isSpanEnd(s.charCodeAt(k))) k++;
    this.spanStop = k;
    this.nextColon = this.nextAt = this.nextDot = -1;
  }

  /**
   * Moves each trigger position that lies before `i` to the kind's first trigger at or after `i` (or
   * {@link spanStop}), in one forward read for the kinds that moved. A kind's reads never overlap (each
   * starts past its last trigger), so a span costs at most one read per kind in all.
   */
  private nextTriggers(i: number): void {
    let wantColon = this.nextColon < i;
    let wantAt = this.nextAt < i;
    let wantDot = this.nextDot < i;
    if (!wantColon && !wantAt && !wantDot) return;
    const s = this.src;
    const stop = this.spanStop;
    if (wantColon) this.nextColon = stop;
    if (wantAt) this.nextAt = stop;
    if (wantDot) this.nextDot = stop;
    for (let k = i; k < stop && (wantColon || wantAt || wantDot); k++) {
      const t = trigger(s, k, s.charCodeAt(k));
      if (t === 0) continue;
      if (t === 58) {
        if (wantColon) {
          this.nextColon = k;
          wantColon = false;
        }
      } else if (t === 64) {
        if (wantAt) {
          this.nextAt = k;
          wantAt = false;
        }
      } else if (wantDot) {
        this.nextDot = k;
        wantDot = false;
      }
    }
  }
}

/** Tokenizes `text` into an array (see {@link TypedTokens}). */
export function typesTokenize(text: string, numbers: boolean): TypedToken[] {
  const out: TypedToken[] = [];
  const c = new TypedTokens(text, numbers);
  while (c.next()) out.push({ type: c.type, text: c.text });
  return out;
}

/** Characters a composite token is looked for ahead of a word at most (to the next white space). */
const SPAN_MAX = 600;

/** Does this character end a span (the run of characters up to white space a composite token is looked for in)? */
/**
 * Non-ASCII Unicode White_Space, Rust's `char::is_whitespace` (Stalwart's tokenizer): unlike JavaScript's
 * `\s`, U+0085 is white space and U+FEFF is not (an `Other` token).
 */
function isUnicodeSpace(cp: number): boolean {
  return cp === 0x85 || cp === 0xa0 || cp === 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp === 0x2028 || cp === 0x2029 || cp === 0x202f || cp === 0x205f || cp === 0x3000;
}

function isSpanEnd(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0;
}

/**
 * Is the character `c` at `k` a composite trigger? 58 for the `:` of `://`, 64 for an `@` and 46 for a
 * `.` followed by a word character, else 0.
 */
function trigger(s: string, k: number, c: number): number {
  if (c === 58) return s.charCodeAt(k + 1) === 47 && s.charCodeAt(k + 2) === 47 ? 58 : 0;
  if (c !== 64 && c !== 46) return 0;
  const next = s.charCodeAt(k + 1);
  // NaN past the end: no word character follows.
  const word = next < 0x80 ? ASCII_CLASS[next] === 1 : next >= 0x80 && isWordChar(String.fromCodePoint(s.codePointAt(k + 1)!));
  return word ? c : 0;
}

/**
 * The composite token (URL, e-mail, scheme-less URL, IP address) starting at `i`, or undefined, given
 * which triggers lie ahead of it in its span (at most {@link SPAN_MAX} characters ahead): a URL with a
 * scheme needs `://`, an e-mail an `@` followed by a host (a word character), a host name or IP address a
 * `.` followed by a label (a word character). A sentence's last word (`word.`) needs no pattern run.
 */
function compositeAt(s: string, i: number, colon: boolean, at: boolean, dot: boolean): TypedToken | undefined {
  // 1. URL with a scheme.
  const sch = colon ? matchAt(SCHEME_RE, s, i) : null;
  if (sch !== null) {
    let j = i + sch[0].length;
    const authority = s.slice(j, j + authLength(s, j));
    const isFile = sch[0].toLowerCase() === 'file://';
    // Nothing host-like after `://` (e.g. `http://[word]`): the scheme is an ordinary word.
    if (authority === '' && !isFile) return undefined;
    j += authority.length;
    const text = trimUrl(s.slice(i, j + Math.max(pathLength(s, j), 0)));
    let host = authority.slice(authority.lastIndexOf('@') + 1);
    if (!host.startsWith('[')) host = dropPort(host);
    return { type: (host !== '' && validHost(host)) || isFile ? T.Url : T.UrlNoHost, text };
  }
  // 2. E-mail address.
  const em = at ? matchAt(EMAIL_RE, s, i) : null;
  if (em !== null) {
    const host = em[1]!;
    if (validHost(host) && !QUAD_RE.test(host)) return { type: T.Email, text: em[0] };
  }
  // 3. URL without a scheme, or an IP address.
  const h = dot ? matchAt(HOSTNAME_RE, s, i) : null;
  if (h !== null) {
    const host = h[0];
    const quad = QUAD_RE.test(host);
    if (quad || validHost(host)) {
      let j = i + host.length;
      const port = matchAt(PORT_RE, s, j);
      if (port !== null) j += port[0].length;
      const path = pathLength(s, j);
      // Stalwart: a dotted quad is an IP address unless a path or query follows, port or not (`1.2.3.4:25`).
      if (path < 0 && quad) return { type: T.IpAddr, text: s.slice(i, j) };
      const text = trimUrl(s.slice(i, j + Math.max(path, 0)));
      return { type: T.UrlNoScheme, text };
    }
  }
  return undefined;
}

/** The URL scanners' loops, for test/classifier to check against the patterns they stand for. @internal */
export const urlScanners = { authLength, pathLength, alphaLastLabel, dropPort };
