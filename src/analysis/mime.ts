/**
 * The `mime` module: Stalwart's MIME structure checks (`spam_filter_analyze_mime`, docs/analysis.md
 * "mime"): MIME headers of the message, every part of mail-parser's part tree (encodings, charsets,
 * multipart/alternative consistency, S/MIME and PGP parts, attachments, their sniffed content and
 * their file names against the `SpamFileExtension` table), the total decoded size.
 * Reads the message only (no DNS, no lists); the extension table comes from `config.fileExtensions`.
 */
import { isAscii as isAsciiBytes } from 'node:buffer';
import { unfold } from '../message/headers.js';
import { parseContentType as parseCt, type ContentType, type MimePart } from '../message/mime-tree.js';
import { isMixedCharset, isObscured } from '../message/scripts.js';
import { mimeView, type TextPart } from '../message/text-parts.js';
import { urlParts } from '../message/url.js';
import { sniffContentType } from './sniff.js';
import type { AnalysisContext, FileExtensionInput } from './types.js';

/** One `SpamFileExtension` entry, compiled. */
interface FileExtension {
  readonly isBad: boolean;
  readonly isArchive: boolean;
  readonly contentTypes: ReadonlySet<string>;
}

const tableCache = new WeakMap<readonly FileExtensionInput[], ReadonlyMap<string, FileExtension>>();

/** The extension table, built once per configured array (exact, lower-case extension match). */
function extensionTable(list: readonly FileExtensionInput[] | undefined): ReadonlyMap<string, FileExtension> {
  if (list === undefined) return new Map();
  let t = tableCache.get(list);
  if (t === undefined) {
    const m = new Map<string, FileExtension>();
    for (const e of list) {
      if (typeof e?.extension !== 'string') continue;
      const ct = e.contentTypes;
      const types = Array.isArray(ct) ? ct : ct !== undefined && ct !== null ? Object.keys(ct).filter((k) => ct[k] !== false) : [];
      m.set(e.extension.toLowerCase(), { isBad: e.isBad === true, isArchive: e.isArchive === true, contentTypes: new Set(types.map((x) => x.toLowerCase())) });
    }
    tableCache.set(list, (t = m));
  }
  return t;
}

const utf8 = (latin1: string): string => Buffer.from(latin1, 'latin1').toString('utf8');

/** Cosine similarity of two word lists as term-frequency vectors (Stalwart's `cosine_similarity`). */
export function cosineSimilarity(a: readonly string[], b: readonly string[]): number {
  const fa = new Map<string, number>();
  const fb = new Map<string, number>();
  for (const w of a) fa.set(w, (fa.get(w) ?? 0) + 1);
  for (const w of b) fb.set(w, (fb.get(w) ?? 0) + 1);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (const [w, x] of fa) {
    na += x * x;
    const y = fb.get(w);
    if (y !== undefined) dot += x * y;
  }
  for (const y of fb.values()) nb += y * y;
  if (na === 0 || nb === 0) return 0;
  return dot / Math.sqrt(na) / Math.sqrt(nb);
}

/** Words that are Stalwart's `Alphabetic`/`Alphanumeric` tokens (not numbers). */
const HAS_NON_NUMBER = /[^\p{N}.]/u;
const SCHEME_URL = /^[A-Za-z0-9]{1,8}(?:\+[A-Za-z0-9]+)?:\/\//;

/** Words and the number of distinct URL sites (`Url` tokens with a parsed host) of a text part. */
function wordsAndUris(p: TextPart): { words: string[]; uris: number } {
  const t = p.tokens(true);
  const words = t.words.filter((w) => HAS_NON_NUMBER.test(w));
  const sites = new Set<string>();
  for (const u of t.urls) {
    if (!SCHEME_URL.test(u)) continue; // scheme-less URLs are not counted here
    const parts = urlParts(u, false);
    if (parts.host !== '') sites.add(parts.sld);
  }
  return { words, uris: sites.size };
}

export async function mime(ctx: AnalysisContext): Promise<void> {
  const view = mimeView(ctx.message);
  const { message, textParts } = view;
  const root = message.parts[0];
  if (root === undefined) return;

  // Pass A: the top-level headers.
  let hasMimeVersion = false;
  let hasCt = false;
  let hasCte = false;
  let hasCd = false;
  let isPlainText = false;
  for (const h of root.headers) {
    switch (h.name) {
      case 'mime-version':
        if (h.rawName !== 'MIME-Version') ctx.tag('MV_CASE');
        hasMimeVersion = true;
        break;
      case 'content-type': {
        hasCt = true;
        const ct = parseCt(h.value);
        if (ct !== undefined) {
          const rt = ct.attributes.get('report-type')?.toLowerCase();
          if (ct.type === 'multipart' && ct.subtype === 'report' && (rt === 'delivery-status' || rt === 'disposition-notification')) ctx.tag('IS_DSN');
          isPlainText = ct.type === 'text' && ct.subtype === 'plain';
        }
        break;
      }
      case 'content-transfer-encoding': hasCte = true; break;
      case 'content-disposition': hasCd = true; break;
    }
  }
  if (!hasMimeVersion && (hasCt || hasCte)) ctx.tag('MISSING_MIME_VERSION');
  if (hasCt && !isPlainText && !hasCte && !hasCd && !hasMimeVersion) ctx.tag('MIME_HEADER_CTYPE_ONLY');

  // Pass B: every part, containers included.
  const attachments = new Set(message.attachments);
  const body = new Set([...message.textBody, ...message.htmlBody]);
  const extensions = extensionTable(ctx.config.fileExtensions);
  let hasTextPart = false;
  let isEncrypted = false;
  let encryptedSmime = false;
  let encryptedPgp = false;
  let numParts = 0;
  let size = 0;

  for (const part of message.parts) {
    let ctType = '';
    let ctSubtype = '';
    let ct: ContentType | undefined;
    let cd: ContentType | undefined;
    let cte = '';
    let hasContentId = false;
    let isAttachment = attachments.has(part.index);
    for (const h of part.headers) {
      switch (h.name) {
        case 'content-type': {
          const parsed = parseCt(h.value);
          if (parsed !== undefined) {
            ct = parsed;
            ctType = parsed.type;
            ctSubtype = parsed.subtype ?? '';
          }
          if (ctType === '') ctx.tag('BROKEN_CONTENT_TYPE');
          else if ((ctType === 'message' && ctSubtype === 'rfc822') || (ctType === 'text' && ctSubtype === 'rfc822-headers')) ctx.tag('HAS_MESSAGE_PARTS');
          if (endsWithSemicolon(h.value)) ctx.tag('CT_EXTRA_SEMI');
          break;
        }
        case 'content-transfer-encoding': {
          const v = utf8(unfold(h.value)).trim();
          cte = v.toLowerCase();
          if (cte !== v) ctx.tag('CTE_CASE');
          break;
        }
        case 'content-disposition': cd = parseCt(h.value); break;
        case 'content-id': hasContentId = true; break;
      }
    }

    if (ctType === 'multipart') {
      if (ctSubtype === 'alternative') alternative(ctx, part, textParts);
      else if (ctSubtype === 'mixed') {
        let textCount = 0;
        let hasOther = false;
        for (const c of part.children) {
          const child = message.parts[c]!;
          const t = child.contentType?.type ?? '';
          if (t === 'text' && !attachments.has(c)) textCount++;
          else if (t !== 'multipart') hasOther = true;
        }
        if (!hasOther && textCount < 3) ctx.tag('CTYPE_MIXED_BOGUS');
      } else if (ctSubtype === 'encrypted') isEncrypted = true;
      continue;
    } else if (ctType === 'text') {
      let is7bit = false;
      if (cte === '' || cte === '7bit') {
        if (hasHighByte(message.raw, part.bodyStart, part.bodyEnd)) ctx.tag('BAD_CTE_7BIT');
        is7bit = true;
      } else if (cte === 'base64') {
        ctx.tag(isAscii(part.text ?? '') ? 'MIME_BASE64_TEXT_BOGUS' : 'MIME_BASE64_TEXT');
      }
      if (!is7bit && ctSubtype === 'plain' && (ct?.attributes.get('charset') ?? '') === '') ctx.tag('MISSING_CHARSET');
      const entry = textParts[part.index];
      if (entry !== undefined && body.has(part.index) && !isAscii(entry.text) && isMixedCharset(entry.text)) ctx.tag('MIXED_CHARSET');
      hasTextPart = true;
    } else if (ctType === 'application') {
      switch (ctSubtype) {
        case 'pkcs7-mime': ctx.tag('ENCRYPTED_SMIME'); isAttachment = false; encryptedSmime = true; break;
        case 'pkcs7-signature': ctx.tag('SIGNED_SMIME'); isAttachment = false; break;
        case 'pgp-encrypted': ctx.tag('ENCRYPTED_PGP'); isAttachment = false; encryptedPgp = true; break;
        case 'pgp-signature': ctx.tag('SIGNED_PGP'); isAttachment = false; break;
        case 'octet-stream':
          if (!isEncrypted && !hasContentId && (cd === undefined || (cd.type !== 'attachment' && !cd.attributes.has('filename')))) {
            ctx.tag('CTYPE_MISSING_DISPOSITION');
          }
          break;
      }
    }

    numParts++;
    size += part.len;
    const ctFull = `${ctType}/${ctSubtype}`;
    if (isAttachment) {
      ctx.tag('HAS_ATTACHMENT');
      if (ctFull !== 'application/octet-stream') {
        const sniffed = await sniffContentType(part.decoded);
        if (sniffed !== undefined) ctx.tag(sniffed === ctFull ? 'MIME_GOOD' : 'MIME_BAD');
      }
    }
    if (part.attachmentName !== undefined) attachmentName(ctx, part.attachmentName, ctFull, extensions);
  }

  if (size === 0) ctx.tag('COMPLETELY_EMPTY');
  else if (size <= 63 && numParts === 1) ctx.tag('SINGLE_SHORT_PART');
  if (hasTextPart && (encryptedPgp || encryptedSmime)) ctx.tag('BOGUS_ENCRYPTED_AND_TEXT');
}

/** multipart/alternative: the first plain and first HTML child compared (words, URL sites). */
function alternative(ctx: AnalysisContext, part: MimePart, textParts: readonly (TextPart | undefined)[]): void {
  let plain: TextPart | undefined;
  let html: TextPart | undefined;
  for (const c of part.children) {
    const e = textParts[c];
    if (e === undefined) continue;
    if (e.isHtml) html ??= e;
    else plain ??= e;
  }
  if (html !== undefined) {
    if (plain === undefined) ctx.tag('MIME_MA_MISSING_TEXT');
  } else if (plain !== undefined) ctx.tag('MIME_MA_MISSING_HTML');
  const p = plain === undefined ? { words: [], uris: 0 } : wordsAndUris(plain);
  const h = html === undefined ? { words: [], uris: 0 } : wordsAndUris(html);
  if (plain !== undefined && html !== undefined && (p.words.length > 0 || h.words.length > 0) && cosineSimilarity(p.words, h.words) < 0.95) {
    ctx.tag('PARTS_DIFFER');
  }
  if (p.uris !== h.uris) ctx.tag('URI_COUNT_ODD');
}

/** Attachment-name checks: obscured characters, bad/double/archive extensions, unexpected type. */
function attachmentName(ctx: AnalysisContext, rawName: string, ctFull: string, table: ReadonlyMap<string, FileExtension>): void {
  for (const ch of rawName) {
    if (isObscured(ch.codePointAt(0)!)) {
      ctx.tag('MIME_BAD_UNICODE');
      break;
    }
  }
  const name = rawName.trim().toLowerCase();
  const dot = name.lastIndexOf('.');
  if (dot < 0) return;
  const ext = table.get(name.slice(dot + 1));
  if (ext === undefined) return;
  const base = name.slice(0, dot);
  const subDot = base.lastIndexOf('.');
  const sub = subDot < 0 ? undefined : table.get(base.slice(subDot + 1));
  if (ext.isBad) ctx.tag(sub?.isBad === true ? 'MIME_DOUBLE_BAD_EXTENSION' : 'MIME_BAD_EXTENSION');
  if (ext.isArchive && sub?.isArchive === true) ctx.tag('MIME_ARCHIVE_IN_ARCHIVE');
  if (ext.contentTypes.size > 0 && ctFull !== 'application/octet-stream' && !ext.contentTypes.has(ctFull)) ctx.tag('MIME_BAD_ATTACHMENT');
}

function hasHighByte(raw: Uint8Array, start: number, end: number): boolean {
  return end > start && !isAsciiBytes(raw.subarray(start, end));
}

const NON_ASCII = /[^\x00-\x7f]/;
/**
 * Does `value` end with ";" before any trailing ASCII white space (space, tab, CR, LF, FF)? A scan
 * from the end: the pattern `/[ \t\r\n\f]+$/` it replaces took a second on a hostile folded value
 * of megabytes, trying every white-space run of it.
 */
function endsWithSemicolon(value: string): boolean {
  let i = value.length - 1;
  for (; i >= 0; i--) {
    const c = value.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13 && c !== 10 && c !== 12) break;
  }
  return i >= 0 && value.charCodeAt(i) === 59;
}
function isAscii(s: string): boolean {
  return !NON_ASCII.test(s);
}
