/**
 * A throwaway OpenAI-compatible completion server (node:http, or node:https with a self-signed certificate
 * made by `openssl`) on 127.0.0.1 and a random port: `POST /v1/chat/completions` answers a chat completion
 * whose content is {@link LlmServer.answer}, `POST /v1/completions` a text completion. Every request is kept
 * (method, path, headers, body) so tests can assert what the LLM step sent; `reply` replaces the answer
 * (another status, a broken body, a slow or silent server).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { tempDir } from './common.js';

export interface LlmRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body as JSON (`undefined` when it is not JSON). */
  json: Record<string, unknown> | undefined;
}

/** What to do with one request; `undefined` answers the completion of {@link LlmServer.answer}. */
export type LlmReply =
  | undefined
  | { status?: number; body?: string | Buffer; headers?: Record<string, string>; delayMs?: number }
  | 'hang';

export interface LlmServer {
  readonly port: number;
  /** `http://127.0.0.1:PORT/v1/chat/completions` (or `https:`), or another path. */
  url(path?: string): string;
  /** Every request received, in order. */
  readonly requests: LlmRequest[];
  /** The completion text the default reply carries. */
  answer: string;
  /** Overrides the reply per request. */
  reply: (req: LlmRequest) => LlmReply;
  stop(): Promise<void>;
}

/** A chat (`/chat/completions`) or text (`/completions`) completion body carrying `content`, as OpenAI answers. */
export function completionBody(path: string, content: string): string {
  const chat = path.endsWith('/chat/completions');
  return JSON.stringify({
    id: 'cmpl-1',
    object: chat ? 'chat.completion' : 'text_completion',
    created: 1_700_000_000,
    model: 'test-model',
    choices: [chat ? { index: 0, finish_reason: 'stop', message: { role: 'assistant', content } } : { index: 0, finish_reason: 'stop', text: content }],
  });
}

/** A self-signed certificate for 127.0.0.1 (openssl), once per process. */
let tls: { key: Buffer; cert: Buffer } | undefined;
function selfSigned(): { key: Buffer; cert: Buffer } {
  if (tls !== undefined) return tls;
  const dir = tempDir('llm-tls');
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return (tls = { key: readFileSync(key), cert: readFileSync(cert) });
}

export async function startLlmServer(opts: { https?: boolean } = {}): Promise<LlmServer> {
  const requests: LlmRequest[] = [];
  const hung: ServerResponse[] = [];
  const state = { answer: 'Legitimate,High,A test message.', reply: (_req: LlmRequest): LlmReply => undefined };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      const r: LlmRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, json };
      requests.push(r);
      const reply = state.reply(r);
      if (reply === 'hang') {
        hung.push(res);
        return;
      }
      const send = (): void => {
        const out = reply?.body ?? completionBody(r.path, state.answer);
        res.writeHead(reply?.status ?? 200, { 'content-type': 'application/json', ...reply?.headers });
        res.end(out);
      };
      if (reply?.delayMs !== undefined) setTimeout(send, reply.delayMs);
      else send();
    });
  };
  const server: Server = opts.https ? createHttpsServer(selfSigned(), handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/v1/chat/completions') => `${opts.https ? 'https' : 'http'}://127.0.0.1:${port}${path}`,
    requests,
    get answer() {
      return state.answer;
    },
    set answer(v: string) {
      state.answer = v;
    },
    get reply() {
      return state.reply;
    },
    set reply(f: (req: LlmRequest) => LlmReply) {
      state.reply = f;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of hung) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * One loopback completion server for the calling suite, through vitest hooks: started before its tests and stopped
 * after them; before each test its requests are cleared, its reply override removed and its answer set to `answer`.
 * Call the returned function inside tests for the server (it exists once the suite's `beforeAll` has run).
 */
export function useLlmServer(answer: string): () => LlmServer {
  let server: LlmServer | undefined;
  beforeAll(async () => {
    server = await startLlmServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    server!.requests.length = 0;
    server!.reply = () => undefined;
    server!.answer = answer;
  });
  return () => server!;
}
