/**
 * One completion request to an OpenAI-compatible endpoint, as Stalwart's `AiApiConfig::send_request` sends it
 * (its enterprise `llm.rs`): a POST of `{"model", "messages": [{"role": "user", "content": prompt}],
 * "temperature"}` (Chat) or `{"model", "prompt", "temperature"}` (Text) as JSON, answered by 2xx JSON whose
 * first choice's `message.content` (Chat) or `text` (Text) is the reply. Built on `node:http`/`node:https`
 * (the built-in `fetch` cannot accept an invalid certificate for one request). The endpoint is the operator's,
 * never a message's, so any address may be reached, loopback included (a local model server).
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { maskUrlPassword } from '../../lookup/secret.js';
import { escapeControls, quotedExcerpt } from '../../util/escape-controls.js';
import { llmRequestHeaders, type ResolvedLlmSettings } from './settings.js';

/** Bytes of a reply body read at most (1 MiB): a completion of one line is a few hundred. */
export const LLM_MAX_REPLY_BYTES = 1024 * 1024;

/**
 * A request that got no usable reply: a timeout, a network error, a non-2xx status, a body that is not a
 * completion. `local` is true when the request was never sent (the API key could not be read, or Node refused a
 * header value): the endpoint's circuit breaker does not count those.
 */
export class LlmError extends Error {
  readonly local: boolean;
  constructor(message: string, options?: { cause?: unknown; local?: boolean }) {
    super(message, options);
    this.name = 'LlmError';
    this.local = options?.local === true;
  }
}

/** The JSON request body for `prompt` (Stalwart's `ChatCompletionRequest` / `TextCompletionRequest`). */
export function completionRequest(prompt: string, s: Pick<ResolvedLlmSettings, 'model' | 'modelType' | 'temperature'>): string {
  return JSON.stringify(
    s.modelType === 'Text'
      ? { model: s.model, prompt, temperature: s.temperature }
      : { model: s.model, messages: [{ role: 'user', content: prompt }], temperature: s.temperature },
  );
}

/** A reply's text for an error message: at most 200 characters, JSON-quoted, control characters escaped. */
const excerpt = (s: string): string => quotedExcerpt(s);

/**
 * The endpoint as error messages show it: the password of its userinfo masked and its query and fragment
 * left out, since some endpoints take the API key there (`?key=…`, `?api-key=…`).
 */
function shownEndpoint(url: string): string {
  const end = url.search(/[?#]/);
  return maskUrlPassword(end < 0 ? url : url.slice(0, end));
}

/**
 * The reply of a 2xx body: the first choice's `message.content` (Chat) or `text` (Text). Throws {@link LlmError}
 * when the body is not JSON, has no choice, or the choice's text is missing or empty (as Stalwart: "did not
 * contain any choices"). Other fields (`id`, `created`, `finish_reason`, …) are not required.
 */
export function completionText(body: string, modelType: 'Chat' | 'Text'): string {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (e) {
    throw new LlmError(`reply is not JSON (${escapeControls((e as Error).message)}): ${excerpt(body)}`);
  }
  const first = (json as { choices?: unknown } | null)?.choices;
  const choice = Array.isArray(first) ? (first[0] as Record<string, unknown> | undefined) : undefined;
  const text = modelType === 'Text' ? choice?.text : (choice?.message as Record<string, unknown> | undefined)?.content;
  if (typeof text !== 'string' || text === '') throw new LlmError(`reply has no ${modelType === 'Text' ? 'choices[0].text' : 'choices[0].message.content'}: ${excerpt(body)}`);
  return text;
}

/**
 * Sends `prompt` to the endpoint and resolves with the model's reply text. Rejects with {@link LlmError} when no
 * usable reply arrives within `timeoutMs` milliseconds (connection, status and body together), on a network or
 * TLS error, a non-2xx status, a body over {@link LLM_MAX_REPLY_BYTES} or one {@link completionText} refuses, and
 * when the API key's secret cannot be read. Redirects are not followed (a 3xx is an error). Error messages show the
 * URL with any password masked and without its query ({@link shownEndpoint}), never a header, and what the endpoint
 * sent with its control characters escaped.
 */
export function llmComplete(prompt: string, s: ResolvedLlmSettings): Promise<string> {
  const where = shownEndpoint(s.url);
  let headers: Record<string, string>;
  try {
    headers = llmRequestHeaders(s);
  } catch (e) {
    return Promise.reject(new LlmError(`API key: ${(e as Error).message}`, { local: true }));
  }
  const body = Buffer.from(completionRequest(prompt, s), 'utf8');
  headers['content-length'] = String(body.length);
  const url = new URL(s.url);
  return new Promise<string>((resolve, reject) => {
    let settled = false;
    let req: ClientRequest | undefined;
    const finish = (err: LlmError | undefined, text?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err !== undefined) {
        req?.destroy();
        reject(err);
      } else resolve(text!);
    };
    const timer = setTimeout(() => finish(new LlmError(`no reply from ${where} within ${s.timeoutMs} ms`)), s.timeoutMs);
    const options = { method: 'POST', headers, ...(url.protocol === 'https:' ? { rejectUnauthorized: !s.allowInvalidCerts } : {}) };
    const onResponse = (res: IncomingMessage): void => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 299) {
        res.resume();
        finish(new LlmError(`${where} answered HTTP ${status}${res.statusMessage ? ` ${escapeControls(res.statusMessage)}` : ''}`));
        return;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > LLM_MAX_REPLY_BYTES) {
        finish(new LlmError(`${where}: reply of ${declared} bytes is over the ${LLM_MAX_REPLY_BYTES}-byte limit`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > LLM_MAX_REPLY_BYTES) finish(new LlmError(`${where}: reply over the ${LLM_MAX_REPLY_BYTES}-byte limit`));
        else chunks.push(c);
      });
      res.on('error', (e) => finish(new LlmError(`${where}: ${escapeControls(e.message)}`, { cause: e })));
      res.on('end', () => {
        if (settled) return;
        try {
          finish(undefined, completionText(Buffer.concat(chunks, size).toString('utf8'), s.modelType));
        } catch (e) {
          finish(e instanceof LlmError ? new LlmError(`${where}: ${e.message}`) : new LlmError(String(e)));
        }
      });
    };
    try {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, onResponse);
    } catch (e) {
      // Node throws here, not on 'error', for a header value it refuses (a control character: a key file with a
      // blank line at its end). Its message names the header, never the value.
      finish(new LlmError(`${where}: request not sent: ${escapeControls((e as Error).message)}`, { local: true }));
      return;
    }
    req.on('error', (e: NodeJS.ErrnoException) => {
      const detail = e.code !== undefined && e.message !== e.code ? ` (${escapeControls(e.message)})` : '';
      finish(new LlmError(`${where}: ${e.code ?? escapeControls(e.message)}${detail}`, { cause: e }));
    });
    req.end(body);
  });
}
