/**
 * The mock chat-completion server of Stalwart's spam-filter test harness (the suite's `testMode.llm`): a
 * loopback HTTP server that answers every POST with a chat completion whose content is everything after the
 * first `Subject: ` of the prompt, so that a test message's subject (`Legitimate,High,Test`) is the model's
 * reply. Stalwart's harness listens on 127.0.0.1:9090; this one on an ephemeral port, so that the conformance
 * runner exercises the LLM step's real HTTP client without a fixed port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LlmSettings } from '../analysis/types.js';
import type { SuiteFile } from './suite.js';

/** A running mock: its chat-completion URL, the prompts it was sent (in order), and `close()`. */
export interface LlmMock {
  readonly url: string;
  readonly prompts: readonly string[];
  close(): Promise<void>;
}

/** The mock's answer to a prompt: the text after its first `Subject: `, or `""` when it has none. */
export function mockReply(prompt: string): string {
  const i = prompt.indexOf('Subject: ');
  return i < 0 ? '' : prompt.slice(i + 'Subject: '.length);
}

/** The prompt of a Chat (`messages[0].content`) or Text (`prompt`) request body, or `""`. */
function promptOf(body: string): { prompt: string; text: boolean } {
  try {
    const j = JSON.parse(body) as { prompt?: unknown; messages?: { content?: unknown }[] };
    if (typeof j.prompt === 'string') return { prompt: j.prompt, text: true };
    const c = j.messages?.[0]?.content;
    return { prompt: typeof c === 'string' ? c : '', text: false };
  } catch {
    return { prompt: '', text: false };
  }
}

/** Starts the mock on 127.0.0.1 (an ephemeral port). */
export async function startLlmMock(): Promise<LlmMock> {
  const prompts: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { prompt, text } = promptOf(Buffer.concat(chunks).toString('utf8'));
      prompts.push(prompt);
      const content = mockReply(prompt);
      const choice = text ? { index: 0, finish_reason: 'stop', text: content } : { index: 0, finish_reason: 'stop', message: { role: 'assistant', content } };
      const body = JSON.stringify({ id: 'mock', object: text ? 'text_completion' : 'chat.completion', created: 0, model: 'mock', choices: [choice] });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/chat/completions`,
    prompts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The LLM settings of a suite's `testMode.llm` (model, prompt, categories, confidence levels, separator,
 * response positions) pointed at `url`, or `undefined` when the suite has no `testMode.llm`.
 */
export function suiteLlmSettings(suite: SuiteFile, url: string): LlmSettings | undefined {
  const t = suite.testMode?.llm as Record<string, unknown> | undefined;
  if (t === undefined || t === null || typeof t !== 'object') return undefined;
  const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined);
  const pos = (v: unknown): number | null | undefined => (v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 0) ? v : undefined);
  const s: LlmSettings = { url, model: typeof t.model === 'string' && t.model !== '' ? t.model : 'gpt-dummy' };
  if (typeof t.prompt === 'string' && t.prompt !== '') s.prompt = t.prompt;
  const categories = strings(t.categories);
  if (categories !== undefined) s.categories = categories;
  const confidence = strings(t.confidence);
  if (confidence !== undefined) s.confidence = confidence;
  if (typeof t.separator === 'string' && t.separator !== '') s.separator = t.separator;
  const c = pos(t.responsePosCategory);
  if (typeof c === 'number') s.responsePosCategory = c;
  const f = pos(t.responsePosConfidence);
  if (f !== undefined) s.responsePosConfidence = f;
  const e = pos(t.responsePosExplanation);
  if (e !== undefined) s.responsePosExplanation = e;
  return s;
}
