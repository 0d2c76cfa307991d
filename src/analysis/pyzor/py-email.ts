/**
 * The part of Python 3.11's `email` package that pyzor 1.0.0 reads a message with (`email.message_from_bytes`
 * with the default `compat32` policy, then `Message.walk`, `get_content_maintype`, `get_content_charset`,
 * `get_payload`), ported so that the pyzor-mode digest sees the parts and payloads pyzor sees. The parser is
 * `email.feedparser.FeedParser._parsegen`, rule for rule:
 *
 * - bytes are read as ASCII with `surrogateescape` (byte 0x80–0xFF is U+DC80–U+DCFF), lines end at CR, LF or CRLF;
 * - headers run to the first line that is neither `Name:` (any printable ASCII but `:`), a continuation nor
 *   `From `; a blank line there is consumed, another line is the body's first;
 * - `multipart/*` with a `boundary` is split at lines `--boundary[--][ \t]*`, nested boundaries ending inner
 *   parts; without a boundary, or when no boundary line is found, the body is the part's text payload;
 * - `message/*` bodies are parsed as messages (whatever their Content-Transfer-Encoding), `message/delivery-status`
 *   as blocks of headers; parts of `multipart/digest` default to `message/rfc822`.
 *
 * Nesting deeper than {@link MAX_DEPTH} throws {@link PyEmailError} (Python runs out of recursion far later).
 */

/** Python's white space (`str.isspace`, and `\s` of `re` for text): what `strip()` removes. */
export const PY_WS = '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const STRIP_RE = new RegExp(`^[${PY_WS}]+|[${PY_WS}]+$`, 'g');
const RSTRIP_RE = new RegExp(`[${PY_WS}]+$`);

/** Python's `str.strip()`. */
export function pyStrip(s: string): string {
  return s.replace(STRIP_RE, '');
}

/** How deep parts may nest (multipart in multipart, attached messages). */
export const MAX_DEPTH = 100;

/** A message the port cannot read as Python does (nesting past {@link MAX_DEPTH}). */
export class PyEmailError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PyEmailError';
  }
}

/** An `email.message.Message`: its headers as parsed, and a text payload or its sub-parts. */
export class PyMessage {
  readonly headers: [name: string, value: string][] = [];
  payload: string | PyMessage[] = '';
  defaultType = 'text/plain';

  /** `Message.get(name)`: the first such header's value (8-bit bytes as U+FFFD, as `str(Header)` gives them). */
  get(name: string): string | undefined {
    const key = name.toLowerCase();
    const h = this.headers.find(([k]) => k.toLowerCase() === key);
    return h === undefined ? undefined : h[1].replace(/[\udc80-\udcff]/g, '\ufffd');
  }

  isMultipart(): boolean {
    return Array.isArray(this.payload);
  }

  private ctype: string | undefined;

  /**
   * `get_content_type()`: the type lower-cased; `text/plain` when it is not `x/y`; the default type without the
   * header. Kept after the first call (the parser asks once the part's headers are read).
   */
  contentType(): string {
    if (this.ctype !== undefined) return this.ctype;
    const v = this.get('content-type');
    if (v === undefined) return (this.ctype = this.defaultType);
    const semi = v.indexOf(';');
    const ctype = pyStrip(semi < 0 ? v : v.slice(0, semi)).toLowerCase();
    return (this.ctype = ctype.split('/').length === 2 ? ctype : 'text/plain');
  }

  maintype(): string {
    return this.contentType().split('/')[0]!;
  }

  subtype(): string {
    return this.contentType().split('/')[1]!;
  }

  /** `get_param(name)` of Content-Type, unquoted; a `[charset, language, value]` triple for an RFC 2231 `name*=` value. */
  param(name: string): string | [string | undefined, string | undefined, string] | undefined {
    const v = this.get('content-type');
    if (v === undefined) return undefined;
    const want = name.toLowerCase();
    for (const [k, val] of decodeParams(parseParams(v))) {
      if (k.toLowerCase() === want) return typeof val === 'string' ? unquote(val) : [val[0], val[1], unquote(val[2])];
    }
    return undefined;
  }

  /** `get_content_charset()`: lower case; `undefined` without one, or when it is not ASCII. */
  contentCharset(): string | undefined {
    const c = this.param('charset');
    if (c === undefined) return undefined;
    const s = typeof c === 'string' ? c : c[2];
    return /^[\x00-\x7f]*$/.test(s) ? s.toLowerCase() : undefined;
  }

  /** `get_boundary()`: unquoted (twice, as `collapse_rfc2231_value` unquotes again), trailing white space removed. */
  boundary(): string | undefined {
    const b = this.param('boundary');
    if (b === undefined) return undefined;
    return (typeof b === 'string' ? unquote(b) : b[2]).replace(RSTRIP_RE, '');
  }

  /** `walk()`: this part, then each sub-part's walk, depth first. */
  *walk(): Generator<PyMessage> {
    yield this;
    if (Array.isArray(this.payload)) for (const p of this.payload) yield* p.walk();
  }
}

/** `email.utils.unquote`. */
function unquote(s: string): string {
  if (s.length > 1) {
    if (s.startsWith('"') && s.endsWith('"')) return s.slice(1, -1).replaceAll('\\\\', '\\').replaceAll('\\"', '"');
    if (s.startsWith('<') && s.endsWith('>')) return s.slice(1, -1);
  }
  return s;
}

const quote = (s: string): string => s.replaceAll('\\', '\\\\').replaceAll('"', '\\"');

/**
 * `email.message._parseparam` of a header value: its `;`-separated pieces (a `;` inside double quotes does
 * not separate), each stripped, a parameter name lower-cased. Linear: quote counts are kept as prefix sums.
 */
function parseParams(value: string): string[] {
  const n = value.length;
  const quotes = new Int32Array(n + 1); // `"` in value[0:k]
  const escaped = new Int32Array(n + 1); // `\"` starting in value[0:k-1]
  for (let k = 0; k < n; k++) {
    quotes[k + 1] = quotes[k]! + (value.charCodeAt(k) === 34 ? 1 : 0);
    escaped[k + 1] = escaped[k]! + (value.charCodeAt(k) === 92 && value.charCodeAt(k + 1) === 34 ? 1 : 0);
  }
  // Python: s[start:].count('\\"', 0, end) counts `\"` lying wholly before `end`.
  const odd = (start: number, end: number): boolean => (quotes[end]! - quotes[start]! - (escaped[Math.max(start, end - 1)]! - escaped[start]!)) % 2 !== 0;
  const out: string[] = [];
  let start = 0; // value[start] follows a `;` (the first piece: the start of the value)
  for (;;) {
    let end = value.indexOf(';', start);
    while (end > start && odd(start, end)) end = value.indexOf(';', end + 1);
    if (end < 0) end = n;
    let f = value.slice(start, end);
    const eq = f.indexOf('=');
    if (eq >= 0) f = `${pyStrip(f.slice(0, eq)).toLowerCase()}=${pyStrip(f.slice(eq + 1))}`;
    out.push(pyStrip(f));
    if (end >= n) return out;
    start = end + 1;
  }
}

type ParamValue = string | [string | undefined, string | undefined, string];

/** `email.utils.decode_params` (RFC 2231): `name*N*` continuations joined, `%XX` decoded, `charset'lang'` split off. */
function decodeParams(pieces: string[]): [string, ParamValue][] {
  const out: [string, ParamValue][] = [];
  const continued = new Map<string, [number, string, boolean][]>();
  pieces.forEach((p, i) => {
    const eq = p.indexOf('=');
    const name = eq < 0 ? pyStrip(p) : pyStrip(p.slice(0, eq));
    const raw = eq < 0 ? '' : pyStrip(p.slice(eq + 1));
    if (i === 0) {
      out.push([name, raw]);
      return;
    }
    const value = unquote(raw);
    const m = /^([A-Za-z0-9_]+)\*(?:([0-9]+)\*?)?$/.exec(name);
    if (m === null) {
      out.push([name, `"${quote(value)}"`]);
      return;
    }
    const list = continued.get(m[1]!) ?? [];
    list.push([m[2] === undefined ? -1 : Number(m[2]), value, name.endsWith('*')]);
    continued.set(m[1]!, list);
  });
  for (const [name, list] of continued) {
    list.sort((a, b) => a[0] - b[0]);
    let extended = false;
    const joined = list
      .map(([, s, encoded]) => {
        if (!encoded) return s;
        extended = true;
        return s.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
      })
      .join('');
    const v = quote(joined);
    const parts = v.split("'");
    if (extended && parts.length >= 3) out.push([name, [parts[0], parts[1], `"${parts.slice(2).join("'")}"`]]);
    else out.push([name, `"${v}"`]);
  }
  return out;
}

const HEADER_RE = /^(?:From |[\x21-\x39\x3b-\x7e]*:|[\t ])/;
const STARTS_WITH_EOL = /^(?:\r\n|\r|\n)/;
const EOL_AT_END = /(?:\r\n|\r|\n)$/;

/** `BufferedSubFile`: the lines, lines pushed back, and the stack of "end of this part" line tests. */
class Lines {
  private pos = 0;
  private readonly back: string[] = [];
  readonly eof: ((line: string) => boolean)[] = [];
  constructor(private readonly lines: string[]) {}

  /** The next line; `''` at the end, or when a test on the stack matches it (it is then kept for later). */
  readline(): string {
    const line = this.back.length > 0 ? this.back.pop()! : this.pos < this.lines.length ? this.lines[this.pos++]! : '';
    if (line === '') return '';
    // Every test on the stack is a boundary (`--…`) or a blank line: other lines end nothing.
    const c = line.charCodeAt(0);
    if (c !== 45 && c !== 13 && c !== 10) return line;
    for (let i = this.eof.length - 1; i >= 0; i--) {
      if (this.eof[i]!(line)) {
        this.back.push(line);
        return '';
      }
    }
    return line;
  }

  unreadline(line: string): void {
    this.back.push(line);
  }

  /** The lines up to the end (as {@link readline} sees it), joined. */
  rest(): string {
    const out: string[] = [];
    for (let line = this.readline(); line !== ''; line = this.readline()) out.push(line);
    return out.join('');
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** The feed parser's state: the stack of open messages, the current one, the last one created. */
class Parser {
  private readonly stack: PyMessage[] = [];
  private cur: PyMessage | undefined;
  private last: PyMessage | undefined;
  constructor(private readonly input: Lines) {}

  private newMessage(): PyMessage {
    const msg = new PyMessage();
    if (this.cur !== undefined && this.cur.contentType() === 'multipart/digest') msg.defaultType = 'message/rfc822';
    const parent = this.stack.at(-1);
    if (parent !== undefined) {
      if (Array.isArray(parent.payload)) parent.payload.push(msg);
      else parent.payload = [msg];
    }
    this.stack.push(msg);
    this.cur = msg;
    this.last = msg;
    return msg;
  }

  popMessage(): PyMessage {
    const m = this.stack.pop()!;
    this.cur = this.stack.at(-1);
    return m;
  }

  private parseHeaders(msg: PyMessage, lines: string[]): void {
    let last: string[] = [];
    const flush = (): void => {
      if (last.length === 0) return;
      const first = last[0]!;
      const colon = first.indexOf(':');
      const value = first.slice(colon + 1).replace(/^[ \t]+/, '') + last.slice(1).join('');
      msg.headers.push([first.slice(0, colon), value.replace(/[\r\n]+$/, '')]);
      last = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line[0] === ' ' || line[0] === '\t') {
        if (last.length > 0) last.push(line);
        continue;
      }
      flush();
      if (line.startsWith('From ')) {
        if (i === lines.length - 1 && i !== 0) {
          this.input.unreadline(line);
          return;
        }
        continue; // the Unix From line, or a misplaced one (a defect): not a header
      }
      if (line.indexOf(':') <= 0) continue; // ":value": missing header name
      last = [line];
    }
    flush();
  }

  /** `_parsegen`: reads one message (its headers, then its body by its type) into a new message on the stack. */
  parse(depth: number): void {
    if (depth > MAX_DEPTH) throw new PyEmailError(`parts nest deeper than ${MAX_DEPTH} levels`);
    const input = this.input;
    const msg = this.newMessage();
    const headers: string[] = [];
    for (let line = input.readline(); line !== ''; line = input.readline()) {
      if (!HEADER_RE.test(line)) {
        if (!STARTS_WITH_EOL.test(line)) input.unreadline(line);
        break;
      }
      headers.push(line);
    }
    this.parseHeaders(msg, headers);
    const ctype = msg.contentType();
    if (ctype === 'message/delivery-status') {
      for (;;) {
        input.eof.push((l) => STARTS_WITH_EOL.test(l));
        this.parse(depth + 1);
        this.popMessage();
        input.eof.pop();
        input.readline(); // the blank line after the block
        const line = input.readline();
        if (line === '') return;
        input.unreadline(line);
      }
    }
    if (msg.maintype() === 'message') {
      this.parse(depth + 1);
      this.popMessage();
      return;
    }
    if (msg.maintype() === 'multipart') {
      this.parseMultipart(msg, depth);
      return;
    }
    msg.payload = input.rest();
  }

  private parseMultipart(msg: PyMessage, depth: number): void {
    const input = this.input;
    const boundary = msg.boundary();
    if (boundary === undefined) {
      msg.payload = input.rest();
      return;
    }
    const re = new RegExp(`^(?:${escapeRegExp(`--${boundary}`)})(--)?[ \\t]*(?:\\r\\n|\\r|\\n)?$`);
    const isBoundary = (l: string): boolean => re.test(l);
    let preamble: string[] | undefined = [];
    let closed = false;
    for (let line = input.readline(); line !== ''; line = input.readline()) {
      const mo = re.exec(line);
      if (mo === null) {
        preamble?.push(line);
        continue;
      }
      if (mo[1] !== undefined) {
        closed = true;
        break;
      }
      if (preamble !== undefined) {
        preamble = undefined;
        input.unreadline(line);
        continue;
      }
      for (;;) {
        const next = input.readline();
        if (!isBoundary(next)) {
          input.unreadline(next);
          break;
        }
      }
      input.eof.push(isBoundary);
      this.parse(depth + 1);
      const last = this.last!;
      // The line end before a boundary belongs to the boundary (the payload's, not a multipart's epilogue).
      if (last.maintype() !== 'multipart' && typeof last.payload === 'string') last.payload = last.payload.replace(EOL_AT_END, '');
      input.eof.pop();
      this.popMessage();
      this.last = this.cur;
    }
    if (preamble !== undefined) {
      // No boundary line at all: the body is the part's text (and what follows is read and dropped).
      msg.payload = preamble.join('');
      input.rest();
      return;
    }
    if (!closed) return;
    input.rest(); // the epilogue
  }
}

/** Bytes as Python's `bytes.decode('ascii', 'surrogateescape')`. */
function surrogateEscape(raw: Uint8Array): string {
  const s = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('latin1');
  return /[\x80-\xff]/.test(s) ? s.replace(/[\x80-\xff]/g, (c) => String.fromCharCode(0xdc00 + c.charCodeAt(0))) : s;
}

/** A payload string back to its bytes (`str.encode('ascii', 'surrogateescape')`; other characters as Latin-1). */
export function payloadBytes(s: string): Uint8Array {
  const t = /[\udc80-\udcff]/.test(s) ? s.replace(/[\udc80-\udcff]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0xdc00)) : s;
  return Buffer.from(t, 'latin1');
}

/** `email.message_from_bytes(raw)` (compat32). Throws {@link PyEmailError} for parts nested too deep. */
export function messageFromBytes(raw: Uint8Array): PyMessage {
  const text = surrogateEscape(raw);
  const lines = text.match(/[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$/g) ?? [];
  const parser = new Parser(new Lines(lines));
  parser.parse(0);
  return parser.popMessage();
}
