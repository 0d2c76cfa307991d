/** Message analysis: raw RFC 5322 → per-scope elements and their variables (docs/message-analysis.md). */
export { analyzeMessage, messageContextOf, MAX_LINE_BYTES, type EnvelopeFromHeaders } from './analyze.js';
export { MessageContext } from './context.js';
export { GENERIC_VARIABLES, threadName, type AnalyzeOptions } from './context.js';
export { MAX_ELEMENTS } from './elements.js';
export { MAX_HEADERS } from './headers.js';
export { htmlLinks, htmlToTokens, htmlTextBody, MAX_HTML_LINKS, MAX_HTML_TOKENS, type HtmlLinks, type HtmlToken, type HtmlTokens } from './html-tokens.js';
export { parseMimeTree, MAX_MIME_PARTS, MAX_MIME_PART_DEPTH, type MimeMessage, type MimePart } from './mime-tree.js';
export { mimeView, TextPart, type MimeView, type ParsedBody } from './text-parts.js';
export { MAX_TOKENIZE_CHARS, MAX_TOKENS } from './tokenizer.js';
export { hostname, emailAddress, type Hostname, type EmailAddress } from './hostname.js';
export { urlParts, type UrlParts } from './url.js';
export * from './types.js';
