/**
 * A single-pass HTML scanner standing in for mail-parser's HTML tokens (docs/message-analysis.md):
 * it collects the value of every `href`/`src` attribute of any start tag (for the Url scope), the
 * `mailto:` hrefs of `<a>` tags (for the Email scope), and the text outside `<head>…</head>`.
 */

export interface HtmlScan {
  /** Text runs outside `<head>`, entity-decoded, white space collapsed, joined by one space. */
  text: string;
  /** Every `href`/`src` attribute value of any start tag, entity-decoded and trimmed, in order. */
  links: string[];
  /** `href` values of `<a>` tags that start with `mailto:` (case-insensitive), in order. */
  mailtos: string[];
}

/** HTML scanned per part, in UTF-16 code units; the rest is ignored (bounds work on hostile input). */
export const MAX_HTML_CHARS = 2_000_000;
/** At most this many links are kept per part. */
export const MAX_HTML_LINKS = 5_000;

const NAMED: Record<string, string> = {
  AMP: '&', LT: '<', GT: '>', QUOT: '"',
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®', trade: '™',
  euro: '€', pound: '£', yen: '¥', cent: '¢', mdash: '—', ndash: '–', hellip: '…', laquo: '«', raquo: '»',
  lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', bull: '•', middot: '·', deg: '°', times: '×', shy: '\u00ad',
  zwnj: '\u200c', zwj: '\u200d', iexcl: '¡', iquest: '¿', sect: '§', para: '¶',
};

// Latin-1 letters U+00C0–U+00FF by their HTML names (U+00D7 and U+00F7 are times/divide).
const LATIN1 =
  'Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde ' +
  'Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc ' +
  'atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc ' +
  'otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml';
LATIN1.split(' ').forEach((name, i) => {
  NAMED[name] = String.fromCharCode(0xc0 + i);
});

/** Decodes character references (`&name;`, `&#N;`, `&#xH;`); unknown references stay as written. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,9});?/g, (m, ref: string) => {
    if (ref.charCodeAt(0) === 35) {
      const cp = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(cp) || cp <= 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
      return String.fromCodePoint(cp);
    }
    // Own names only: `&toString;` is not a character reference, whatever Object.prototype has.
    return Object.hasOwn(NAMED, ref) ? NAMED[ref]! : m;
  });
}

function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 0xa0;
}

function isNameChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 58 || c === 95;
}

/** Collapses runs of white space to one space and trims. */
function collapse(s: string): string {
  return s.replace(/[ \t\r\n\f\u00a0]+/g, ' ').trim();
}

/**
 * Scans HTML once, left to right. Never throws. `<script>` and `<style>` contents, comments,
 * doctypes and processing instructions contribute no text.
 */
export function scanHtml(input: string): HtmlScan {
  const html = input.length > MAX_HTML_CHARS ? input.slice(0, MAX_HTML_CHARS) : input;
  const n = html.length;
  const runs: string[] = [];
  const links: string[] = [];
  const mailtos: string[] = [];
  let inHead = false;
  let i = 0;
  while (i < n) {
    const lt = html.indexOf('<', i);
    const textEnd = lt < 0 ? n : lt;
    // Runs are decoded and collapsed once at the end: joining them with a space and collapsing
    // white space then is the same as trimming each run and inserting one space between runs.
    if (textEnd > i && !inHead) runs.push(html.slice(i, textEnd));
    if (lt < 0) break;
    i = lt + 1;
    const c = html.charCodeAt(i);
    if (c === 33 /* ! */ || c === 63 /* ? */) {
      const close = html.startsWith('!--', i) ? html.indexOf('-->', i + 3) : html.indexOf('>', i);
      i = close < 0 ? n : close + (html.startsWith('!--', i) ? 3 : 1);
      continue;
    }
    const closing = c === 47; /* / */
    let j = closing ? i + 1 : i;
    const nameStart = j;
    while (j < n && isNameChar(html.charCodeAt(j))) j++;
    if (j === nameStart) {
      // A lone '<' is text.
      if (!inHead) runs.push('<');
      continue;
    }
    const name = html.slice(nameStart, j).toLowerCase();
    if (closing) {
      if (name === 'head') inHead = false;
      const gt = html.indexOf('>', j);
      i = gt < 0 ? n : gt + 1;
      continue;
    }
    // Attributes: name[=value], value quoted with ' or " or unquoted; ends at '>'.
    let href: string | undefined;
    while (j < n) {
      while (j < n && (isWs(html.charCodeAt(j)) || html.charCodeAt(j) === 47)) j++;
      if (j >= n || html.charCodeAt(j) === 62 /* > */) break;
      const an = j;
      while (j < n && !isWs(html.charCodeAt(j)) && html.charCodeAt(j) !== 61 && html.charCodeAt(j) !== 62 && html.charCodeAt(j) !== 47) j++;
      if (j === an) {
        j++;
        continue;
      }
      const al = j - an;
      const attr = al === 4 || al === 3 ? html.slice(an, j).toLowerCase() : '';
      while (j < n && isWs(html.charCodeAt(j))) j++;
      let value: string | undefined;
      if (html.charCodeAt(j) === 61 /* = */) {
        j++;
        while (j < n && isWs(html.charCodeAt(j))) j++;
        const q = html.charCodeAt(j);
        if (q === 34 || q === 39) {
          const end = html.indexOf(q === 34 ? '"' : "'", j + 1);
          value = html.slice(j + 1, end < 0 ? n : end);
          j = end < 0 ? n : end + 1;
        } else {
          const vs = j;
          while (j < n && !isWs(html.charCodeAt(j)) && html.charCodeAt(j) !== 62) j++;
          value = html.slice(vs, j);
        }
      }
      if (value !== undefined && (attr === 'href' || attr === 'src')) {
        const decoded = decodeEntities(value);
        if (links.length < MAX_HTML_LINKS) links.push(decoded.trim());
        // The first href with a value is the one the e-mail set reads, as written (Stalwart).
        if (attr === 'href' && href === undefined) href = decoded;
      }
    }
    i = j < n ? j + 1 : n;
    // Stalwart: `mailto:` case-sensitively and untrimmed (`MAILTO:` and ` mailto:` are not e-mail links).
    if (name === 'a' && href !== undefined && href.startsWith('mailto:')) {
      if (mailtos.length < MAX_HTML_LINKS) mailtos.push(href);
    }
    if (name === 'head') inHead = true;
    else if (name === 'body') inHead = false;
    else if (name === 'script' || name === 'style') {
      // Raw-text elements: skip to the matching end tag (case-insensitive search on a lower-cased window).
      const end = findEndTag(html, i, name);
      i = end;
    }
  }
  return { text: collapse(decodeEntities(runs.join(' '))), links, mailtos };
}

function findEndTag(html: string, from: number, name: string): number {
  let k = from;
  for (;;) {
    const lt = html.indexOf('</', k);
    if (lt < 0) return html.length;
    if (html.slice(lt + 2, lt + 2 + name.length).toLowerCase() === name) {
      const gt = html.indexOf('>', lt);
      return gt < 0 ? html.length : gt + 1;
    }
    k = lt + 2;
  }
}
