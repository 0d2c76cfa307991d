/**
 * `analyzeMessage`: raw RFC 5322 bytes → the per-scope elements the rule engine iterates
 * (docs/message-analysis.md). MIME parsing happens up front; each scope's extraction runs on first
 * request and is memoized.
 */
import { performance } from 'node:perf_hooks';
import type { Value } from '../expr/value.js';
import { MessageContext, type AnalyzeOptions } from './context.js';
import {
  anyElement, extractBodies, extractDomains, extractEmails, extractEmailScope, extractHeaders, extractIps, extractUrls,
} from './elements.js';
import { headerTag, splitHeaders, type RawHeader } from './headers.js';
import { buildView } from './text-parts.js';
import type { AnalysisTimings, AnalyzedMessage, Envelope, Scope, ScopeElement } from './types.js';

/** Lines longer than this many bytes (RFC 5322 §2.1.1 limit, CRLF excluded) earn a warning. */
export const MAX_LINE_BYTES = 998;

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

/** Length of the header block (up to the blank line that ends it), or -1 when there is no blank line. */
function headerEnd(raw: Uint8Array): number {
  const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (b.length > 0 && (b[0] === 10 || (b[0] === 13 && b[1] === 10))) return 0;
  const crlf = b.indexOf('\n\r\n');
  const lf = b.indexOf('\n\n');
  if (crlf < 0 && lf < 0) return -1;
  if (lf >= 0 && (crlf < 0 || lf < crlf)) return lf + 1;
  return crlf + 1;
}

function checkShape(raw: Uint8Array, headerText: string, warnings: string[]): void {
  const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (b.indexOf(0) >= 0) warnings.push('message contains NUL bytes');
  if (headerText.includes('\ufffd')) warnings.push('headers contain bytes that are not valid UTF-8');
  // Hop from line start to the last LF within the allowed length: one native call per ~1 KB
  // instead of one per line. No LF in the window means the line starting at `pos` is too long.
  // The LF of a longest allowed line (998 bytes + CR) sits at most 999 bytes after its start.
  const window = MAX_LINE_BYTES + 1;
  let pos = 0;
  while (b.length - pos > MAX_LINE_BYTES) {
    const nl = b.lastIndexOf(10, pos + window);
    if (nl < pos) {
      warnings.push(`line longer than ${MAX_LINE_BYTES} bytes at byte ${pos}`);
      break;
    }
    pos = nl + 1;
  }
}

class Analyzed implements AnalyzedMessage {
  private readonly parseMs: number;
  private elementsMs = 0;
  private readonly cache = new Map<Scope, readonly ScopeElement[]>();
  private emailsMemo: ReturnType<typeof extractEmails> | undefined;

  constructor(
    private readonly ctx: MessageContext,
    readonly builtinTags: readonly string[],
    readonly warnings: string[],
    readonly size: number,
    parseMs: number,
  ) {
    this.parseMs = parseMs;
  }

  /** Parse time, and extraction time so far: scopes extracted plus generic variables computed lazily. */
  get timings(): AnalysisTimings {
    return { parseMs: this.parseMs, extractMs: this.elementsMs + this.ctx.lazyMs };
  }

  private emails(): ReturnType<typeof extractEmails> {
    return (this.emailsMemo ??= extractEmails(this.ctx, (w) => this.warnings.push(w)));
  }

  /** The elements of one scope, extracted on first request (time added to `timings.extractMs`). Never throws. */
  elements(scope: Scope): readonly ScopeElement[] {
    const hit = this.cache.get(scope);
    if (hit !== undefined) return hit;
    const t0 = performance.now();
    let out: readonly ScopeElement[];
    try {
      out = this.extract(scope);
    } catch (e) {
      // Last line of defence: extraction is written not to throw, but a rule run must survive.
      this.warnings.push(`${scope} extraction failed: ${e instanceof Error ? e.message : String(e)}`);
      out = scope === 'Any' ? anyElement(this.ctx) : [];
    }
    this.cache.set(scope, out);
    this.elementsMs += performance.now() - t0;
    return out;
  }

  private extract(scope: Scope): readonly ScopeElement[] {
    const ctx = this.ctx;
    switch (scope) {
      case 'Url': return extractUrls(ctx, (w) => this.warnings.push(w));
      case 'Domain': return extractDomains(ctx, this.emails());
      case 'Email': return extractEmailScope(ctx, this.emails());
      case 'Ip': return extractIps(ctx);
      case 'Header': return extractHeaders(ctx);
      case 'Body': return extractBodies(ctx);
      case 'Any': return anyElement(ctx);
    }
  }

  /** The parsed message the analysis modules read (headers, parts, generic variables). */
  get context(): MessageContext {
    return this.ctx;
  }

  /** A generic variable outside any element (for tools); `undefined` for non-generic names. */
  generic(name: string): Value | undefined {
    return this.ctx.generic(name);
  }
}

/**
 * The parsed message behind an {@link AnalyzedMessage} returned by {@link analyzeMessage}: what the
 * built-in analysis modules read. Throws `TypeError` for an object that analyzeMessage did not make.
 */
export function messageContextOf(m: AnalyzedMessage): MessageContext {
  if (m instanceof Analyzed) return m.context;
  throw new TypeError('not an analysed message');
}

/**
 * Parses a raw RFC 5322 message (bytes, or a string taken as UTF-8) into mail-parser's part tree
 * (src/message/mime-tree.ts, src/message/text-parts.ts) and returns its per-scope elements
 * (docs/message-analysis.md; Stalwart's rule evaluation for the scope order).
 *
 * - `envelope`: SMTP facts (remote IP default 127.0.0.1, HELO default "unknown", TLS default on);
 *   or a function of the parsed top-level headers that returns them (stored mail, whose envelope
 *   is read back from its own headers: the headers are split once). What the function throws,
 *   analyzeMessage rejects with.
 * - `options.isTrustedDomain`: the `trusted-domains` namespace, consulted for Domain step 5.
 *
 * Never throws and never rejects: malformed MIME is read as mail-parser reads it (a multipart
 * without delimiters, a body its decoder rejects: a text attachment of the raw bytes), and
 * problems are listed in `warnings`. Limits: see MAX_HEADERS, MAX_ELEMENTS, MAX_TOKENIZE_CHARS,
 * MAX_HTML_TOKENS, MAX_HTML_LINKS, MAX_MIME_PARTS, MAX_MIME_PART_DEPTH. `timings.parseMs` covers the
 * header split and the MIME parse; `timings.extractMs` grows as scopes are extracted and generic variables are first computed.
 */
export async function analyzeMessage(
  input: Uint8Array | string,
  envelope?: Envelope | EnvelopeFromHeaders,
  options: AnalyzeOptions = {},
): Promise<AnalyzedMessage> {
  try {
    return await analyze(input, envelope, options);
  } catch (e) {
    if (e instanceof EnvelopeError) throw e.cause;
    // Last line of defence (e.g. an input that is neither bytes nor a string): an empty message.
    const m = await analyze(new Uint8Array(0), envelope, options);
    (m.warnings as string[]).unshift(`analysis failed (${e instanceof Error ? e.message : String(e)}); treated as empty`);
    return m;
  }
}

/** Computes a message's envelope from its parsed top-level headers. */
export type EnvelopeFromHeaders = (headers: readonly RawHeader[]) => Envelope | undefined;

/** What an {@link EnvelopeFromHeaders} threw: passed through to the caller, not the fallback. */
class EnvelopeError extends Error {
  constructor(override readonly cause: unknown) {
    super('envelope from headers failed');
  }
}

async function analyze(input: Uint8Array | string, given: Envelope | EnvelopeFromHeaders | undefined, options: AnalyzeOptions): Promise<AnalyzedMessage> {
  const t0 = performance.now();
  const warnings: string[] = [];
  let raw: Uint8Array;
  try {
    raw = typeof input === 'string' ? encoder.encode(input) : input;
  } catch {
    raw = new Uint8Array(0);
    warnings.push('input could not be read as bytes');
  }
  const headerLen = headerEnd(raw);
  if (headerLen < 0) warnings.push('no blank line between headers and body');
  const headerText = utf8.decode(raw.subarray(0, headerLen < 0 ? raw.length : headerLen));
  checkShape(raw, headerText, warnings);
  const headers = splitHeaders(headerText, warnings);
  if (headers.length === 0) warnings.push('message has no headers');
  let envelope: Envelope | undefined;
  if (typeof given === 'function') {
    try {
      envelope = given(headers);
    } catch (e) {
      throw new EnvelopeError(e);
    }
  } else {
    envelope = given;
  }
  // mail-parser's part tree (mime-tree.ts), parsed once for the rules and the analysis modules.
  const view = buildView(raw);
  for (const w of view.warnings) warnings.push(w);
  const headerTags = headers.map((h) => headerTag(h.name));
  const tags: string[] = [];
  const seen = new Set<string>();
  for (const t of headerTags) {
    if (!seen.has(t)) {
      seen.add(t);
      tags.push(t);
    }
  }
  const ctx = new MessageContext(raw, headers, view, envelope, options, headerTags);
  return new Analyzed(ctx, tags, warnings, raw.byteLength, performance.now() - t0);
}
