/**
 * An open LLM / Pyzor circuit breaker (src/analysis/step-breaker.ts) seen by the operator of `spamrule serve`:
 * the worker threads report their step breakers with every scan reply, `/metrics` counts the threads whose
 * breaker is open (`spamrule_step_breaker_open{step}`) and the openings (`spamrule_step_breaker_opened_total`),
 * and the log has a warn line when one opens and an info line when it closes again. Real parts: a completion
 * server on loopback (node:http), a `SpamEnginePool` worker thread, the rspamd listener's `/metrics`.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listStepBreakers, SpamEngine } from '../../src/index.js';
import { createLogger, SpamEnginePool, startScanServer, type ScanServer } from '../../src/server/index.js';
import { completionBody, startLlmServer, type LlmServer } from '../servers/index.js';
import { http } from './harness.js';

const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: offer\r\n\r\nBuy now.\r\n';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
/** An answer to the chat request (the URL's query keeps the server from seeing the chat path). */
const ANSWER = { body: completionBody('/v1/chat/completions', 'Legitimate,Low,Fine.') };

let llm: LlmServer;
let pool: SpamEnginePool;
let server: ScanServer;
const logs: Record<string, unknown>[] = [];
beforeAll(async () => {
  llm = await startLlmServer();
  // The API key in the query (as some endpoints take it): never shown.
  const url = `${llm.url()}?api-key=s3cret`;
  pool = new SpamEnginePool({
    rules: [],
    workers: 1,
    engine: { analysis: { llm: { url, model: 'm', prompt: 'Classify.', timeoutMs: 2_000, breaker: { failureThreshold: 2, initialBackoffMs: 400, maxBackoffMs: 400 } } } },
  });
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  server = await startScanServer({ pool, rspamd: { host: '127.0.0.1', port: 0 }, logger: createLogger({ destination }) });
}, 60_000);
afterAll(async () => {
  await server?.close(2000);
  await pool?.close();
  await llm?.stop();
});

const scan = async (): Promise<void> => {
  const r = await http(`${server.addresses.rspamd}/checkv2`, { method: 'POST', body: MSG });
  expect(r.status).toBe(200);
};
const metrics = async (): Promise<string> => (await http(`${server.addresses.rspamd}/metrics`)).body;
const breakerLines = (): Record<string, unknown>[] => logs.filter((l) => typeof l.msg === 'string' && l.msg.includes('circuit breaker'));

describe('step breakers under serve', () => {
  it('an endpoint answering 500: the gauge shows the open breaker and a warn line names it; once it answers and the cool-down passes, a probe closes it, the gauge is 0 and an info line says so', async () => {
    llm.reply = () => ({ status: 200, ...ANSWER });
    await scan();
    let text = await metrics();
    // Used and closed: the series is there, at 0.
    expect(text).toMatch(/^spamrule_step_breaker_open\{step="llm"\} 0$/m);
    expect(text).toMatch(/^spamrule_step_breaker_open\{step="pyzor"\} 0$/m);
    expect(breakerLines()).toEqual([]);

    llm.reply = () => ({ status: 500, body: 'down' });
    await scan();
    expect(await metrics()).toMatch(/^spamrule_step_breaker_open\{step="llm"\} 0$/m);
    await scan(); // the 2nd failure in a row opens it
    text = await metrics();
    expect(text).toMatch(/^spamrule_step_breaker_open\{step="llm"\} 1$/m);
    expect(text).toMatch(/^spamrule_step_breaker_opened_total\{step="llm"\} 1$/m);
    const requests = llm.requests.length;
    let lines = breakerLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, step: 'llm', endpoint: llm.url(), failures: 2, worker: expect.any(Number) });
    expect(lines[0]!.lastError).toMatch(/500/);
    expect(JSON.stringify(lines[0])).not.toContain('s3cret');

    // Open: skipped (no request), still one open line, the gauge stays.
    await scan();
    expect(llm.requests).toHaveLength(requests);
    expect(breakerLines()).toHaveLength(1);
    expect(await metrics()).toMatch(/^spamrule_step_breaker_open\{step="llm"\} 1$/m);

    // The server answers again; after the cool-down the next message probes and closes the breaker.
    llm.reply = () => ({ status: 200, ...ANSWER });
    await sleep(450);
    await scan();
    expect(llm.requests).toHaveLength(requests + 1);
    text = await metrics();
    expect(text).toMatch(/^spamrule_step_breaker_open\{step="llm"\} 0$/m);
    expect(text).toMatch(/^spamrule_step_breaker_opened_total\{step="llm"\} 1$/m);
    lines = breakerLines();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 30, step: 'llm', endpoint: llm.url(), worker: lines[0]!.worker });
    expect(lines[1]!.msg).toMatch(/closed/);
  }, 20_000);
});

describe('listStepBreakers', () => {
  it('lists an engine\'s breakers by its analysis settings object, endpoint masked; none for analysis off', async () => {
    const local = await startLlmServer();
    try {
      local.reply = () => ({ status: 500 });
      const engine = new SpamEngine({ rules: [], analysis: { llm: { url: `${local.url().replace('http://', 'http://u:pw@')}?key=k`, model: 'm', timeoutMs: 1_000, breaker: { failureThreshold: 1 } } } });
      expect(listStepBreakers(engine.analysis)).toEqual([]);
      await engine.classify(MSG);
      const [b, ...rest] = listStepBreakers(engine.analysis);
      expect(rest).toEqual([]);
      expect(b).toMatchObject({ step: 'llm', open: true, failures: 1, since: expect.any(Number), lastError: expect.any(String) });
      expect(b!.endpoint).not.toMatch(/pw|key=/);
      expect(listStepBreakers(undefined)).toEqual([]);
      await engine.close();
    } finally {
      await local.stop();
    }
  });
});
