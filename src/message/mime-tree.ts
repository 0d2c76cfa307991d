/**
 * The MIME part tree as mail-parser (the Rust crate Stalwart parses mail with) builds it: every part
 * of the message in depth-first document order (index 0 is the root, multipart containers are parts
 * too), each with its own headers (raw name and value), parsed Content-Type / Content-Disposition,
 * raw byte offsets, decoded content and `len()`, plus the RFC 8621 body lists `textBody`, `htmlBody`
 * and `attachments` by mail-parser's rules. A `message/rfc822` (or `message/global`) part holds a
 * separate nested message whose parts are not in the parent's list.
 *
 * The rules' text parts (src/message/text-parts.ts), the mime/html modules and the classifier all
 * read this one parse: Stalwart reads mail-parser's view (docs/message-analysis.md, "Text parts";
 * docs/analysis.md, "mime").
 *
 * Limits: {@link MAX_MIME_PARTS} parts per message and {@link MAX_MIME_PART_DEPTH} levels of nesting;
 * past them the rest is not split further and `warnings` says so. Never throws.
 */
import { parseContentType, rawAttribute, type ContentType } from './content-type.js';
import { decodeCharset } from './charsets.js';
import { decodeBase64, decodeQuotedPrintable, isCleanBase64 } from './mime-decode.js';

export { parseContentType, type ContentType } from './content-type.js';

/** One header of a part: the name as written (up to the colon) and the raw value after the colon. */
export interface PartHeader {
  /** Bytes before the colon, as written (white space before the colon kept). */
  readonly rawName: string;
  /** Lower-cased, trimmed name. */
  readonly name: string;
  /**
   * Everything after the colon up to the end of the header, folding kept, final line break removed;
   * one character per byte (latin1), so byte-level checks see the raw bytes.
   */
  readonly value: string;
}

/** mail-parser's `PartType`: what a part's body is. */
export type PartKind = 'text' | 'html' | 'binary' | 'inline-binary' | 'message' | 'multipart';

export interface MimePart {
  /** Position in the message's `parts`. */
  readonly index: number;
  readonly headers: readonly PartHeader[];
  /** The last Content-Type header, parsed; undefined when absent or unparsable (e.g. `; tag=1`). */
  readonly contentType: ContentType | undefined;
  /** The last Content-Disposition header, parsed. */
  readonly contentDisposition: ContentType | undefined;
  /** The last Content-Transfer-Encoding value, trimmed (case kept); undefined when absent. */
  readonly transferEncoding: string | undefined;
  readonly kind: PartKind;
  /** Child part indexes of a multipart container (in order). */
  readonly children: readonly number[];
  /** The nested message of a `message/rfc822` part. */
  readonly nested: MimeMessage | undefined;
  /** Byte offsets in `MimeMessage.raw`: header start, body start, body end (encoded bytes). */
  readonly headerStart: number;
  readonly bodyStart: number;
  readonly bodyEnd: number;
  /** Transfer-decoded content (empty for multipart and message parts). */
  readonly decoded: Uint8Array;
  /** Charset-decoded text of `text` and `html` parts. */
  readonly text: string | undefined;
  /** mail-parser's `len()`: UTF-8 bytes of the text, decoded bytes, the nested message's size, or 0. */
  readonly len: number;
  /** `Content-Disposition` filename, else `Content-Type` name; undefined when neither. */
  readonly attachmentName: string | undefined;
}

export interface MimeMessage {
  /** The bytes the offsets refer to (the message, or a decoded nested message). */
  readonly raw: Uint8Array;
  readonly parts: readonly MimePart[];
  readonly textBody: readonly number[];
  readonly htmlBody: readonly number[];
  readonly attachments: readonly number[];
}

/** Parts parsed per message at most (nested messages included). */
export const MAX_MIME_PARTS = 5_000;
/** Multipart / nested-message levels followed at most. */
export const MAX_MIME_PART_DEPTH = 64;

type Container = 'message' | 'mixed' | 'alternative' | 'related' | 'digest' | 'other';
type LeafMime = 'plain' | 'html' | 'text-other' | 'inline' | 'message' | 'other';

interface State {
  readonly container: Container;
  readonly inAlternative: boolean;
  parts: number;
  readonly htmlParts: number;
  readonly textParts: number;
  needHtml: boolean;
  needText: boolean;
}

const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
const utf8 = (s: string): string => Buffer.from(s, 'latin1').toString('utf8');

/** Parses `raw` into mail-parser's part tree. Never throws; `warnings` collects applied limits. */
export function parseMimeTree(raw: Uint8Array): { message: MimeMessage; warnings: string[] } {
  const budget = { parts: 0, warnings: [] as string[], capped: false, deep: false };
  return { message: parseMessage(raw, 0, budget), warnings: budget.warnings };
}

interface Budget {
  parts: number;
  warnings: string[];
  capped: boolean;
  deep: boolean;
}

class Builder {
  readonly parts: MimePart[] = [];
  readonly textBody: number[] = [];
  readonly htmlBody: number[] = [];
  readonly attachments: number[] = [];
  constructor(
    readonly raw: Uint8Array,
    readonly bin: string,
    readonly budget: Budget,
  ) {}
}

function parseMessage(raw: Uint8Array, depth: number, budget: Budget): MimeMessage {
  const b = new Builder(raw, latin1(raw), budget);
  const st: State = { container: 'message', inAlternative: false, parts: 0, htmlParts: 0, textParts: 0, needHtml: true, needText: true };
  entity(b, depth, 0, raw.length, st, undefined);
  return { raw, parts: b.parts, textBody: b.textBody, htmlBody: b.htmlBody, attachments: b.attachments };
}

/** Reads the header block at `start`; returns the headers and where the body starts. */
function readHeaders(bin: string, start: number, end: number): { headers: PartHeader[]; bodyStart: number; terminated: boolean } {
  const headers: PartHeader[] = [];
  let pos = start;
  let cur: { rawName: string; valueStart: number; valueEnd: number } | undefined;
  const flush = (): void => {
    if (cur === undefined) return;
    headers.push({ rawName: cur.rawName, name: cur.rawName.trim().toLowerCase(), value: bin.slice(cur.valueStart, cur.valueEnd) });
    cur = undefined;
  };
  while (pos < end) {
    let nl = bin.indexOf('\n', pos);
    if (nl < 0 || nl >= end) nl = end;
    let lineEnd = nl;
    if (lineEnd > pos && bin.charCodeAt(lineEnd - 1) === 13) lineEnd--;
    if (lineEnd === pos) {
      flush();
      return { headers, bodyStart: Math.min(nl + 1, end), terminated: true };
    }
    const c = bin.charCodeAt(pos);
    if (c === 32 || c === 9) {
      if (cur !== undefined) cur.valueEnd = lineEnd;
    } else {
      flush();
      const colon = bin.indexOf(':', pos);
      if (colon >= 0 && colon < lineEnd) cur = { rawName: bin.slice(pos, colon), valueStart: colon + 1, valueEnd: lineEnd };
    }
    pos = nl + 1;
    if (headers.length > 10_000) break;
  }
  flush();
  return { headers, bodyStart: end, terminated: false };
}

function lastHeader(headers: readonly PartHeader[], name: string): PartHeader | undefined {
  for (let i = headers.length - 1; i >= 0; i--) if (headers[i]!.name === name) return headers[i];
  return undefined;
}

function leafMime(ct: ContentType | undefined, parent: Container): { multipart: Container | undefined; inline: boolean; text: boolean; mime: LeafMime } {
  if (ct === undefined) {
    return parent === 'digest' ? { multipart: undefined, inline: false, text: false, mime: 'message' } : { multipart: undefined, inline: true, text: true, mime: 'plain' };
  }
  switch (ct.type) {
    case 'multipart': {
      const sub = ct.subtype;
      const c: Container = sub === 'mixed' || sub === 'alternative' || sub === 'related' || sub === 'digest' ? sub : 'other';
      return { multipart: c, inline: false, text: false, mime: 'other' };
    }
    case 'text':
      if (ct.subtype === 'plain') return { multipart: undefined, inline: true, text: true, mime: 'plain' };
      if (ct.subtype === 'html') return { multipart: undefined, inline: true, text: true, mime: 'html' };
      return { multipart: undefined, inline: false, text: true, mime: 'text-other' };
    case 'image': case 'audio': case 'video':
      return { multipart: undefined, inline: true, text: false, mime: 'inline' };
    case 'message':
      if (ct.subtype === 'rfc822' || ct.subtype === 'global') return { multipart: undefined, inline: false, text: false, mime: 'message' };
      return { multipart: undefined, inline: false, text: false, mime: 'other' };
    default:
      return { multipart: undefined, inline: false, text: false, mime: 'other' };
  }
}

interface Delimiter {
  /** Where the previous segment ends (before the line break preceding the delimiter). */
  prevEnd: number;
  /** Where the next segment starts (after the delimiter line). */
  next: number;
  close: boolean;
}

/**
 * The delimiters `--boundary` inside [from, to), up to and including the closing one. As in
 * mail-parser, a delimiter is found anywhere, not only at the start of a line: the part before it
 * then ends right there, otherwise before the line break that precedes it. After a delimiter the
 * rest of its line break (or spaces, tabs and CRs up to one LF) is skipped; other bytes start the
 * next part's headers at once.
 */
function delimiters(bin: string, from: number, to: number, boundary: string): Delimiter[] {
  const out: Delimiter[] = [];
  const marker = '--' + boundary;
  let p = bin.indexOf(marker, from);
  while (p >= 0 && p + marker.length <= to) {
    let prevEnd = p;
    if (p > from && bin.charCodeAt(p - 1) === 10) prevEnd = p - 1 > from && bin.charCodeAt(p - 2) === 13 ? p - 2 : p - 1;
    const after = p + marker.length;
    const close = after + 2 <= to && bin.startsWith('--', after);
    let next = after;
    if (!close) {
      while (next < to && (bin.charCodeAt(next) === 13 || bin.charCodeAt(next) === 32 || bin.charCodeAt(next) === 9)) next++;
      if (next < to && bin.charCodeAt(next) === 10) next++;
    }
    out.push({ prevEnd, next, close });
    if (close || out.length > MAX_MIME_PARTS) break;
    p = bin.indexOf(marker, after);
  }
  return out;
}

function newPart(b: Builder, p: Omit<MimePart, 'index'>): number {
  const index = b.parts.length;
  b.parts.push({ index, ...p });
  return index;
}

const EMPTY = new Uint8Array(0);

/**
 * Parses one entity (headers + body) in [start, end); `siblings` collects the container's child ids.
 * `unterminated`: the last part of a multipart whose closing delimiter is missing.
 */
function entity(b: Builder, depth: number, start: number, end: number, st: State, siblings: number[] | undefined, unterminated = false): void {
  const budget = b.budget;
  if (budget.parts >= MAX_MIME_PARTS) {
    if (!budget.capped) {
      budget.capped = true;
      budget.warnings.push(`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`);
    }
    return;
  }
  budget.parts++;
  const bin = b.bin;
  const { headers, bodyStart, terminated } = readHeaders(bin, start, end);
  st.parts++;
  siblings?.push(b.parts.length);
  const ctH = lastHeader(headers, 'content-type');
  const ct = ctH === undefined ? undefined : parseContentType(ctH.value);
  const cdH = lastHeader(headers, 'content-disposition');
  const cd = cdH === undefined ? undefined : parseContentType(cdH.value);
  const cteH = lastHeader(headers, 'content-transfer-encoding');
  const cte = cteH === undefined ? undefined : utf8(cteH.value).trim();
  const attachmentName = cd?.attributes.get('filename') ?? ct?.attributes.get('name');
  let { multipart, inline, text, mime } = leafMime(ct, st.container);
  const common = { headers, contentType: ct, contentDisposition: cd, transferEncoding: cte, headerStart: start, bodyStart, attachmentName };

  if (!terminated && st.container === 'message' && st.parts === 1) {
    // The message ends inside its header block: mail-parser keeps one empty text part that is in
    // no body list and no attachment list.
    newPart(b, { ...common, kind: 'text', children: [], nested: undefined, bodyEnd: end, decoded: EMPTY, text: '', len: 0 });
    return;
  }

  if (multipart !== undefined) {
    const boundary = ct === undefined ? undefined : rawAttribute(ctH!.value, 'boundary');
    if (boundary !== undefined && boundary.length > 0) {
      const delims = delimiters(bin, bodyStart, end, boundary);
      if (delims.length > 0 && depth + 1 < MAX_MIME_PART_DEPTH) {
        const children: number[] = [];
        newPart(b, { ...common, kind: 'multipart', children, nested: undefined, bodyEnd: end, decoded: EMPTY, text: undefined, len: 0 });
        const child: State = {
          container: multipart,
          inAlternative: st.inAlternative || multipart === 'alternative',
          parts: 0,
          htmlParts: b.htmlBody.length,
          textParts: b.textBody.length,
          needHtml: st.needHtml,
          needText: st.needText,
        };
        for (let i = 0; i < delims.length; i++) {
          const d = delims[i]!;
          if (d.close) break;
          const last = i + 1 === delims.length;
          const segEnd = last ? end : delims[i + 1]!.prevEnd;
          entity(b, depth + 1, d.next, Math.max(d.next, segEnd), child, children, last);
        }
        if (multipart === 'alternative' && child.needHtml && child.needText) {
          // An alternative that gave only HTML parts lists them as text too, and vice versa.
          if (child.textParts === b.textBody.length && child.htmlParts !== b.htmlBody.length) {
            for (const pid of b.htmlBody.slice(child.htmlParts)) b.textBody.push(pid);
          }
          if (child.htmlParts === b.htmlBody.length && child.textParts !== b.textBody.length) {
            // mail-parser slices text_body from the html count here; kept as it does.
            for (const pid of b.textBody.slice(child.htmlParts)) b.htmlBody.push(pid);
          }
        }
        return;
      }
      if (delims.length > 0 && !budget.deep) {
        budget.deep = true;
        budget.warnings.push(`MIME nesting limit: parts deeper than ${MAX_MIME_PART_DEPTH} levels are not split`);
      }
      // No delimiter found: mail-parser keeps the body as a text attachment.
      mime = 'text-other';
      text = true;
      inline = false;
    }
  }

  const bodyEnd = Math.max(bodyStart, end);
  const enc: 'none' | 'base64' | 'qp' = cte === undefined ? 'none' : cte.toLowerCase() === 'base64' ? 'base64' : cte.toLowerCase() === 'quoted-printable' ? 'qp' : 'none';
  // mail-parser reads a part's body up to its parent's next delimiter, decoding as it goes; with no
  // delimiter left, or a byte its decoder rejects, it recovers the raw bytes as a text attachment
  // ("encoding problem").
  let decoded: Uint8Array | undefined;
  if (!(unterminated && !(mime === 'message' && enc === 'none'))) {
    // Identity encodings share the message's bytes (no copy).
    if (enc === 'none') decoded = b.raw.subarray(bodyStart, bodyEnd);
    else if (enc === 'base64') decoded = isCleanBase64(bin, bodyStart, bodyEnd) ? decodeBase64(bin, bodyStart, bodyEnd) : undefined;
    else decoded = decodeQuotedPrintable(bin, bodyStart, bodyEnd);
  }
  if (decoded === undefined) {
    mime = 'text-other';
    text = true;
    inline = false;
    decoded = b.raw.subarray(bodyStart, bodyEnd);
  }
  const id = b.parts.length;

  if (mime === 'message') {
    b.attachments.push(id);
    const body = decoded;
    if (depth + 1 < MAX_MIME_PART_DEPTH) {
      const nested = parseMessage(body, depth + 1, budget);
      newPart(b, { ...common, kind: 'message', children: [], nested, bodyEnd, decoded: EMPTY, text: undefined, len: body.length });
    } else {
      if (!budget.deep) {
        budget.deep = true;
        budget.warnings.push(`MIME nesting limit: messages deeper than ${MAX_MIME_PART_DEPTH} levels are not parsed`);
      }
      newPart(b, { ...common, kind: 'binary', children: [], nested: undefined, bodyEnd, decoded: body, text: undefined, len: body.length });
    }
    return;
  }

  const isInline = inline
    && !(cd !== undefined && cd.type === 'attachment')
    && (st.parts === 1 || (st.container !== 'related' && (mime === 'inline' || !(ct?.attributes.has('name') ?? false))));
  let addHtml = false;
  let addText = false;
  if (st.container === 'alternative') {
    addHtml = mime === 'html';
    addText = mime === 'plain';
  } else if (isInline) {
    if (st.inAlternative && (st.needText || st.needHtml)) {
      if (mime === 'html') st.needText = false;
      else if (mime === 'plain') st.needHtml = false;
    }
    addHtml = st.needHtml;
    addText = st.needText;
  }
  if (text) {
    const isHtml = mime === 'html';
    const t = decodeCharset(decoded, ct?.attributes.get('charset')?.trim());
    if (addHtml && !isHtml) b.htmlBody.push(id);
    else if (addText && isHtml) b.textBody.push(id);
    if (addHtml && isHtml) b.htmlBody.push(id);
    else if (addText && !isHtml) b.textBody.push(id);
    else b.attachments.push(id);
    newPart(b, { ...common, kind: isHtml ? 'html' : 'text', children: [], nested: undefined, bodyEnd, decoded, text: t, len: Buffer.byteLength(t, 'utf8') });
  } else {
    if (addHtml) b.htmlBody.push(id);
    if (addText) b.textBody.push(id);
    b.attachments.push(id);
    newPart(b, { ...common, kind: isInline ? 'inline-binary' : 'binary', children: [], nested: undefined, bodyEnd, decoded, text: undefined, len: decoded.length });
  }
}
