/**
 * Stalwart's `text_parts` (init.rs, docs/message-analysis.md "Text parts"): one entry per part of
 * mail-parser's part tree (src/message/mime-tree.ts), plain text for `text/*` parts, HTML tokens and
 * the text extracted from them for `text/html`, nothing for the others; then the text parts of nested
 * `message/rfc822` / `message/global` messages, appended after the top-level ones. Each entry knows
 * whether it is a *body part* (its index is in `textBody` or `htmlBody`).
 *
 * One parse per message serves everyone: the rules' element sets (Url, Email, Ip, Body scopes and
 * the `body.*` variables), the url/ip/domain modules, the mime and html modules and the classifier.
 * The HTML tokens, links and word tokens of an entry are computed once, on first use.
 */
import type { MessageContext } from './context.js';
import { htmlLinks, htmlTextBody, htmlToTokens, type HtmlLinks, type HtmlTokens } from './html-tokens.js';
import { parseMimeTree, type MimeMessage } from './mime-tree.js';
import { tokenize, type TextTokens } from './tokenizer.js';
import type { Location } from './types.js';

const NO_HTML: HtmlTokens = { tokens: [], truncated: false };
const NO_LINKS: HtmlLinks = { links: [], mailtos: [] };

/** One entry of `text_parts`: a plain text part, or an HTML part with its tokens and extracted text. */
export class TextPart {
  private htmlMemo: HtmlTokens | undefined;
  private linksMemo: HtmlLinks | undefined;
  private textMemo: string | undefined;
  private tokensMemo: TextTokens | undefined;
  private tokensHaveWords = false;

  constructor(
    /** Index of the part in the top-level `parts`, or -1 for a part of a nested message. */
    readonly partIndex: number,
    readonly isHtml: boolean,
    /** The decoded content: plain text, or the HTML source. */
    readonly content: string,
    /** Is the part in mail-parser's `textBody` or `htmlBody` list (never for nested-message parts)? */
    readonly isBody: boolean,
    /**
     * The Body scope's location: `body_text` when the part is in `textBody`, else `body_html` when it
     * is in `htmlBody`, else `attachment`.
     */
    readonly location: Location,
  ) {}

  /** Stalwart's `html_to_tokens` of an HTML part (empty for plain text); computed once. */
  htmlTokens(): HtmlTokens {
    return (this.htmlMemo ??= this.isHtml ? htmlToTokens(this.content) : NO_HTML);
  }

  /** The `href`/`src` values and `mailto:` hrefs of an HTML part (none for plain text); computed once. */
  links(): HtmlLinks {
    return (this.linksMemo ??= this.isHtml ? htmlLinks(this.htmlTokens().tokens) : NO_LINKS);
  }

  /** Plain content, or for HTML the text outside `<head>` (`html_text_body`). */
  get text(): string {
    return (this.textMemo ??= this.isHtml ? htmlTextBody(this.htmlTokens().tokens) : this.content);
  }

  /**
   * Set on the first `html_body` part: `body.words` (read by the public rule STWT_HAS_SEO_WORD on
   * every message) takes its words, so that part is tokenized once with words instead of twice.
   */
  wordsWanted = false;

  /**
   * URL, e-mail and IP tokens of {@link text}, and its words when `wantWords` (or
   * {@link wordsWanted}); computed once. The URL/e-mail/IP lists do not depend on whether words are
   * collected.
   */
  tokens(wantWords = false): TextTokens {
    const m = this.tokensMemo;
    if (m !== undefined && (!wantWords || this.tokensHaveWords)) return m;
    const words = wantWords || this.wordsWanted;
    this.tokensHaveWords = words;
    return (this.tokensMemo = tokenize(this.text, words));
  }
}

/** The text parts as the rules and the url/ip/domain modules read them. */
export interface ParsedBody {
  /** The non-empty entries of `text_parts`, in index order (nested-message parts last). */
  readonly parts: readonly TextPart[];
  /** The part of the first `textBody` entry, else of the first `htmlBody` entry (`body`, `body.text`). */
  readonly textBody: TextPart | undefined;
  /** The part of the first `htmlBody` entry (`body.words`; `body.html` when it is HTML). */
  readonly htmlBody: TextPart | undefined;
}

export interface MimeView {
  readonly message: MimeMessage;
  /** Indexed like `message.parts` (undefined for non-text parts), then nested-message text parts. */
  readonly textParts: readonly (TextPart | undefined)[];
  /** The same entries for the rules: body lists resolved. */
  readonly body: ParsedBody;
  /** Limits applied while parsing (part count, nesting depth). */
  readonly warnings: readonly string[];
}

/** The message's MIME tree and text parts (parsed once, when the message was analysed). */
export function mimeView(ctx: MessageContext): MimeView {
  return ctx.view;
}

/** Parses raw bytes into a {@link MimeView}. Never throws (mime-tree.ts's limits apply). */
export function buildView(raw: Uint8Array): MimeView {
  const { message, warnings } = parseMimeTree(raw);
  const text = new Set<number>(message.textBody);
  const html = new Set<number>(message.htmlBody);
  const textParts: (TextPart | undefined)[] = [];
  const nested: TextPart[] = [];
  const parts: TextPart[] = [];
  for (const p of message.parts) {
    if ((p.kind === 'text' || p.kind === 'html') && p.text !== undefined) {
      const i = p.index;
      const location: Location = text.has(i) ? 'body_text' : html.has(i) ? 'body_html' : 'attachment';
      const e = new TextPart(i, p.kind === 'html', p.text, location !== 'attachment', location);
      textParts.push(e);
      parts.push(e);
    } else {
      textParts.push(undefined);
      if (p.kind === 'message' && p.nested !== undefined) {
        for (const q of p.nested.parts) {
          if ((q.kind === 'text' || q.kind === 'html') && q.text !== undefined) nested.push(new TextPart(-1, q.kind === 'html', q.text, false, 'attachment'));
        }
      }
    }
  }
  const first = message.textBody[0] ?? message.htmlBody[0];
  const textBody = first === undefined ? undefined : textParts[first];
  const htmlIdx = message.htmlBody[0];
  const htmlBody = htmlIdx === undefined ? undefined : textParts[htmlIdx];
  if (htmlBody !== undefined) htmlBody.wordsWanted = true;
  return { message, textParts: [...textParts, ...nested], body: { parts: [...parts, ...nested], textBody, htmlBody }, warnings };
}
