/**
 * Content-Type and Content-Disposition values (RFC 2045 §5, RFC 2183): type and subtype
 * lower-cased, attributes with lower-cased names, quoted strings unquoted, RFC 2231 continuations
 * and charsets and RFC 2047 encoded words decoded. Values are given as latin1 strings (one
 * character per byte, as the MIME tree keeps raw header values).
 */
import { decodeCharset } from './charsets.js';
import { decodeWords } from './rfc2047.js';

const utf8 = (latin1: string): string => Buffer.from(latin1, 'latin1').toString('utf8');

/** A parsed Content-Type or Content-Disposition: type and subtype lower-cased, attribute names lower-cased. */
export interface ContentType {
  readonly type: string;
  readonly subtype: string | undefined;
  /** Attribute values unquoted, RFC 2231/2047-decoded. */
  readonly attributes: ReadonlyMap<string, string>;
}

/**
 * Characters of a Content-Type or Content-Disposition value that are read (real ones, RFC 2231
 * file names included, are well under 1 KiB). The value is parsed by several modules for each part;
 * a hostile one of megabytes cost seconds of each of them.
 */
export const MAX_CONTENT_TYPE_CHARS = 65_536;

function unfoldValue(v: string): string {
  return v.replace(/\r?\n(?=[ \t])/g, '');
}

/**
 * Replaces each RFC 5322 comment `( … )` outside a quoted string by one space, as mail-parser's
 * Content-Type reader skips them: comments nest, a backslash escapes the next character in a comment
 * or a quoted string, and a comment never closed runs to the end of the value. Inside a quoted string
 * `(` and `)` are plain characters (`filename="report (final).pdf"`, RFC 2046 boundaries may contain
 * them). One pass; a value without `(` is returned as it is.
 */
function stripComments(v: string): string {
  if (!v.includes('(')) return v;
  let out = '';
  let from = 0; // start of the text not yet copied to out
  let quoted = false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (quoted) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) quoted = false;
    } else if (c === 34) {
      quoted = true;
    } else if (c === 40 /* ( */) {
      out += v.slice(from, i) + ' ';
      let depth = 1;
      for (i++; i < v.length && depth > 0; i++) {
        const d = v.charCodeAt(i);
        if (d === 92) i++;
        else if (d === 40) depth++;
        else if (d === 41 /* ) */) depth--;
      }
      from = i--;
    }
  }
  return from >= v.length ? out : out + v.slice(from);
}

interface RawParams {
  type: string;
  subtype: string | undefined;
  params: [string, string][];
}

/** Splits `type/subtype; a=b; c="d"` (latin1 text); undefined when there is no type. */
function splitContentType(value: string): RawParams | undefined {
  const cut = value.length > MAX_CONTENT_TYPE_CHARS ? value.slice(0, MAX_CONTENT_TYPE_CHARS) : value;
  const s = stripComments(unfoldValue(cut));
  const n = s.length;
  let i = 0;
  while (i < n && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  let j = i;
  while (j < n && !'/;'.includes(s[j]!)) j++;
  const type = s.slice(i, j).trim().toLowerCase();
  if (type.length === 0 || /\s/.test(type)) return undefined;
  let subtype: string | undefined;
  i = j;
  if (s[i] === '/') {
    j = i + 1;
    while (j < n && s[j] !== ';') j++;
    subtype = s.slice(i + 1, j).trim().toLowerCase();
    i = j;
  }
  const params: [string, string][] = [];
  while (i < n && params.length < 256) {
    // at ';'
    i++;
    let k = i;
    while (k < n && s[k] !== '=' && s[k] !== ';') k++;
    const name = s.slice(i, k).trim().toLowerCase();
    if (k >= n || s[k] === ';') {
      i = k;
      continue;
    }
    k++;
    while (k < n && (s[k] === ' ' || s[k] === '\t')) k++;
    let v = '';
    if (s[k] === '"') {
      // Unquoted by runs between backslashes, not a character at a time.
      k++;
      let from = k;
      while (k < n && s[k] !== '"') {
        if (s[k] === '\\' && k + 1 < n) {
          v += s.slice(from, k);
          from = ++k;
        }
        k++;
      }
      v += s.slice(from, k);
      while (k < n && s[k] !== ';') k++;
    } else {
      const e = s.indexOf(';', k);
      const stop = e < 0 ? n : e;
      v = s.slice(k, stop).trim();
      k = stop;
    }
    if (name.length > 0) params.push([name, v]);
    i = k;
  }
  return { type, subtype, params };
}

/** An attribute's raw (latin1) value, unquoted: the multipart boundary as it appears in the body. */
export function rawAttribute(value: string, name: string): string | undefined {
  const p = splitContentType(value);
  if (p === undefined) return undefined;
  let out: string | undefined;
  for (const [k, v] of p.params) if (k === name) out = v; // the last one, as for the parsed attributes
  return out;
}

/** Parses a Content-Type / Content-Disposition value; undefined when it has no type. */
export function parseContentType(value: string): ContentType | undefined {
  const p = splitContentType(value);
  if (p === undefined) return undefined;
  const attributes = new Map<string, string>();
  // RFC 2231: name*0, name*1*, … continuations and name*=charset'lang'value.
  const cont = new Map<string, { parts: Map<number, string>; charset: string | undefined }>();
  for (const [k, v] of p.params) {
    const m = /^([^*]+)\*(?:(\d{1,3})\*?)?$/.exec(k);
    if (m === null) {
      attributes.set(k, decodeWords(utf8(v))); // a repeated name: the last one wins, as in mail-parser
      continue;
    }
    const base = m[1]!;
    const extended = k.endsWith('*');
    const idx = m[2] === undefined ? 0 : Number(m[2]);
    let e = cont.get(base);
    if (e === undefined) cont.set(base, (e = { parts: new Map(), charset: undefined }));
    let val = v;
    if (extended && idx === 0) {
      const q1 = val.indexOf("'");
      const q2 = q1 < 0 ? -1 : val.indexOf("'", q1 + 1);
      if (q2 >= 0) {
        e.charset = val.slice(0, q1);
        val = val.slice(q2 + 1);
      }
    }
    e.parts.set(idx, extended ? val.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))) : val);
  }
  for (const [base, e] of cont) {
    const joined = [...e.parts.entries()].sort((a, b) => a[0] - b[0]).map((x) => x[1]).join('');
    attributes.set(base, decodeCharset(new Uint8Array(Buffer.from(joined, 'latin1')), e.charset || undefined));
  }
  return { type: p.type, subtype: p.subtype, attributes };
}
