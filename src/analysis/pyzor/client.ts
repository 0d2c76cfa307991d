/**
 * One Pyzor `check` over UDP, as Stalwart sends it (`stalwart:crates/spam-filter/src/modules/pyzor.rs`) and as
 * pyzor 1.0.0's server reads it (pyzor/message.py, pyzor/account.py, pyzor/server.py): a datagram of
 * RFC 5322-style `Name: value` lines joined by LF, signed for the `anonymous` account, answered by one
 * datagram with `Code`, `Diag`, `Thread`, `Count` and `WL-Count` lines.
 */
import { createHash, randomInt } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { quotedExcerpt } from '../../util/escape-controls.js';

/** Pyzor protocol version the request declares (pyzor's `proto_version`). */
export const PYZOR_PROTOCOL_VERSION = '2.1';
/** The account of unsigned-up clients (pyzor's `anonymous_user`); its key is empty. */
export const ANONYMOUS_USER = 'anonymous';

/** What a server answered: `code` (200 for success, HTTP-like), the digest's report and whitelist counts. */
export interface PyzorResponse {
  code: number;
  count: number;
  wlCount: number;
}

/** A check that got no usable answer: a timeout, a network error, a reply that does not parse. */
export class PyzorError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PyzorError';
  }
}

function sha1(data: string | Buffer): Buffer {
  return createHash('sha1').update(data).digest();
}

/**
 * The `check` request for `digest` (40 lowercase hex digits): `Op`, `Op-Digest`, `Thread`, `PV`, `User`,
 * `Time` (epoch seconds) and `Sig`, the signature pyzor's `sign_msg` computes over the lines before it:
 * `SHA1(SHA1(lines) + ":" + time + ":" + hex(SHA1("anonymous:")))` in lowercase hex, the anonymous
 * account's key being empty. `thread` (0–65535) is echoed by the server in its answer.
 */
export function checkRequest(digest: string, timeSec: number, thread: number): string {
  const body = `Op: check\nOp-Digest: ${digest}\nThread: ${thread}\nPV: ${PYZOR_PROTOCOL_VERSION}\nUser: ${ANONYMOUS_USER}\nTime: ${timeSec}`;
  const key = sha1(`${ANONYMOUS_USER}:`).toString('hex');
  const sig = createHash('sha1').update(sha1(body)).update(`:${timeSec}:${key}`).digest('hex');
  return `${body}\nSig: ${sig}\n`;
}

const U32_MAX = 0xffff_ffffn;
const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** Rust's `str::parse` of an unsigned integer: digits with an optional `+`, at most `max`. */
function unsigned(v: string, max: bigint): number | undefined {
  if (!/^\+?[0-9]+$/.test(v)) return undefined;
  const n = BigInt(v);
  return n > max ? undefined : Number(n);
}

/**
 * Reads an answer as Stalwart does: each `Name: value` line (names compared without case), `Code` as an
 * unsigned 32-bit integer and `Count`/`WL-Count` as unsigned 64-bit ones (values past 2^53 lose
 * precision, which no comparison with the counts here notices); other lines are ignored. Throws
 * {@link PyzorError} when one of the three is missing (a refusal, code 4xx without counts, included) or is
 * not a number.
 */
export function parseResponse(text: string): PyzorResponse {
  let code: number | undefined;
  let count: number | undefined;
  let wlCount: number | undefined;
  let diag = '';
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'code') code = unsigned(value, U32_MAX) ?? bad(line);
    else if (name === 'count') count = unsigned(value, U64_MAX) ?? bad(line);
    else if (name === 'wl-count') wlCount = unsigned(value, U64_MAX) ?? bad(line);
    else if (name === 'diag') diag = value;
  }
  // A refusal (pyzord: 403 for an operation the account may not do) carries no counts: no answer, as in Stalwart.
  if (code !== undefined && code !== 200 && (count === undefined || wlCount === undefined)) {
    throw new PyzorError(`answered code ${code}${diag === '' ? '' : ` (${excerpt(diag)})`}`);
  }
  if (code === undefined || count === undefined || wlCount === undefined) {
    throw new PyzorError(`reply without ${[code === undefined ? 'Code' : '', count === undefined ? 'Count' : '', wlCount === undefined ? 'WL-Count' : ''].filter(Boolean).join(', ')}: ${excerpt(text)}`);
  }
  return { code, count, wlCount };
}

function bad(line: string): never {
  throw new PyzorError(`reply with an invalid line: ${excerpt(line)}`);
}

/**
 * A reply's text for an error message: at most 200 characters, JSON-quoted, every control character escaped (C1
 * and DEL too, which JSON.stringify leaves: the message becomes a warning that reaches logs and terminals).
 */
const excerpt = (s: string): string => quotedExcerpt(s);

/** The `Thread` line of a reply, if any. */
function threadOf(text: string): string | undefined {
  const m = /^thread:[ \t]*([^\r\n]*?)[ \t]*\r?$/im.exec(text);
  return m?.[1];
}

/** Host name → address, kept this long (ms): Stalwart resolves the host once, when its settings load. */
const ADDRESS_TTL_MS = 300_000;
const addresses = new Map<string, { address: string; family: number; expires: number }>();

/** The address of `host` (an IP address as is; a name by the system's resolver, the first address, cached). */
async function resolve(host: string): Promise<{ address: string; family: number }> {
  const family = isIP(host);
  if (family !== 0) return { address: host, family };
  const hit = addresses.get(host);
  if (hit !== undefined && hit.expires > Date.now()) return hit;
  const a = await lookup(host);
  addresses.set(host, { address: a.address, family: a.family, expires: Date.now() + ADDRESS_TTL_MS });
  return a;
}

/**
 * Sends a `check` of `digest` to `host`:`port` from a fresh UDP socket and resolves with the answer.
 * Rejects with {@link PyzorError} when no usable answer arrives within `timeoutMs` milliseconds (name
 * lookup included), on a network error (e.g. ICMP port unreachable), or when the answer does not parse.
 * Datagrams from other addresses, and answers to another `Thread`, are not answers (a connected socket
 * drops the former; the latter are ignored). `now` (ms since the epoch) is for tests.
 */
export function pyzorCheck(digest: string, server: { host: string; port: number; timeoutMs: number }, now = Date.now()): Promise<PyzorResponse> {
  const thread = randomInt(1024, 65536); // pyzor's ThreadId "ok range" (0–1023 are reserved)
  const request = Buffer.from(checkRequest(digest, Math.floor(now / 1000), thread), 'utf8');
  const where = `${server.host}:${server.port}`;
  return new Promise<PyzorResponse>((resolvePromise, reject) => {
    let socket: Socket | undefined;
    let settled = false;
    const finish = (err: PyzorError | undefined, value?: PyzorResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        socket?.close();
      } catch {
        /* not yet bound, or closed already */
      }
      if (err !== undefined) reject(err);
      else resolvePromise(value!);
    };
    const timer = setTimeout(() => finish(new PyzorError(`no answer from ${where} within ${server.timeoutMs} ms`)), server.timeoutMs);
    resolve(server.host).then(
      ({ address, family }) => {
        if (settled) return;
        const s = createSocket(family === 6 ? 'udp6' : 'udp4');
        socket = s;
        s.on('error', (e) => finish(new PyzorError(`${where}: ${e.message}`, { cause: e })));
        s.on('message', (msg) => {
          let text: string;
          try {
            text = new TextDecoder('utf-8', { fatal: true }).decode(msg);
          } catch {
            finish(new PyzorError(`${where}: reply is not UTF-8`));
            return;
          }
          const t = threadOf(text);
          if (t !== undefined && t !== String(thread)) return; // an answer to another request: keep waiting
          try {
            finish(undefined, parseResponse(text));
          } catch (e) {
            finish(e instanceof PyzorError ? new PyzorError(`${where}: ${e.message}`) : new PyzorError(String(e)));
          }
        });
        s.connect(server.port, address, () => {
          if (!settled) s.send(request);
        });
      },
      (e: unknown) => finish(new PyzorError(`cannot resolve ${server.host}: ${e instanceof Error ? e.message : String(e)}`, { cause: e })),
    );
  });
}
