/**
 * Stalwart's LLM step (`stalwart:crates/spam-filter/src/analysis/llm.rs`, `spam_filter_analyze_llm`, an
 * enterprise feature there): when `analysis.llm` is set, the configured prompt, the message's subject and its
 * first body text go to an OpenAI-compatible endpoint (src/analysis/llm/client.ts), and the reply, split on
 * the separator, gives **LLM_<CATEGORY>_<CONFIDENCE>** (or **LLM_<CATEGORY>** without a confidence) when its
 * category field is one of the configured categories. The explanation field goes to the `X-Spam-LLM` header
 * only (`ClassifyResult.llm`, `headers['X-Spam-LLM']`).
 *
 * A message without a body part is not sent, and training sends nothing. No reply (a timeout, a refused
 * connection, a non-2xx status, a body that is not a completion) sets nothing, as in Stalwart, and is reported
 * in the result's warnings. The wait is a network wait: the classify time budget leaves it out, as it does DNS
 * waits; `timeoutMs` bounds it. What is sent is bounded: the subject to `maxSubjectBytes`, the body to
 * `maxBodyBytes` (README A23).
 *
 * After `breaker.failureThreshold` such failures in a row the endpoint's circuit breaker opens
 * (src/analysis/step-breaker.ts): messages then skip the request at once, with a warning and no tag, until a
 * probe after the cool-down gets a reply. A reply naming no known category is a reply.
 */
import { llmComplete, LlmError } from './llm/client.js';
import { resolveLlmSettings, type ResolvedLlmSettings } from './llm/settings.js';
import { stepBreaker, StepSkippedError, viaBreaker } from './step-breaker.js';
import type { AnalysisContext, LlmVerdict } from './types.js';

/** Bytes of the explanation kept at most (Stalwart's 255). */
export const LLM_EXPLANATION_MAX_BYTES = 255;

const utf8 = new TextEncoder();

/**
 * `text` cut to at most `max` bytes of UTF-8, on a character boundary (a character that would straddle the
 * limit is left out whole).
 */
export function cutUtf8(text: string, max: number): string {
  if (text.length * 3 <= max) return text; // at most 3 bytes per UTF-16 code unit
  const bytes = utf8.encode(text);
  if (bytes.length <= max) return text;
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back to the first byte of the character cut through
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** The prompt Stalwart builds: `<prompt>\n\nSubject: <subject>\n\n<body>`, the subject and body cut to their bounds. */
export function llmPrompt(subject: string, body: string, s: Pick<ResolvedLlmSettings, 'prompt' | 'maxSubjectBytes' | 'maxBodyBytes'>): string {
  return `${s.prompt}\n\nSubject: ${cutUtf8(subject, s.maxSubjectBytes)}\n\n${cutUtf8(body, s.maxBodyBytes)}`;
}

/** Every Unicode White_Space character (Rust's `char::is_whitespace`) and the other C0/C1 controls and DEL, which a header line cannot carry. */
const NOT_IN_HEADER = /[\p{White_Space}\p{Cc}]/gu;

/**
 * A lone UTF-16 surrogate (a JSON reply's `"\ud800"` escape decodes to one): no Unicode character, so it
 * becomes U+FFFD, as UTF-8 encoding would make it in the milter and spamd headers. Left in, the rspamd
 * reply's JSON would carry the `\ud800` escape on, which strict JSON parsers refuse (RFC 8259 §8.2).
 */
const LONE_SURROGATE = /\p{Cs}/gu;

/**
 * Reads a reply as Stalwart does: split on the separator's first character; each field trimmed, empty ones
 * skipped; the field at `responsePosCategory` uppercased must be one of `categories` (compared uppercased),
 * else the one at `responsePosConfidence` uppercased one of `confidence`, else the one at
 * `responsePosExplanation` is the explanation, white space (and, here, control characters) turned into spaces
 * and lone surrogates into U+FFFD, cut to 255 bytes. `undefined` when no category is recognised.
 */
export function parseLlmReply(
  reply: string,
  s: Pick<ResolvedLlmSettings, 'separator' | 'categories' | 'confidence' | 'responsePosCategory' | 'responsePosConfidence' | 'responsePosExplanation'>,
): LlmVerdict | undefined {
  const sep = String.fromCodePoint(s.separator.codePointAt(0)!);
  const categories = new Set(s.categories.map((c) => c.trim().toUpperCase()));
  const levels = new Set(s.confidence.map((c) => c.trim().toUpperCase()));
  let category: string | undefined;
  let confidence: string | undefined;
  let explanation: string | undefined;
  const fields = reply.split(sep);
  for (let i = 0; i < fields.length; i++) {
    const value = fields[i]!.trim();
    if (value === '') continue;
    if (i === s.responsePosCategory) {
      const v = value.toUpperCase();
      if (categories.has(v)) category = v;
    } else if (i === s.responsePosConfidence) {
      const v = value.toUpperCase();
      if (levels.has(v)) confidence = v;
    } else if (i === s.responsePosExplanation) {
      explanation = cutUtf8(value.replace(NOT_IN_HEADER, ' ').replace(LONE_SURROGATE, '\ufffd'), LLM_EXPLANATION_MAX_BYTES);
    }
  }
  if (category === undefined) return undefined;
  return { category, ...(confidence !== undefined ? { confidence } : {}), ...(explanation !== undefined ? { explanation } : {}) };
}

/** The module: nothing when `config.llm` is off, in training or without a body part; else a promise (the request). Never throws. */
export function llm(ctx: AnalysisContext): void | Promise<void> {
  const settings = resolveLlmSettings(ctx.config.llm);
  // Training reads the message, it does not judge it: no request (as the other network checks).
  if (settings === undefined || ctx.session.train) return;
  const body = ctx.message.body.textBody;
  if (body === undefined) return;
  return ask(ctx, llmPrompt(ctx.message.subjectText, body.text, settings), settings);
}

async function ask(ctx: AnalysisContext, prompt: string, settings: ResolvedLlmSettings): Promise<void> {
  let reply: string;
  try {
    const breaker = stepBreaker(ctx.config, `llm ${settings.url}`, settings.breaker);
    // A request never sent (the API key unreadable) says nothing of the endpoint.
    reply = await viaBreaker(breaker, 'endpoint', () => ctx.networkWait(llmComplete(prompt, settings)), (e) => !(e instanceof LlmError && e.local));
  } catch (e) {
    ctx.warn(`${e instanceof LlmError || e instanceof StepSkippedError ? e.message : `request failed: ${String(e)}`}; no LLM tag set`);
    return;
  }
  const verdict = parseLlmReply(reply, settings);
  if (verdict === undefined) return;
  ctx.tag(verdict.confidence === undefined ? `LLM_${verdict.category}` : `LLM_${verdict.category}_${verdict.confidence}`);
  ctx.setLlmVerdict(verdict);
}
