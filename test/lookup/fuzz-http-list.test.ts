/**
 * Property-based fuzzing of what a remote list's server sends back (docs/lookup-stores.md, "Remote lists";
 * src/lookup/http-list.ts): a raw HTTP server on loopback (node:net, so it can lie) answers a refresh with a
 * generated response: list bodies with CRLF/CR line ends, a BOM, binary, huge lines, invalid UTF-8; any
 * Content-Type; a real, lying or truncated gzip (the list's `isGzipped` or a `Content-Encoding`); a
 * Content-Length that is right, missing (chunked), too large (the body ends early) or too small; a slow drip past
 * the download timeout; a non-2xx status; redirects, looping or to a good copy.
 * Invariants: `update()` either loads exactly the keys the body lists (when it succeeds) and writes an on-disk
 * cache that a new store reads back the same, or rejects with `ListDownloadError` and the previous keys stay in
 * use; an honest 200 response within the caps always loads; nothing else is thrown.
 * Campaign: SPAMRULE_FUZZ_RUNS=3000 SPAMRULE_FUZZ_SEED=n npx vitest run test/lookup/fuzz-http-list.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpListStore, ListDownloadError, parseListBody, type HttpLookupInput } from '../../src/lookup/http-list.js';
import { fuzzParams } from '../helpers/fuzz.js';

const MAX_SIZE = 64 * 1024;
const TIMEOUT_MS = 400;

/** One generated response. */
interface Reply {
  status: number;
  /** The list's text, or raw bytes (binary, invalid UTF-8) when `bytes` is set. */
  text: string;
  bytes: Uint8Array | undefined;
  /** The list says `isGzipped`; `gzip`: how the server encodes the body. */
  isGzipped: boolean;
  gzip: 'none' | 'real' | 'lying' | 'truncated';
  /** Content-Encoding: gzip on the response (fetch decodes it). */
  contentEncoding: boolean;
  contentType: string;
  length: 'right' | 'chunked' | 'tooLarge' | 'tooSmall' | 'none';
  /** Milliseconds between the chunks of the body (a slow drip), 0 for at once. */
  dripMs: number;
  /** 3xx: a loop (to itself) or to the good copy. */
  redirect: 'none' | 'loop' | 'good';
  /** The list is a CSV (key column 0, `maxEntrySize` 8 bytes, so keys get cut) instead of a plain list. */
  csv: boolean;
}

const line = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('gmail.com', 'a.example', 'b.example', '  spaced.example  ', '# comment', '', ' ', '\t', '\uFEFFbom.example', 'x,y', '"quoted"', 'abcdefg\u{1F600}x,1', '\\"a\\\\b",c') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.nat({ max: 70_000 }).map((n) => 'h'.repeat(n)) },
);
const textArb = fc.tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n', '\r'), fc.boolean(), fc.boolean()).map(
  ([lines, eol, bom, finalEol]) => (bom ? '\uFEFF' : '') + lines.join(eol) + (finalEol ? eol : ''),
);
const bytesArb = fc.oneof(
  fc.uint8Array({ maxLength: 2_000 }),
  textArb.map((t) => {
    const b = Buffer.from(t);
    return Buffer.concat([b.subarray(0, b.length >> 1), Buffer.from([0xc3]), b.subarray(b.length >> 1)]);
  }),
);

const replyArb: fc.Arbitrary<Reply> = fc.record({
  status: fc.oneof({ weight: 6, arbitrary: fc.constant(200) }, { weight: 2, arbitrary: fc.constantFrom(201, 204, 206, 304, 400, 404, 500, 503, 999) }),
  text: textArb,
  bytes: fc.option(bytesArb, { nil: undefined, freq: 4 }),
  isGzipped: fc.boolean(),
  gzip: fc.constantFrom('none', 'real', 'lying', 'truncated'),
  contentEncoding: fc.boolean(),
  contentType: fc.constantFrom('text/plain', 'application/octet-stream', 'text/html; charset=latin1', 'application/gzip', ''),
  length: fc.constantFrom('right', 'right', 'chunked', 'tooLarge', 'tooSmall', 'none'),
  dripMs: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(30, 200) }),
  redirect: fc.oneof({ weight: 8, arbitrary: fc.constant('none' as const) }, { weight: 1, arbitrary: fc.constantFrom('loop' as const, 'good' as const) }),
  csv: fc.boolean(),
});

/** The body bytes as sent (before any Content-Encoding), and the decoded list bytes the client should end with. */
function bodyOf(r: Reply): { sent: Buffer; plain: Buffer } {
  const plain = r.bytes !== undefined ? Buffer.from(r.bytes) : Buffer.from(r.text, 'utf8');
  const gz = gzipSync(plain);
  const sent = r.gzip === 'real' ? gz : r.gzip === 'truncated' ? gz.subarray(0, gz.length >> 1) : plain;
  return { sent, plain };
}

const GOOD = 'good.example\n';
let current: Reply | undefined;

function respond(sock: Socket, path: string): void {
  const r = current;
  const head = (status: number, headers: Record<string, string | number>): string =>
    `HTTP/1.1 ${status} X\r\nconnection: close\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  if (path === '/good' || r === undefined) {
    sock.end(head(200, { 'content-length': GOOD.length }) + GOOD);
    return;
  }
  if (r.redirect !== 'none') {
    sock.end(head(302, { location: r.redirect === 'loop' ? '/list' : '/good', 'content-length': 0 }));
    return;
  }
  const { sent } = bodyOf(r);
  const wire = r.contentEncoding ? gzipSync(sent) : sent;
  const headers: Record<string, string | number> = {};
  if (r.contentType !== '') headers['content-type'] = r.contentType;
  if (r.contentEncoding) headers['content-encoding'] = 'gzip';
  if (r.length === 'right') headers['content-length'] = wire.length;
  else if (r.length === 'tooLarge') headers['content-length'] = wire.length + 10;
  else if (r.length === 'tooSmall' && wire.length > 0) headers['content-length'] = wire.length - 1;
  else if (r.length === 'chunked') headers['transfer-encoding'] = 'chunked';
  const body = r.length === 'chunked' ? Buffer.concat([Buffer.from(`${wire.length.toString(16)}\r\n`), wire, Buffer.from('\r\n0\r\n\r\n')]) : wire;
  sock.write(head(r.status, headers));
  if (r.dripMs === 0) {
    sock.end(body);
    return;
  }
  let i = 0;
  const step = Math.max(1, body.length >> 3);
  const tick = (): void => {
    if (sock.destroyed) return;
    if (i >= body.length) return void sock.end();
    sock.write(body.subarray(i, (i += step)));
    setTimeout(tick, r.dripMs);
  };
  tick();
}

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((sock) => {
    let buf = '';
    sock.on('error', () => {});
    sock.on('data', (c: Buffer) => {
      buf += c.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      respond(sock, buf.split(' ')[1] ?? '/');
      buf = '\u0000'.repeat(1e6); // answered: ignore the rest
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

/** The keys of a `List` body, per docs: each line (LF, an LF's CR dropped) trimmed, empty lines left out. */
function referenceKeys(text: string): Set<string> {
  return new Set(
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== ''),
  );
}

/**
 * The list bytes a successful download of `r` read: the body as sent, one byte short when the server declared one
 * byte less than it sent (the client cannot know), gunzipped when the list `isGzipped`; nothing for a 204.
 */
function expectedBody(r: Reply): Buffer {
  if (r.status === 204) return Buffer.alloc(0);
  let b = bodyOf(r).sent;
  if (r.length === 'tooSmall' && !r.contentEncoding && b.length > 0) b = b.subarray(0, -1);
  return r.isGzipped ? gunzipSync(b) : b;
}

/** Whether `r` is an honest 200 within the caps: the list must load then. */
function honest(r: Reply): boolean {
  const { sent, plain } = bodyOf(r);
  const validUtf8 = (() => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(plain);
      return true;
    } catch {
      return false;
    }
  })();
  return (
    r.status === 200 &&
    r.redirect === 'none' &&
    r.dripMs === 0 &&
    (r.length === 'right' || r.length === 'chunked' || r.length === 'none') &&
    (r.isGzipped ? r.gzip === 'real' : r.gzip === 'none') &&
    sent.length <= MAX_SIZE &&
    plain.length <= MAX_SIZE &&
    validUtf8
  );
}

describe('hostile remote list servers', () => {
  it('a refresh loads exactly the listed keys, or fails with ListDownloadError and keeps the previous copy', async () => {
    await fc.assert(
      fc.asyncProperty(replyArb, async (r) => {
        const cacheDir = mkdtempSync(join(tmpdir(), 'fuzz-lists-'));
        const cfg: HttpLookupInput = { namespace: 'fuzz', url: `${base}/list`, isGzipped: r.isGzipped, maxSize: MAX_SIZE, timeout: TIMEOUT_MS };
        if (r.csv) Object.assign(cfg, { format: { '@type': 'Csv' }, maxEntrySize: 8 });
        const good = { namespace: 'fuzz', url: `${base}/good` };
        const store = new HttpListStore(good, { cacheDir, allowedNetworks: ['127.0.0.1'] });
        await store.update();
        expect(store.hasSync('good.example')).toBe(true);
        // Same namespace and cache, the hostile URL.
        const hostile = new HttpListStore(cfg, { cacheDir, allowedNetworks: ['127.0.0.1'] });
        current = r;
        hostile.hasSync('x'); // loads the cached (good) copy, of the other URL: none
        let loaded: Set<string> | undefined;
        try {
          await hostile.update();
          const text = (): string => new TextDecoder('utf-8', { fatal: true }).decode(expectedBody(r));
          // CSV keys: the parser's own (its quoting rules are tested in http-list.test.ts); what matters here is that
          // they are text (no half of a surrogate pair) and that the cache gives them back.
          const body = r.redirect === 'good' ? GOOD : text();
          loaded = r.csv ? parseListBody(body, cfg).keys : referenceKeys(body);
          for (const k of loaded) expect(k, JSON.stringify(k)).not.toMatch(/\p{Cs}/u);
        } catch (e) {
          if (!(e instanceof ListDownloadError)) throw e;
          expect(honest(r), `honest reply refused: ${e.message}`).toBe(false);
        } finally {
          current = undefined;
        }
        if (loaded === undefined) {
          // The store it had stays: the first store still answers from its keys and its cache is intact.
          expect(store.hasSync('good.example')).toBe(true);
          expect(new HttpListStore(good, { cacheDir }).status().entries).toBe(1);
          return;
        }
        if (r.redirect !== 'good') expect(r.status >= 200 && r.status <= 299).toBe(true);
        expect(hostile.status().entries).toBe(loaded.size);
        for (const k of loaded) expect(hostile.hasSync(k), JSON.stringify(k)).toBe(true);
        // The on-disk copy reads back the same keys.
        const again = new HttpListStore(cfg, { cacheDir });
        expect(again.status().entries).toBe(loaded.size);
        for (const k of loaded) expect(again.hasSync(k), JSON.stringify(k)).toBe(true);
      }),
      fuzzParams(200),
    );
  });
});
