/**
 * Stalwart's `text_parts` (init.rs, docs/analysis.md): one entry per part of mail-parser's part tree
 * (src/message/mime-tree.ts), plain text for `text/*` parts, HTML tokens and the text extracted from
 * them for `text/html`, nothing for the others; then the text parts of nested `message/rfc822`
 * messages, appended after the top-level ones. Each entry knows whether it is a *body part* (its
 * index is in `textBody` or `htmlBody`). Computed once per message (memoized on the MessageContext),
 * and the HTML tokens and word tokens of an entry once per entry.
 */
import type { MessageContext } from './context.js';
import type { TextPart } from './parse.js';
import { htmlTextBody, htmlToTokens, type HtmlTokens } from './html-tokens.js';
import { parseMimeTree, type MimeMessage } from './mime-tree.js';
import { tokenize, type TextTokens } from './tokenizer.js';
import { MemoSlot } from '../util/index.js';

/** One entry of `text_parts`. */
export class TextPartEntry {
  private htmlMemo: HtmlTokens | undefined;
  private textMemo: string | undefined;
  private tokensMemo: TextTokens | undefined;

  constructor(
    /** Index of the part in the top-level `parts`, or -1 for a part of a nested message. */
    readonly partIndex: number,
    readonly isHtml: boolean,
    /** The decoded content: plain text, or the HTML source. */
    readonly content: string,
    /** Is the part in mail-parser's `textBody` or `htmlBody` list (never for nested-message parts)? */
    readonly isBody: boolean,
  ) {}

  /** Stalwart's `html_to_tokens` of an HTML part (empty for plain text); computed once. */
  htmlTokens(): HtmlTokens {
    return (this.htmlMemo ??= this.isHtml ? htmlToTokens(this.content) : { tokens: [], truncated: false });
  }

  /** Plain content, or for HTML the text outside `<head>` (`html_text_body`). */
  get text(): string {
    return (this.textMemo ??= this.isHtml ? htmlTextBody(this.htmlTokens().tokens) : this.content);
  }

  /**
   * Parts of the rules' parse (src/message/parse.ts) whose text may equal this entry's: a part
   * with the very same text shares its tokens (tokenize is a pure function of the text), so a
   * part both parsers read alike is tokenized once per message.
   */
  twins: readonly TextPart[] = [];

  /** URL, e-mail, IP and word tokens of {@link text}; computed once. */
  tokens(): TextTokens {
    if (this.tokensMemo !== undefined) return this.tokensMemo;
    const text = this.text;
    // HTML text is compared only when the rules' part already has it (extracting it costs).
    const twin = this.twins.find((p) => p.isHtml === this.isHtml && (this.isHtml ? p.scannedText() === text : p.content === text));
    return (this.tokensMemo = twin !== undefined ? twin.tokens(true) : tokenize(text, true));
  }
}

export interface MimeView {
  readonly message: MimeMessage;
  /** Indexed like `message.parts` (undefined for non-text parts), then nested-message text parts. */
  readonly textParts: readonly (TextPartEntry | undefined)[];
  /** Limits applied while parsing (part count, nesting depth). */
  readonly warnings: readonly string[];
}

const memo = new MemoSlot<MessageContext, MimeView>();

/** The message's MIME tree and text parts, built on first use. Never throws. */
export function mimeView(ctx: MessageContext): MimeView {
  let v = memo.get(ctx);
  if (v === undefined) {
    v = buildView(ctx.raw);
    for (const e of v.textParts) if (e !== undefined) e.twins = ctx.body.parts;
    memo.set(ctx, v);
  }
  return v;
}

/** {@link mimeView} for raw bytes (no memo): for tools and tests. */
export function buildView(raw: Uint8Array): MimeView {
  const { message, warnings } = parseMimeTree(raw);
  const body = new Set<number>([...message.textBody, ...message.htmlBody]);
  const textParts: (TextPartEntry | undefined)[] = [];
  const nested: TextPartEntry[] = [];
  for (const p of message.parts) {
    if ((p.kind === 'text' || p.kind === 'html') && p.text !== undefined) {
      textParts.push(new TextPartEntry(p.index, p.kind === 'html', p.text, body.has(p.index)));
    } else {
      textParts.push(undefined);
      if (p.kind === 'message' && p.nested !== undefined) {
        for (const q of p.nested.parts) {
          if ((q.kind === 'text' || q.kind === 'html') && q.text !== undefined) nested.push(new TextPartEntry(-1, q.kind === 'html', q.text, false));
        }
      }
    }
  }
  return { message, textParts: [...textParts, ...nested], warnings };
}
