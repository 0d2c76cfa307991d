/**
 * The network steps' circuit breaker (src/analysis/step-breaker.ts), against real servers on loopback: an
 * OpenAI-compatible server (node:http) for the llm module, and for the pyzor module a UDP relay in front of a real
 * `pyzord` that either drops every request (a server that never answers) or passes it on. After
 * `failureThreshold` failures in a row the next message sends nothing (the server's request count stays put) and
 * says why; after the cool-down one message probes; an answer closes the breaker, a failure reopens it for
 * twice as long. The rest of classify runs and tags as usual throughout.
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmSettings, PyzorSettings } from '../../src/analysis/index.js';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { SpamEnginePool } from '../../src/server/pool.js';
import { startPyzord, useLlmServer, type LlmServer, type PyzorServer } from '../servers/index.js';

const SEEN: SpamRuleInput = { '@type': 'Any', name: 'ALWAYS', priority: 1, condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
type Result = Awaited<ReturnType<SpamEngine['classify']>>;
const warningsOf = (r: Result, module: string): string[] => r.warnings.filter((w) => w.startsWith(`${module}:`));

/** The rest of classify ran: the rule's tag and the header modules' tags are there, no module failed. */
function restRan(r: Result): void {
  expect(r.tags).toEqual(expect.arrayContaining(['SEEN', 'MISSING_DATE', 'MISSING_MID']));
  expect(r.errors).toEqual([]);
}

/** Short cool-downs: 600 ms, then 1,200 ms after a failed probe. */
const BREAKER = { initialBackoffMs: 600, maxBackoffMs: 1_200 };

describe('llm endpoint breaker', () => {
  const server = useLlmServer('Unsolicited,High,Bulk mail.');
  const engineWith = (llm: Partial<LlmSettings> = {}): SpamEngine =>
    new SpamEngine({ rules: [SEEN], analysis: { llm: { url: server().url(), model: 'm', prompt: 'Classify.', timeoutMs: 300, breaker: BREAKER, ...llm } } });
  const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: offer\r\n\r\nBuy now.\r\n';
  const where = (): string => `http://127\\.0\\.0\\.1:${server().port}/v1/chat/completions`;

  it('opens after 3 failures in a row, skips without a request, probes after the cool-down, a failed probe reopens it, an answer closes it', async () => {
    const engine = engineWith();
    // Three failures of three kinds: no reply within timeoutMs, a 500, a body that is not a completion.
    const failures: (() => ReturnType<LlmServer['reply']>)[] = [() => 'hang', () => ({ status: 500 }), () => ({ body: 'not json' })];
    for (const f of failures) {
      server().reply = f;
      const r = await engine.classify(MSG);
      expect(warningsOf(r, 'llm')).toEqual([expect.stringMatching(/; no LLM tag set$/)]);
      expect(warningsOf(r, 'llm')[0]).not.toMatch(/skipped/);
    }
    expect(server().requests).toHaveLength(3);

    // Open: the next messages send nothing and say why; no LLM tag, the rest runs.
    server().reply = () => undefined; // the server would answer now: only a probe finds out
    for (let i = 0; i < 2; i++) {
      const r = await engine.classify(MSG);
      expect(warningsOf(r, 'llm')).toEqual([
        expect.stringMatching(new RegExp(`^llm: endpoint skipped: 3 consecutive failures, retrying in 0\\.[1-6] s \\(last error: ${where()}: reply is not JSON .*\\); no LLM tag set$`)),
      ]);
      expect(r.tags.filter((t) => t.startsWith('LLM_'))).toEqual([]);
      expect(r.llm).toBeUndefined();
      restRan(r);
    }
    expect(server().requests).toHaveLength(3);

    // After the cool-down one message probes; it fails (no reply), and the breaker reopens for twice as long.
    await sleep(650);
    server().reply = () => 'hang';
    let r = await engine.classify(MSG);
    expect(server().requests).toHaveLength(4);
    expect(warningsOf(r, 'llm')).toEqual([expect.stringMatching(new RegExp(`^llm: no reply from ${where()} within 300 ms; no LLM tag set$`))]);
    r = await engine.classify(MSG);
    expect(server().requests).toHaveLength(4);
    expect(warningsOf(r, 'llm')).toEqual([
      expect.stringMatching(new RegExp(`^llm: endpoint skipped: 4 consecutive failures, retrying in (0\\.[5-9]|1\\.[0-2]) s \\(last error: no reply from ${where()} within 300 ms\\); no LLM tag set$`)),
    ]);
    restRan(r);
    // Not after 600 ms this time.
    await sleep(650);
    r = await engine.classify(MSG);
    expect(server().requests).toHaveLength(4);
    expect(warningsOf(r, 'llm')[0]).toMatch(/^llm: endpoint skipped: 4 consecutive failures, retrying in 0\.\d s/);

    // The endpoint is back: the probe's reply names no known category, which is an answer all the same.
    await sleep(650);
    server().reply = () => undefined;
    server().answer = 'Maybe,High,Unsure.';
    r = await engine.classify(MSG);
    expect(server().requests).toHaveLength(5);
    expect(warningsOf(r, 'llm')).toEqual([]);
    expect(r.tags.filter((t) => t.startsWith('LLM_'))).toEqual([]);
    restRan(r);
    // Closed: every message asks again, and is tagged.
    server().answer = 'Unsolicited,High,Bulk mail.';
    for (let i = 0; i < 2; i++) {
      r = await engine.classify(MSG);
      expect(r.tags).toContain('LLM_UNSOLICITED_HIGH');
      expect(warningsOf(r, 'llm')).toEqual([]);
      restRan(r);
    }
    expect(server().requests).toHaveLength(7);
  });

  it('an answer starts the count again; messages in flight while the probe runs are skipped', async () => {
    const engine = engineWith({ breaker: { ...BREAKER, failureThreshold: 2 } });
    const fail = (): ReturnType<LlmServer['reply']> => ({ status: 503 });
    for (const reply of [fail, () => undefined, fail, () => undefined, fail]) {
      server().reply = reply;
      await engine.classify(MSG);
    }
    expect(server().requests).toHaveLength(5); // never two failures in a row: never open
    server().reply = fail;
    await engine.classify(MSG); // the second in a row
    expect(warningsOf(await engine.classify(MSG), 'llm')[0]).toMatch(/^llm: endpoint skipped: 2 consecutive failures/);
    expect(server().requests).toHaveLength(6);
    // Half-open: of two messages at once, one probes (its reply takes 200 ms) and the other is skipped.
    await sleep(650);
    server().reply = () => ({ delayMs: 200 });
    const [a, b] = await Promise.all([engine.classify(MSG), engine.classify(MSG)]);
    expect(server().requests).toHaveLength(7);
    expect(a.tags).toContain('LLM_UNSOLICITED_HIGH');
    expect(warningsOf(b, 'llm')).toEqual([
      expect.stringMatching(new RegExp(`^llm: endpoint skipped: 2 consecutive failures, a message is retrying it now \\(last error: ${where()} answered HTTP 503 Service Unavailable\\); no LLM tag set$`)),
    ]);
    restRan(b);
    expect((await engine.classify(MSG)).tags).toContain('LLM_UNSOLICITED_HIGH');
    expect(server().requests).toHaveLength(8);
  });

  it('a request never sent (the API key unreadable) does not count; enabled false turns the breaker off', async () => {
    const variableName = `SPAMRULE_TEST_BREAKER_KEY_${process.pid}`;
    delete process.env[variableName];
    const engine = engineWith({ httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'EnvironmentVariable', variableName } } });
    for (let i = 0; i < 4; i++) expect(warningsOf(await engine.classify(MSG), 'llm')).toEqual([expect.stringMatching(/^llm: API key: /)]);
    process.env[variableName] = 'sk-test';
    try {
      expect((await engine.classify(MSG)).tags).toContain('LLM_UNSOLICITED_HIGH');
      expect(server().requests).toHaveLength(1);
    } finally {
      delete process.env[variableName];
    }

    server().reply = () => ({ status: 500 });
    const off = engineWith({ breaker: { enabled: false } });
    for (let i = 0; i < 5; i++) expect(warningsOf(await off.classify(MSG), 'llm')).toEqual([expect.stringMatching(/answered HTTP 500/)]);
    expect(server().requests).toHaveLength(6);
  });

  it('in a worker thread (serve\'s SpamEnginePool): a hung endpoint holds 3 messages, not every one', async () => {
    server().reply = () => 'hang';
    const pool = new SpamEnginePool({
      rules: [SEEN],
      workers: 1,
      engine: { analysis: { llm: { url: server().url(), model: 'm', prompt: 'Classify.', timeoutMs: 300, breaker: { initialBackoffMs: 60_000 } } } },
    });
    try {
      for (let i = 0; i < 3; i++) expect(warningsOf(await pool.classify(MSG), 'llm')).toEqual([expect.stringMatching(/within 300 ms; no LLM tag set$/)]);
      for (let i = 0; i < 5; i++) {
        const r = await pool.classify(MSG);
        expect(warningsOf(r, 'llm')).toEqual([expect.stringMatching(/^llm: endpoint skipped: 3 consecutive failures, retrying in (59|60) s /)]);
        expect(r.tags).toContain('SEEN');
      }
      expect(server().requests).toHaveLength(3);
    } finally {
      await pool.close();
    }
  });
});

describe('pyzor server breaker', () => {
  let pyzord: PyzorServer;
  /** A UDP server on loopback that drops every request or relays it to pyzord, counting them. */
  let relay: Socket;
  let relaying = false;
  let received = 0;
  beforeAll(async () => {
    pyzord = await startPyzord();
    relay = createSocket('udp4');
    relay.on('message', (m, from) => {
      received++;
      if (!relaying) return;
      const up = createSocket('udp4');
      up.on('message', (answer) => {
        relay.send(answer, from.port, from.address);
        up.close();
      });
      up.send(m, pyzord.port, pyzord.host);
    });
    await new Promise<void>((resolve) => relay.bind(0, '127.0.0.1', () => resolve()));
  }, 60_000);
  afterAll(async () => {
    relay?.close();
    await pyzord?.stop();
  });

  /** A message of its own (its digest is new to the server): words of random letters. */
  const fresh = (): string => {
    const word = (): string => randomBytes(4).toString('hex').replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]!);
    const lines = Array.from({ length: 3 }, () => Array.from({ length: 5 }, word).join(' '));
    return ['From: Sender <sender@example.org>', 'To: rcpt@example.com', 'Subject: offer', '', ...lines, ''].join('\r\n');
  };

  it('a server that never answers: skipped after 3 timeouts, probed after the cool-down; "not found" closes it', async () => {
    const settings: PyzorSettings = { host: '127.0.0.1', port: relay.address().port, timeoutMs: 300, blockCount: 1, breaker: BREAKER };
    const engine = new SpamEngine({ rules: [SEEN], analysis: { pyzor: settings } });
    const where = `127\\.0\\.0\\.1:${settings.port}`;
    for (let i = 0; i < 3; i++) {
      const r = await engine.classify(fresh());
      expect(warningsOf(r, 'pyzor')).toEqual([expect.stringMatching(new RegExp(`^pyzor: no answer from ${where} within 300 ms; PYZOR not checked$`))]);
    }
    expect(received).toBe(3);
    let r = await engine.classify(fresh());
    expect(received).toBe(3);
    expect(warningsOf(r, 'pyzor')).toEqual([
      expect.stringMatching(new RegExp(`^pyzor: server skipped: 3 consecutive failures, retrying in 0\\.[1-6] s \\(last error: no answer from ${where} within 300 ms\\); PYZOR not checked$`)),
    ]);
    expect(r.tags).not.toContain('PYZOR');
    restRan(r);

    // The probe after the cool-down gets no answer either: open again, for 1.2 s.
    await sleep(650);
    r = await engine.classify(fresh());
    expect(received).toBe(4);
    expect(warningsOf(r, 'pyzor')[0]).toMatch(/^pyzor: no answer from/);
    r = await engine.classify(fresh());
    expect(received).toBe(4);
    expect(warningsOf(r, 'pyzor')[0]).toMatch(/^pyzor: server skipped: 4 consecutive failures, retrying in (0\.[5-9]|1\.[0-2]) s/);
    restRan(r);

    // pyzord answers again: the probe's "not found" (count 0) is an answer and closes the breaker.
    relaying = true;
    await sleep(1_250);
    r = await engine.classify(fresh());
    expect(received).toBe(5);
    expect(warningsOf(r, 'pyzor')).toEqual([]);
    expect(r.tags).not.toContain('PYZOR');
    restRan(r);
    // Closed: the next message is checked, and tagged once reported.
    const spam = fresh();
    pyzord.pyzor('report', spam);
    pyzord.pyzor('report', spam);
    r = await engine.classify(spam);
    expect(received).toBe(6);
    expect(r.tags).toContain('PYZOR');
    expect(warningsOf(r, 'pyzor')).toEqual([]);
    restRan(r);
  });
});
