/**
 * The llm module when no usable reply comes, against real servers on loopback: a silent server (the timeout,
 * outside the classify time budget), a closed port, a non-2xx status, a redirect, a body that is not a
 * completion, one over the size cap, and TLS with a self-signed certificate (refused unless
 * `allowInvalidCerts`). Each sets no LLM tag, adds one warning, and the rest of classify runs with its tags.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmSettings } from '../../src/analysis/index.js';
import { LLM_MAX_REPLY_BYTES } from '../../src/analysis/llm/client.js';
import { SpamEngine, type EngineOptions, type SpamRuleInput } from '../../src/engine/index.js';
import { tempDir } from '../servers/common.js';
import { completionBody, startLlmServer, useLlmServer, type LlmServer } from '../servers/index.js';

const server = useLlmServer('Unsolicited,High,Bulk mail.');

const SEEN: SpamRuleInput = { '@type': 'Any', name: 'ALWAYS', priority: 1, condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } };
const engineWith = (llm: Partial<LlmSettings> = {}, extra: Partial<EngineOptions> = {}): SpamEngine =>
  new SpamEngine({ rules: [SEEN], analysis: { llm: { url: server().url(), model: 'm', prompt: 'Classify.', ...llm } }, ...extra });
const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: offer\r\n\r\nBuy now.\r\n';
const llmWarnings = (w: readonly string[]): string[] => w.filter((x) => x.startsWith('llm:'));

/** The result carries no LLM verdict, one warning matching `re`, and the other tags. */
function noVerdict(r: Awaited<ReturnType<SpamEngine['classify']>>, re: RegExp): void {
  expect(r.tags.filter((t) => t.startsWith('LLM_'))).toEqual([]);
  expect(r.llm).toBeUndefined();
  expect(r.headers['X-Spam-LLM']).toBeUndefined();
  expect(llmWarnings(r.warnings)).toEqual([expect.stringMatching(re)]);
  expect(r.tags).toEqual(expect.arrayContaining(['SEEN', 'MISSING_DATE', 'MISSING_MID']));
  expect(r.errors).toEqual([]);
}

describe('llm module without a usable reply: no tag, a warning, the rest runs', () => {
  it('a server that does not answer: given up after timeoutMs, outside the classify time budget', async () => {
    await new SpamEngine({ rules: [SEEN] }).classify(MSG); // warm-up: the budget below measures the message only
    server().reply = () => 'hang';
    const engine = engineWith({ timeoutMs: 1_500 }, { timeBudgetMs: 500 });
    const t0 = performance.now();
    const r = await engine.classify(MSG);
    const ms = performance.now() - t0;
    expect(ms).toBeGreaterThanOrEqual(1_450);
    expect(ms).toBeLessThan(4_000);
    noVerdict(r, new RegExp(`^llm: no reply from http://127\\.0\\.0\\.1:${server().port}/v1/chat/completions within 1500 ms; no LLM tag set$`));
    // A reply slower than the timeout is no reply either; a fast one after it is read.
    server().reply = () => ({ delayMs: 600 });
    noVerdict(await engineWith({ timeoutMs: 300 }).classify(MSG), /within 300 ms/);
    server().reply = () => undefined;
    expect((await engine.classify(MSG)).tags).toContain('LLM_UNSOLICITED_HIGH');
  });

  it('a closed port (connection refused)', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });
    noVerdict(await engineWith({ url: `http://127.0.0.1:${closed}/v1/chat/completions`, timeoutMs: 2_000 }).classify(MSG), /: ECONNREFUSED .*; no LLM tag set$/);
  });

  it('a non-2xx status, and a redirect (not followed)', async () => {
    server().reply = () => ({ status: 500, body: '{"error":"overloaded"}' });
    noVerdict(await engineWith().classify(MSG), /answered HTTP 500 Internal Server Error; no LLM tag set$/);
    server().reply = () => ({ status: 401, body: '{"error":"bad key"}' });
    noVerdict(await engineWith().classify(MSG), /answered HTTP 401 Unauthorized/);
    server().reply = (req) => (req.path === '/moved' ? undefined : { status: 307, headers: { location: '/moved' }, body: '' });
    noVerdict(await engineWith().classify(MSG), /answered HTTP 307/);
    expect(server().requests.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions']);
  });

  it('a body that is not JSON, has no choices, or an empty or missing content', async () => {
    server().reply = () => ({ body: 'Unsolicited,High,not JSON' });
    noVerdict(await engineWith().classify(MSG), /reply is not JSON .*"Unsolicited,High,not JSON"; no LLM tag set$/);
    server().reply = () => ({ body: '{"choices":[]}' });
    noVerdict(await engineWith().classify(MSG), /reply has no choices\[0\]\.message\.content: "\{\\"choices\\":\[\]\}"/);
    server().reply = (req) => ({ body: completionBody(req.path, '') });
    noVerdict(await engineWith().classify(MSG), /reply has no choices\[0\]\.message\.content/);
    server().reply = () => ({ body: '{"choices":[{"message":{"role":"assistant"}}]}' });
    noVerdict(await engineWith().classify(MSG), /reply has no choices\[0\]\.message\.content/);
    // A Text model reads `text`: a chat-shaped body is no text completion.
    server().reply = () => ({ body: completionBody('/v1/chat/completions', 'Unsolicited,High,x') });
    noVerdict(await engineWith({ modelType: 'Text' }).classify(MSG), /reply has no choices\[0\]\.text/);
  });

  it('a reply over 1 MiB, announced (Content-Length) or streamed', async () => {
    const huge = completionBody('/v1/chat/completions', `Unsolicited,High,${'x'.repeat(LLM_MAX_REPLY_BYTES)}`);
    server().reply = () => ({ body: huge });
    noVerdict(await engineWith().classify(MSG), new RegExp(`reply over the ${LLM_MAX_REPLY_BYTES}-byte limit|reply of \\d+ bytes is over`));
    server().reply = () => ({ body: huge, headers: { 'content-length': String(Buffer.byteLength(huge)) } });
    noVerdict(await engineWith().classify(MSG), new RegExp(`reply of ${Buffer.byteLength(huge)} bytes is over the ${LLM_MAX_REPLY_BYTES}-byte limit`));
    // Just under the cap is read.
    server().reply = () => ({ body: completionBody('/v1/chat/completions', `Unsolicited,High,${'x'.repeat(LLM_MAX_REPLY_BYTES - 200)}`) });
    expect((await engineWith().classify(MSG)).tags).toContain('LLM_UNSOLICITED_HIGH');
  });

  it('a URL password is masked in the warning', async () => {
    server().reply = () => ({ status: 503, body: '' });
    const r = await engineWith({ url: `http://user:hunter2@127.0.0.1:${server().port}/v1/chat/completions` }).classify(MSG);
    noVerdict(r, /^llm: http:\/\/user:\*\*\*\*@127\.0\.0\.1:\d+\/v1\/chat\/completions answered HTTP 503/);
    expect(JSON.stringify(r)).not.toContain('hunter2');
    // A key in the query string (`?key=…`) is left out.
    const q = await engineWith({ url: `${server().url()}?key=sk-hunter3&api-version=1#frag` }).classify(MSG);
    noVerdict(q, new RegExp(`^llm: http://127\\.0\\.0\\.1:${server().port}/v1/chat/completions answered HTTP 503`));
    expect(JSON.stringify(q)).not.toContain('hunter3');
  });

  it('a header value Node refuses (a key file with a blank line at its end, a header past Latin-1): a warning, and nothing thrown later', async () => {
    const file = join(tempDir('llm-key'), 'key');
    writeFileSync(file, 'sk-hunter4\n\n');
    const r = await engineWith({ timeoutMs: 300, httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'File', filePath: file } } }).classify(MSG);
    noVerdict(r, /^llm: API key: the key holds U\+000A at 10, which an HTTP header cannot carry \(a line break inside it\?\); no LLM tag set$/);
    expect(JSON.stringify(r)).not.toContain('hunter4');
    // Node's request() throws for it: its timer used to fire timeoutMs later and throw a ReferenceError out of a
    // timer, which ended the process (classify) or the worker thread (serve); the run would report it as an unhandled error.
    const h = await engineWith({ timeoutMs: 300, httpHeaders: { 'X-Tenant': 'caf\u00e9 \u20ac' } }).classify(MSG);
    noVerdict(h, /: request not sent: Invalid character in header content \["x-tenant"\]; no LLM tag set$/);
    expect(server().requests).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 600));
  });

  it('what the endpoint sends reaches the warning with its control characters escaped (no terminal escapes, no line breaks)', async () => {
    // node:http refuses to write such a status line: a raw socket writes it, as a hostile model server would.
    const raw = createServer((s) => {
      s.once('data', () => s.end('HTTP/1.1 500 Oops\x1b]0;pwn\x07\x1b[2J\x85 x\r\ncontent-length: 0\r\n\r\n', 'latin1'));
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', () => resolve()));
    try {
      const port = (raw.address() as { port: number }).port;
      const r = await engineWith({ url: `http://127.0.0.1:${port}/v1/chat/completions` }).classify(MSG);
      noVerdict(r, /answered HTTP 500 Oops\\u001b\]0;pwn\\u0007\\u001b\[2J\\u0085 x; no LLM tag set$/);
    } finally {
      await new Promise((resolve) => raw.close(resolve));
    }
    // A reply that is no completion is quoted with its C1 controls and separators escaped too.
    server().reply = () => ({ body: 'no\u0085json\u2028here\u009b' });
    noVerdict(await engineWith().classify(MSG), /reply is not JSON .*: "no\\u0085json\\u2028here\\u009b"; no LLM tag set$/);
  });
});

describe('llm module over TLS with a self-signed certificate', () => {
  let tls: LlmServer;
  beforeAll(async () => {
    tls = await startLlmServer({ https: true });
    tls.answer = 'Commercial,Low,Newsletter.';
  });
  afterAll(async () => {
    await tls?.stop();
  });

  it('refuses it by default and accepts it with allowInvalidCerts', async () => {
    const refused = await new SpamEngine({ rules: [SEEN], analysis: { llm: { url: tls.url(), model: 'm' } } }).classify(MSG);
    noVerdict(refused, /^llm: https:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/);
    expect(tls.requests).toHaveLength(0);
    const r = await new SpamEngine({ rules: [SEEN], analysis: { llm: { url: tls.url(), model: 'm', allowInvalidCerts: true } } }).classify(MSG);
    expect(r.tags).toContain('LLM_COMMERCIAL_LOW');
    expect(r.headers['X-Spam-LLM']).toBe('COMMERCIAL (Newsletter.)');
    expect(tls.requests).toHaveLength(1);
  });
});
