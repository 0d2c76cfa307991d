/**
 * A linear-time stand-in for Stalwart's `TypesTokenizer` (`stalwart:crates/nlp/src/tokenizers/types.rs`)
 * with URL, scheme-less URL and email detection on (docs/message-analysis.md): it finds the URL,
 * email and IP tokens of a text and, on request, its word tokens.
 *
 * Rules (docs/message-analysis.md):
 * - a URL has a scheme of 1–8 ASCII alphanumerics (optionally `+word`) followed by `://`;
 * - a scheme-less URL is a dotted host whose suffix is a PSL entry, optionally followed by `:port`/path;
 * - a dotted quad without a path or query is an IP token (with one, a scheme-less URL);
 * - `mailto:` text is not a URL; `local@domain` is an email token when the domain has an sld.
 * Tokens are separated by white space and `<>"'()[]{}`; trailing punctuation is not part of a token.
 */
import { hasPublicSuffix, parseIp, registrableDomain } from './hostname.js';

export interface TextTokens {
  /** URL and scheme-less URL tokens, as written. */
  urls: string[];
  /** Email tokens whose domain has an sld, as written. */
  emails: string[];
  /** IP tokens (canonical strings). */
  ips: string[];
  /** Word tokens (alphabetic, alphanumeric, integer, float), original case; only when asked. */
  words: string[];
}

/** Characters of text scanned per call (UTF-16 code units): longer texts are cut, bounding work on hostile input. */
export const MAX_TOKENIZE_CHARS = 2_000_000;
/** At most this many tokens of each kind are returned per call. */
export const MAX_TOKENS = 20_000;

function isAsciiAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** RFC 5322 atext plus `.`, the characters an email local part is made of. */
function isLocalChar(c: number): boolean {
  if (isAsciiAlnum(c)) return true;
  return '.!#$%&*+/=?^_`|~-'.includes(String.fromCharCode(c)) || c >= 0x80;
}

function isHostChar(c: number): boolean {
  return isAsciiAlnum(c) || c === 45 /* - */ || c === 46 /* . */ || c === 95 /* _ */ || c >= 0x80;
}

const TRAILING_PUNCT = '.,;:!?`*';
const WORD_RE = /\p{N}+\.\p{N}+|[\p{L}\p{N}]+/gu;

const NON_ASCII_RE = /[^\x00-\x7f]/;
/** Four dot-separated digit runs, one of them at most 3 digits long (Stalwart's `is_ipv4` host). */
const DOTTED_QUAD = /^(?=(?:[0-9]*\.)*[0-9]{1,3}(?:\.|$))[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/;
const PORT_RE = /^:[0-9]+/;

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * {@link WORD_RE} for ASCII-only text, without the regex engine (most body text is ASCII and
 * the Unicode-property pattern is slow): at each position the float form `N+.N+` is tried first,
 * then a run of letters and digits, exactly as the alternation does.
 */
export function asciiWords(s: string, out: string[]): void {
  const n = s.length;
  let i = 0;
  while (i < n && out.length < MAX_TOKENS) {
    if (!isAsciiAlnum(s.charCodeAt(i))) {
      i++;
      continue;
    }
    let j = i;
    if (isDigit(s.charCodeAt(i))) {
      while (j < n && isDigit(s.charCodeAt(j))) j++;
      if (j + 1 < n && s.charCodeAt(j) === 46 && isDigit(s.charCodeAt(j + 1))) {
        j += 2;
        while (j < n && isDigit(s.charCodeAt(j))) j++;
        out.push(s.slice(i, j));
        i = j;
        continue;
      }
      j = i;
    }
    while (j < n && isAsciiAlnum(s.charCodeAt(j))) j++;
    out.push(s.slice(i, j));
    i = j;
  }
}

class Collector {
  readonly out: TextTokens = { urls: [], emails: [], ips: [], words: [] };
  constructor(readonly wantWords: boolean) {}

  words(s: string): void {
    if (!this.wantWords || s.length === 0 || this.out.words.length >= MAX_TOKENS) return;
    if (!NON_ASCII_RE.test(s)) {
      asciiWords(s, this.out.words);
      return;
    }
    WORD_RE.lastIndex = 0;
    for (const m of s.matchAll(WORD_RE)) {
      if (this.out.words.length >= MAX_TOKENS) break;
      this.out.words.push(m[0]);
    }
  }

  push(list: string[], v: string): void {
    if (list.length < MAX_TOKENS) list.push(v);
  }
}

function trimTrailing(s: string): string {
  let end = s.length;
  while (end > 0 && TRAILING_PUNCT.indexOf(s[end - 1]!) >= 0) end--;
  return end === s.length ? s : s.slice(0, end);
}

/** Handles one separator-delimited chunk, left to right, in time linear in its length. */
function chunk(s: string, c: Collector): void {
  let pos = 0;
  let sep = s.indexOf('://');
  let at = s.indexOf('@');
  // Bounded: each iteration advances `pos` by at least one character or returns.
  while (pos < s.length) {
    if (sep >= 0 && sep < pos) sep = s.indexOf('://', pos);
    if (at >= 0 && at < pos) at = s.indexOf('@', pos);
    if (sep > pos) {
      let start = sep;
      while (start > pos && (isAsciiAlnum(s.charCodeAt(start - 1)) || s.charCodeAt(start - 1) === 43) && sep - start < 17) start--;
      while (start < sep && !isAsciiAlnum(s.charCodeAt(start))) start++;
      const scheme = s.slice(start, sep);
      const plus = scheme.indexOf('+');
      const main = plus < 0 ? scheme : scheme.slice(0, plus);
      if (main.length > 0 && main.length <= 8 && sep + 3 < s.length && (at < 0 || at > start)) {
        emailsAndWords(s.slice(pos, start), c);
        const url = trimTrailing(s.slice(start));
        if (url.length > sep - start + 3) c.push(c.out.urls, url);
        return;
      }
      if (at < 0 || at > sep) {
        // Not a URL scheme: the text up to and including "://" holds no email, only words.
        plain(s.slice(pos, sep), c);
        pos = sep + 3;
        continue;
      }
    }
    emailsAndWords(s.slice(pos), c);
    return;
  }
}

/** A piece with no scheme URL: email tokens, and scheme-less URLs/IPs/words around them. */
function emailsAndWords(s: string, c: Collector): void {
  let pos = 0;
  while (pos < s.length) {
    const at = s.indexOf('@', pos);
    if (at < 0) {
      plain(s.slice(pos), c);
      return;
    }
    let ls = at;
    while (ls > pos && isLocalChar(s.charCodeAt(ls - 1))) ls--;
    let de = at + 1;
    while (de < s.length && isHostChar(s.charCodeAt(de))) de++;
    let domain = s.slice(at + 1, de);
    while (domain.endsWith('.')) domain = domain.slice(0, -1);
    const local = s.slice(ls, at);
    if (local.length > 0 && registrableDomain(domain.toLowerCase()) !== undefined) {
      plain(s.slice(pos, ls), c);
      c.push(c.out.emails, local + '@' + domain);
    } else {
      plain(s.slice(pos, at), c);
    }
    pos = Math.max(de, at + 1);
  }
}

/** A chunk with no scheme URL and no email: a scheme-less URL, an IP, or words. */
function plain(s0: string, c: Collector): void {
  let s = trimTrailing(s0);
  while (s.length > 0 && ',;:!?*`'.includes(s[0]!)) s = s.slice(1);
  if (s.length === 0) return;
  let hostEnd = 0;
  while (hostEnd < s.length && isHostChar(s.charCodeAt(hostEnd))) hostEnd++;
  const host = s.slice(0, hostEnd);
  const tail = s.slice(hostEnd);
  if (DOTTED_QUAD.test(host)) {
    // Stalwart's TypesTokenizer: a dotted quad followed by `/` or `?` (after an optional port) is a
    // scheme-less URL (`1.2.3.4/x`, `1.2.3.4/`); otherwise an IP token, whose text with a port
    // (`1.2.3.4:25`) or a part over 255 parses as no IP.
    const port = PORT_RE.exec(tail);
    const rest = port === null ? tail : tail.slice(port[0].length);
    if (rest.startsWith('/') || rest.startsWith('?')) {
      c.push(c.out.urls, s);
      return;
    }
    const ip = port === null ? parseIp(host) : undefined;
    if (ip !== undefined) c.push(c.out.ips, ip);
    c.words(rest);
    return;
  }
  if (host.includes('.') && (tail.length === 0 || '/:?#'.includes(tail[0]!))) {
    const h = host.toLowerCase();
    if (!h.startsWith('.') && !h.includes('..') && hasPublicSuffix(h)) {
      c.push(c.out.urls, s);
      return;
    }
  }
  c.words(s);
}

/**
 * Tokenizes `text` (at most {@link MAX_TOKENIZE_CHARS} code units, at most {@link MAX_TOKENS} per
 * kind). Never throws. `wantWords` also collects word tokens (original case).
 */
export function tokenize(text: string, wantWords = false): TextTokens {
  const c = new Collector(wantWords);
  const n = Math.min(text.length, MAX_TOKENIZE_CHARS);
  // Only chunks around '.', '@' or ':' can be tokens, so jump between those characters (native
  // indexOf) and expand each to its separators; everything before `pos` is consumed, so every
  // character is visited a bounded number of times.
  let pos = 0;
  let dot = -2;
  let at = -2;
  let colon = -2;
  /** {@link bracketEnd}'s answers in this text. */
  let brackets: Map<number, number> | undefined;
  while (pos < n) {
    if (dot !== -1 && dot < pos) dot = text.indexOf('.', pos);
    if (at !== -1 && at < pos) at = text.indexOf('@', pos);
    if (colon !== -1 && colon < pos) colon = text.indexOf(':', pos);
    let p = n;
    if (dot >= 0 && dot < p) p = dot;
    if (at >= 0 && at < p) p = at;
    if (colon >= 0 && colon < p) p = colon;
    if (p >= n) {
      if (wantWords) c.words(text.slice(pos, n));
      break;
    }
    let s = p;
    while (s > pos && !isSep(text.charCodeAt(s - 1))) s--;
    let e = p + 1;
    while (e < n && !isSep(text.charCodeAt(e))) e++;
    // Brackets are separators, except inside a scheme URL, as in Stalwart's tokenizer: an IPv6 host right
    // after `://` (`http://[2001:db8::1]/`), and balanced `()`, `[]`, `{}` once its path or query has begun
    // (`…/Foo_(bar)`). The chunk is read once for that, and what is added after it once more: a search
    // back through the text per bracket would be quadratic on hostile input.
    if (e < n && isOpenBracket(text.charCodeAt(e))) {
      const scheme = text.slice(s, e).indexOf('://');
      if (scheme >= 0) {
        let pathAt = scheme + 3 + s;
        while (pathAt < e && text.charCodeAt(pathAt) !== 47 && text.charCodeAt(pathAt) !== 63) pathAt++;
        let path = pathAt < e;
        while (e < n && isOpenBracket(text.charCodeAt(e))) {
          const close = path ? bracketEnd(text, e, n, (brackets ??= new Map())) : e === s + scheme + 3 && text.charCodeAt(e) === 91 ? ipv6End(text, e, n) : -1;
          if (close < 0) break;
          e = close;
          while (e < n && !isSep(text.charCodeAt(e))) {
            if (!path && (text.charCodeAt(e) === 47 || text.charCodeAt(e) === 63)) path = true;
            e++;
          }
        }
      }
    }
    if (wantWords && s > pos) c.words(text.slice(pos, s));
    // Fast path: "word." / "word:" (the special character ends the chunk, nothing else special
    // before it) cannot be a token; most candidates in prose are sentence ends like this.
    if (e === p + 1 && (dot < 0 || dot >= p) && (at < 0 || at >= p) && (colon < 0 || colon >= p) && text.charCodeAt(p) !== 64) {
      if (wantWords) c.words(text.slice(s, e));
    } else if (e - s > 1) chunk(text.slice(s, e), c);
    pos = e;
  }
  return c.out;
}

function isOpenBracket(c: number): boolean {
  return c === 40 /* ( */ || c === 91 /* [ */ || c === 123 /* { */;
}

/**
 * The index after the bracket that balances the one at `open`, when it comes before white space, a quote
 * or an angle bracket; else -1 (also when a closing bracket of another kind comes first).
 *
 * One scan answers every opening bracket it passes, kept in `memo` (bracket index → answer; one map per
 * text): a bracket with no balance reads on to the next separator, and a text of `http://?x(` repeated
 * has one per chunk, so answering each by its own scan read the rest of the text per chunk (200 KB of
 * it: 8.8 s, quadratic). The scan keeps a stack of open brackets; what a scan started at a bracket on
 * that stack would see is the stack above it, so a closing bracket that pops it balances it, and a
 * closing bracket of the wrong kind, a separator or the end fails it and every bracket below.
 */
export function bracketEnd(text: string, open: number, n: number, memo: Map<number, number>): number {
  const known = memo.get(open);
  if (known !== undefined) return known;
  const stack: number[] = [];
  const fail = (): void => {
    for (const at of stack) memo.set(at, -1);
    stack.length = 0;
  };
  let k = open;
  for (; k < n; k++) {
    const c = text.charCodeAt(k);
    if (isOpenBracket(c)) stack.push(k);
    else if (c === 41 || c === 93 || c === 125) {
      // A closing bracket with nothing open belongs to brackets before `open`: no scan from here sees it.
      if (stack.length === 0) continue;
      const top = stack[stack.length - 1]!;
      const o = text.charCodeAt(top);
      if ((o === 40 ? 41 : o === 91 ? 93 : 125) === c) memo.set(stack.pop()!, k + 1);
      else fail();
    } else if (isSep(c)) break;
  }
  fail();
  return memo.get(open)!;
}

/**
 * The index after the `]` of a bracketed IPv6 host at `open`, as Stalwart's tokenizer reads one: runs of
 * letters and digits that hold a digit (`2001`, `db8`), `:` (at least one; not after a `.`) and `.`
 * (after a run), ending with a run. Else -1 (`[Unsubscribe]` is no host).
 */
function ipv6End(text: string, open: number, n: number): number {
  let colon = false;
  let last = -1; // 0 after a run, else the separator just read
  for (let k = open + 1; k < n; ) {
    const c = text.charCodeAt(k);
    if (isAsciiAlnum(c)) {
      let digit = false;
      while (k < n && isAsciiAlnum(text.charCodeAt(k))) {
        if (isDigit(text.charCodeAt(k))) digit = true;
        k++;
      }
      if (!digit) return -1;
      last = 0;
      continue;
    }
    if (c === 58 /* : */ && last !== 46) {
      colon = true;
      last = 58;
    } else if (c === 46 /* . */ && last === 0) last = 46;
    else return c === 93 /* ] */ && colon && last === 0 ? k + 1 : -1;
    k++;
  }
  return -1;
}

/** ASCII separators: controls, space, DEL and `"'()<>[]{}`. */
const SEP = new Uint8Array(128);
for (let i = 0; i <= 32; i++) SEP[i] = 1;
for (const ch of '"\'()<>[]{}\x7f') SEP[ch.charCodeAt(0)] = 1;

/**
 * Beyond ASCII, Unicode White_Space (Rust's `char::is_whitespace`, which Stalwart's tokenizer uses).
 * U+200B and U+FEFF are not white space: inside a URL they stay in it (ZERO_WIDTH_SPACE_URL).
 */
function isSep(c: number): boolean {
  if (c < 128) return SEP[c] === 1;
  return c === 0x85 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
    c === 0x202f || c === 0x205f || c === 0x3000;
}
