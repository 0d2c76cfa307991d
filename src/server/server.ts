/**
 * The scanning server: the rspamd, milter and spamd listeners (each optional) in front of one
 * worker pool, with `/metrics` and `/healthz`, and a graceful shutdown that stops accepting, lets
 * the scans in flight finish, then closes connections and the pool.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { VERSION } from '../util/version.js';
import { resolveLimits, type ServerLimits } from './limits.js';
import { createLogger, type Logger } from './log.js';
import { ServerMetrics } from './metrics.js';
import { createMilterServer } from './milter.js';
import type { MilterBusyAction, MilterErrorAction } from './milter-policy.js';
import { SpamEnginePool } from './pool.js';
import { LearnGate } from './learn-gate.js';
import { rspamdLearnHandler } from './learn.js';
import { createRspamdServer, type OpsHandler } from './rspamd.js';
import { rspamdAuth, rspamdStat } from './rspamd-reply.js';
import { Scanner } from './scan.js';
import { listenerCaps } from './peers.js';
import { createSpamdServer, type TellLearner } from './spamd.js';

/** `{ host, port }` for TCP (port 0 = random) or `{ path }` for a unix socket. */
export type ListenAddress = { host: string; port: number } | { path: string };

/**
 * Parses `HOST:PORT`, `[V6]:PORT`, a bare port, `inet:HOST:PORT` / `inet:PORT@HOST` (Postfix and
 * Sendmail milter notation) or `unix:PATH`. Throws `Error` for anything else.
 */
export function parseListenAddress(s: string): ListenAddress {
  if (s.startsWith('unix:')) {
    const path = s.slice(5);
    if (path === '') throw new Error(`expected unix:PATH, got "${s}"`);
    return { path };
  }
  let t = s.startsWith('inet:') ? s.slice(5) : s;
  const at = /^(\d+)@(.+)$/.exec(t);
  if (at) t = `${at[2]}:${at[1]}`;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(t) ?? (/^\d+$/.test(t) ? [t, undefined, '127.0.0.1', t] : null);
  if (!m) throw new Error(`expected HOST:PORT or unix:PATH, got "${s}"`);
  const port = Number(m[3]);
  if (port > 65535) throw new Error(`port ${m[3]} is out of range (0 to 65535) in "${s}"`);
  return { host: m[1] ?? m[2]!, port };
}

export interface ScanServerOptions {
  /** The pool that classifies (its rule set gives the spam threshold reported to clients). */
  pool: SpamEnginePool;
  rspamd?: ListenAddress;
  milter?: ListenAddress;
  spamd?: ListenAddress;
  /** A separate HTTP listener for `/metrics` and `/healthz` (the rspamd listener serves them too). */
  metrics?: ListenAddress;
  limits?: Partial<ServerLimits>;
  logger?: Logger;
  /**
   * Stores training samples (the classifier's, docs/classifier.md) for the learn commands the
   * options below switch on.
   */
  learner?: TellLearner;
  /**
   * Lets rspamd controller's `POST /learnspam` and `/learnham` (the message as the body, as `rspamc
   * learn_spam` sends it) store samples through `learner` on the rspamd listener (off by default:
   * anyone who can reach the MTA's scan port could then fill the model's disk and poison it; rspamd
   * learns on its password-protected controller port instead). Without it they get 403.
   */
  allowLearn?: boolean;
  /**
   * Lets spamd's `TELL` (`spamc -L spam|ham|forget`) store and forget samples through `learner` on the spamd listener,
   * as SpamAssassin's spamd `--allow-tell` does (off by default: anyone who can reach the port could
   * then train the model).
   */
  allowTell?: boolean;
  /**
   * What the milter answers when a message is refused as busy (every scan slot and the waiting room
   * full): `tempfail` (default; the MTA answers 4xx and the sender retries) or `accept` (the message
   * continues unscanned with `X-Spam-Note`, the behaviour of 0.1). rspamd answers busy with 503 and spamd with
   * 75 `EX_TEMPFAIL` whatever this says: there the client decides (docs/deployment.md, "Busy").
   */
  milterBusyAction?: MilterBusyAction;
  /**
   * What the milter answers when a message's scan timed out (`limits.scanTimeoutMs`, the pool's `timeoutMs`),
   * its worker thread failed, or another scan error came: `accept` (default; the message continues unscanned
   * with `X-Spam-Note`) or `tempfail` (the MTA answers 4xx and the sender retries; a message that always times
   * out is deferred until the sending MTA's queue lifetime bounces it). A message over `limits.maxSize`
   * continues with `X-Spam-Note` whatever this says. rspamd and spamd answer a failed scan in their own way
   * (docs/deployment.md, "Scan failures").
   */
  milterErrorAction?: MilterErrorAction;
}

export interface ScanServer {
  /** Bound addresses: `http://127.0.0.1:PORT` (rspamd, metrics), `127.0.0.1:PORT` or `unix:PATH` (milter, spamd). */
  addresses: { rspamd?: string; milter?: string; spamd?: string; metrics?: string };
  scanner: Scanner;
  metrics: ServerMetrics;
  /**
   * Stops accepting and closes idle keep-alive connections; lets the requests already begun arrive,
   * be scanned and be answered within `graceMs` (default `limits.shutdownGraceMs`, 30 000 ms); answers
   * those still open then "shutting down" in their protocol (rspamd 503, spamd 75 EX_TEMPFAIL, milter
   * tempfail), then closes every connection. A request begun after the call is refused as `closing`.
   * The pool is left to its owner.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * A unix socket path left behind by a process that died is removed (nothing answers on it);
 * one that a running process still serves is left alone, and `listen` then fails with EADDRINUSE.
 */
async function clearStaleSocket(path: string): Promise<void> {
  if (!existsSync(path)) return;
  const alive = await new Promise<boolean>((resolve) => {
    const c = connect(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  if (!alive) rmSync(path, { force: true });
}

function listen(server: Server, addr: ListenAddress): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = (): void => {
      server.off('error', reject);
      if ('path' in addr) return resolve(`unix:${addr.path}`);
      const a = server.address() as AddressInfo;
      resolve(`${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
    };
    // The MTA runs as another user: the socket is group-writable (put it in the MTA's group).
    if ('path' in addr)
      server.listen(addr.path, () => {
        chmodSync(addr.path, 0o660);
        done();
      });
    else server.listen(addr.port, addr.host, done);
  });
}

/**
 * Starts the listeners named in `opts`. Throws when an address cannot be bound, `RangeError`
 * for limits that cannot work together (`resolveLimits`), or `TypeError` for an unknown
 * `milterBusyAction` or `milterErrorAction`.
 */
export async function startScanServer(opts: ScanServerOptions): Promise<ScanServer> {
  const limits: ServerLimits = resolveLimits(opts.pool.workers, opts.limits);
  const log = opts.logger ?? createLogger();
  const metrics = new ServerMetrics();
  metrics.watchRegexCache(() => opts.pool.regexCacheStats());
  metrics.watchStepBreakers(() => opts.pool.stepBreakerStats());
  // An open breaker otherwise shows only as a warning inside each verdict, which serve does not log.
  const unwatchBreakers = opts.pool.onStepBreakerChange(({ change, worker, breaker: b }) => {
    if (change === 'opened') log.warn({ step: b.step, endpoint: b.endpoint, failures: b.failures, lastError: b.lastError, worker }, `${b.step} circuit breaker open: the step is skipped until a probe answers`);
    else log.info({ step: b.step, endpoint: b.endpoint, worker }, `${b.step} circuit breaker closed: the step runs again`);
  });
  const scanner = new Scanner(opts.pool, limits, metrics, log);
  const thresholds = { spam: (): number => opts.pool.ruleSet.thresholds?.scoreSpam ?? 5, reject: (): number => opts.pool.ruleSet.thresholds?.scoreReject ?? 0 };
  let closing = false;

  const ops: OpsHandler = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/metrics') {
      req.resume();
      metrics.render().then(
        (text) => {
          res.writeHead(200, { 'content-type': metrics.contentType });
          res.end(text);
        },
        () => {
          res.writeHead(500).end();
        },
      );
      return true;
    }
    // rspamd controller's statistics (`rspamc stat`) and `/auth` (`rspamc uptime`), from the running totals.
    if ((path === '/stat' || path === '/auth') && (req.method === 'GET' || req.method === 'POST')) {
      req.resume();
      const body = JSON.stringify((path === '/stat' ? rspamdStat : rspamdAuth)(metrics.totals, VERSION));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return true;
    }
    if (path === '/healthz') {
      req.resume();
      const body = JSON.stringify({ status: closing ? 'stopping' : 'ok', workers: opts.pool.workers, queue: scanner.depth });
      res.writeHead(closing ? 503 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return true;
    }
    return false;
  };

  const servers: { name: keyof ScanServer['addresses']; server: Server; sockets: Set<Socket> }[] = [];
  const add = (name: keyof ScanServer['addresses'], server: Server): void => {
    const sockets = new Set<Socket>();
    server.on('connection', (s: Socket) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    });
    servers.push({ name, server, sockets });
  };
  // One allowance for both protocols' learn commands.
  const gate = new LearnGate(limits.learnPerMinute, limits.maxLearnSize);
  if (opts.rspamd) add('rspamd', createRspamdServer(scanner, ops, thresholds, rspamdLearnHandler(scanner, opts.learner, opts.allowLearn === true, gate)));
  if (opts.milter) add('milter', createMilterServer(scanner, { busyAction: opts.milterBusyAction, errorAction: opts.milterErrorAction }));
  if (opts.spamd) add('spamd', createSpamdServer(scanner, thresholds, opts.allowTell === true && opts.learner !== undefined ? { learner: opts.learner, gate } : undefined));
  if (opts.metrics) {
    const http: HttpServer = createHttpServer((req, res) => {
      if (!ops(req, res)) {
        req.resume();
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    });
    // Scrapers are few; the caps keep anyone else from holding every socket of the process.
    const caps = listenerCaps(http, 'metrics', limits.maxConnections, limits.maxConnectionsPerPeer, metrics);
    http.prependListener('connection', (socket: Socket) => void caps.admit(socket));
    add('metrics', http);
  }

  const addresses: ScanServer['addresses'] = {};
  try {
    for (const s of servers) {
      const addr = opts[s.name]!;
      if ('path' in addr) await clearStaleSocket(addr.path);
      const a = await listen(s.server, addr);
      addresses[s.name] = s.name === 'rspamd' || s.name === 'metrics' ? `http://${a}` : a;
    }
  } catch (e) {
    for (const s of servers) s.server.close();
    throw e;
  }
  for (const [name, address] of Object.entries(addresses)) log.info({ listener: name, address }, 'listening');

  return {
    addresses,
    scanner,
    metrics,
    async close(graceMs = limits.shutdownGraceMs) {
      if (closing) return;
      closing = true;
      const closed = servers.map((s) => new Promise<void>((resolve) => s.server.close(() => resolve())));
      // Idle keep-alive HTTP connections would hold close() open; connections mid-scan stay.
      for (const s of servers) if ('closeIdleConnections' in s.server) (s.server as HttpServer).closeIdleConnections();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([scanner.drain(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      // Requests still unanswered get "shutting down" where their protocol can say it (rspamd 503,
      // spamd 75 EX_TEMPFAIL, milter tempfail), rather than a connection cut mid-request.
      const cut = scanner.shutdownOpen();
      if (cut > 0) log.warn({ requests: cut, graceMs }, 'grace period over: requests still open were answered "shutting down"');
      // Let the replies of the last scans flush, then end whatever is left.
      await new Promise((resolve) => setImmediate(resolve));
      for (const s of servers)
        for (const sock of s.sockets) {
          sock.end();
          setTimeout(() => sock.destroy(), 1000).unref();
        }
      await Promise.all(closed);
      unwatchBreakers();
      log.info('stopped');
    },
  };
}
