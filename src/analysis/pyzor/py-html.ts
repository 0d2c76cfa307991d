/**
 * The text pyzor 1.0.0 takes from a `text/html` part (pyzor/digest.py, `DataDigester.normalize_html_part`): its
 * `HTMLStripper`, a Python 3.11 `html.parser.HTMLParser` (`convert_charrefs=True`) that collects each run of
 * text, stripped, outside `<script>` and `<style>`, the runs then joined by single spaces. The parser is ported
 * from Python 3.11.2's html/parser.py and _markupbase.py, rule for rule, with what pyzor's use of it implies:
 *
 * - pyzor calls `feed()` and never `close()`, so whatever the parser holds back as incomplete is lost: the rest
 *   of the document after an unclosed comment, `<!…`, `<?…`, an unterminated tag, a `<script>` or `<style>`
 *   without its end tag, a final `<`, and trailing text with an `&` in its last 34 characters that no
 *   white space or `;` follows;
 * - a run of text is unescaped with `html.unescape` (HTML5 named references, the legacy ones without `;` too;
 *   numeric references with HTML5's replacements);
 * - a `<` that opens no tag, comment or declaration (`a < b`, `<3`) is text;
 * - `<![name …` with a name other than CDATA, TEMP, IGNORE, INCLUDE, RCDATA, IF, ELSE or ENDIF, or without a
 *   name, makes Python's parser raise, and pyzor with it (its `except` names `HTMLParseError`, which Python 3
 *   no longer has): {@link PyHtmlError}.
 */
import { characterEntities } from 'character-entities';
import { PY_WS, pyStrip } from './py-email.js';

/** The HTML Python's parser raises on, so that pyzor computes no digest for the message. */
export class PyHtmlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PyHtmlError';
  }
}

/** HTML5's references that are also recognised without a `;` (Python's `html.entities.html5` keys without one). */
const LEGACY = new Set(
  ('AElig AMP Aacute Acirc Agrave Aring Atilde Auml COPY Ccedil ETH Eacute Ecirc Egrave Euml GT Iacute Icirc Igrave ' +
    'Iuml LT Ntilde Oacute Ocirc Ograve Oslash Otilde Ouml QUOT REG THORN Uacute Ucirc Ugrave Uuml Yacute aacute acirc ' +
    'acute aelig agrave amp aring atilde auml brvbar ccedil cedil cent copy curren deg divide eacute ecirc egrave eth ' +
    'euml frac12 frac14 frac34 gt iacute icirc iexcl igrave iquest iuml laquo lt macr micro middot nbsp not ntilde ' +
    'oacute ocirc ograve ordf ordm oslash otilde ouml para plusmn pound quot raquo reg sect shy sup1 sup2 sup3 szlig ' +
    'thorn times uacute ucirc ugrave uml uuml yacute yen yuml').split(' '),
);

const LEGACY_MAX = Math.max(...Array.from(LEGACY, (n) => n.length));
const ENTITIES = characterEntities as Record<string, string>;
const hasEntity = (name: string): boolean => Object.prototype.hasOwnProperty.call(ENTITIES, name);

/** `html._invalid_charrefs`: 0x00, CR and the windows-1252 reading of 0x80–0x9F. */
const INVALID_CHARREFS: ReadonlyMap<number, string> = new Map([
  [0x00, '\ufffd'], [0x0d, '\r'],
  ...Array.from('€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ', (c, i): [number, string] => [0x80 + i, c]),
]);

/** `html._invalid_codepoints`: references to these give nothing. */
function invalidCodepoint(n: number): boolean {
  return (n >= 0x1 && n <= 0x8) || n === 0xb || (n >= 0xe && n <= 0x1f) || (n >= 0x7f && n <= 0x9f) ||
    (n >= 0xfdd0 && n <= 0xfdef) || (n & 0xfffe) === 0xfffe;
}

/** One reference as `html._replace_charref` reads it (`s`: what follows the `&`). */
function replaceCharref(s: string): string {
  if (s[0] === '#') {
    const digits = s.slice(s[1] === 'x' || s[1] === 'X' ? 2 : 1).replace(/;$/, '');
    const num = s[1] === 'x' || s[1] === 'X' ? parseInt(digits, 16) : parseInt(digits, 10);
    const fixed = INVALID_CHARREFS.get(num);
    if (fixed !== undefined) return fixed;
    if ((num >= 0xd800 && num <= 0xdfff) || num > 0x10ffff) return '\ufffd';
    if (invalidCodepoint(num)) return '';
    return String.fromCodePoint(num);
  }
  if (s.endsWith(';') ? hasEntity(s.slice(0, -1)) : LEGACY.has(s)) return ENTITIES[s.endsWith(';') ? s.slice(0, -1) : s]!;
  // Else the longest legacy name the reference starts with (Python tries every prefix; legacy names are ASCII, 6 at most).
  for (let x = Math.min(s.length - 1, LEGACY_MAX); x > 1; x--) {
    const name = s.slice(0, x);
    if (LEGACY.has(name)) return ENTITIES[name]! + s.slice(x);
  }
  return `&${s}`;
}

const CHARREF = /&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)/gu;

/** Python's `html.unescape`. */
export function unescape(s: string): string {
  return s.includes('&') ? s.replace(CHARREF, (_, ref: string) => replaceCharref(ref)) : s;
}

const S = `[${PY_WS}]`;
const sticky = (src: string): RegExp => new RegExp(src, 'uy');
const STARTTAGOPEN = sticky('<[a-zA-Z]');
const TAGFIND = sticky(`([a-zA-Z][^\\t\\n\\r\\f />\\x00]*)(?:${S}|/(?!>))*`);
const ATTR_VALUE = `(?:'[^']*'|"[^"]*"|(?!['"])[^>${PY_WS}]*)`;
const ATTRFIND = sticky(`((?<=['"${PY_WS}/])[^${PY_WS}/>][^${PY_WS}/=>]*)(${S}*=+${S}*${ATTR_VALUE})?(?:${S}|/(?!>))*`);
const LOCATE_STARTTAG_END = sticky(
  `<[a-zA-Z][^\\t\\n\\r\\f />\\x00]*(?:[${PY_WS}/]*(?:(?<=['"${PY_WS}/])[^${PY_WS}/>][^${PY_WS}/=>]*` +
    `(?:${S}*=+${S}*${ATTR_VALUE}${S}*)?(?:${S}|/(?!>))*)*)?${S}*`,
);
const ENDTAGFIND = sticky(`</${S}*([a-zA-Z][-.a-zA-Z0-9:_]*)${S}*>`);
const DECLNAME = sticky(`[a-zA-Z][-_.a-zA-Z0-9]*${S}*`);
const COMMENTCLOSE = new RegExp(`--${S}*>`, 'gu');
const MARKEDSECTIONCLOSE = new RegExp(`\\]${S}*\\]${S}*>`, 'gu');
const MSMARKEDSECTIONCLOSE = new RegExp(`\\]${S}*>`, 'gu');
const SPACE_OR_SEMI = new RegExp(`[${PY_WS};]`, 'u');

function matchAt(re: RegExp, s: string, pos: number): RegExpExecArray | null {
  re.lastIndex = pos;
  return re.exec(s);
}

/** The end of the first match of global `re` in `s` from `pos`, or -1. */
function searchEnd(re: RegExp, s: string, pos: number): number {
  re.lastIndex = pos;
  const m = re.exec(s);
  return m === null ? -1 : m.index + m[0].length;
}

/** The index 34 code points before the end of `s` (Python counts characters, JavaScript UTF-16 units). */
function back34(s: string): number {
  let i = s.length;
  for (let k = 0; k < 34 && i > 0; k++) {
    const c = s.charCodeAt(i - 1);
    i -= c >= 0xdc00 && c <= 0xdfff && i >= 2 && (s.charCodeAt(i - 2) & 0xfc00) === 0xd800 ? 2 : 1;
  }
  return i;
}

/**
 * pyzor's `normalize_html_part(s)`: the text runs of `s` outside `<script>` and `<style>`, each stripped of
 * white space, the empty ones left out, joined by single spaces. Throws {@link PyHtmlError} where Python's
 * parser raises (see the module comment).
 */
export function htmlStripperText(raw: string): string {
  const data: string[] = [];
  let collect = true;
  let cdataElem: string | undefined;
  let cdataEnd: RegExp | undefined;
  const n = raw.length;
  const handleData = (d: string): void => {
    const t = pyStrip(d);
    if (t !== '' && collect) data.push(t);
  };
  const startTag = (tag: string): void => {
    if (tag === 'script' || tag === 'style') collect = false;
  };
  const endTag = (tag: string): void => {
    if (tag === 'script' || tag === 'style') collect = true;
  };

  const checkForWholeStartTag = (i: number): number => {
    const j = i + matchAt(LOCATE_STARTTAG_END, raw, i)![0].length;
    const next = raw.charAt(j);
    if (next === '>') return j + 1;
    if (next === '/') return raw.startsWith('/>', j) ? j + 2 : -1;
    if (next === '' || /^[a-zA-Z=/]$/.test(next)) return -1;
    return j > i ? j : i + 1;
  };

  const parseStarttag = (i: number): number => {
    const endpos = checkForWholeStartTag(i);
    if (endpos < 0) return endpos;
    const m = matchAt(TAGFIND, raw, i + 1)!;
    let k = i + 1 + m[0].length;
    const tag = m[1]!.toLowerCase();
    while (k < endpos) {
      const a = matchAt(ATTRFIND, raw, k);
      if (a === null) break;
      k += a[0].length;
    }
    const end = pyStrip(raw.slice(k, endpos));
    if (end !== '>' && end !== '/>') {
      handleData(raw.slice(i, endpos));
      return endpos;
    }
    startTag(tag);
    if (end.endsWith('/>')) endTag(tag);
    else if (tag === 'script' || tag === 'style') {
      cdataElem = tag;
      cdataEnd = new RegExp(`</${S}*${tag}${S}*>`, 'giu');
    }
    return endpos;
  };

  const parseBogusComment = (i: number): number => {
    const pos = raw.indexOf('>', i + 2);
    return pos < 0 ? -1 : pos + 1;
  };

  const parseEndtag = (i: number): number => {
    const gt = raw.indexOf('>', i + 1);
    if (gt < 0) return -1;
    const gtpos = gt + 1;
    const m = matchAt(ENDTAGFIND, raw, i);
    if (m === null) {
      if (cdataElem !== undefined) {
        handleData(raw.slice(i, gtpos));
        return gtpos;
      }
      const name = matchAt(TAGFIND, raw, i + 2);
      if (name === null) return raw.startsWith('</>', i) ? i + 3 : parseBogusComment(i);
      endTag(name[1]!.toLowerCase());
      return raw.indexOf('>', i + 2 + name[0].length) + 1;
    }
    const elem = m[1]!.toLowerCase();
    if (cdataElem !== undefined && elem !== cdataElem) {
      handleData(raw.slice(i, gtpos));
      return gtpos;
    }
    endTag(elem);
    cdataElem = undefined;
    cdataEnd = undefined;
    return gtpos;
  };

  /** `_scan_name`: `[name, end]`, `end` -1 at the end of the input; throws where Python raises. */
  const scanName = (i: number): [string, number] => {
    if (i === n) return ['', -1];
    const m = matchAt(DECLNAME, raw, i);
    if (m === null) throw new PyHtmlError(`expected name token at ${JSON.stringify(raw.slice(i - 3, i + 17))}`);
    if (i + m[0].length === n) return ['', -1];
    return [pyStrip(m[0]).toLowerCase(), i + m[0].length];
  };

  const parseMarkedSection = (i: number): number => {
    const [name, j] = scanName(i + 3);
    if (j < 0) return j;
    let close: RegExp;
    if (['temp', 'cdata', 'ignore', 'include', 'rcdata'].includes(name)) close = MARKEDSECTIONCLOSE;
    else if (['if', 'else', 'endif'].includes(name)) close = MSMARKEDSECTIONCLOSE;
    else throw new PyHtmlError(`unknown status keyword ${JSON.stringify(raw.slice(i + 3, j))} in marked section`);
    return searchEnd(close, raw, i + 3);
  };

  const parseDeclaration = (i: number): number => {
    if (raw.startsWith('<!--', i)) return searchEnd(COMMENTCLOSE, raw, i + 4);
    if (raw.startsWith('<![', i)) return parseMarkedSection(i);
    if (raw.slice(i, i + 9).toLowerCase() === '<!doctype') {
      const gt = raw.indexOf('>', i + 9);
      return gt < 0 ? -1 : gt + 1;
    }
    return parseBogusComment(i);
  };

  let i = 0;
  while (i < n) {
    let j: number;
    if (cdataEnd === undefined) {
      j = raw.indexOf('<', i);
      if (j < 0) {
        const amp = raw.lastIndexOf('&');
        if (amp >= Math.max(i, back34(raw)) && !SPACE_OR_SEMI.test(raw.slice(amp))) break; // wait for the rest of a reference
        j = n;
      }
    } else {
      cdataEnd.lastIndex = i;
      const m = cdataEnd.exec(raw);
      if (m === null) break;
      j = m.index;
    }
    if (i < j) handleData(cdataEnd === undefined ? unescape(raw.slice(i, j)) : raw.slice(i, j));
    i = j;
    if (i === n) break;
    let k: number;
    if (matchAt(STARTTAGOPEN, raw, i) !== null) k = parseStarttag(i);
    else if (raw.startsWith('</', i)) k = parseEndtag(i);
    else if (raw.startsWith('<!--', i)) k = searchEnd(COMMENTCLOSE, raw, i + 4);
    else if (raw.startsWith('<?', i)) {
      const gt = raw.indexOf('>', i + 2);
      k = gt < 0 ? -1 : gt + 1;
    } else if (raw.startsWith('<!', i)) k = parseDeclaration(i);
    else if (i + 1 < n) {
      handleData('<');
      k = i + 1;
    } else break;
    if (k < 0) break; // incomplete: held back until more data, which pyzor never feeds
    i = k;
  }
  return data.join(' ');
}
