/**
 * Stalwart's HTML tokenizer `html_to_tokens` (`stalwart:crates/spam-filter/src/modules/html.rs`) and
 * the text it extracts from an HTML part (`html_text_body`). It is not an HTML5 parser: its quirks
 * decide several tags of the html module (HTML_SHORT_*, HTML_UNBALANCED_TAG, PHISHING, …), so it is
 * reproduced literally (htmlparser2 and friends tokenize `<a<img …>`, `'…'` values or 9-letter
 * names differently). Documented in docs/analysis.md ("html").
 *
 * Rules, in short:
 * - Tag and attribute names keep ASCII letters (lowercased), digits, `-` and `_`; any other character
 *   is skipped without ending the name; only the first 8 kept characters count (`http-equiv` is
 *   `http-equ`, `<a<img>` is `aimg`).
 * - Text: runs of space/tab/CR/LF collapse to one space, no leading or trailing space; a word of the
 *   form `&…;` is a character reference (HTML5 named, `&#N;`, `&#xH;`) and is decoded.
 * - `"` toggles quoting anywhere in a tag; single quotes are ordinary characters; attribute values
 *   are raw (not entity-decoded); `/` outside quotes anywhere in a tag makes it self-closing.
 * - `<!--` starts a comment that runs to the next `-->` (its text keeps `!--` and `--`, and each
 *   white-space character becomes one space).
 *
 * Works on the decoded string: every special character is ASCII, so scanning UTF-16 code units
 * gives the same tokens as Stalwart's scan of UTF-8 bytes.
 */
import { characterEntities } from 'character-entities';

/** A start tag: its name, its attributes in order (duplicates kept; `null` = no value) and `/`. */
export interface HtmlStartTag {
  readonly type: 'StartTag';
  /** At most 8 characters, `[a-z0-9_-]`. */
  readonly name: string;
  readonly attributes: readonly (readonly [name: string, value: string | null])[];
  readonly selfClosing: boolean;
}
export interface HtmlEndTag {
  readonly type: 'EndTag';
  readonly name: string;
}
export interface HtmlComment {
  readonly type: 'Comment';
  /** The comment as written from `!--` up to (not including) the closing `>`. */
  readonly text: string;
}
export interface HtmlText {
  readonly type: 'Text';
  readonly text: string;
}
export type HtmlToken = HtmlStartTag | HtmlEndTag | HtmlComment | HtmlText;

/** Tokens produced per HTML part at most; the rest of the part is ignored (bounds memory on hostile input). */
export const MAX_HTML_TOKENS = 200_000;

export interface HtmlTokens {
  readonly tokens: HtmlToken[];
  /** True when {@link MAX_HTML_TOKENS} stopped the scan early. */
  readonly truncated: boolean;
}

/** Name characters: ASCII letters, digits, `-`, `_` (the table of `html_to_tokens`). */
const NAME = new Uint8Array(128);
for (let c = 48; c <= 57; c++) NAME[c] = 1;
for (let c = 65; c <= 90; c++) NAME[c] = 1;
for (let c = 97; c <= 122; c++) NAME[c] = 1;
NAME[45] = 1;
NAME[95] = 1;

/** Stops a text run: `<`, `&`, `;`, space, tab, CR, LF. */
const TEXT_STOP = new Uint8Array(128);
for (const ch of '<&; \t\r\n') TEXT_STOP[ch.charCodeAt(0)] = 1;
/** Stops an unquoted attribute value: `>`, `"`, space, tab, CR, LF. */
const VALUE_STOP = new Uint8Array(128);
for (const ch of '>" \t\r\n') VALUE_STOP[ch.charCodeAt(0)] = 1;

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 10;
}
/** Rust `u8::is_ascii_whitespace`: also form feed. */
function isAsciiWs(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 10 || c === 12;
}

function scanUntil(s: string, from: number, stop: Uint8Array): number {
  const n = s.length;
  let i = from;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c < 128 && stop[c] === 1) return i;
    i++;
  }
  return n;
}

const HEX_RE = /^\+?[0-9a-fA-F]+$/;
const DEC_RE = /^\+?[0-9]+$/;

/**
 * mail-parser's entity decoding of one `&…;` word: the character, or `undefined` when the word is
 * not a reference (it is then kept verbatim). Numeric values that are not characters give U+FFFD;
 * numbers beyond 32 bits and unknown names are not references.
 */
export function decodeEntity(word: string): string | undefined {
  if (word.length < 3 || word.charCodeAt(0) !== 38 || word.charCodeAt(word.length - 1) !== 59) return undefined;
  const body = word.slice(1, -1);
  if (body.charCodeAt(0) === 35 /* # */) {
    const num = body.slice(1);
    const hex = num.charCodeAt(0) === 120 || num.charCodeAt(0) === 88;
    const digits = hex ? num.slice(1) : num;
    if (!(hex ? HEX_RE : DEC_RE).test(digits)) return undefined;
    const cp = parseInt(digits, hex ? 16 : 10);
    if (cp > 0xffffffff) return undefined; // u32 overflow: not a reference
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(cp);
  }
  if (!Object.prototype.hasOwnProperty.call(characterEntities, body)) return undefined;
  const v = (characterEntities as Record<string, string>)[body]!;
  // mail-parser's table maps a name to one code point; two-character references are not in it.
  return v.length === 1 || (v.length === 2 && v.codePointAt(0)! > 0xffff) ? v : undefined;
}

/**
 * Tokenizes `input` as Stalwart's `html_to_tokens` does. Never throws; stops after
 * {@link MAX_HTML_TOKENS} tokens (`truncated`).
 */
export function htmlToTokens(input: string): HtmlTokens {
  const t = new Tokenizer(input);
  t.run();
  return { tokens: t.tokens, truncated: t.truncated };
}

class Tokenizer {
  readonly tokens: HtmlToken[] = [];
  truncated = false;
  /** Pieces of the pending Text token, joined once when it is emitted (no rope of tiny strings). */
  private text: string[] = [];
  constructor(private readonly s: string) {}

  private emit(tok: HtmlToken): void {
    if (this.tokens.length >= MAX_HTML_TOKENS) {
      this.truncated = true;
      return;
    }
    this.tokens.push(tok);
  }

  /**
   * Appends one word (`s[start, end)`), after one space when `addSpace`. While the text so far is
   * a contiguous slice of the input (words separated by single spaces, no entities), only the
   * slice bounds move; otherwise pieces are collected and joined once.
   */
  private push(start: number, end: number, addSpace: boolean): void {
    const s = this.s;
    const isEntity = end - start >= 2 && s.charCodeAt(start) === 38 && s.charCodeAt(end - 1) === 59;
    if (!isEntity && this.text.length === 0) {
      if (this.rangeEnd > this.rangeStart) {
        if (!addSpace ? start === this.rangeEnd : start === this.rangeEnd + 1 && s.charCodeAt(this.rangeEnd) === 32) {
          this.rangeEnd = end;
          return;
        }
      } else if (!addSpace) {
        this.rangeStart = start;
        this.rangeEnd = end;
        return;
      } else if (start > 0 && s.charCodeAt(start - 1) === 32) {
        this.rangeStart = start - 1;
        this.rangeEnd = end;
        return;
      }
    }
    if (this.rangeEnd > this.rangeStart) {
      this.text.push(s.slice(this.rangeStart, this.rangeEnd));
      this.rangeStart = this.rangeEnd = 0;
    }
    if (addSpace) this.text.push(' ');
    const word = s.slice(start, end);
    this.text.push((isEntity ? decodeEntity(word) : undefined) ?? word);
  }
  private rangeStart = 0;
  private rangeEnd = 0;

  run(): void {
    const s = this.s;
    const n = s.length;
    let isTokenStart = true;
    let afterSpace = false;
    // Set once at the start and never again: the first word of the document gets no space.
    let newLine = true;
    let tokenStart = 0;
    let tokenEnd = 0;
    let pos = 0;
    while (pos < n && !this.truncated) {
      const ch = s.charCodeAt(pos);
      if (ch === 60 /* < */) {
        if (!isTokenStart) {
          // Not masked by newLine: a word right before a tag keeps its space.
          this.push(tokenStart, tokenEnd + 1, afterSpace);
          afterSpace = false;
          isTokenStart = true;
        }
        this.flushText();
        pos++;
        while (pos < n && isAsciiWs(s.charCodeAt(pos))) pos++;
        pos = s.startsWith('!--', pos) ? this.comment(pos) : this.tag(pos);
        continue;
      }
      if (isSpace(ch)) {
        if (!isTokenStart) {
          this.push(tokenStart, tokenEnd + 1, afterSpace && !newLine);
          newLine = false;
        }
        afterSpace = true;
        isTokenStart = true;
        pos++;
        while (pos < n && isSpace(s.charCodeAt(pos))) pos++;
        continue;
      }
      if (ch === 38 /* & */ && !isTokenStart) {
        // The pending word ends; the '&' starts the next one.
        this.push(tokenStart, tokenEnd + 1, afterSpace && !newLine);
        newLine = false;
        isTokenStart = true;
        afterSpace = false;
      } else if (ch === 59 /* ; */ && !isTokenStart) {
        this.push(tokenStart, pos + 1, afterSpace && !newLine);
        isTokenStart = true;
        afterSpace = false;
        newLine = false;
        pos++;
        continue;
      }
      if (isTokenStart) {
        tokenStart = pos;
        isTokenStart = false;
      }
      const runEnd = scanUntil(s, pos + 1, TEXT_STOP);
      tokenEnd = runEnd - 1;
      pos = runEnd;
    }
    if (this.truncated) return;
    if (!isTokenStart) this.push(tokenStart, tokenEnd + 1, afterSpace && !newLine);
    this.flushText();
  }

  private flushText(): void {
    if (this.rangeEnd > this.rangeStart) {
      if (this.text.length === 0) {
        this.emit({ type: 'Text', text: this.s.slice(this.rangeStart, this.rangeEnd) });
        this.rangeStart = this.rangeEnd = 0;
        return;
      }
      this.text.push(this.s.slice(this.rangeStart, this.rangeEnd));
      this.rangeStart = this.rangeEnd = 0;
    }
    if (this.text.length === 0) return;
    this.emit({ type: 'Text', text: this.text.join('') });
    this.text = [];
  }

  /** `start` is at `!--`; returns the position after the comment. */
  private comment(start: number): number {
    const s = this.s;
    const close = s.indexOf('-->', start + 1);
    const end = close < 0 ? s.length : close + 2;
    this.emit({ type: 'Comment', text: s.slice(start, end).replace(/[ \t\r\n]/g, ' ') });
    return close < 0 ? end : end + 1;
  }

  /** `pos` is after `<` and white space; returns the position after the tag. */
  private tag(pos: number): number {
    const s = this.s;
    const n = s.length;
    let isEnd = false;
    while (pos < n) {
      const c = s.charCodeAt(pos);
      if (c === 47 /* / */) isEnd = true;
      else if (!isAsciiWs(c)) break;
      pos++;
    }
    const q = { inQuote: false };
    let selfClosing = false;
    let key = '';
    let keyChars = 0;
    let tag: string | undefined;
    const attrs: [string, string | null][] = [];
    while (pos < n) {
      const ch = s.charCodeAt(pos);
      if (ch < 128 && NAME[ch] === 1) {
        // A run of name characters at once (a skipped character between runs does not end the name).
        let e = pos + 1;
        while (e < n) {
          const d = s.charCodeAt(e);
          if (d >= 128 || NAME[d] !== 1) break;
          e++;
        }
        if (keyChars < 8) key = (key + s.slice(pos, Math.min(e, pos + 8 - keyChars))).toLowerCase();
        keyChars += e - pos;
        pos = e;
        continue;
      }
      pos++;
      if (ch === 47 && !q.inQuote) {
        selfClosing = true;
      } else if (ch === 62 /* > */ && !q.inQuote) {
        if (keyChars > 0) {
          if (tag === undefined) tag = key;
          else attrs.push([key, null]);
        }
        break;
      } else if (ch === 34 /* " */) {
        q.inQuote = !q.inQuote;
      } else if (ch === 61 /* = */ && !q.inQuote) {
        while (pos < n && isAsciiWs(s.charCodeAt(pos))) pos++;
        // Pushed as an attribute even before any tag name exists (`<x=1>` emits nothing).
        if (keyChars > 0) {
          attrs.push([key, null]);
          key = '';
          keyChars = 0;
        }
        const r = this.value(pos, q, attrs);
        pos = r.pos;
        if (r.tagEnd) break;
      } else if (isSpace(ch) && keyChars > 0) {
        if (tag === undefined) tag = key;
        else attrs.push([key, null]);
        key = '';
        keyChars = 0;
      }
    }
    if (tag !== undefined) {
      this.emit(isEnd ? { type: 'EndTag', name: tag } : { type: 'StartTag', name: tag, attributes: attrs, selfClosing });
    }
    return pos;
  }

  /** An attribute value at `pos`; assigned to the last attribute (or a nameless one). */
  private value(pos: number, q: { inQuote: boolean }, attrs: [string, string | null][]): { pos: number; tagEnd: boolean } {
    const s = this.s;
    const n = s.length;
    let value = '';
    let tagEnd = false;
    for (;;) {
      let stop: number;
      if (q.inQuote) {
        stop = s.indexOf('"', pos);
        if (stop < 0) stop = n;
      } else {
        stop = scanUntil(s, pos, VALUE_STOP);
      }
      if (stop > pos) value += s.slice(pos, stop);
      pos = stop;
      if (pos >= n) break;
      const c = s.charCodeAt(pos);
      pos++;
      if (c === 34) {
        if (q.inQuote) {
          q.inQuote = false;
          break;
        }
        q.inQuote = true;
        continue;
      }
      if (c === 62) tagEnd = true;
      break;
    }
    if (value.length > 0) {
      const last = attrs[attrs.length - 1];
      if (last !== undefined) last[1] = value;
      else attrs.push(['', value]);
    }
    return { pos, tagEnd };
  }
}

/**
 * The text of an HTML part (Stalwart's `html_text_body`): the Text tokens outside `<head>` (a
 * `head` start tag, self-closing or not, enters it; a `head` end tag leaves it), joined with one
 * space where neither side has one. `<script>`/`<style>` content is text to this tokenizer.
 */
export function htmlTextBody(tokens: readonly HtmlToken[]): string {
  // Pieces joined once at the end: testing the end of a growing string would flatten it every time.
  const out: string[] = [];
  let endsWithSpace = true; // nothing yet: no separator before the first text
  let inHead = false;
  for (const t of tokens) {
    if (t.type === 'StartTag') {
      if (t.name === 'head') inHead = true;
    } else if (t.type === 'EndTag') {
      if (t.name === 'head') inHead = false;
    } else if (t.type === 'Text' && !inHead && t.text.length > 0) {
      if (!endsWithSpace && t.text.charCodeAt(0) !== 32) out.push(' ');
      out.push(t.text);
      endsWithSpace = t.text.charCodeAt(t.text.length - 1) === 32;
    }
  }
  return out.join('');
}

/**
 * A tag or attribute name as Stalwart stores it: the UTF-8 bytes of the (≤ 8-character) name packed
 * little-endian into a u64 (`a` = 97, `br` = 29282). For comparing with Stalwart's serialised tokens.
 */
export function htmlNameKey(name: string): bigint {
  let k = 0n;
  for (let i = 0; i < name.length && i < 8; i++) k |= BigInt(name.charCodeAt(i)) << BigInt(8 * i);
  return k;
}

/** Links per HTML part kept at most (each list); the rest are ignored (bounds work on hostile input). */
export const MAX_HTML_LINKS = 5_000;

/** The links of an HTML part that the URL and e-mail sets read (docs/message-analysis.md). */
export interface HtmlLinks {
  /** The value of every `href` or `src` attribute that has one, on any start tag, trimmed, in order. */
  readonly links: string[];
  /**
   * Per `a` start tag, its first `href` that has a value, when that value starts with `mailto:`
   * (case-sensitively, untrimmed, as Stalwart reads it).
   */
  readonly mailtos: string[];
}

/** {@link HtmlLinks} of an HTML part's tokens. Values are raw (no entity decoding), as the tokenizer keeps them. */
export function htmlLinks(tokens: readonly HtmlToken[]): HtmlLinks {
  const links: string[] = [];
  const mailtos: string[] = [];
  for (const t of tokens) {
    if (t.type !== 'StartTag') continue;
    let href: string | undefined;
    for (const [name, value] of t.attributes) {
      if (value === null || (name !== 'href' && name !== 'src')) continue;
      if (links.length < MAX_HTML_LINKS) links.push(value.trim());
      if (name === 'href' && href === undefined) href = value;
    }
    if (t.name === 'a' && href !== undefined && href.startsWith('mailto:') && mailtos.length < MAX_HTML_LINKS) mailtos.push(href);
  }
  return { links, mailtos };
}
