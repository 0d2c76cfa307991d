/**
 * How one typed token of a text becomes classifier tokens (Stalwart's `insert_type`, docs/classifier.md
 * "Tokens"): words are normalised (confusables cured, else lower-cased, stop words dropped, stemmed),
 * letter+digit words shape-coded, numbers reduced to their digit count, symbols to their Unicode
 * general category, paths of host-less URLs split into words.
 */
import { cureConfusables as cure, isMixedCharset } from '../message/scripts.js';
import { clearWordMemos, WORD_MEMO_MAX, type WordStemTokenizer } from './language.js';
import { T, type TypedTokens } from './tokenizer.js';
import { wordHash } from './word-memo.js';
import { byteToken, intern, internKind, KIND, onInternReset, strToken, truncate16, type Tok, type TokCounter } from './tokens.js';
import { detach } from '../util/index.js';

const NON_ASCII_RE = /[^\x00-\x7f]/;
const ASCII_LETTER_RE = /[A-Za-z]/;
const NON_LATIN_LETTER_RE = /(?![\p{Script_Extensions=Latin}\p{Script=Common}\p{Script=Inherited}])\p{L}/u;
const ALPHA_RE = /^\p{Alphabetic}+$/u;
const ALPHA_CHAR_RE = /\p{Alphabetic}/u;

/**
 * Words whose characters all share one script (the common case) are never mixed-script; only the others
 * pay for the full test. Script_Extensions, as UTS #39's augmented sets use them: a character such as
 * `ー` (Script Common, extensions Hiragana and Katakana) does not pass as Common beside Latin letters.
 * Japanese (Han with kana) and Korean (Hangul with Han) words are one augmented script (Jpan, Kore).
 */
const ONE_SCRIPT_RE = new RegExp(
  '^(?:' +
    [['Latn'], ['Hani', 'Hira', 'Kana'], ['Hang', 'Hani'], ['Cyrl'], ['Grek'], ['Arab'], ['Hebr'], ['Thai']]
      .map((scripts) => `[${[...scripts, 'Zyyy', 'Zinh'].map((c) => `\\p{scx=${c}}`).join('')}]+`)
      .join('|') +
    ')$',
  'u',
);

/** Are all of `w`'s characters of one augmented script (or Common/Inherited)? Such a word is never mixed-script. */
export function isOneScript(w: string): boolean {
  return ONE_SCRIPT_RE.test(w);
}

/** Per BMP code unit: 0 not known yet, 1 NFC and NFKC agree, 2 they differ (a confusable form). */
const nfkcChanges = new Uint8Array(0x10000);

/** Does a non-ASCII character of `w` differ between its NFC and NFKC forms? Each BMP character is normalised once per process. */
function hasCompatibilityForm(w: string): boolean {
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c < 0x80) continue;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < w.length) {
      const lo = w.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        // Astral characters (mathematical alphanumerics, emoji) are rare: normalised each time.
        const ch = w.slice(i, i + 2);
        if (ch.normalize('NFC') !== ch.normalize('NFKC')) return true;
        i++;
        continue;
      }
    }
    let v = nfkcChanges[c]!;
    if (v === 0) {
      const ch = String.fromCharCode(c);
      v = nfkcChanges[c] = ch.normalize('NFC') !== ch.normalize('NFKC') ? 2 : 1;
    }
    if (v === 2) return true;
  }
  return false;
}

/**
 * Does word normalisation cure `w` (Stalwart's rule, docs/classifier.md "Tokens")? True when `w` is mixed-script
 * under UTS #39's augmented script sets (ASCII letters count as Latin) or has a non-ASCII character that NFKC changes.
 */
export function needsCure(w: string): boolean {
  if (!NON_ASCII_RE.test(w)) return false;
  if (!isOneScript(w) && (isMixedCharset(w) || (ASCII_LETTER_RE.test(w) && NON_LATIN_LETTER_RE.test(w)))) return true;
  return hasCompatibilityForm(w);
}

const CATEGORIES = ['Sc', 'Sm', 'Sk', 'So', 'Cf', 'Cc', 'Co', 'Cs', 'Cn', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Zl', 'Zp'];
const CATEGORY_RES = CATEGORIES.map((c) => [c, new RegExp(`^\\p{gc=${c}}$`, 'u')] as const);
/** Punctuation and space separators give no token. */
const SKIPPED_RE = /^[\p{gc=Pe}\p{gc=Pc}\p{gc=Pd}\p{gc=Pf}\p{gc=Pi}\p{gc=Ps}\p{gc=Po}\p{gc=Zs}]$/u;

/** Character → its category token (null for none): the category is up to 23 regex tests. */
const categoryToks = new Map<string, Tok | null>();
/** The same for ASCII characters, by code (−2: not known yet, −1: none). */
const asciiCategoryToks = new Int32Array(128).fill(-2);
function category(ch: string): string | undefined {
  if (SKIPPED_RE.test(ch)) return undefined;
  for (const [c, re] of CATEGORY_RES) if (re.test(ch)) return c;
  return undefined;
}


/** Letter+digit word → its shape token (alphanumeric words recur less than words, hence a smaller memo). */
const shapeToks = new Map<string, Tok>();
const SHAPE_MEMO_MAX = 65_536;
/** Number tokens by sign/type letter (`iIfF`) and digit count (0–255). */
const numberToks = new Array<Tok | undefined>(1024).fill(undefined);
/** Tokens that do not depend on the text, interned again when the table restarts. */
let allcapsTok = internKind(KIND.word, '_allcaps');
let ipTok = internKind(KIND.url, '!ip');

onInternReset(() => {
  categoryToks.clear();
  asciiCategoryToks.fill(-2);
  shapeToks.clear();
  numberToks.fill(undefined);
  clearWordMemos();
  allcapsTok = internKind(KIND.word, '_allcaps');
  ipTok = internKind(KIND.url, '!ip');
});

/**
 * The word tokens of an alphabetic word (original case): cured when confusable, else stemmed. `ascii`: the
 * word is known to be ASCII (never cured), which spares a regex test that costs about 1.4 µs a new word
 * among a message's other work.
 */
function wordTokens(w: string, stems: WordStemTokenizer, ascii: boolean): readonly Tok[] {
  const cured = !ascii && needsCure(w) ? cure(w) : undefined;
  if (cured !== undefined) return [internKind(KIND.word, Buffer.byteLength(w, 'utf8') > 16 ? truncate16(cured) : cured)];
  // A literal filled by push, not `.map`: V8's optimised `.map` makes holey arrays where its builtin makes packed
  // ones, so once this function was optimised (some 80 messages into a process) `insertType` and the memo met a
  // new array shape and were thrown back to the interpreter while V8 compiled them again.
  const out: Tok[] = [];
  for (const s of stems.tokenize(w.toLowerCase())) out.push(internKind(KIND.word, truncate16(s)));
  return out;
}

/**
 * Inserts the tokens of the current token of `t` into `map`. Words, characters, numbers and shapes seen
 * before cost one memo lookup that gives the interned token (no normalising, stemming or string building).
 */
export function insertType(map: TokCounter, t: TypedTokens, stems: WordStemTokenizer, isBody: boolean): void {
  switch (t.type) {
    case T.Alphabetic: {
      const memo = stems.memo;
      const s = t.src;
      const a = t.start;
      const b = t.end;
      // A word of ASCII letters is never cured: its tokens are those of its lower-cased form, so it is
      // kept once for all its spellings (`The`, `the`, `THE`), under the key the tokenizer made while
      // reading it; other words are kept as they are.
      const ascii = t.ascii;
      const h = ascii ? t.foldHash : wordHash(s, a, b);
      let tokens = ascii ? memo.getAscii(s, a, b, h, t.lo, t.hi) : memo.get(s, a, b, h, false);
      if (tokens === undefined) {
        const all = wordTokens(t.text, stems, ascii);
        if (memo.size >= WORD_MEMO_MAX) memo.clear();
        memo.set(s, a, b, h, all, ascii);
        tokens = all.length === 1 ? all[0]! : all;
      }
      if (typeof tokens === 'number') map.add(tokens);
      else for (let i = 0; i < tokens.length; i++) map.add(tokens[i]!);
      // Stalwart's `_allcaps` test is byte length = number of upper-case characters and > 3: a non-ASCII
      // character has more bytes than characters, so only ASCII upper-case words of 4 or more letters pass.
      if (isBody && b - a >= 4 && ascii && t.allUpper) map.add(allcapsTok);
      return;
    }
    case T.Alphanumeric: {
      const w = t.text;
      let tok = shapeToks.get(w);
      if (tok === undefined) {
        tok = intern(shapeToken(w));
        if (shapeToks.size >= SHAPE_MEMO_MAX) shapeToks.clear();
        shapeToks.set(detach(w), tok);
      }
      map.add(tok);
      return;
    }
    case T.UrlNoHost:
      insertUrlNoHost(map, t.text);
      return;
    case T.Other:
    case T.Punctuation: {
      const c0 = t.src.charCodeAt(t.start);
      if (t.end - t.start === 1 && c0 < 128) {
        let tok = asciiCategoryToks[c0]!;
        if (tok === -2) {
          const c = category(t.text);
          tok = asciiCategoryToks[c0] = c === undefined ? -1 : internKind(KIND.unicode_category, c);
        }
        if (tok >= 0) map.add(tok);
        return;
      }
      const text = t.text;
      let tok = categoryToks.get(text);
      if (tok === undefined) {
        const c = category(text);
        tok = c === undefined ? null : internKind(KIND.unicode_category, c);
        if (categoryToks.size >= 65_536) categoryToks.clear();
        categoryToks.set(text, tok);
      }
      if (tok !== null) map.add(tok);
      return;
    }
    case T.Integer:
    case T.Float: {
      const type = t.type;
      const text = t.text;
      const neg = text.startsWith('-');
      const first = type === T.Integer ? (neg ? 'I' : 'i') : neg ? 'F' : 'f';
      let digits = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c >= 48 && c <= 57) digits++;
      }
      const slot = (type === T.Integer ? 0 : 512) + (neg ? 256 : 0) + Math.min(digits, 255);
      map.add((numberToks[slot] ??= intern(byteToken(KIND.number, [first.charCodeAt(0), Math.min(digits, 255)]))));
      return;
    }
    case T.IpAddr:
      map.add(ipTok);
      return;
    default:
      return; // e-mails and URLs come from the url and domain analysis
  }
}

/**
 * The `Url` tokens of a `UrlNoHost` token's path words. Kept out of {@link insertType}: a closure there
 * that captures `map` makes V8 allocate a context object on every call of insertType, whatever the
 * token (about 12 KB a message, a third of the classifier's allocations, seen in a heap profile).
 */
function insertUrlNoHost(map: TokCounter, text: string): void {
  addUrlPathWords(map, text.toLowerCase());
}

/** The counter {@link addPathWord} adds to (set by {@link addUrlPathWords} for the length of one call). */
let pathWordMap: TokCounter | undefined;
function addPathWord(piece: string): void {
  pathWordMap!.add(internKind(KIND.url, piece));
}

/**
 * Adds the `Url` tokens of {@link urlPathWords} of `path` to `map`. One callback for all calls: a closure
 * per call costs an allocation (and under tsx, the benchmarks' loader, a `name` definition) per URL.
 */
export function addUrlPathWords(map: TokCounter, path: string): void {
  pathWordMap = map;
  try {
    urlPathWords(path, addPathWord);
  } finally {
    pathWordMap = undefined;
  }
}

/**
 * The `_word` tokens of a URL path (of the URL set's URLs, and of the tokenizer's host-less URLs): its
 * pieces between `/`, `.` and `_` of more than 2 UTF-8 bytes, all alphabetic, cut to 16
 * (`path.split(/[/._]/)` filtered by byte length and `ALPHA_RE`). An ASCII piece is read in place by a
 * loop (most paths); a piece with another character is cut out and tested as written.
 */
export function urlPathWords(path: string, add: (token: string) => void): void {
  let start = 0;
  let letters = true;
  let ascii = true;
  for (let k = 0; k <= path.length; k++) {
    const c = k < path.length ? path.charCodeAt(k) : 47;
    if (c === 47 || c === 46 || c === 95) {
      if (ascii) {
        if (letters && k - start > 2) add('_' + path.slice(start, Math.min(k, start + 16)));
      } else {
        const piece = path.slice(start, k);
        if (Buffer.byteLength(piece, 'utf8') > 2 && ALPHA_RE.test(piece)) add('_' + truncate16(piece));
      }
      start = k + 1;
      letters = true;
      ascii = true;
    } else if (c >= 0x80) ascii = false;
    else if (((c | 32) < 97 || (c | 32) > 122)) letters = false;
  }
}

/** Is `s` non-empty and all ASCII hex digits? (A loop: a regex costs microseconds on its first run after the caches were swept.) */
function isHex(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || ((c | 32) >= 97 && (c | 32) <= 102))) return false;
  }
  return s.length > 0;
}

/** Stalwart's alphanumeric shape code (the ratio code is always `O`, as in Stalwart). */
export function shapeToken(s: string): string {
  if (isHex(s)) return byteToken(KIND.number, [88 /* X */, Math.min(s.length, 255)]);
  if (NON_ASCII_RE.test(s)) {
    const cured = cure(s) ?? s.toLowerCase();
    const letters = [...cured].filter((c) => ALPHA_CHAR_RE.test(c)).slice(0, 16).join('');
    return strToken(KIND.word, letters);
  }
  let digits = 0;
  let upper = false;
  let lower = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
    else if (c >= 65 && c <= 90) upper = true;
    else if (c >= 97 && c <= 122) lower = true;
  }
  if (s.length > 3 && digits === 1) return strToken(KIND.word, s.replace(/[0-9]/g, '').toLowerCase().slice(0, 16));
  const comp = upper && lower && digits > 0 ? 'X' : upper && digits > 0 ? 'H' : lower && digits > 0 ? 'M' : upper && lower ? 'A' : upper ? 'U' : lower ? 'L' : digits > 0 ? 'D' : 'E';
  const len = s.length;
  const lenCode = len <= 4 ? String(len) : len <= 6 ? '5' : len <= 8 ? '6' : len <= 12 ? '7' : len <= 16 ? '8' : len <= 32 ? '9' : 'Z';
  const cls = (c: number): number => (c >= 65 && c <= 90 ? 0 : c >= 97 && c <= 122 ? 1 : c >= 48 && c <= 57 ? 2 : 3);
  let changes = 0;
  for (let i = 1; i < len; i++) if (cls(s.charCodeAt(i)) !== cls(s.charCodeAt(i - 1))) changes++;
  const r = len > 1 ? changes / (len - 1) : 0;
  const run = r <= 0.1 ? '0' : r <= 0.3 ? '1' : r <= 0.5 ? '2' : r <= 0.7 ? '3' : '4';
  return byteToken(KIND.alphanumeric, [comp.charCodeAt(0), lenCode.charCodeAt(0), 79 /* O */, run.charCodeAt(0)]);
}
