/**
 * The LLM step's settings: Stalwart's `SpamLlm` object (https://stalw.art/docs/ref/object/spam-llm) and the
 * `AiModel` it names (https://stalw.art/docs/ref/object/ai-model) in one object, with the timeout in
 * milliseconds and two bounds of ours on what is sent. Stalwart's defaults and bounds, except the timeout
 * (10 s here, 2 min there), the prompt (a default here, required there) and the bounds (README A23).
 */
import { readSecret } from '../../lookup/secret.js';
import { isObject, tagNameProblem, timeoutMsProblem } from '../../util/index.js';
import { resolveStepBreaker, STEP_BREAKER_DEFAULTS, stepBreakerProblem, type ResolvedStepBreakerOptions, type StepBreakerOptions } from '../step-breaker.js';

/** A secret as Stalwart's registry writes one (`x:SecretKey`): inline, from an environment variable, or from a file. */
export type LlmSecret =
  | { '@type': 'Value'; secret: string }
  | { '@type': 'EnvironmentVariable'; variableName: string }
  | { '@type': 'File'; filePath: string };

/** Stalwart's `HttpAuth`: how requests to the endpoint authenticate. */
export type LlmHttpAuth =
  | { '@type': 'Unauthenticated' }
  | { '@type': 'Basic'; username: string; secret: LlmSecret }
  | { '@type': 'Bearer'; bearerToken: LlmSecret };

/** `AnalysisConfig.llm` as given: the endpoint and model are required, every other field has a default. */
export interface LlmSettings {
  /** The OpenAI-compatible endpoint, `http:` or `https:` (`https://api.openai.com/v1/chat/completions`, `http://127.0.0.1:11434/v1/chat/completions`). */
  url: string;
  /** The model name sent in each request (`gpt-4o-mini`, `llama3.2`). */
  model: string;
  /** `Chat` (`/chat/completions`: `messages`) or `Text` (`/completions`: `prompt`); default `Chat`. */
  modelType?: 'Chat' | 'Text';
  /** Milliseconds the whole request (connection, answer, reply body) may take; default 10,000 (Stalwart: 2 min). */
  timeoutMs?: number;
  /** Accept an invalid TLS certificate (a self-signed local endpoint); default false. */
  allowInvalidCerts?: boolean;
  /** Default `{"@type": "Unauthenticated"}`; `Bearer` for an API key (`Authorization: Bearer …`), `Basic` for a user and password. */
  httpAuth?: LlmHttpAuth;
  /** Extra request headers (name → value). `Content-Type` is always `application/json`. */
  httpHeaders?: Record<string, string>;
  /** The instructions put before the message's subject and body; default {@link DEFAULT_LLM_PROMPT}. */
  prompt?: string;
  /** The categories a reply may name (compared without case); at least 2; default Unsolicited, Commercial, Harmful, Legitimate. */
  categories?: readonly string[];
  /** The confidence levels a reply may name; default High, Medium, Low. */
  confidence?: readonly string[];
  /** What separates the reply's fields: its first character is used (Stalwart's); default `,`. */
  separator?: string;
  /** Index of the category among the reply's fields; default 0. */
  responsePosCategory?: number;
  /** Index of the confidence, or `null` for none; default 1. */
  responsePosConfidence?: number | null;
  /** Index of the explanation (the `X-Spam-LLM` header), or `null` for none; default 2. */
  responsePosExplanation?: number | null;
  /** The sampling temperature sent, 0–1; default 0.5 (Stalwart's `SpamLlm.temperature`). */
  temperature?: number;
  /** Bytes of the subject sent at most (cut on a character boundary); default 512. */
  maxSubjectBytes?: number;
  /** Bytes of the body text sent at most (cut on a character boundary); default 4,096. */
  maxBodyBytes?: number;
  /**
   * The endpoint's circuit breaker (ours; src/analysis/step-breaker.ts): after `failureThreshold` (3) failures in a
   * row, messages skip the step for `initialBackoffMs` (5,000), doubling per failed probe up to `maxBackoffMs`
   * (60,000); `{ enabled: false }` turns it off. Default: on.
   */
  breaker?: StepBreakerOptions;
}

/** The settings with every default filled in. */
export type ResolvedLlmSettings = Required<Omit<LlmSettings, 'httpHeaders' | 'breaker'>> & {
  httpHeaders: Readonly<Record<string, string>>;
  breaker: Readonly<ResolvedStepBreakerOptions>;
};

/**
 * The prompt used when none is configured: it asks for Stalwart's default reply format (category,
 * confidence and explanation separated by commas, with Stalwart's default categories and levels).
 */
export const DEFAULT_LLM_PROMPT =
  'You are a spam filter. Classify the email below into exactly one of these categories: Unsolicited (bulk or ' +
  'unwanted mail the recipient did not ask for), Commercial (marketing or promotions), Harmful (phishing, fraud, ' +
  'malware) or Legitimate (personal or expected mail). Give your confidence as High, Medium or Low. Answer with one ' +
  'line and nothing else, the three fields separated by commas: Category,Confidence,Explanation. The explanation is ' +
  'one short sentence without commas. Example: Commercial,High,A store advertises a discount on shoes.';

/** Defaults of the optional fields (Stalwart's `SpamLlm` and `AiModel`, and ours). */
export const LLM_DEFAULTS = Object.freeze({
  modelType: 'Chat' as 'Chat' | 'Text',
  timeoutMs: 10_000,
  allowInvalidCerts: false,
  httpAuth: Object.freeze({ '@type': 'Unauthenticated' }) as LlmHttpAuth,
  httpHeaders: Object.freeze({}) as Readonly<Record<string, string>>,
  prompt: DEFAULT_LLM_PROMPT,
  categories: Object.freeze(['Unsolicited', 'Commercial', 'Harmful', 'Legitimate']) as readonly string[],
  confidence: Object.freeze(['High', 'Medium', 'Low']) as readonly string[],
  separator: ',',
  responsePosCategory: 0,
  responsePosConfidence: 1 as number | null,
  responsePosExplanation: 2 as number | null,
  temperature: 0.5,
  maxSubjectBytes: 512,
  maxBodyBytes: 4_096,
  breaker: STEP_BREAKER_DEFAULTS,
});

const KEYS = ['url', 'model', ...Object.keys(LLM_DEFAULTS)] as (keyof LlmSettings)[];

/** RFC 9110 §5.1 field names (`token`). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';
const index = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 1000;

function secretProblem(v: unknown, where: string): string | undefined {
  if (!isObject(v)) return `${where} must be a secret ({"@type": "EnvironmentVariable", "variableName": …}, {"@type": "File", "filePath": …} or {"@type": "Value", "secret": …})`;
  const type = v['@type'];
  const only = (keys: string[]): string | undefined => {
    const extra = Object.keys(v).find((k) => k !== '@type' && !keys.includes(k));
    return extra === undefined ? undefined : `${where}: unknown field "${extra}"`;
  };
  if (type === 'Value') return nonEmpty(v.secret) ? only(['secret']) : `${where}.secret must be a non-empty string`;
  if (type === 'EnvironmentVariable') return nonEmpty(v.variableName) ? only(['variableName']) : `${where}.variableName must be a non-empty string`;
  if (type === 'File') return nonEmpty(v.filePath) ? only(['filePath']) : `${where}.filePath must be a non-empty string`;
  return `${where}."@type" must be Value, EnvironmentVariable or File`;
}

function authProblem(v: unknown): string | undefined {
  if (!isObject(v)) return '"httpAuth" must be an object ({"@type": "Unauthenticated" | "Basic" | "Bearer", …})';
  const type = v['@type'];
  const extra = (keys: string[]): string | undefined => {
    const k = Object.keys(v).find((x) => x !== '@type' && !keys.includes(x));
    return k === undefined ? undefined : `"httpAuth": unknown field "${k}" for ${String(type)}`;
  };
  if (type === 'Unauthenticated') return extra([]);
  if (type === 'Bearer') return secretProblem(v.bearerToken, '"httpAuth.bearerToken"') ?? extra(['bearerToken']);
  if (type === 'Basic') {
    if (typeof v.username !== 'string' || v.username.includes(':')) return '"httpAuth.username" must be a string without ":"';
    return secretProblem(v.secret, '"httpAuth.secret"') ?? extra(['username', 'secret']);
  }
  return '"httpAuth"."@type" must be Unauthenticated, Basic or Bearer';
}

function labelsProblem(v: unknown, key: string, min: number): string | undefined {
  if (!Array.isArray(v) || v.length < min || !v.every(nonEmpty)) return `"${key}" must be an array of at least ${min} non-empty strings`;
  // They become part of a tag and of the X-Spam-LLM header line: the check a tag gets (README A21), which
  // refuses the line separators U+2028/U+2029 as well as the controls.
  for (const x of v as string[]) {
    const problem = tagNameProblem(x);
    if (problem !== undefined) return `"${key}": ${JSON.stringify(x)} cannot be part of a tag: ${problem}`;
  }
  return undefined;
}

/**
 * What is wrong with an `llm` setting (`undefined`, `false` or an {@link LlmSettings} object), in words that
 * name the field, or `undefined` when it is usable. The one check of these settings, shared by `new SpamEngine`
 * (src/engine/options.ts) and `spamrule serve`'s configuration file (src/server/config.ts). Secrets are not
 * read here (an unset variable is a warning per message, when the step runs).
 */
export function llmSettingsProblem(v: unknown): string | undefined {
  if (v === undefined || v === false) return undefined;
  if (!isObject(v)) return 'expected false or an object ({ url, model, prompt, … })';
  for (const k of Object.keys(v)) {
    if (!(KEYS as string[]).includes(k) && v[k] !== undefined) return `unknown field "${k}" (the fields are ${KEYS.join(', ')})`;
  }
  if (!nonEmpty(v.url)) return '"url" is required: the OpenAI-compatible endpoint (https://api.openai.com/v1/chat/completions)';
  let url: URL;
  try {
    url = new URL(v.url);
  } catch {
    return `"url" is not a URL: ${JSON.stringify(v.url)}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `"url" must be an http: or https: URL, got ${JSON.stringify(url.protocol)}`;
  if (!nonEmpty(v.model)) return '"model" is required: the model name sent to the endpoint';
  if (v.modelType !== undefined && v.modelType !== 'Chat' && v.modelType !== 'Text') return `"modelType" must be "Chat" or "Text", got ${JSON.stringify(v.modelType)}`;
  // At most what a timer can wait: a longer timeout fired after 1 ms (MAX_TIMER_MS).
  const timeout = timeoutMsProblem(v.timeoutMs);
  if (timeout !== undefined) return timeout;
  if (v.allowInvalidCerts !== undefined && typeof v.allowInvalidCerts !== 'boolean') return '"allowInvalidCerts" must be true or false';
  if (v.httpAuth !== undefined) {
    const p = authProblem(v.httpAuth);
    if (p !== undefined) return p;
  }
  if (v.httpHeaders !== undefined) {
    if (!isObject(v.httpHeaders)) return '"httpHeaders" must be an object (header name → value)';
    for (const [name, value] of Object.entries(v.httpHeaders)) {
      if (!TOKEN.test(name)) return `"httpHeaders": ${JSON.stringify(name)} is not a header name`;
      if (typeof value !== 'string' || /[\r\n\0]/.test(value)) return `"httpHeaders.${name}" must be a string without CR, LF or NUL`;
    }
  }
  if (v.prompt !== undefined && !nonEmpty(v.prompt)) return '"prompt" must be a non-empty string';
  if (v.categories !== undefined) {
    const p = labelsProblem(v.categories, 'categories', 2);
    if (p !== undefined) return p;
  }
  if (v.confidence !== undefined) {
    const p = labelsProblem(v.confidence, 'confidence', 0);
    if (p !== undefined) return p;
  }
  if (v.separator !== undefined && (typeof v.separator !== 'string' || v.separator === '')) return '"separator" must be a non-empty string (its first character separates the fields)';
  if (v.responsePosCategory !== undefined && !index(v.responsePosCategory)) return `"responsePosCategory" must be an integer from 0 to 1000, got ${JSON.stringify(v.responsePosCategory)}`;
  for (const k of ['responsePosConfidence', 'responsePosExplanation'] as const) {
    if (v[k] !== undefined && v[k] !== null && !index(v[k])) return `"${k}" must be an integer from 0 to 1000 or null, got ${JSON.stringify(v[k])}`;
  }
  if (v.temperature !== undefined && !(typeof v.temperature === 'number' && v.temperature >= 0 && v.temperature <= 1)) {
    return `"temperature" must be a number from 0 to 1, got ${JSON.stringify(v.temperature)}`;
  }
  for (const k of ['maxSubjectBytes', 'maxBodyBytes'] as const) {
    if (v[k] !== undefined && !(typeof v[k] === 'number' && Number.isInteger(v[k]) && (v[k] as number) >= 0)) return `"${k}" must be bytes (an integer ≥ 0), got ${JSON.stringify(v[k])}`;
  }
  return stepBreakerProblem(v.breaker);
}

/** Resolved settings per given object: modules resolve them per message, this once. */
const RESOLVED = new WeakMap<LlmSettings, ResolvedLlmSettings>();

/** The settings in force for an `llm` setting (defaults filled in), or `undefined` when the step is off (`false`, absent). */
export function resolveLlmSettings(v: LlmSettings | false | undefined): ResolvedLlmSettings | undefined {
  if (v === undefined || v === false) return undefined;
  let r = RESOLVED.get(v);
  if (r === undefined) {
    r = { ...LLM_DEFAULTS, ...Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined)), breaker: resolveStepBreaker(v.breaker) } as ResolvedLlmSettings;
    RESOLVED.set(v, r);
  }
  return r;
}

/** What Node's HTTP client refuses in a header value (it throws): controls but TAB, and anything past U+00FF. */
const NOT_IN_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The Bearer key `secret` holds, read now. Throws `Error` when it cannot be read (see `readSecret`) or holds a
 * character a header value cannot carry (a key file with a blank line at its end); the message gives the
 * character's position, never the key.
 */
export function readBearerKey(secret: LlmSecret): string {
  const key = readSecret(secret)!;
  const m = NOT_IN_HEADER_VALUE.exec(key);
  if (m !== null) throw new Error(`the key holds U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at ${m.index}, which an HTTP header cannot carry (a line break inside it?)`);
  return key;
}

/**
 * The request headers the settings give: the configured `httpHeaders`, then `Authorization` from
 * `httpAuth` (its secret read now: an environment variable or a file), then `Content-Type: application/json`.
 * Throws `Error` when the secret cannot be read, or a Bearer key holds a character a header value cannot carry
 * (a key file with a blank line at its end): the message names the variable or file, never the secret.
 */
export function llmRequestHeaders(s: ResolvedLlmSettings): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.httpHeaders)) if (k.toLowerCase() !== 'content-type') out[k.toLowerCase()] = v;
  const auth = s.httpAuth;
  if (auth['@type'] === 'Bearer') out.authorization = `Bearer ${readBearerKey(auth.bearerToken)}`;
  else if (auth['@type'] === 'Basic') out.authorization = `Basic ${Buffer.from(`${auth.username}:${readSecret(auth.secret)!}`, 'utf8').toString('base64')}`;
  out['content-type'] = 'application/json';
  return out;
}
