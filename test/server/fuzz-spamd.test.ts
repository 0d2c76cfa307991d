/**
 * Fuzzing the spamd listener (and the legacy `RSPAMC` dialect it shares a parser with) with generated
 * requests: verbs and versions good and bad, header lines with Content-length that is right, short,
 * long, not a number, repeated or over the size cap, `User`, `TELL`'s `Message-class`/`Set`/`Remove`,
 * lines without a colon, huge header lines, bare-LF line endings; bodies of real-looking messages and
 * random bytes, some over the cap. Each request is sent whole and cut at arbitrary byte boundaries.
 *
 * Invariants: every request gets one reply in spamd's format and the connection is closed; the reply
 * is the one a model of the protocol predicts (a sysexits error code for a defect, in the order the
 * server checks them; else `0 EX_OK` with the score a direct scan of the same body gives, or TELL's
 * `DidSet`); the same request cut anywhere gets the same reply byte for byte, and the same reply on the
 * rspamd listener (which hands text requests to the same handler); the listener still serves
 * a good request afterwards, and nothing stays open or held.
 */
import { deflateSync, inflateSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionFromHeaderMap } from '../../src/server/rspamd-session.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { startAll, type Started } from './harness.js';
import { cutFractions, expectDrained, offsets, sendParts, splitAt } from './wire-fuzz.js';

const MAX_SIZE = 48 * 1024;
const MAX_LEARN = 8 * 1024;
const MAX_HEAD = 64 * 1024;

const MESSAGES = [
  'From: a@example.org\r\nTo: b@example.com\r\nSubject: hello\r\n\r\nhello world\r\n',
  'From: "Winner" <win@lottery.example>\r\nSubject: YOU HAVE WON $1,000,000!!!\r\nContent-Type: text/html\r\n\r\n<html><body><a href="http://bit.ly/x">CLICK HERE</a></body></html>\r\n',
  'Subject: no blank line',
  '',
  'From: a@example.org\nSubject: bare LF\n\nbody\n',
];

/** A request as generated, with what the oracle needs to know about it. */
interface SpamdRequest {
  verb: string;
  protocol: string;
  /** Header lines, without their line ending. */
  headers: string[];
  eol: string;
  body: Buffer;
  /** The Content-length given (the first), if any. */
  length: string | undefined;
  lengths: string[];
}

const goodVerb = fc.constantFrom('CHECK', 'SYMBOLS', 'REPORT', 'REPORT_IFSPAM', 'HEADERS', 'PROCESS', 'PING', 'SKIP', 'TELL');
const badVerb = fc.constantFrom('check', 'HELLO', 'GET', 'CHECK2', '', 'CHECK ');
const protocolVersion = fc.oneof(fc.constantFrom('SPAMC/1.5', 'SPAMC/1.2', 'SPAMC/1.3', 'RSPAMC/1.3'), fc.constantFrom('SPAMC/1', 'HTTP/1.1', 'SPAMC/1.5 ', 'spamc/1.5', 'SPAMC/15'));
const body = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...MESSAGES).map((m) => Buffer.from(m, 'latin1')) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 600 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.integer({ min: MAX_LEARN - 100, max: MAX_SIZE + 2000 }).map((n) => Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(n, 'a')])) },
);
/** How the Content-length relates to the body. */
const lengthMode = fc.constantFrom('right', 'right', 'absent', 'short', 'long', 'nonnum', 'twice', 'conflict', 'huge', 'spaces');
const extraHeader = fc.oneof(
  fc.constantFrom('User: alice', 'User:', 'X-Whatever: 1', 'Compress: none', 'Message-class: spam', 'Message-class: ham', 'Message-class: eggs', 'Set: local', 'Set: remote', 'Set: local, remote', 'Remove: local', 'Remove: remote'),
  fc.constantFrom('no colon here', ': empty name', ' leading: space'),
  fc.integer({ min: 1000, max: 90_000 }).map((n) => `X-Huge: ${'h'.repeat(n)}`),
);

const request: fc.Arbitrary<SpamdRequest> = fc
  .record({ verb: fc.oneof({ weight: 6, arbitrary: goodVerb }, { weight: 1, arbitrary: badVerb }), protocol: protocolVersion, mode: lengthMode, extra: fc.array(extraHeader, { maxLength: 3 }), lfOnly: fc.nat(9).map((x) => x === 0), body, lengthName: fc.constantFrom('Content-length', 'content-LENGTH', 'Content-Length '), zlib: fc.nat(4).map((x) => x === 0) })
  .map((r) => {
    // `Compress: zlib` (spamc -z): the body sent is the message deflated.
    const sent = r.zlib ? deflateSync(r.body) : r.body;
    const n = sent.length;
    const lengths =
      r.mode === 'right' ? [String(n)] : r.mode === 'short' ? [String(Math.floor(n / 2))] : r.mode === 'long' ? [String(n + 5)] : r.mode === 'nonnum' ? ['12abc'] : r.mode === 'twice' ? [String(n), String(n)] : r.mode === 'conflict' ? [String(n), String(n + 1)] : r.mode === 'huge' ? [String(MAX_SIZE + 1)] : r.mode === 'spaces' ? [` ${n} `] : [];
    const headers = [...lengths.map((l) => `${r.lengthName}: ${l}`), ...(r.zlib ? ['Compress: zlib'] : []), ...r.extra];
    return { verb: r.verb, protocol: r.protocol, headers, eol: r.lfOnly ? '\n' : '\r\n', body: sent, length: lengths[0]?.trim(), lengths: lengths.map((l) => l.trim()) };
  });

function bytes(r: SpamdRequest): Buffer {
  const head = [`${r.verb} ${r.protocol}`, ...r.headers].map((l) => l + r.eol).join('') + r.eol;
  return Buffer.concat([Buffer.from(head, 'latin1'), r.body]);
}

/** What the model predicts: an error code, PONG, nothing (SKIP), TELL's answer, or a scan of `scanned`. */
type Expected = { code: number } | { pong: true } | { empty: true } | { tell: 'set' | 'remove' } | { scan: Buffer; rspamc: boolean; headers: Map<string, string[]> };

/** The reply the protocol gives `r`, checking its defects in the order the server does. */
function model(r: SpamdRequest): Expected {
  if (r.eol !== '\r\n') return { code: 76 };
  const headLength = Buffer.byteLength([`${r.verb} ${r.protocol}`, ...r.headers].map((l) => l + '\r\n').join(''), 'latin1');
  // The head up to the blank line, which starts with the last line's CRLF.
  if (headLength - 2 > MAX_HEAD) return { code: 76 };
  const m = /^([A-Z_]+) (R?SPAMC)\/(\d+\.\d+)$/.exec(`${r.verb} ${r.protocol}`);
  if (m === null || !['CHECK', 'SYMBOLS', 'REPORT', 'REPORT_IFSPAM', 'HEADERS', 'PROCESS', 'PING', 'SKIP', 'TELL'].includes(m[1]!)) return { code: 76 };
  const headers = new Map<string, string[]>();
  for (const line of r.headers) {
    const colon = line.indexOf(':');
    if (colon <= 0) return { code: 76 };
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  if (m[1] === 'PING') return { pong: true };
  if (m[1] === 'SKIP') return { empty: true };
  const rspamc = m[2] === 'RSPAMC';
  let cap = MAX_SIZE;
  const actions = (h: string): string[] => (headers.get(h) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase());
  let tell: 'set' | 'remove' | undefined;
  if (m[1] === 'TELL') {
    if (rspamc) return { code: 69 };
    const set = actions('set').includes('local');
    const remove = actions('remove').includes('local');
    if (set && remove) return { code: 76 };
    if (!remove) {
      if (!set) return { code: 69 };
      const cls = (headers.get('message-class')?.[0] ?? '').toLowerCase();
      if (cls !== 'spam' && cls !== 'ham') return { code: 76 };
      cap = MAX_LEARN;
    }
    tell = remove ? 'remove' : 'set';
  }
  if (new Set(r.lengths).size > 1) return { code: 76 };
  let want = -1;
  if (r.length !== undefined) {
    if (!/^\d+$/.test(r.length)) return { code: 76 };
    want = Number(r.length);
    if (want > cap) return { code: 65 };
  }
  const got = want >= 0 ? Math.min(want, r.body.length) : r.body.length;
  if (got > cap) return { code: 65 };
  if (want > r.body.length) return { code: 76 };
  let message = r.body.subarray(0, got);
  if ((headers.get('compress')?.[0] ?? '').toLowerCase() === 'zlib') {
    try {
      message = inflateSync(message);
    } catch {
      return { code: 76 };
    }
    if (message.length > cap) return { code: 65 };
  }
  if (tell !== undefined) return { tell };
  return { scan: message, rspamc, headers };
}

let s: Started;
const references = new Map<string, number>();

/** The score a direct scan of `raw` (with the session the headers carry, for RSPAMC) gives, two decimals. */
async function referenceScore(raw: Buffer, headers: Map<string, string[]> | undefined): Promise<string> {
  const session = headers === undefined ? {} : sessionFromHeaderMap((n) => headers.get(n));
  const key = raw.toString('latin1') + '\0' + JSON.stringify(session);
  let score = references.get(key);
  if (score === undefined) {
    score = (await s.pool.classify(raw, { session })).score;
    references.set(key, score);
  }
  return score.toFixed(2);
}

async function spamd(parts: readonly Buffer[], listener: 'spamd' | 'rspamd' = 'spamd'): Promise<{ reply: string; closedBy: string }> {
  const { host, port } = s.hostPort(listener);
  const r = await sendParts(host, port, parts, { timeoutMs: 15_000 });
  return { reply: r.reply.toString('latin1'), closedBy: r.closedBy };
}

/** Whether errors to `r` come in rspamd's legacy dialect: its request line (a CRLF after it) says RSPAMC. */
function legacyDialect(r: SpamdRequest): boolean {
  return r.eol === '\r\n' && /^[A-Z_]+ RSPAMC\/\d+\.\d+$/.test(`${r.verb} ${r.protocol}`);
}

/** Checks a reply against the model's prediction (`rspamc`: the dialect errors must come in). */
async function check(reply: string, e: Expected, rspamc = false): Promise<void> {
  if ('pong' in e) return void expect(reply).toMatch(/^R?SPAMD\/1\.[35] 0 PONG\r\n$/);
  if ('empty' in e) return void expect(reply).toBe('');
  const status = /^(SPAMD\/1\.1|RSPAMD\/1\.3) (\d+) (EX_[A-Z]+)/.exec(reply);
  expect(status, reply.slice(0, 200)).not.toBeNull();
  const code = Number(status![2]);
  if ('code' in e) {
    expect(status![1], reply.slice(0, 200)).toBe(rspamc ? 'RSPAMD/1.3' : 'SPAMD/1.1');
    return void expect(code, reply.slice(0, 200)).toBe(e.code);
  }
  expect(code, reply.slice(0, 200)).toBe(0);
  if ('tell' in e) return void expect(reply).toBe(`SPAMD/1.1 0 EX_OK\r\n${e.tell === 'set' ? 'DidSet: local\r\n' : ''}\r\n`);
  const score = e.rspamc ? /\r\nMetric: default; (?:True|False); (-?[\d.]+) \//.exec(reply) : /\r\nSpam: (?:True|False) ; (-?[\d.]+) \//.exec(reply);
  expect(score, reply.slice(0, 200)).not.toBeNull();
  expect(score![1]).toBe(await referenceScore(e.scan, e.rspamc ? e.headers : undefined));
}

beforeAll(async () => {
  const learner = {
    learnNew: (): Promise<{ id: number; already: boolean }> => Promise.resolve({ id: 1, already: false }),
    forgetMessage: (): Promise<number> => Promise.resolve(0),
  };
  s = await startAll({ workers: 1, learner, allowTell: true, limits: { maxSize: MAX_SIZE, maxLearnSize: MAX_LEARN, learnPerMinute: 1_000_000, idleTimeoutMs: 5000 } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

describe('spamd fuzz', () => {
  it('every request gets the reply the protocol model predicts, whole or cut anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(request, cutFractions(), async (r, cuts) => {
        const stream = bytes(r);
        const expected = model(r);
        const whole = await spamd([stream]);
        expect(whole.closedBy).toBe('server');
        await check(whole.reply, expected, legacyDialect(r));
        const split = await spamd(splitAt(stream, offsets(cuts, stream.length)));
        expect(split.closedBy).toBe('server');
        // Some clients send PING without its blank line: a PING's first line alone is answered at once.
        if ('pong' in expected) await check(split.reply, expected, legacyDialect(r));
        else expect(split.reply).toBe(whole.reply);
      }),
      fuzzParams(400),
    );
    // A good request afterwards.
    const good = Buffer.from(MESSAGES[0]!, 'latin1');
    const r = await spamd([Buffer.concat([Buffer.from(`CHECK SPAMC/1.5\r\nContent-length: ${good.length}\r\n\r\n`), good])]);
    await check(r.reply, { scan: good, rspamc: false, headers: new Map() });
  }, 120_000);

  it('a request of either dialect gets on the rspamd listener, cut anywhere, what it gets on the spamd listener', async () => {
    // The rspamd listener hands a connection whose first line is a request line to the same handler. Left
    // out: TELL (learning is the spamd listener's alone) and PING (answered at its first line on either).
    const legacy = request.filter((r) => r.eol === '\r\n' && r.verb !== 'TELL' && r.verb !== 'PING' && /^[A-Z_]+ R?SPAMC\/\d+\.\d+$/.test(`${r.verb} ${r.protocol}`));
    await fc.assert(
      fc.asyncProperty(legacy, cutFractions(), async (r, cuts) => {
        const stream = bytes(r);
        const onSpamd = await spamd([stream]);
        const onRspamd = await spamd(splitAt(stream, offsets(cuts, stream.length)), 'rspamd');
        expect(onRspamd.closedBy).toBe('server');
        expect(onRspamd.reply).toBe(onSpamd.reply);
      }),
      fuzzParams(200),
    );
  }, 120_000);

  it('leaves no connection open and nothing held in the buffer budget', async () => {
    await expectDrained(s, 'spamd');
    await expectDrained(s, 'rspamd');
  });
});
