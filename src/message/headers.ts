/**
 * Top-level header handling (docs/message-analysis.md): the raw split that keeps each
 * header's exact bytes, mail-parser's canonical names and value types, Date and Received parsing.
 */
import { addressParser } from 'postal-mime';
import { MemoSlot } from '../util/index.js';
import { parseContentType as parseContentTypeValue } from './content-type.js';
import { parseMailDate } from './date.js';
import { decodeWords } from './rfc2047.js';

export interface RawHeader {
  /** The name as written. */
  readonly name: string;
  /** Everything after the colon up to and including the final line break (folding kept). */
  readonly raw: string;
  /** Memos of this header's parses (src/util/memo.ts; not enumerable). */
  memoSlots?: unknown[];
}

/** At most this many top-level headers are kept; the rest are dropped with a warning. */
export const MAX_HEADERS = 10_000;

/**
 * Splits the header block of `text` (lossy-UTF-8 text of the header bytes) into headers, in order.
 * A line starting with space/tab continues the previous header; a line without a colon, or whose
 * name holds white space, is skipped. Never throws.
 */
export function splitHeaders(text: string, warnings: string[]): RawHeader[] {
  const out: RawHeader[] = [];
  const n = text.length;
  let pos = 0;
  let name: string | undefined;
  let valueStart = 0;
  let skipped = 0;
  const flush = (end: number): void => {
    if (name === undefined) return;
    if (out.length < MAX_HEADERS) out.push({ name, raw: text.slice(valueStart, end) });
    else skipped++;
    name = undefined;
  };
  while (pos < n) {
    const nl = text.indexOf('\n', pos);
    const lineEnd = nl < 0 ? n : nl + 1;
    const c = text.charCodeAt(pos);
    if (c === 32 || c === 9) {
      pos = lineEnd; // continuation of the current header (or stray, when there is none)
      continue;
    }
    flush(pos);
    const colon = text.indexOf(':', pos);
    if (colon >= 0 && colon < lineEnd) {
      const nm = text.slice(pos, colon).replace(/[ \t]+$/, '');
      if (nm.length > 0 && !/[\s]/.test(nm)) {
        name = nm;
        valueStart = colon + 1;
      }
    }
    pos = lineEnd;
  }
  flush(n);
  if (skipped > 0) warnings.push(`header limit: ${skipped} headers beyond ${MAX_HEADERS} ignored`);
  return out;
}

/** mail-parser's value type per header name (lower case); anything else is "raw" text. */
export type HeaderKind = 'address' | 'text' | 'textlist' | 'id' | 'date' | 'contenttype' | 'received' | 'raw';

const KNOWN: ReadonlyArray<readonly [string, HeaderKind]> = [
  ['Subject', 'text'], ['From', 'address'], ['To', 'address'], ['Cc', 'address'], ['Date', 'date'],
  ['Bcc', 'address'], ['Reply-To', 'address'], ['Sender', 'address'], ['Comments', 'text'],
  ['In-Reply-To', 'id'], ['Keywords', 'textlist'], ['Received', 'received'], ['Message-ID', 'id'],
  ['References', 'id'], ['Return-Path', 'id'], ['MIME-Version', 'raw'], ['Content-Description', 'text'],
  ['Content-ID', 'id'], ['Content-Language', 'textlist'], ['Content-Location', 'text'],
  ['Content-Transfer-Encoding', 'text'], ['Content-Type', 'contenttype'], ['Content-Disposition', 'contenttype'],
  ['Resent-To', 'address'], ['Resent-From', 'address'], ['Resent-Bcc', 'address'], ['Resent-Cc', 'address'],
  ['Resent-Sender', 'address'], ['Resent-Date', 'date'], ['Resent-Message-ID', 'id'], ['List-Archive', 'address'],
  ['List-Help', 'address'], ['List-ID', 'address'], ['List-Owner', 'address'], ['List-Post', 'address'],
  ['List-Subscribe', 'address'], ['List-Unsubscribe', 'address'], ['ARC-Authentication-Results', 'raw'],
  ['ARC-Message-Signature', 'raw'], ['ARC-Seal', 'raw'], ['DKIM-Signature', 'raw'],
];
const BY_LOWER = new Map<string, readonly [string, HeaderKind]>(KNOWN.map((k) => [k[0].toLowerCase(), k]));

/** mail-parser's canonical spelling for a known header name, else the name as written. */
export function canonicalName(name: string): string {
  return BY_LOWER.get(name.toLowerCase())?.[0] ?? name;
}

/**
 * `name.toLowerCase() === nameLower` for an ASCII `nameLower`, without building the lower-cased
 * copy. Lengths must agree: the one lower-case mapping that changes a length (U+0130) yields a
 * non-ASCII character. A non-ASCII character (U+212A KELVIN SIGN lower-cases to `k`) is left to
 * toLowerCase.
 */
export function isNamed(name: string, nameLower: string): boolean {
  const n = name.length;
  if (n !== nameLower.length) return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    const t = nameLower.charCodeAt(i);
    if (c === t || (c >= 65 && c <= 90 && c + 32 === t)) continue;
    return c >= 128 && name.toLowerCase() === nameLower;
  }
  return true;
}

export function headerKind(nameLower: string): HeaderKind {
  return BY_LOWER.get(nameLower)?.[1] ?? 'raw';
}

/** Removes CR/LF of folded lines (RFC 5322 unfolding). */
export function unfold(raw: string): string {
  return raw.replace(/\r?\n(?=[ \t])/g, '').replace(/\r?\n$/, '');
}

export interface Mailbox {
  name: string;
  address: string;
}

/** Longest display name, quoted string or comment kept per mailbox, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024;
/** Longest address list parsed, in UTF-16 code units after names are capped (the list is cut at a comma). */
const MAX_LIST_LENGTH = 100_000;

/**
 * Shortens what only names are made of (quoted strings, comments, phrase text) to
 * {@link MAX_NAME_LENGTH} per piece, keeping every `<…>` address whole, so that a huge display
 * name costs nothing and never cuts the address after it. Quotes, brackets and parentheses stay
 * balanced. A piece of phrase text is the text between `,` `;` `:` `<` `>`.
 */
export function capNames(s: string): string {
  if (s.length <= MAX_NAME_LENGTH) return s;
  let out = '';
  let piece = 0; // length of the current quoted string / comment / phrase text
  let mode: 'text' | 'quote' | 'comment' | 'angle' = 'text';
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (mode === 'angle') {
      out += c;
      if (c === '>') [mode, piece] = ['text', 0];
      continue;
    }
    if (mode === 'quote' || mode === 'comment') {
      if (c === '\\' && i + 1 < s.length) {
        if (piece < MAX_NAME_LENGTH) out += c + s[i + 1];
        piece += 2;
        i++;
        continue;
      }
      const closes = mode === 'quote' ? c === '"' : c === ')' && --depth === 0;
      if (mode === 'comment' && c === '(') depth++;
      if (closes) {
        out += c;
        [mode, piece] = ['text', 0];
      } else if (piece++ < MAX_NAME_LENGTH) out += c;
      continue;
    }
    if (c === '"' || c === '(' || c === '<') {
      out += c;
      mode = c === '"' ? 'quote' : c === '(' ? 'comment' : 'angle';
      depth = c === '(' ? 1 : 0;
      piece = 0;
    } else if (c === ',' || c === ';' || c === ':' || c === '>') {
      out += c;
      piece = 0;
    } else if (piece++ < MAX_NAME_LENGTH) out += c;
  }
  return out;
}

/** Parses an address list (groups flattened). Never throws; garbage yields what postal-mime salvages. */
export function parseAddresses(raw: string): Mailbox[] {
  try {
    let text = capNames(unfold(raw));
    if (text.length > MAX_LIST_LENGTH) {
      const comma = text.lastIndexOf(',', MAX_LIST_LENGTH);
      text = text.slice(0, comma > 0 ? comma : MAX_LIST_LENGTH);
    }
    const list = addressParser(text, { flatten: true });
    const out: Mailbox[] = [];
    const add = (name: string, address: string): void => {
      // postal-mime reads `<https://…>` (List-* headers) as a name without address; mail-parser
      // keeps the bracketed URL as the address.
      if (address === '' && name.includes('://') && !/\s/.test(name)) out.push({ name: '', address: name });
      else out.push({ name, address });
    };
    for (const a of list) {
      if (a.group !== undefined) for (const m of a.group) add(m.name ?? '', m.address ?? '');
      else add(a.name ?? '', a.address ?? '');
    }
    return out;
  } catch {
    return [];
  }
}

const addressMemo = new MemoSlot<RawHeader, readonly Mailbox[]>();

/**
 * {@link parseAddresses} of a header, computed once per header: From/To/Cc/Reply-To are read both
 * by the generic variables (`from`, `to`, …) and by the Header scope's `value`/`value_lower`.
 * The list is shared, so callers must not mutate it.
 */
export function headerAddresses(h: RawHeader): readonly Mailbox[] {
  let m = addressMemo.get(h);
  if (m === undefined) {
    m = parseAddresses(h.raw);
    addressMemo.set(h, m);
  }
  return m;
}

/** RFC 2047-decoded ({@link decodeWords}: the body charset table), unfolded, trimmed text. Never throws. */
export function decodeText(raw: string): string {
  return decodeWords(unfold(raw)).trim();
}

/**
 * A Date header as the Header scope reads it: mail-parser parses it with its lenient `parse_date`
 * (`parseMailDate`, the date module's parser too) and formats it with `DateTime::to_rfc3339`: the fields as
 * read, unvalidated and zero-padded, the header's own offset (`-` west of Greenwich), `Z` for a zero offset. A
 * zone name (`EST`) gives no offset, and a date that stops before its seconds does not parse. `""` when it does
 * not parse (mail-parser's Empty value).
 */
export function dateToRfc3339(raw: string): string {
  const d = parseMailDate(raw);
  if (d === undefined) return '';
  const date = `${pad(d.year, 4)}-${pad(d.month)}-${pad(d.day)}T${pad(d.hour)}:${pad(d.minute)}:${pad(d.second)}`;
  if (d.tzHour === 0 && d.tzMinute === 0) return date + 'Z';
  return `${date}${d.tzBeforeGmt ? '-' : '+'}${pad(d.tzHour)}:${pad(d.tzMinute)}`;
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/**
 * Content-Type/Content-Disposition as the Header scope reads them (mail-parser's ContentType value):
 * `type/subtype` (or `type`) lower-cased, and `name=value` attributes, unquoted, RFC 2231/2047-decoded.
 * The parse is the MIME tree's (content-type.ts), so comments, quoted `;` and parentheses read the same
 * in both; `raw` is the header value as text, given to it as the UTF-8 bytes it works on. A value with
 * no type gives `""` and no attributes.
 */
export function parseContentType(raw: string): { value: string; attributes: string[] } {
  const ct = parseContentTypeValue(Buffer.from(raw, 'utf8').toString('latin1'));
  if (ct === undefined) return { value: '', attributes: [] };
  const attributes: string[] = [];
  for (const [k, v] of ct.attributes) attributes.push(`${k}=${v}`);
  return { value: ct.subtype ? `${ct.type}/${ct.subtype}` : ct.type, attributes };
}

/**
 * `parseIds(raw)[0]` (undefined when it has none) without unfolding or a regex when the header is on one
 * line: the first `<…>` holding no `<`, trimmed and not empty, else the whole value trimmed. The Domain
 * set reads only the first id of each Message-ID header.
 */
export function firstId(raw: string): string | undefined {
  const nl = raw.indexOf('\n');
  let end = raw.length;
  if (nl >= 0) {
    if (nl !== raw.length - 1) return parseIds(raw)[0];
    end = raw.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
  }
  const u = raw.slice(0, Math.min(end, 65_536));
  let i = u.indexOf('<');
  while (i >= 0) {
    let j = i + 1;
    while (j < u.length && u.charCodeAt(j) !== 60 && u.charCodeAt(j) !== 62) j++;
    if (j === u.length) break;
    if (u.charCodeAt(j) === 60) {
      i = j;
      continue;
    }
    const id = u.slice(i + 1, j).trim();
    if (id.length > 0) return id;
    i = u.indexOf('<', j + 1);
  }
  // No id (a `<…>` with only blanks inside counts as none): parseIds falls back to the whole value.
  const t = u.trim();
  return t.length > 0 ? t : undefined;
}

/** Message ids (`<id>`), brackets removed; one or several. */
export function parseIds(raw: string): string[] {
  const u = unfold(raw).slice(0, 65_536);
  const out: string[] = [];
  const re = /<([^<>]*)>/g;
  for (const m of u.matchAll(re)) {
    const id = m[1]!.trim();
    if (id.length > 0) out.push(id);
    if (out.length >= 1000) break;
  }
  if (out.length === 0) {
    const t = u.trim();
    if (t.length > 0) out.push(t);
  }
  return out;
}

/** `X_HDR_<NAME>` tag of a header name (analysis/headers.rs): upper-cased, `-`→`_`, other non-alphanumerics → space. */
export function headerTag(name: string): string {
  let t = 'X_HDR_';
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90)) t += name[i];
    else if (c >= 97 && c <= 122) t += String.fromCharCode(c - 32);
    else if (c === 45) t += '_';
    // One space per character, as Stalwart maps a UTF-8 sequence: the low half of a surrogate pair adds none.
    else if (c < 0xdc00 || c > 0xdfff) t += ' ';
  }
  return t;
}
