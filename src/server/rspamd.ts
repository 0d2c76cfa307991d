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
 * body, 503 busy (with `Retry-After`), shutting down or the buffer budget full
 * (`limits.maxBufferedBytes`, with `Retry-After`), 504 scan time limit, 500 worker failure.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { SessionInput } from '../analysis/types.js';
import { Deadlines, idleTimeout } from './deadline.js';
import { replyFormatOf, rspamdReplyIn, type ReplyFormat } from './rspamd-reply.js';
import { listenerCaps } from './peers.js';
import { sessionErrorForHeaders, sessionFromHeaderMap } from './rspamd-session.js';
import type { BudgetLease } from './budget.js';
import { BUFFERS_FULL, SHUTTING_DOWN, type NotScanned, type OpenRequest, type Scanner } from './scan.js';
import { REQUEST_LINE, textProtocolHandler, type ReplyThresholds } from './spamd.js';

export { RSPAMD_ACTIONS } from './rspamd-session.js';
export { toRspamdReply, type RspamdReply, type RspamdSymbol } from './rspamd-reply.js';

/**
 * The deadlines of one connection on the rspamd listener: the first request's head and whole
 * request are timed from the accept, and on a keep-alive HTTP connection the next request's from
 * the end of the previous exchange (its reply sent and its body read).
 */
class RspamdConnection {
  readonly deadlines: Deadlines;
  /** Between two HTTP requests (keep-alive): an idle timeout then is no client's fault. */
  betweenRequests = false;

  constructor(
    private readonly socket: Socket,
    private readonly scanner: Scanner,
  ) {
    this.deadlines = new Deadlines(socket, 'rspamd', scanner.metrics);
    this.deadlines.startRequest(scanner.limits);
  }

  /** An HTTP request's head has arrived. */
  request(req: IncomingMessage, res: ServerResponse): void {
    this.betweenRequests = false;
    this.deadlines.clear('head');
    let ended = false;
    let finished = false;
    const next = (): void => {
      if (!ended || !finished || this.socket.destroyed) return;
      this.betweenRequests = true;
      this.deadlines.startRequest(this.scanner.limits);
    };
    req.once('end', () => {
      ended = true;
      this.deadlines.clear('request');
      next();
    });
    res.once('finish', () => {
      finished = true;
      next();
    });
  }
}

function one(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** The SMTP session from the HTTP request's headers (see {@link sessionFromHeaderMap}). */
export function sessionFromHeaders(req: IncomingMessage): SessionInput {
  return sessionFromHeaderMap((name) => req.headersDistinct[name]);
}

const STATUS: Record<NotScanned, number> = { too_large: 413, timeout: 504, busy: 503, closing: 503, session: 400, error: 500, abandoned: 503, buffer_full: 503 };

/** The endpoints that scan a message. */
const SCANS = new Set(['/checkv2', '/check', '/symbols']);
/** The endpoints that read a message (the scans and rspamd controller's learning): refused with 503 once a shutdown has started. */
const TAKES_MESSAGE = new Set([...SCANS, '/learnspam', '/learnham']);

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
class OverBudget extends Error {
  constructor(readonly size: number) {
    super(BUFFERS_FULL);
  }
}

/**
 * Reads the request body up to `max` bytes into one exact-size buffer, taking each chunk's bytes
 * from `lease` before keeping it. Rejects `TooLarge` past `max`, `OverBudget` (with the bytes
 * received) when a chunk does not fit in the buffer budget.
 */
function readBody(req: IncomingMessage, max: number, lease: BudgetLease): Promise<Uint8Array> {
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
      if (!lease.take(c.length)) {
        req.off('data', onData);
        reject(new OverBudget(size));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => {
      const body = Buffer.concat(chunks, size);
      // The listener stays attached while the request lives: the chunks must not stay alive with it.
      chunks.length = 0;
      resolve(body);
    });
    req.once('error', reject);
    req.once('aborted', () => reject(new Error('the client closed the connection')));
  });
}

/**
 * What every endpoint that takes a message checks before and while reading it (`/checkv2` and the
 * controller's `/learnspam`, `/learnham`): the method (405), a compressed body (415), a size over
 * `maxSize` (413: refused as soon as `Content-Length` says so, before the body is read, or once the
 * body passes it; the connection is then closed; `opts.maxSize` and `opts.tooLargeMessage` for a
 * smaller cap, such as a training sample's), bytes that do not fit in the buffer budget (503
 * with `Retry-After`, and the connection closed), an empty body when learning (400). The body's
 * bytes are held in the buffer budget until the response ends. Resolves to the body, or to
 * `undefined` when a reply has been sent. `scan` counts a size or budget refusal as a refused scan.
 */
export async function takeMessage(
  req: IncomingMessage,
  res: ServerResponse,
  scanner: Scanner,
  opts: { methods: readonly string[]; scan: boolean; queueId?: string; maxSize?: number; tooLargeMessage?: string },
): Promise<Uint8Array | undefined> {
  const { metrics } = scanner;
  const maxSize = opts.maxSize ?? scanner.limits.maxSize;
  const path = (req.url ?? '/').split('?')[0]!;
  if (!opts.methods.includes(req.method ?? '')) {
    req.resume();
    res.setHeader('allow', opts.methods.join(', '));
    sendJson(res, 405, { error: `use ${opts.methods.join(' or ')} on ${path}` });
    return undefined;
  }
  const tooLarge = (size: number): void => {
    const message = opts.scan ? scanner.refuse('rspamd', 'too_large', scanner.tooLargeMessage(), size, opts.queueId) : undefined;
    sendJson(res, 413, { error: message === undefined ? (opts.tooLargeMessage ?? scanner.tooLargeMessage()) : message.ok ? '' : message.message }, true);
    // The rest of the body is not read: the connection ends with the reply.
    res.once('finish', () => req.destroy());
  };
  const enc = one(req, 'content-encoding') ?? one(req, 'compression');
  if (enc !== undefined && enc.toLowerCase() !== 'identity') {
    metrics.protocolErrors.inc({ protocol: 'rspamd' });
    sendJson(res, 415, { error: `compressed requests (${enc}) are not supported; send the message uncompressed` }, true);
    res.once('finish', () => req.destroy());
    return undefined;
  }
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxSize) {
    tooLarge(declared);
    return undefined;
  }
  const lease = scanner.budget.lease();
  // 'close' follows 'finish', and comes alone when the connection breaks first.
  res.once('close', () => lease.end());
  let raw: Uint8Array;
  try {
    raw = await readBody(req, maxSize, lease);
  } catch (e) {
    // A body cut short is counted once: by the server's 'clientError' when the client closed it, as a
    // client timeout when the server did.
    if (e instanceof TooLarge) tooLarge(maxSize + 1);
    else if (e instanceof OverBudget) {
      lease.release();
      scanner.overBudget('rspamd', e.size, opts.scan, opts.queueId);
      res.setHeader('retry-after', '5');
      sendJson(res, 503, { error: BUFFERS_FULL }, true);
      // The rest of the body is not read: the connection ends with the reply.
      res.once('finish', () => req.destroy());
    }
    return undefined;
  }
  // rspamd scans an empty message (and so does the legacy text protocol here); a training sample must
  // have a message.
  if (raw.length === 0 && !opts.scan) {
    metrics.protocolErrors.inc({ protocol: 'rspamd' });
    sendJson(res, 400, { error: 'empty message: send the message as the request body' });
    return undefined;
  }
  return raw;
}

export interface OpsHandler {
  /** Serves `/metrics` and `/healthz`; returns false for other paths. */
  (req: IncomingMessage, res: ServerResponse): boolean;
}

/** Answers rspamd controller's `/learnspam` or `/learnham` (`path`), learning or refusing (src/server/learn.ts). */
export type LearnHandler = (req: IncomingMessage, res: ServerResponse, path: string) => void;

/**
 * Creates the rspamd-protocol server (not yet listening): HTTP, and on the same port rspamd's
 * legacy text protocol (`CHECK RSPAMC/1.3`, which Exim's `variant=rspamd` sends), told apart by
 * the first line of each connection. `learn` answers the controller's learn commands.
 */
export function createRspamdServer(scanner: Scanner, ops: OpsHandler, thresholds: ReplyThresholds, learn: LearnHandler): NetServer {
  const { limits, metrics } = scanner;
  /**
   * A 503 once the grace period of a shutdown is over (or for a message sent after it started),
   * counted as a `closing` refusal unless a scan of it is under way (that counts its own outcome).
   */
  const shuttingDown = (req: IncomingMessage, res: ServerResponse, state: { scanning: boolean }): void => {
    if (res.headersSent || res.destroyed) return;
    const path = (req.url ?? '/').split('?')[0]!;
    if (!state.scanning && SCANS.has(path)) scanner.refuse('rspamd', 'closing', SHUTTING_DOWN, Number(req.headers['content-length'] ?? 0) || 0, one(req, 'queue-id'));
    sendJson(res, 503, { error: SHUTTING_DOWN }, true);
    // A body still on its way is not read.
    res.once('finish', () => req.destroy());
  };
  const handle = async (req: IncomingMessage, res: ServerResponse, open: OpenRequest, gone: AbortSignal, state: { scanning: boolean }): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (!open.admitted && TAKES_MESSAGE.has(path)) return shuttingDown(req, res, state);
    if (path === '/ping') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 6 });
      res.end('pong\r\n');
      req.resume();
      return;
    }
    if (ops(req, res)) return;
    // rspamd controller's learn commands, which only this listener serves (not --metrics).
    if (path === '/learnspam' || path === '/learnham') return learn(req, res, path);
    if (!SCANS.has(path)) {
      req.resume();
      sendJson(res, 404, { error: `unknown command ${path}` });
      return;
    }
    const queueId = one(req, 'queue-id');
    // rspamc itself sends GET when it has no message to send; rspamd takes the body either way.
    const raw = await takeMessage(req, res, scanner, { methods: ['POST', 'GET'], scan: true, queueId });
    if (raw === undefined) return;
    // The idle timeout is for the client: it does not run while we scan.
    req.socket.setTimeout(0);
    // The reply is serialised in the worker thread that scanned (when the classifier is a pool):
    // the main thread, which every connection shares, then only writes its bytes.
    state.scanning = true;
    const reply: ReplyFormat = { format: replyFormatOf(path), requiredScore: thresholds.spam() };
    const o = await scanner.scan({ protocol: 'rspamd', raw, session: sessionFromHeaders(req), queueId, open, signal: gone }, reply);
    state.scanning = false;
    req.socket.setTimeout(limits.idleTimeoutMs);
    // Destroyed: the client has gone. Headers sent: the shutdown's grace period ended first.
    if (res.destroyed || res.headersSent) return;
    if (o.ok && 'body' in o) sendText(res, 200, o.body);
    else if (o.ok) sendJson(res, 200, rspamdReplyIn(reply, o.result, o.ms));
    else {
      // Busy is as temporary as a full buffer budget: say when to come back (RFC 9110 §10.2.3).
      if (o.reason === 'busy') res.setHeader('retry-after', '5');
      sendJson(res, STATUS[o.reason], { error: o.reason === 'session' ? sessionErrorForHeaders(o.message) : o.message });
    }
  };
  // Node enforces headersTimeout and requestTimeout only for a server that listen()s itself, and
  // this one gets its sockets from `outer`: the connection's Deadlines do that job instead.
  const server = createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 5_000 }, (req, res) => {
    conns.get(req.socket)?.request(req, res);
    // Registered from its head: a shutdown lets it finish, and answers 503 at the end of its grace period.
    const state = { scanning: false };
    const open = scanner.begin(() => shuttingDown(req, res, state));
    const gone = new AbortController();
    res.once('finish', () => open.end());
    res.once('close', () => {
      open.end();
      if (!res.writableFinished) gone.abort();
    });
    handle(req, res, open, gone.signal, state).catch((e: unknown) => {
      scanner.log.error({ protocol: 'rspamd', err: e instanceof Error ? e.message : String(e) }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' }, true);
    });
  });
  // Without it Node would clear the socket's idle timeout when a keep-alive connection's next
  // request starts; the socket's 'timeout' listener (`idleTimeout`) closes it.
  server.timeout = limits.idleTimeoutMs;
  // A client that shuts its side down once the request is sent (`nc -N`, some scripts) still gets
  // its replies, then the connection closes. Node's default aborts the requests in flight at the
  // client's FIN, so such a client got nothing; the property is Node's own switch for this
  // (lib/_http_server.js, `socketOnEnd`), not set through the constructor's options nor typed
  // (test/server/protocol-checks.test.ts fails if a Node release drops it).
  (server as typeof server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('clientError', (err: Error & { reason?: string }, socket) => {
    metrics.protocolErrors.inc({ protocol: 'rspamd' });
    if (!socket.writable) return void socket.destroy();
    // An rspamd-style error body like every other refusal, saying what the parser refused (Node's
    // `reason`, e.g. "Content-Length can't be present with Transfer-Encoding").
    const body = JSON.stringify({ error: `malformed HTTP request: ${err.reason ?? err.message}` });
    socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  const legacy = textProtocolHandler(scanner, thresholds, 'rspamd');
  const conns = new WeakMap<Socket, RspamdConnection>();
  const outer = createNetServer({ allowHalfOpen: true }, (socket) => {
    if (!caps.admit(socket)) return;
    socket.on('error', () => undefined);
    // Counted and timed from the accept: a client that never sends a line holds a connection too.
    metrics.countConnection('rspamd', socket);
    const conn = new RspamdConnection(socket, scanner);
    idleTimeout(socket, limits.idleTimeoutMs, 'rspamd', metrics, () => !conn.betweenRequests);
    let head: Buffer = Buffer.alloc(0);
    // A client that closes before its first line (a TCP health check, `nc -z`) has nothing to be
    // answered; with allowHalfOpen its socket would otherwise stay in CLOSE-WAIT.
    const ended = (): void => void socket.destroy();
    const sniff = (chunk: Buffer): void => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const nl = head.indexOf('\r\n');
      // The first line decides; 1 KiB without one is not a request line of either protocol.
      if (nl < 0 && head.length < 1024) return;
      socket.off('data', sniff);
      socket.off('end', ended);
      socket.pause();
      socket.unshift(head);
      if (nl >= 0 && REQUEST_LINE.test(head.toString('latin1', 0, nl))) legacy(socket, conn.deadlines);
      else {
        conns.set(socket, conn);
        server.emit('connection', socket);
      }
      socket.resume();
    };
    socket.on('data', sniff);
    socket.once('end', ended);
  });
  const caps = listenerCaps(outer, 'rspamd', limits.maxConnections, limits.maxConnectionsPerPeer, metrics);
  return outer;
}
