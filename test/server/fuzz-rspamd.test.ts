/**
 * Fuzzing the rspamd HTTP listener with generated requests, written as raw bytes so that the framing can
 * be wrong too: methods and paths (the scan endpoints, /ping, the controller's learn endpoints, ops
 * endpoints, unknown ones), rspamd's session headers with odd values (`From`, `Rcpt` repeated or
 * comma-separated, `IP` with ports or not an address, `Helo`, `Hostname`, `User`, `Settings`, `Queue-Id`,
 * `MTA-Name`, `TLS-*`, compression), bodies framed by a right, short, long or malformed Content-Length,
 * or chunked (well or badly), each request sent whole and cut at arbitrary byte boundaries.
 *
 * Invariants: every request gets an HTTP/1.1 response and the connection is closed; no 5xx (nothing here
 * is busy, slow or failing); every 4xx carries a JSON body with an `error` string (HEAD excepted); a
 * well-formed scan request gets 200 with the score a direct scan of the same body and session gives, a
 * well-formed one with an address that is not one 400 naming the `IP` header, and the other refusals
 * their documented status (405, 413, 415, 404, 403); the same bytes cut anywhere get the same response;
 * requests pipelined on one keep-alive connection get, in order, the responses each gets alone; the
 * listener still scans a good request afterwards, and nothing stays open or held.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionFromHeaderMap } from '../../src/server/rspamd-session.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { startAll, type Started } from './harness.js';
import { cutFractions, expectDrained, offsets, sendParts, splitAt } from './wire-fuzz.js';

const MAX_SIZE = 32 * 1024;
const SCANS = ['/checkv2', '/check', '/symbols'];

const MESSAGES = [
  'From: a@example.org\r\nTo: b@example.com\r\nSubject: hello\r\n\r\nhello world\r\n',
  'From: "Winner" <win@lottery.example>\r\nSubject: YOU HAVE WON $1,000,000!!!\r\nContent-Type: text/html\r\n\r\n<html><body><a href="http://bit.ly/x">CLICK HERE</a></body></html>\r\n',
  '',
  'Subject: bare LF\n\nbody\n',
];

/** A generated request, and what the oracle needs to know about it. */
interface HttpRequest {
  method: string;
  path: string;
  headers: [string, string][];
  body: Buffer;
  framing: 'length' | 'short' | 'long' | 'bad-length' | 'chunked' | 'bad-chunked' | 'none' | 'both';
}

const session = fc.array(
  fc.oneof(
    fc.constantFrom<[string, string]>(['From', '<a@example.org>'], ['From', '<>'], ['From', ''], ['From', 'not an address'], ['Rcpt', '<b@example.com>'], ['Rcpt', '<b@example.com>, <c@example.net>'], ['Rcpt', ','], ['Helo', 'client.example.net'], ['Helo', '[192.0.2.1]'], ['Hostname', 'unknown'], ['Hostname', 'mx.example.net'], ['User', 'alice'], ['Queue-Id', 'Q1'], ['MTA-Name', 'mx1'], ['TLS-Version', 'TLSv1.3'], ['TLS-Cipher', 'AES']),
    fc.constantFrom<[string, string]>(['IP', '192.0.2.1'], ['IP', '2001:db8::1'], ['IP', 'unknown'], ['IP', '192.0.2.1:25'], ['IP', '[2001:db8::1]:25'], ['IP', 'not-an-ip'], ['IP', '999.1.1.1'], ['IP', '']),
    fc.constantFrom<[string, string]>(['Settings', '{"actions":{"reject":100}}'], ['Settings', '{bad json'], ['Settings-Id', 'x'], ['Pass', 'all'], ['Compression', 'zstd'], ['Compression', 'identity'], ['Content-Encoding', 'gzip'], ['Deliver-To', 'x@example.org']),
    fc.tuple(fc.constantFrom('From', 'Rcpt', 'Helo', 'User', 'Hostname', 'X-Odd'), fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c === 0x7f ? 0x20 : c)), maxLength: 20 })).map(([n, v]): [string, string] => [n, v.trim()]),
  ),
  { maxLength: 4 },
);

const request: fc.Arbitrary<HttpRequest> = fc.record({
  method: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('POST', 'GET') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'HEAD', 'DELETE', 'OPTIONS') }),
  path: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...SCANS, '/checkv2?x=1') }, { weight: 2, arbitrary: fc.constantFrom('/ping', '/learnspam', '/learnham', '/healthz', '/stat', '/nope', '/checkv2/', '//checkv2') }),
  headers: session,
  body: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...MESSAGES).map((m) => Buffer.from(m, 'latin1')) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.integer({ min: MAX_SIZE - 50, max: MAX_SIZE + 500 }).map((n) => Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(n, 'b')])) },
  ),
  framing: fc.oneof({ weight: 6, arbitrary: fc.constantFrom<HttpRequest['framing']>('length', 'chunked') }, { weight: 3, arbitrary: fc.constantFrom<HttpRequest['framing']>('short', 'long', 'bad-length', 'bad-chunked', 'none', 'both') }),
});

/** The request's bytes: request line, headers (Host and, unless `keepAlive`, Connection: close first), the framed body. */
function bytes(r: HttpRequest, keepAlive = false): Buffer {
  const lines = [`${r.method} ${r.path} HTTP/1.1`, 'Host: localhost', ...(keepAlive ? [] : ['Connection: close']), ...r.headers.map(([n, v]) => `${n}: ${v}`)];
  const b = r.body;
  let body: Buffer = b;
  switch (r.framing) {
    case 'length':
      lines.push(`Content-Length: ${b.length}`);
      break;
    case 'short':
      lines.push(`Content-Length: ${Math.floor(b.length / 2)}`);
      break;
    case 'long':
      lines.push(`Content-Length: ${b.length + 7}`);
      break;
    case 'bad-length':
      lines.push('Content-Length: 12abc');
      break;
    case 'both':
      lines.push(`Content-Length: ${b.length}`, 'Transfer-Encoding: chunked');
      body = chunked(b);
      break;
    case 'chunked':
      lines.push('Transfer-Encoding: chunked');
      body = chunked(b);
      break;
    case 'bad-chunked':
      lines.push('Transfer-Encoding: chunked');
      body = Buffer.concat([Buffer.from(`zz\r\n`), b, Buffer.from('\r\n0\r\n\r\n')]);
      break;
    case 'none':
      break;
  }
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), body]);
}

/** `b` in chunks of at most 100 bytes, then the last chunk. */
function chunked(b: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let o = 0; o < b.length; o += 100) {
    const c = b.subarray(o, o + 100);
    parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

/** A parsed HTTP response: status, lowercased headers, body (de-chunked when chunked). */
interface Response {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** The first response in `raw`; throws when it is not HTTP/1.1. */
function parseResponse(raw: Buffer): Response {
  return parseResponses(raw, 1)[0]!;
}

/** Up to `max` responses, one after the other in `raw` (each with a Content-Length). */
function parseResponses(raw: Buffer, max = Infinity): Response[] {
  const out: Response[] = [];
  let text = raw.toString('latin1');
  while (text.length > 0 && out.length < max) {
    const r = parseOne(text);
    out.push(r.response);
    text = text.slice(r.used);
  }
  return out;
}

function parseOne(text: string): { response: Response; used: number } {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no response head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!);
  if (m === null) throw new Error(`bad status line ${JSON.stringify(statusLine)}`);
  const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
  let body = text.slice(end + 4);
  const length = headers.get('content-length');
  if (length !== undefined) body = body.slice(0, Number(length));
  return { response: { status: Number(m[1]), headers, body }, used: end + 4 + body.length };
}

/** What the request is, for the oracle: well-framed and plain, and the status the protocol gives it then. */
function model(r: HttpRequest): { status: number; scan: boolean } | undefined {
  if (r.framing !== 'length' && r.framing !== 'chunked') return undefined;
  // Header values Node refuses (bytes it does not take in a field value) make no well-formed request.
  if (r.headers.some(([, v]) => /[^\t\x20-\x7e\x80-\xff]/.test(v))) return undefined;
  const path = r.path.split('?')[0]!;
  if (path === '/ping') return { status: 200, scan: false };
  if (path === '/learnspam' || path === '/learnham') return { status: 403, scan: false };
  if (path === '/healthz') return { status: 200, scan: false };
  // rspamd controller's statistics answer GET and POST, as rspamc sends them.
  if (path === '/stat') return { status: r.method === 'GET' || r.method === 'POST' ? 200 : 404, scan: false };
  if (!SCANS.includes(path)) return { status: 404, scan: false };
  if (r.method !== 'POST' && r.method !== 'GET') return { status: 405, scan: false };
  // Content-Encoding, else Compression; repeated ones are joined with ", " (as Node joins them).
  const joined = (name: string): string => r.headers.filter(([n]) => n === name).map(([, v]) => v).join(', ').trim();
  const enc = joined('Content-Encoding') || joined('Compression');
  if (enc !== '' && enc.toLowerCase() !== 'identity') return { status: 415, scan: false };
  if (r.framing === 'length' && r.body.length > MAX_SIZE) return { status: 413, scan: false };
  if (r.body.length > MAX_SIZE) return { status: 413, scan: false };
  return { status: 200, scan: true };
}

let s: Started;
const references = new Map<string, number>();

/** The score a direct scan gives `raw` with the session `headers` carry, or the session error. */
async function reference(raw: Buffer, headers: [string, string][]): Promise<{ score: number } | { error: string }> {
  const map = new Map<string, string[]>();
  for (const [n, v] of headers) map.set(n.toLowerCase(), [...(map.get(n.toLowerCase()) ?? []), v]);
  const session = sessionFromHeaderMap((n) => map.get(n));
  const key = raw.toString('latin1') + '\0' + JSON.stringify(session);
  const known = references.get(key);
  if (known !== undefined) return { score: known };
  try {
    const score = (await s.pool.classify(raw, { session })).score;
    references.set(key, score);
    return { score };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

async function send(parts: readonly Buffer[]): Promise<{ reply: Buffer; closedBy: string }> {
  const { host, port } = s.hostPort('rspamd');
  return sendParts(host, port, parts, { timeoutMs: 15_000 });
}

/** The response with what varies from one scan to the next (the scan time) left out. */
function stable(reply: Buffer): string {
  return reply
    .toString('latin1')
    .replace(/^date: .*\r\n/im, '')
    .replace(/"time_real":[\d.e-]+/g, '"time_real":0')
    .replace(/content-length: \d+/i, 'content-length: N');
}

beforeAll(async () => {
  s = await startAll({ workers: 1, limits: { maxSize: MAX_SIZE, idleTimeoutMs: 3000 } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

describe('rspamd HTTP fuzz', () => {
  it('every request gets a response with a reason, the model\'s for a well-formed one, whole or cut anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(request, cutFractions(), async (r, cuts) => {
        const stream = bytes(r);
        const whole = await send([stream]);
        expect(whole.closedBy).toBe('server');
        const res = parseResponse(whole.reply);
        expect(res.status, whole.reply.toString('latin1').slice(0, 300)).toBeLessThan(500);
        if (res.status >= 400 && r.method !== 'HEAD') {
          const error = (JSON.parse(res.body) as { error?: unknown }).error;
          expect(typeof error, res.body).toBe('string');
          expect((error as string).length).toBeGreaterThan(0);
        }
        const m = model(r);
        if (m !== undefined) {
          if (m.scan) {
            const ref = await reference(r.body, r.headers);
            if ('error' in ref) {
              expect(res.status).toBe(400);
              expect(JSON.parse(res.body).error).toMatch(/header: /);
            } else {
              expect(res.status, res.body.slice(0, 300)).toBe(200);
              const j = JSON.parse(res.body) as { score?: number; default?: { score: number } };
              expect(r.path.startsWith('/checkv2') ? j.score : j.default?.score).toBe(ref.score);
            }
          } else expect(res.status, res.body.slice(0, 300)).toBe(m.status);
        }
        const split = await send(splitAt(stream, offsets(cuts, stream.length)));
        expect(split.closedBy).toBe('server');
        if (!r.path.startsWith('/stat') && !r.path.startsWith('/healthz')) expect(stable(split.reply)).toBe(stable(whole.reply));
      }),
      fuzzParams(400),
    );
    // A good request afterwards.
    const good = Buffer.from(MESSAGES[1]!, 'latin1');
    const after = parseResponse((await send([bytes({ method: 'POST', path: '/checkv2', headers: [], body: good, framing: 'length' })])).reply);
    expect(after.status).toBe(200);
    expect((JSON.parse(after.body) as { score: number }).score).toBe(((await reference(good, [])) as { score: number }).score);
  }, 120_000);

  it('requests pipelined on one keep-alive connection get, in order, the responses each gets alone', async () => {
    // Refusals that close the connection (413, 415) end a pipeline, and the counters /stat and /healthz report
    // change with every scan: left out.
    const kept = request.filter((r) => {
      const m = model(r);
      return m !== undefined && m.status !== 413 && m.status !== 415 && r.method !== 'HEAD' && !r.path.startsWith('/stat') && !r.path.startsWith('/healthz');
    });
    await fc.assert(
      fc.asyncProperty(fc.array(kept, { minLength: 1, maxLength: 3 }), cutFractions(), async (rs, cuts) => {
        const alone = await Promise.all(rs.map(async (r) => parseResponse((await send([bytes(r)])).reply)));
        const stream = Buffer.concat(rs.map((r, i) => bytes(r, i < rs.length - 1)));
        const together = await send(splitAt(stream, offsets(cuts, stream.length)));
        expect(together.closedBy).toBe('server');
        const got = parseResponses(together.reply);
        const shape = (x: Response): string => `${x.status} ${x.body.replace(/"time_real":[\d.e-]+/g, '')}`;
        expect(got.map(shape)).toEqual(alone.map(shape));
      }),
      fuzzParams(150),
    );
  }, 120_000);

  it('leaves no connection open and nothing held in the buffer budget', async () => {
    await expectDrained(s, 'rspamd');
  });
});
