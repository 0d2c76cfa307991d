/**
 * The LLM step's flags, shared by `classify` and `serve`: the endpoint and model, the timeout, the prompt
 * from a file, and the API key from an environment variable or a file (never the key itself on the command
 * line, where `ps` shows it). `serve`'s configuration file (`analysis.llm`) takes every other field; the flags
 * override its fields.
 */
import { readFileSync } from 'node:fs';
import { llmRequestHeaders, llmSettingsProblem, readBearerKey, resolveLlmSettings, type LlmSettings } from '../analysis/llm/settings.js';

/** parseArgs option descriptors. */
export const LLM_OPTIONS = {
  'llm-url': { type: 'string' },
  'llm-model': { type: 'string' },
  'llm-timeout': { type: 'string' },
  'llm-prompt-file': { type: 'string' },
  'llm-api-key-env': { type: 'string' },
  'llm-api-key-file': { type: 'string' },
} as const;

/** Help lines (two-column, as the session help). */
export const LLM_HELP = `  --llm-url URL     ask this OpenAI-compatible chat endpoint to classify each message (subject and the first
                    4 KiB of the body): LLM_<CATEGORY>_<CONFIDENCE> tags and an X-Spam-LLM header. Needs
                    --llm-model. e.g. https://api.openai.com/v1/chat/completions,
                    http://127.0.0.1:11434/v1/chat/completions (Ollama)
  --llm-model NAME  the model name sent (gpt-4o-mini, llama3.2)
  --llm-timeout MS  how long to wait for its reply (default 10000)
  --llm-prompt-file FILE  the instructions sent before the message (default: a built-in prompt asking for
                    Category,Confidence,Explanation with Stalwart's categories)
  --llm-api-key-env NAME  send the API key held by this environment variable (Authorization: Bearer)
  --llm-api-key-file FILE  … or the one in this file
`;

type Values = { [K in keyof typeof LLM_OPTIONS]?: string };

/**
 * What keeps the API key or password of `settings.httpAuth` from being read now (an unset variable, a missing
 * or empty file, a key with a line break inside), in words naming the variable or file (never the secret), or
 * `undefined`. For `serve`, which refuses to start rather than warn on every message.
 */
export function llmKeyProblem(settings: LlmSettings | false | undefined): string | undefined {
  const resolved = resolveLlmSettings(settings);
  try {
    // The headers each request will send: the secret read, a Bearer key checked for what a header cannot carry.
    if (resolved !== undefined) llmRequestHeaders(resolved);
    return undefined;
  } catch (e) {
    return `analysis.llm.httpAuth: ${(e as Error).message}`;
  }
}

/**
 * The flags over `base` (the configuration file's `analysis.llm`) as `AnalysisConfig.llm` settings: undefined
 * when neither a flag nor `base` switches the step on. Reads the prompt file, and checks that the API key's
 * variable or file can be read. Throws `Error` naming the flag for a bad value, a flag without `--llm-url`
 * (and no `base`), `--llm-url` without a model, both key flags, or settings `new SpamEngine` would refuse.
 */
export function llmFlags(v: Values, base?: LlmSettings | false): LlmSettings | undefined {
  const given = (Object.keys(LLM_OPTIONS) as (keyof Values)[]).filter((k) => v[k] !== undefined);
  const from = base === false ? undefined : base;
  if (given.length === 0) return from;
  if (from === undefined && v['llm-url'] === undefined) throw new Error(`--${given[0]} needs --llm-url URL (the endpoint to ask)`);
  const out: Partial<LlmSettings> = { ...from };
  if (v['llm-url'] !== undefined) out.url = v['llm-url'];
  if (v['llm-model'] !== undefined) out.model = v['llm-model'];
  if (out.model === undefined) throw new Error('--llm-url needs --llm-model NAME (the model to ask)');
  const t = v['llm-timeout'];
  if (t !== undefined) {
    const n = Number(t);
    if (t.trim() === '' || !Number.isInteger(n) || n <= 0) throw new Error(`--llm-timeout expects milliseconds (an integer > 0), got "${t}"`);
    out.timeoutMs = n;
  }
  const promptFile = v['llm-prompt-file'];
  if (promptFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(promptFile, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      throw new Error(`--llm-prompt-file: cannot read ${promptFile}: ${(e as Error).message}`);
    }
    if (text.trim() === '') throw new Error(`--llm-prompt-file: ${promptFile} is empty`);
    out.prompt = text;
  }
  const env = v['llm-api-key-env'];
  const file = v['llm-api-key-file'];
  if (env !== undefined && file !== undefined) throw new Error('--llm-api-key-env and --llm-api-key-file name two keys: give one');
  if (env !== undefined || file !== undefined) {
    const bearerToken = env !== undefined ? { '@type': 'EnvironmentVariable' as const, variableName: env } : { '@type': 'File' as const, filePath: file! };
    try {
      readBearerKey(bearerToken); // now, not at the first message; the key itself is never printed
    } catch (e) {
      throw new Error(`--llm-api-key-${env !== undefined ? 'env' : 'file'}: ${(e as Error).message}`);
    }
    out.httpAuth = { '@type': 'Bearer', bearerToken };
  }
  const problem = llmSettingsProblem(out);
  if (problem !== undefined) throw new Error(`LLM settings: ${problem}`);
  return out as LlmSettings;
}
