/**
 * The rspamd HTTP protocol (what `rspamc`, Haraka's `rspamd` plugin, Exim's `spam = …:variant=rspamd`
 * and rspamd's proxy speak): `POST /checkv2` with the message as the body and the SMTP session in
 * request headers (`IP`, `Helo`, `From`, `Rcpt` repeated, `User`, `Queue-Id`, `Hostname`, `MTA-Name`,
 * `TLS-Version`/`TLS-Cipher`), answered with rspamd's JSON verdict; `/ping` answers `pong`. The same
 * listener serves `/metrics` (Prometheus) and `/healthz`.
 *
 * Actions map to rspamd's names: `allow` → `no action`, `spam` → `add header`, `reject` and
 * `discard` → `reject`. `required_score` is the spam threshold. Errors are rspamd-style
 * `{"error": "…"}` bodies: 400 malformed request, 413 message over the size cap, 415 compressed
 * body, 503 busy or shutting down, 504 scan time limit, 500 worker failure.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import type { SessionInput } from '../analysis/types.js';
import { toRspamdReply } from './rspamd-reply.js';
import { sessionFromHeaderMap } from './rspamd-session.js';
import type { NotScanned, Scanner } from './scan.js';
import { REQUEST_LINE, textProtocolHandler, type ReplyThresholds } from './spamd.js';

export { RSPAMD_ACTIONS } from './rspamd-session.js';
export { toRspamdReply, type RspamdReply, type RspamdSymbol } from './rspamd-reply.js';

function one(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** The SMTP session from the HTTP request's headers (see {@link sessionFromHeaderMap}). */
export function sessionFromHeaders(req: IncomingMessage): SessionInput {
  return sessionFromHeaderMap((name) => req.headersDistinct[name]);
}

const STATUS: Record<NotScanned, number> = { too_large: 413, timeout: 504, busy: 503, closing: 503, session: 400, error: 500 };

function sendJson(res: ServerResponse, status: number, body: unknown, close = false): void {
  sendText(res, status, JSON.stringify(body), close);
}

/** Sends an already serialised JSON body (as UTF-8 bytes when the worker thread wrote the verdict). */
function sendText(res: ServerResponse, status: number, text: string | Uint8Array, close = false): void {
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
  if (close) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(text);
}

class TooLarge extends Error {}

/** Reads the request body up to `max` bytes into one exact-size buffer. Rejects `TooLarge` past it. */
function readBody(req: IncomingMessage, max: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > max) {
        req.off('data', onData);
        reject(new TooLarge());
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
    req.once('aborted', () => reject(new Error('the client closed the connection')));
  });
}

export interface OpsHandler {
  /** Serves `/metrics` and `/healthz`; returns false for other paths. */
  (req: IncomingMessage, res: ServerResponse): boolean;
}

/**
 * Creates the rspamd-protocol server (not yet listening): HTTP, and on the same port rspamd's
 * legacy text protocol (`CHECK RSPAMC/1.3`, which Exim's `variant=rspamd` sends), told apart by
 * the first line of each connection.
 */
export function createRspamdServer(scanner: Scanner, ops: OpsHandler, thresholds: ReplyThresholds): NetServer {
  const { limits, metrics } = scanner;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/ping') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 6 });
      res.end('pong\r\n');
      req.resume();
      return;
    }
    if (ops(req, res)) return;
    if (path !== '/checkv2' && path !== '/check' && path !== '/symbols') {
      req.resume();
      sendJson(res, 404, { error: `unknown command ${path}` });
      return;
    }
    // rspamc itself sends GET when it has no message to send; rspamd takes the body either way.
    if (req.method !== 'POST' && req.method !== 'GET') {
      req.resume();
      sendJson(res, 405, { error: `use POST on ${path}` });
      return;
    }
    const queueId = one(req, 'queue-id');
    const enc = one(req, 'content-encoding') ?? one(req, 'compression');
    if (enc !== undefined && enc.toLowerCase() !== 'identity') {
      metrics.protocolErrors.inc({ protocol: 'rspamd' });
      sendJson(res, 415, { error: `compressed requests (${enc}) are not supported; send the message uncompressed` }, true);
      res.once('finish', () => req.destroy());
      return;
    }
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > limits.maxSize) {
      const o = scanner.refuse('rspamd', 'too_large', scanner.tooLargeMessage(), declared, queueId);
      sendJson(res, 413, { error: o.ok ? '' : o.message }, true);
      res.once('finish', () => req.destroy());
      return;
    }
    let raw: Uint8Array;
    try {
      raw = await readBody(req, limits.maxSize);
    } catch (e) {
      if (e instanceof TooLarge) {
        const o = scanner.refuse('rspamd', 'too_large', scanner.tooLargeMessage(), limits.maxSize + 1, queueId);
        sendJson(res, 413, { error: o.ok ? '' : o.message }, true);
        res.once('finish', () => req.destroy());
      } else metrics.protocolErrors.inc({ protocol: 'rspamd' });
      return;
    }
    if (raw.length === 0) {
      metrics.protocolErrors.inc({ protocol: 'rspamd' });
      sendJson(res, 400, { error: 'empty message: send the message as the request body' });
      return;
    }
    // The idle timeout is for the client: it does not run while we scan.
    req.socket.setTimeout(0);
    // The reply is serialised in the worker thread that scanned (when the classifier is a pool):
    // the main thread, which every connection shares, then only writes its bytes.
    const o = await scanner.scan({ protocol: 'rspamd', raw, session: sessionFromHeaders(req), queueId }, { format: 'rspamd', requiredScore: thresholds.spam() });
    req.socket.setTimeout(limits.idleTimeoutMs);
    if (res.destroyed) return;
    if (o.ok && 'body' in o) sendText(res, 200, o.body);
    else if (o.ok) sendJson(res, 200, toRspamdReply(o.result, thresholds.spam(), o.ms));
    else sendJson(res, STATUS[o.reason], { error: o.message });
  };
  const server = createServer({ requestTimeout: 0, headersTimeout: limits.idleTimeoutMs, keepAliveTimeout: 5_000 }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      scanner.log.error({ protocol: 'rspamd', err: e instanceof Error ? e.message : String(e) }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' }, true);
    });
  });
  // Socket inactivity (nothing read or written: a stalled client) ends the connection.
  server.setTimeout(limits.idleTimeoutMs, (socket) => socket.destroy());
  server.on('connection', (socket) => {
    metrics.connections.inc({ protocol: 'rspamd' });
    socket.once('close', () => metrics.connections.dec({ protocol: 'rspamd' }));
  });
  server.on('clientError', (_err, socket) => {
    metrics.protocolErrors.inc({ protocol: 'rspamd' });
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });
  const legacy = textProtocolHandler(scanner, thresholds);
  const outer = createNetServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => undefined);
    let head: Buffer = Buffer.alloc(0);
    const sniff = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const nl = head.indexOf('\r\n');
      // The first line decides; 1 KiB without one is not a request line of either protocol.
      if (nl < 0 && head.length < 1024) return;
      socket.off('data', sniff);
      socket.pause();
      socket.unshift(head);
      if (nl >= 0 && REQUEST_LINE.test(head.toString('latin1', 0, nl))) legacy(socket);
      else server.emit('connection', socket);
      socket.resume();
    };
    socket.on('data', sniff);
  });
  outer.maxConnections = limits.maxConnections;
  return outer;
}
