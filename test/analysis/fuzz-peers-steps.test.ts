/**
 * Property-based fuzzing of what the Pyzor server and the LLM endpoint answer (docs/analysis.md, the pyzor and llm
 * steps): real loopback servers (a UDP socket answering Pyzor requests; test/servers/llm.ts) send generated replies:
 * well-formed ones with odd values, garbage, truncated, oversized, wrong codes and threads, invalid UTF-8, control
 * characters, JSON of the wrong shape, slow or no reply. Invariants, against a classify of the same message with
 * the step off: the rest of the classification is identical (tags but the step's own, warnings but the step's own,
 * and, when the step set no tag, score and action); the step's tag is set exactly when the reply, read as the docs
 * say, gives it; a reply that gives no answer leaves a `pyzor:`/`llm:` warning; nothing the peer sent reaches a
 * warning or a header with a control character or line break in it. The LLM step also under other settings (Text
 * models, another separator of which the first character counts, other field positions).
 * Campaign: SPAMRULE_FUZZ_RUNS=2000 SPAMRULE_FUZZ_SEED=n npx vitest run test/analysis/fuzz-peers-steps.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RULES, DEFAULT_TAGS, SpamEngine, type ClassifyResult, type EngineOptions } from '../../src/engine/index.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { assertVerdict } from '../helpers/message-invariants.js';
import { completionBody, startLlmServer, type LlmReply, type LlmServer } from '../servers/llm.js';

const TIMEOUT_MS = 300;
const UNSAFE = /[\p{Cc}\u2028\u2029]/u;
const MESSAGES = [
  ['From: a@example.com', 'To: b@example.org', 'Subject: cheap pills', 'Message-ID: <1@example.com>', 'Date: Mon, 1 Jan 2024 00:00:00 +0000', '', 'Buy now, limited offer.', ''].join('\r\n'),
  ['From: "Bob" <bob@example.net>', 'To: c@example.org', 'Subject: =?UTF-8?B?w6lsw6k=?=', 'Content-Type: text/plain; charset=utf-8', '', 'Meeting at 10.\r\nBob', ''].join('\r\n'),
];
const base = (extra: Partial<EngineOptions> = {}): SpamEngine => new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS, ...extra });

/** The step's own warnings left out: what must equal the step-off run. */
function rest(r: ClassifyResult, prefix: string, own: (t: string) => boolean): unknown {
  return { tags: r.tags.filter((t) => !own(t)), warnings: r.warnings.filter((w) => !w.startsWith(prefix)), errors: r.errors };
}

/** Checks the step-on result against the step-off one; `expectedTag` is the tag the reply gives, `undefined` for none. */
function compare(on: ClassifyResult, off: ClassifyResult, prefix: string, own: (t: string) => boolean, expectedTag: string | undefined, answered: boolean): void {
  assertVerdict(on);
  expect(rest(on, prefix, own)).toEqual(rest(off, prefix, own));
  const tags = on.tags.filter(own);
  expect(tags).toEqual(expectedTag === undefined ? [] : [expectedTag]);
  if (tags.length === 0) {
    expect(on.score).toBe(off.score);
    expect(on.action).toBe(off.action);
  }
  const warned = on.warnings.filter((w) => w.startsWith(prefix));
  if (answered) expect(warned).toEqual([]);
  else expect(warned.length).toBe(1);
  for (const w of on.warnings) expect(w, JSON.stringify(w)).not.toMatch(UNSAFE);
  // X-Spam-Result is folded on purpose; X-Spam-LLM carries what the endpoint wrote.
  expect(on.headers['X-Spam-LLM'] ?? '').not.toMatch(UNSAFE);
}

// ---------------------------------------------------------------- Pyzor

/** A generated Pyzor reply: lines to send (`{thread}` replaced by the request's), or raw bytes, or silence. */
type PyzorReply = { kind: 'lines'; lines: string[]; eol: string; cut: number | undefined; delayMs: number; before: boolean } | { kind: 'bytes'; bytes: Uint8Array } | { kind: 'silent' };

const num = fc.oneof(
  { weight: 4, arbitrary: fc.nat({ max: 30 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('200', '+7', '-1', '4294967295', '4294967296', '18446744073709551615', '18446744073709551616', '1e3', '0x10', ' 5 ', '', '٣', '9'.repeat(400)) },
);
const pyzorLine = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('Code', 'code', 'CODE'), fc.oneof(fc.constant('200'), fc.constantFrom('403', '500', '0'), num)).map(([n, v]) => `${n}: ${v}`) },
  { weight: 3, arbitrary: num.map((v) => `Count: ${v}`) },
  { weight: 3, arbitrary: num.map((v) => `WL-Count: ${v}`) },
  { weight: 3, arbitrary: fc.constantFrom('Thread: {thread}', 'Thread: {thread}', 'Thread: 1', 'Thread:{thread}\t', 'thread: {thread}x') },
  { weight: 2, arbitrary: fc.string({ unit: fc.oneof(fc.constantFrom('\u0000', '\u001b', '\u007f', '\u0085', '\u009b', '\u2028', '\r', 'ä'), fc.string({ minLength: 1, maxLength: 1 })), maxLength: 40 }).map((d) => `Diag: ${d}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.constantFrom('PV: 2.1', 'Code 200', ':', 'Count: 1: 2', 'x'.repeat(5_000)) },
);
const pyzorReplyArb: fc.Arbitrary<PyzorReply> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('lines' as const), lines: fc.array(pyzorLine, { maxLength: 8 }), eol: fc.constantFrom('\n', '\r\n'), cut: fc.option(fc.nat({ max: 80 }), { nil: undefined, freq: 5 }), delayMs: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(TIMEOUT_MS + 200) }), before: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 300 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'silent' as const }) },
);

/** The text a `lines` reply sends for `thread`. */
function pyzorText(r: Extract<PyzorReply, { kind: 'lines' }>, thread: string): Buffer {
  const b = Buffer.from(r.lines.map((l) => l.replaceAll('{thread}', thread)).join(r.eol) + r.eol, 'utf8');
  return r.cut === undefined ? b : b.subarray(0, r.cut);
}

/**
 * What the docs say a reply means (docs/analysis.md, pyzor; Stalwart's parser): `Code`, `Count` and `WL-Count`
 * lines (names without case, values trimmed, unsigned integers with an optional `+`, Code at most 2^32-1, counts at
 * most 2^64-1), the last of each counting; a reply whose Thread line names another request is not the answer.
 * `undefined`: no answer.
 */
function pyzorReference(text: string, thread: string): { code: number; count: number; wl: number } | undefined {
  let code: bigint | undefined;
  let count: bigint | undefined;
  let wl: bigint | undefined;
  let threadSeen: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const i = line.indexOf(':');
    if (i < 0) continue;
    const name = line.slice(0, i).toLowerCase();
    const value = line.slice(i + 1).trim();
    const n = /^\+?[0-9]+$/.test(value) ? BigInt(value) : undefined;
    if (name === 'thread' && threadSeen === undefined) threadSeen = line.slice(i + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    if (name === 'code') {
      if (n === undefined || n > 0xffffffffn) return undefined;
      code = n;
    } else if (name === 'count' || name === 'wl-count') {
      if (n === undefined || n > 0xffffffffffffffffn) return undefined;
      if (name === 'count') count = n;
      else wl = n;
    }
  }
  if (threadSeen !== undefined && threadSeen !== thread) return undefined;
  if (code === undefined || count === undefined || wl === undefined) return undefined;
  return { code: Number(code), count: Number(count), wl: Number(wl) };
}

let pyzorSocket: Socket;
let pyzorPort = 0;
let pyzorCurrent: PyzorReply = { kind: 'silent' };
let lastThread = '';
/** Delayed Pyzor replies not yet sent. */
const pendingReplies = new Set<NodeJS.Timeout>();

describe('hostile Pyzor replies', () => {
  const settings = { host: '127.0.0.1', port: 0, timeoutMs: TIMEOUT_MS, blockCount: 2, allowCount: 3, ratio: 0.2, breaker: { enabled: false } };
  let on: SpamEngine;
  const off = base();
  beforeAll(async () => {
    pyzorSocket = createSocket('udp4');
    pyzorSocket.on('message', (msg, from) => {
      const thread = /^Thread: (\d+)$/m.exec(msg.toString('utf8'))?.[1] ?? '';
      lastThread = thread;
      const r = pyzorCurrent;
      const send = (b: Buffer): void => pyzorSocket.send(b, from.port, from.address);
      if (r.kind === 'silent') return;
      if (r.kind === 'bytes') return send(Buffer.from(r.bytes));
      // A datagram for another request first (`before`): it is not the answer.
      if (r.before) send(Buffer.from(`Code: 200\nThread: ${Number(thread) ^ 1}\nCount: 99\nWL-Count: 0\n`));
      const b = pyzorText(r, thread);
      if (r.delayMs === 0) send(b);
      else {
        // A late reply may come due after the last property run: it is cancelled when the socket closes.
        const t = setTimeout(() => {
          pendingReplies.delete(t);
          send(b);
        }, r.delayMs);
        pendingReplies.add(t);
      }
    });
    await new Promise<void>((resolve) => pyzorSocket.bind(0, '127.0.0.1', resolve));
    pyzorPort = (pyzorSocket.address() as AddressInfo).port;
    on = base({ analysis: { pyzor: { ...settings, port: pyzorPort } } });
  });
  afterAll(async () => {
    for (const t of pendingReplies) clearTimeout(t);
    await new Promise<void>((resolve) => pyzorSocket.close(() => resolve()));
  });

  it('the PYZOR tag as the reply says, a warning for no answer, the rest as with the step off', async () => {
    await fc.assert(
      fc.asyncProperty(pyzorReplyArb, fc.constantFrom(...MESSAGES), async (reply, msg) => {
        pyzorCurrent = reply;
        const withStep = await on.classify(msg);
        const without = await off.classify(msg);
        let expected: ReturnType<typeof pyzorReference>;
        if (reply.kind === 'lines' && reply.delayMs === 0) {
          const b = pyzorText(reply, lastThread);
          const text = (() => {
            try {
              return new TextDecoder('utf-8', { fatal: true }).decode(b);
            } catch {
              return undefined;
            }
          })();
          expected = text === undefined ? undefined : pyzorReference(text, lastThread);
        } else if (reply.kind === 'bytes') {
          // Random bytes that happen to read as an answer are one (vanishingly rare; then no check).
          if (/code/i.test(Buffer.from(reply.bytes).toString('latin1'))) return;
        }
        const spam = expected !== undefined && expected.code === 200 && expected.count > settings.blockCount && (expected.wl < settings.allowCount || expected.wl / expected.count < settings.ratio);
        compare(withStep, without, 'pyzor:', (t) => t === 'PYZOR', spam ? 'PYZOR' : undefined, expected !== undefined);
      }),
      fuzzParams(100),
    );
  });
});

// ---------------------------------------------------------------- LLM

const field = fc.oneof(
  fc.constantFrom('Unsolicited', 'commercial', ' HARMFUL ', 'Legitimate', 'High', 'medium', 'LOW', 'Spam', '', ' '),
  fc.string({ unit: fc.oneof(fc.constantFrom('\u0000', '\n', '\r', '\u001b', '\u0085', '\u009b', '\u2028', '\ud800', 'é', '\t'), fc.string({ minLength: 1, maxLength: 1 })), maxLength: 40 }),
);
const content = fc.oneof(
  fc.array(field, { minLength: 1, maxLength: 5 }).map((f) => f.join(',')),
  fc.nat({ max: 2_000 }).map((n) => `Commercial,High,${'long explanation '.repeat(n)}`),
);
/** What the endpoint sends: a completion with generated content, JSON of another shape, garbage, or trouble. */
type LlmCase = { kind: 'completion'; content: string; modelPath: boolean } | { kind: 'raw'; reply: Exclude<LlmReply, undefined | 'hang'> } | { kind: 'hang' };
const wrongShape = fc.constantFrom(
  '{}',
  'null',
  '[]',
  '"text"',
  '{"choices":{}}',
  '{"choices":[]}',
  '{"choices":[null]}',
  '{"choices":[{"message":null}]}',
  '{"choices":[{"message":{"content":42}}]}',
  '{"choices":[{"message":{"content":["Harmful"]}}]}',
  '{"choices":[{"message":{"content":""}}]}',
  '{"choices":[{"text":"Harmful,High,x"}]}',
  '{"choices":[{"message":{"content":"Harmful,High,x"}}],"__proto__":{"x":1}}',
  '{"choices":[{"message":{"content":"Harmful,High,x"}}]',
  '{"choices":[{"message":{"content":"Harm',
  '\ufeff{"choices":[{"message":{"content":"Harmful"}}]}',
);
const llmCaseArb: fc.Arbitrary<LlmCase> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('completion' as const), content, modelPath: fc.constant(true) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('raw' as const),
      reply: fc.record(
        {
          status: fc.constantFrom(200, 200, 201, 204, 301, 400, 429, 500, 503),
          body: fc.oneof(wrongShape, fc.string({ maxLength: 100 }), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)), fc.constant(Buffer.alloc(1024 * 1024 + 10, 0x20))),
          headers: fc.constantFrom({}, { 'content-type': 'text/html' }, { location: 'http://169.254.169.254/' }, { 'content-length': '99999999999' }),
          delayMs: fc.constantFrom(0, 0, 0, TIMEOUT_MS + 200),
        },
        { requiredKeys: ['status', 'body'] },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'hang' as const }) },
) as fc.Arbitrary<LlmCase>;

/** The tag a completion's content gives (docs/analysis.md, llm: fields split on ',', trimmed, compared uppercased). */
function llmReference(text: string): string | undefined {
  const f = text.split(',').map((x) => x.trim().toUpperCase());
  const cat = ['UNSOLICITED', 'COMMERCIAL', 'HARMFUL', 'LEGITIMATE'].includes(f[0] ?? '') ? f[0] : undefined;
  if (cat === undefined) return undefined;
  const conf = ['HIGH', 'MEDIUM', 'LOW'].includes(f[1] ?? '') ? f[1] : undefined;
  return conf === undefined ? `LLM_${cat}` : `LLM_${cat}_${conf}`;
}

describe('hostile LLM replies', () => {
  let server: LlmServer;
  let on: SpamEngine;
  const off = base();
  beforeAll(async () => {
    server = await startLlmServer();
    on = base({ analysis: { llm: { url: server.url(), model: 'm', timeoutMs: TIMEOUT_MS, breaker: { enabled: false } } } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('the LLM tag as the reply says, a warning for no reply, the rest as with the step off', async () => {
    await fc.assert(
      fc.asyncProperty(llmCaseArb, fc.constantFrom(...MESSAGES), async (c, msg) => {
        server.reply = () => (c.kind === 'hang' ? 'hang' : c.kind === 'raw' ? c.reply : { body: completionBody('/v1/chat/completions', c.content) });
        const withStep = await on.classify(msg);
        const without = await off.classify(msg);
        const answered = c.kind === 'completion' && c.content !== '';
        // Raw bodies: only those that are no completion are generated with certainty; skip the rare one that is.
        if (c.kind === 'raw' && withStep.warnings.every((w) => !w.startsWith('llm:'))) return;
        const expected = answered ? llmReference(c.content) : undefined;
        compare(withStep, without, 'llm:', (t) => t.startsWith('LLM_'), expected, answered);
        if (withStep.llm?.explanation !== undefined) expect(Buffer.byteLength(withStep.llm.explanation)).toBeLessThanOrEqual(255);
      }),
      fuzzParams(100),
    );
  });
});

/** Other settings a site may give: Text models, another separator (its first character counts), other positions. */
const LLM_VARIANTS = [
  { modelType: 'Text' as const, separator: ',', responsePosCategory: 0, responsePosConfidence: 1, responsePosExplanation: 2 },
  { modelType: 'Chat' as const, separator: '|', responsePosCategory: 1, responsePosConfidence: 0, responsePosExplanation: 2 },
  { modelType: 'Chat' as const, separator: '\u{1F600}x', responsePosCategory: 2, responsePosConfidence: null, responsePosExplanation: 0 },
  { modelType: 'Text' as const, separator: ';;', responsePosCategory: 0, responsePosConfidence: 2, responsePosExplanation: null },
];

/** The tag `text` gives under `v` (docs/analysis.md, llm): fields split on the separator's first character, trimmed, uppercased. */
function llmVariantReference(text: string, v: (typeof LLM_VARIANTS)[number]): string | undefined {
  const f = text.split(String.fromCodePoint(v.separator.codePointAt(0)!)).map((x) => x.trim().toUpperCase());
  const cat = f[v.responsePosCategory];
  if (cat === undefined || !['UNSOLICITED', 'COMMERCIAL', 'HARMFUL', 'LEGITIMATE'].includes(cat)) return undefined;
  const conf = v.responsePosConfidence === null ? undefined : f[v.responsePosConfidence];
  return conf !== undefined && ['HIGH', 'MEDIUM', 'LOW'].includes(conf) ? `LLM_${cat}_${conf}` : `LLM_${cat}`;
}

describe('hostile LLM replies under other settings', () => {
  let server: LlmServer;
  const engines = new Map<number, SpamEngine>();
  const off = base();
  beforeAll(async () => {
    server = await startLlmServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  const likelyField = fc.oneof({ weight: 2, arbitrary: fc.constantFrom('Harmful', ' legitimate ', 'Medium', 'LOW', 'Commercial') }, { weight: 1, arbitrary: field });
  const sepField = fc.oneof(field, fc.constantFrom('|', ',', ';', '\u{1F600}', '\ud83d', 'x'));
  const text = fc.array(sepField, { minLength: 1, maxLength: 8 }).map((f) => f.join(''));

  it('Text models, other separators and positions: the tag as the reply says, the rest as with the step off', async () => {
    const tagged = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: LLM_VARIANTS.length - 1 }), fc.array(likelyField, { minLength: 1, maxLength: 5 }), text, fc.constantFrom('whole', 'first', 'raw'), fc.constantFrom(...MESSAGES), async (i, fields, raw, join, msg) => {
        const v = LLM_VARIANTS[i]!;
        // Fields joined by the configured separator (the whole string, of which only the first character counts, or
        // that character), or any text.
        const content = join === 'raw' ? raw : fields.join(join === 'whole' ? v.separator : String.fromCodePoint(v.separator.codePointAt(0)!));
        let on = engines.get(i);
        if (on === undefined) {
          const path = v.modelType === 'Text' ? '/v1/completions' : '/v1/chat/completions';
          engines.set(i, (on = base({ analysis: { llm: { url: server.url(path), model: 'm', timeoutMs: TIMEOUT_MS, breaker: { enabled: false }, ...v } } })));
        }
        server.reply = () => undefined;
        server.answer = content;
        const withStep = await on.classify(msg);
        const without = await off.classify(msg);
        compare(withStep, without, 'llm:', (t) => t.startsWith('LLM_'), content === '' ? undefined : llmVariantReference(content, v), content !== '');
        if (withStep.tags.some((t) => t.startsWith('LLM_'))) tagged.add(i);
      }),
      fuzzParams(200),
    );
    // Every variant recognised some reply: the property checked tags, not only their absence.
    expect(tagged.size).toBe(LLM_VARIANTS.length);
  });
});
