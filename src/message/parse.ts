/**
 * MIME parsing with postal-mime, reduced to what Stalwart's init step keeps (docs/message-analysis.md):
 * the top-level headers (our own split, so raw bytes survive) and the text parts with their
 * body-ness. postal-mime is the library; only its text grouping is read back from the parser.
 */
import PostalMime from 'postal-mime';
import type { Email } from 'postal-mime';
import { scanHtml, type HtmlScan } from './html.js';
import { installFastDecoders } from './postal-fast.js';
import { installPostalLimits, postalPartsCapped } from './postal-limits.js';
import { MAX_MIME_PARTS } from './mime-tree.js';
import { tokenize, type TextTokens } from './tokenizer.js';
import type { Location } from './types.js';

/** One text part: plain text, or HTML with its extracted text. */
export class TextPart {
  private scanned: HtmlScan | undefined;
  private tokensMemo: TextTokens | undefined;
  constructor(
    readonly isHtml: boolean,
    /** Decoded content: the text, or the HTML source. */
    readonly content: string,
    readonly location: Location,
  ) {}

  /** The HTML scan (text, href/src links, mailto hrefs); computed once. Plain parts have no links. */
  html(): HtmlScan {
    if (this.scanned === undefined) {
      this.scanned = this.isHtml ? scanHtml(this.content) : { text: this.content, links: [], mailtos: [] };
    }
    return this.scanned;
  }

  /**
   * Set on the `html_body` part: `body.words` (read by the public rule STWT_HAS_SEO_WORD on every
   * message) takes its words, so that part is tokenized once with words instead of twice.
   */
  wordsWanted = false;

  /**
   * URL, email and IP tokens of the part's text, and its words when `wantWords` (or
   * {@link wordsWanted}); computed once, shared by the scopes. The URL/email/IP lists do not
   * depend on whether words are collected.
   */
  tokens(wantWords = false): TextTokens {
    const m = this.tokensMemo;
    if (m !== undefined && (!wantWords || this.tokensHaveWords)) return m;
    const words = wantWords || this.wordsWanted;
    this.tokensHaveWords = words;
    return (this.tokensMemo = tokenize(this.text, words));
  }
  private tokensHaveWords = false;

  /** The HTML part's extracted text if already computed, else `undefined` (plain parts: the content). */
  scannedText(): string | undefined {
    return this.isHtml ? this.scanned?.text : this.content;
  }

  /** The part's text: plain content, or the text extracted from HTML outside `<head>`. */
  get text(): string {
    return this.isHtml ? this.html().text : this.content;
  }
}

export interface ParsedBody {
  parts: TextPart[];
  /** First `text_body` part (body / body.text). */
  textBody: TextPart | undefined;
  /** First `html_body` part (body.words; body.html when it is HTML). */
  htmlBody: TextPart | undefined;
}

/** Deepest MIME nesting postal-mime may follow; deeper messages fall back to the raw split. */
export const MAX_MIME_DEPTH = 64;

interface TextItem {
  type: 'text' | 'subMessage';
  value: unknown;
}
interface ParserInternals {
  textMap: Map<object, { plain?: TextItem[]; html?: TextItem[] }>;
  root: { childNodes: object[] } & object;
}

function collectNodes(root: { childNodes: object[] }, into: Set<object>): void {
  // Iterative walk: a hostile message may nest deeply.
  const stack: { childNodes: object[] }[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    into.add(n);
    for (const c of n.childNodes) stack.push(c as { childNodes: object[] });
  }
}

const utf8 = new TextDecoder('utf-8');

// postal-mime's Blob-based part joining dominates its cost on Node 20 (see postal-fast.ts).
installFastDecoders();
// Hostile encoded-word runs and part counts (see postal-limits.ts).
installPostalLimits();

/**
 * Parses the MIME structure. Returns `undefined` (and a warning) when postal-mime rejects the
 * message, so the caller can fall back to a raw header/body split.
 */
export async function parseBody(raw: Uint8Array, warnings: string[]): Promise<ParsedBody | undefined> {
  const parser = new PostalMime({ attachmentEncoding: 'arraybuffer', maxNestingDepth: MAX_MIME_DEPTH });
  let email: Email;
  try {
    email = await parser.parse(raw);
  } catch (e) {
    warnings.push(`MIME parsing failed (${e instanceof Error ? e.message : String(e)}); using a raw header/body split`);
    return undefined;
  }
  if (postalPartsCapped(parser)) warnings.push(`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`);
  const internals = parser as unknown as ParserInternals;
  const topLevel = new Set<object>();
  collectNodes(internals.root, topLevel);

  const body: TextPart[] = [];
  const nested: TextPart[] = [];
  // textMap groups a multipart/alternative's text parts under the alternative node, in document
  // order; parts of inline message/rfc822 parts carry nodes of a nested parser (not in topLevel).
  for (const [node, entry] of internals.textMap) {
    const isTop = topLevel.has(node);
    const hasPlain = entry.plain?.some((t) => t.type === 'text') ?? false;
    for (const kind of ['plain', 'html'] as const) {
      for (const item of entry[kind] ?? []) {
        if (item.type !== 'text' || typeof item.value !== 'string') continue;
        const isHtml = kind === 'html';
        if (!isTop) nested.push(new TextPart(isHtml, item.value, 'attachment'));
        else body.push(new TextPart(isHtml, item.value, isHtml && hasPlain ? 'body_html' : 'body_text'));
      }
    }
  }
  const attachments: TextPart[] = [];
  for (const a of email.attachments) {
    if (!a.mimeType.startsWith('text/') || !(a.content instanceof ArrayBuffer)) continue;
    attachments.push(new TextPart(a.mimeType === 'text/html', utf8.decode(a.content), 'attachment'));
  }
  const textBody = body.find((p) => p.location === 'body_text');
  const htmlBody = body.find((p) => p.isHtml) ?? textBody;
  if (htmlBody !== undefined) htmlBody.wordsWanted = true;
  return { parts: [...body, ...attachments, ...nested], textBody, htmlBody };
}

/** The fallback when MIME parsing fails: the whole body as one plain text part. */
export function rawBody(text: string): ParsedBody {
  const part = new TextPart(false, text, 'body_text');
  part.wordsWanted = true;
  return { parts: [part], textBody: part, htmlBody: part };
}
