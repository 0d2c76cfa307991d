/**
 * A fast-check arbitrary of structurally valid but odd MIME messages (test/message/fuzz.test.ts,
 * test/engine/classify-fuzz.test.ts): random nesting of multiparts and message/rfc822 parts, content
 * types, transfer encodings, charsets, filenames, header case and line ends. Every boundary is unique and
 * every body is encoded correctly, so the text written into a `text/plain` part in a charset we can encode
 * must come back out of the parse: each such part's text is returned in `texts` for that check.
 */
import fc from 'fast-check';

/** A charset we can encode text into here, with the characters its texts are drawn from. */
interface Charset {
  readonly label: string;
  encode(s: string): Buffer;
  /** Must the body be base64 or quoted-printable (its bytes include NUL, CR, LF)? */
  readonly binary?: boolean;
}

const ASCII = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;!?()[]<>@#$%&*+/\'"_|~^`{}';
// Latin-1 letters that windows-1252 reads the same way (0xA0-0xFF; 0x80-0x9F differ).
const LATIN1 = ASCII + 'àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿßÀÉÖÜ£¥§©«»°±µ¶¿';
const UNICODE = LATIN1 + 'ĀŁŒžΑΒΓαβγДЖЯжяשלוםمرحبا中文字日本語한국어ไทย€™😀🎉\u200b\u00a0';
const UTF16 = (s: string, be: boolean): Buffer => {
  const b = Buffer.from(s, 'utf16le');
  if (be) b.swap16();
  return b;
};
const CHARSETS: ReadonlyArray<readonly [Charset, string]> = [
  [{ label: 'utf-8', encode: (s) => Buffer.from(s, 'utf8') }, UNICODE],
  [{ label: 'UTF-8', encode: (s) => Buffer.from(s, 'utf8') }, UNICODE],
  [{ label: 'us-ascii', encode: (s) => Buffer.from(s, 'latin1') }, ASCII],
  [{ label: 'iso-8859-1', encode: (s) => Buffer.from(s, 'latin1') }, LATIN1],
  [{ label: 'ISO_8859-1', encode: (s) => Buffer.from(s, 'latin1') }, LATIN1],
  [{ label: 'windows-1252', encode: (s) => Buffer.from(s, 'latin1') }, LATIN1],
  [{ label: 'latin1', encode: (s) => Buffer.from(s, 'latin1') }, LATIN1],
  [{ label: 'utf-16le', encode: (s) => UTF16(s, false), binary: true }, UNICODE],
  [{ label: 'utf-16be', encode: (s) => UTF16(s, true), binary: true }, UNICODE],
];

type Leaf = { kind: 'leaf'; type: string; charset: number; cte: string; disposition: string | undefined; filename: string | undefined; text: string; style: number; urls: string[] };
type Multi = { kind: 'multi'; subtype: string; children: Node[]; preamble: string; epilogue: string; boundary: string; padding: string; style: number };
type Nested = { kind: 'rfc822'; type: string; subject: string; body: Node };
export type Node = Leaf | Multi | Nested;

/** Texts of a charset's characters, with line breaks (`\n`, written as the message's line end in unencoded bodies). */
/**
 * File names as written (a `utf-8''` one as an RFC 2231 `filename*`, the others quoted) and the name the
 * parse must give. Non-ASCII names are written as UTF-8 bytes.
 */
export const FILENAMES: Readonly<Record<string, string>> = {
  'a.txt': 'a.txt',
  'résumé.pdf': 'résumé.pdf',
  'report (final).pdf': 'report (final).pdf',
  'a;b=c.txt': 'a;b=c.txt',
  '=?utf-8?B?0YTQsNC50LsuZG9j?=': 'файл.doc',
  'a b.zip': 'a b.zip',
  "utf-8''%E2%82%AC%20%281%29.txt": '€ (1).txt',
  ['x'.repeat(300) + '.txt']: 'x'.repeat(300) + '.txt',
};

/**
 * Ways to write a Content-Type or Content-Disposition header, all valid (RFC 2045, RFC 5322 CFWS):
 * `(name, type, params)` → the header line(s), params given as `; a=b` strings.
 */
const STYLES: ReadonlyArray<(name: string, type: string, params: string[], eol: string) => string> = [
  (n, t, ps) => `${n}: ${t}${ps.join('')}`,
  (n, t, ps) => `${n.toLowerCase()}:${t}${ps.join('')}`,
  (n, t, ps, eol) => `${n}: ${t}${ps.map((p) => `;${eol}\t${p.slice(2)}`).join('')}`,
  (n, t, ps) => `${n}: ${t} (a comment; x=y)${ps.map((p) => p.replace('=', ' = ')).join(' ')}`,
  (n, t, ps) => `${n.toUpperCase()}:   ${t}  ${ps.join('  ')}  `,
];

/** Boundary characters (RFC 2046 bchars), `-` left out so that no boundary holds another's `--` delimiter. */
const BCHARS = "0123456789abcXYZ'()+_,./:=? ";

/** URLs of unreserved characters (the Url scope's `url` is their lower-case form, `url_original` as written). */
const urlArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('http', 'https'),
    fc.constantFrom('www.example.com', 'x-y.example.org', 'a.b.example.co.uk', '203.0.113.9', 'example.net:8080'),
    fc.array(fc.string({ unit: fc.constantFrom(...'abcXYZ019-_~.'), minLength: 1, maxLength: 8 }).filter((s) => !s.endsWith('.')), { maxLength: 3 }),
    fc.option(fc.constantFrom('?a=1', '?q=x&r=y', '#frag'), { nil: '' }),
  )
  .map(([scheme, host, path, rest]) => `${scheme}://${host}/${path.join('/')}${rest}`);

const escapeHtml = (t: string): string => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const textArb = (alphabet: string): fc.Arbitrary<string> =>
  fc.string({ unit: fc.oneof({ weight: 20, arbitrary: fc.constantFrom(...alphabet) }, { weight: 1, arbitrary: fc.constant('\n') }), minLength: 1, maxLength: 200 }).filter((t) => t.trim() !== '');

const leafArb: fc.Arbitrary<Leaf> = fc
  .record({
    type: fc.constantFrom('text/plain', 'TEXT/PLAIN', 'Text/Plain', 'text/html', 'text/calendar', 'application/octet-stream', 'image/png', 'application/pdf', 'text/x-unknown'),
    charset: fc.integer({ min: 0, max: CHARSETS.length - 1 }),
    cte: fc.constantFrom('7bit', '8bit', 'binary', 'base64', 'quoted-printable', 'BASE64', 'Quoted-Printable', ''),
    disposition: fc.option(fc.constantFrom('inline', 'attachment', 'ATTACHMENT', 'inline; x=1'), { nil: undefined }),
    filename: fc.option(fc.constantFrom(...Object.keys(FILENAMES)), { nil: undefined }),
    style: fc.nat({ max: STYLES.length - 1 }),
    urls: fc.array(urlArb, { maxLength: 3 }),
  })
  .chain((r) => textArb(CHARSETS[r.charset]![1]).map((text) => ({ ...r, kind: 'leaf' as const, text })));

/** Message trees up to a few levels deep. */
export const mimeTreeArb: fc.Arbitrary<Node> = fc.letrec<{ node: Node; multi: Multi; nested: Nested }>((tie) => ({
  node: fc.oneof({ depthSize: 'medium', maxDepth: 6, withCrossShrink: true }, leafArb, tie('multi'), tie('multi'), tie('nested')),
  multi: fc.record({
    kind: fc.constant('multi' as const),
    subtype: fc.constantFrom('mixed', 'alternative', 'related', 'report', 'signed', 'digest', 'x-odd', 'MIXED'),
    children: fc.array(tie('node'), { minLength: 0, maxLength: 4 }),
    preamble: fc.constantFrom('', 'This is a multi-part message in MIME format.', '--not-a-boundary'),
    epilogue: fc.constantFrom('', 'epilogue text', '\r\n\r\n'),
    boundary: fc.string({ unit: fc.constantFrom(...BCHARS), maxLength: 40 }),
    padding: fc.constantFrom('', ' ', '\t', '  \t'),
    style: fc.nat({ max: STYLES.length - 1 }),
  }),
  nested: fc.record({
    kind: fc.constant('rfc822' as const),
    type: fc.constantFrom('message/rfc822', 'message/global', 'Message/RFC822'),
    subject: fc.constantFrom('fwd', '=?utf-8?Q?caf=C3=A9?=', ''),
    body: tie('node'),
  }),
})).node;

/** RFC 2045 quoted-printable of bytes: every byte that is not a plain printable (nor `=`) as =XX, soft breaks under 76. */
export function encodeQuotedPrintable(b: Buffer, eol: string): string {
  let out = '';
  let line = '';
  for (const c of b) {
    const piece = c > 32 && c < 127 && c !== 61 ? String.fromCharCode(c) : `=${c.toString(16).toUpperCase().padStart(2, '0')}`;
    if (line.length + piece.length > 75) {
      out += line + '=' + eol;
      line = '';
    }
    line += piece;
  }
  return out + line;
}

const base64Lines = (b: Buffer, eol: string): string => (b.toString('base64').match(/.{1,76}/g) ?? []).join(eol);

/** A generated message: its bytes, the text/plain texts the parse must find (one per such part), and file names. */
export interface GeneratedMessage {
  raw: Buffer;
  texts: string[];
  /** The attachment names of parts with a file name, decoded, in document order. */
  names: string[];
  /** Texts written (escaped) into `text/html` parts, which their extracted text must hold, white space aside. */
  htmlTexts: string[];
  /** URLs written into those text/plain parts and as links into the HTML ones, which the Url scope must give. */
  urls: string[];
  /** The top-level Content-Type as the Header scope must read it: `type/subtype` lower-cased, `name=value` attributes. */
  contentType: { value: string; attributes: string[] };
}

/**
 * Serializes a tree with the given line end. Texts are collected from `text/plain` parts whose charset
 * can carry them, in the top-level message or a message directly attached to it (the text parts of a
 * message inside an attached message are not text parts: docs/message-analysis.md, "Text parts").
 */
export function serialize(root: Node, eol: string, topHeaders: readonly string[]): GeneratedMessage {
  let nextBoundary = 0;
  const texts: string[] = [];
  const names: string[] = [];
  const urls: string[] = [];
  const htmlTexts: string[] = [];
  const part = (n: Node, nestedDepth: number): { headers: string[]; body: string } => {
    switch (n.kind) {
      case 'leaf': {
        const cs = CHARSETS[n.charset]!;
        let cte = n.cte.toLowerCase();
        // A body whose bytes include CR, LF or NUL must be base64 to stay one part (quoted-printable would
        // keep the line break that ends the message as CR LF bytes, a stray UTF-16 unit, as mail-parser does).
        if (cs[0].binary) cte = 'base64';
        const encoded = cte === 'base64' || cte === 'quoted-printable';
        // Unencoded, a line break is the message's own; encoded, it is a byte of the text.
        const html = n.type === 'text/html';
        // URLs go after the text, each after a space (HTML: as links; the text escaped).
        const withUrls = html
          ? `<html><head><title>t</title></head><body><p>${escapeHtml(n.text)}</p>${n.urls.map((u) => `<a href="${u}">link</a>`).join('')}</body></html>`
          : n.text + n.urls.map((u) => ` ${u}`).join('');
        const text = encoded ? withUrls : withUrls.replace(/\n/g, eol);
        const bytes = cs[0].encode(text);
        const body = cte === 'base64' ? base64Lines(bytes, eol) : cte === 'quoted-printable' ? encodeQuotedPrintable(bytes, eol) : bytes.toString('latin1');
        const style = STYLES[n.style]!;
        const headers = [style('Content-Type', n.type, [`; charset="${cs[0].label}"`], eol)];
        if (cte !== '') headers.push(`Content-Transfer-Encoding: ${cte === n.cte.toLowerCase() ? n.cte : cte}`);
        if (n.disposition !== undefined || n.filename !== undefined) {
          const f = n.filename;
          const param = f === undefined ? [] : f.startsWith("utf-8''") ? [`; filename*=${f}`] : [`; filename="${Buffer.from(f, 'utf8').toString('latin1')}"`];
          headers.push(style('Content-Disposition', n.disposition ?? 'attachment', param, eol));
          if (f !== undefined) names.push(FILENAMES[f]!);
        }
        if (n.type.toLowerCase() === 'text/plain' && nestedDepth <= 1) {
          texts.push(text);
          urls.push(...n.urls);
        }
        if (html && nestedDepth <= 1) {
          htmlTexts.push(n.text);
          urls.push(...n.urls);
        }
        return { headers, body };
      }
      case 'multi': {
        // A unique prefix (`=_7.` is no prefix of `=_71.`), then the generated characters; never a trailing space.
        const b = `=_${nextBoundary++}.${n.boundary}`.trimEnd();
        const lines = [n.preamble];
        for (const c of n.children) {
          const p = part(c, nestedDepth);
          lines.push(`--${b}${n.padding}`, ...p.headers, '', p.body);
        }
        lines.push(`--${b}--${n.padding}`, n.epilogue);
        return { headers: [STYLES[n.style]!('Content-Type', `multipart/${n.subtype}`, [`; boundary="${b}"`], eol)], body: lines.join(eol) };
      }
      case 'rfc822': {
        const p = part(n.body, nestedDepth + 1);
        const inner = [`From: inner@example.org`, `Subject: ${n.subject}`, 'MIME-Version: 1.0', ...p.headers, '', p.body].join(eol);
        return { headers: [`Content-Type: ${n.type}`], body: inner };
      }
    }
  };
  const p = part(root, 0);
  const contentType =
    root.kind === 'leaf'
      ? { value: root.type.toLowerCase(), attributes: [`charset=${CHARSETS[root.charset]![0].label}`] }
      : root.kind === 'multi'
        ? { value: `multipart/${root.subtype.toLowerCase()}`, attributes: [`boundary=${`=_0.${root.boundary}`.trimEnd()}`] }
        : { value: root.type.toLowerCase(), attributes: [] };
  const raw = [...topHeaders, 'MIME-Version: 1.0', ...p.headers, '', p.body, ''].join(eol);
  return { raw: Buffer.from(raw, 'latin1'), texts, htmlTexts, names, urls, contentType };
}

/** Generated messages, with odd top-level headers and one of the line ends. */
export const generatedMessageArb: fc.Arbitrary<GeneratedMessage> = fc
  .tuple(
    mimeTreeArb,
    fc.constantFrom('\r\n', '\n'),
    fc.constantFrom('From: a@example.com', 'From: "=?utf-8?B?w6k=?=" <b@example.net>', 'From: <>', 'From: undisclosed-recipients:;'),
    fc.constantFrom('Subject: hi', 'Subject: =?iso-8859-1?Q?caf=E9?= =?utf-8?B?8J+YgA==?=', 'Subject:'),
  )
  .map(([tree, eol, from, subject]) => serialize(tree, eol, [from, 'To: b@example.org', subject, 'Date: Mon, 1 Jan 2024 00:00:00 +0000', 'Message-ID: <g@example.com>']));
