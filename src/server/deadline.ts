/**
 * Per-connection timers against slow clients. The idle timeout is reset by every byte, so alone it
 * lets a client that trickles one byte a second (slowloris) hold a connection and its partial
 * request for ever; a deadline runs from a fixed start and traffic does not reset it.
 */
import type { Socket } from 'node:net';
import type { ServerLimits } from './limits.js';
import type { Protocol, ServerMetrics } from './metrics.js';

/** Which limit closed a connection: `idleTimeoutMs`, `headTimeoutMs` or `requestTimeoutMs`. */
export type ClientTimeout = 'idle' | 'head' | 'request';

type DeadlineKind = Exclude<ClientTimeout, 'idle'>;

/**
 * The head and request deadlines of one connection. An expired deadline counts in
 * `spamrule_client_timeouts_total` and destroys the socket; the timers end with the socket.
 */
export class Deadlines {
  private readonly timers = new Map<DeadlineKind, NodeJS.Timeout>();

  constructor(
    private readonly socket: Socket,
    private readonly protocol: Protocol,
    private readonly metrics: ServerMetrics,
  ) {
    socket.once('close', () => {
      for (const t of this.timers.values()) clearTimeout(t);
      this.timers.clear();
    });
  }

  /** Starts deadline `kind`, `ms` milliseconds from now (0 = none), replacing a running one. */
  start(kind: DeadlineKind, ms: number): void {
    this.clear(kind);
    if (ms <= 0 || this.socket.destroyed) return;
    const t = setTimeout(() => {
      this.timers.delete(kind);
      expire(this.socket, this.protocol, this.metrics, kind);
    }, ms);
    // A pending deadline must not keep the process alive on its own.
    t.unref();
    this.timers.set(kind, t);
  }

  /** A request begins: starts its `head` and `request` deadlines from the listener's limits. */
  startRequest(limits: Pick<ServerLimits, 'headTimeoutMs' | 'requestTimeoutMs'>): void {
    this.start('head', limits.headTimeoutMs);
    this.start('request', limits.requestTimeoutMs);
  }

  /** Starts deadline `kind` unless it already runs (it keeps its first start). */
  ensure(kind: DeadlineKind, ms: number): void {
    if (!this.timers.has(kind)) this.start(kind, ms);
  }

  clear(kind: DeadlineKind): void {
    const t = this.timers.get(kind);
    if (t !== undefined) clearTimeout(t);
    this.timers.delete(kind);
  }
}

function expire(socket: Socket, protocol: Protocol, metrics: ServerMetrics, kind: ClientTimeout): void {
  if (socket.destroyed) return;
  metrics.clientTimeouts.inc({ protocol, timeout: kind });
  socket.destroy();
}

/**
 * Closes `socket` after `ms` milliseconds with nothing read or written, counted as an `idle`
 * client timeout unless `counted()` says otherwise (an HTTP keep-alive connection waiting for its
 * next request ends that way normally). `socket.setTimeout` changes the delay later.
 */
export function idleTimeout(socket: Socket, ms: number, protocol: Protocol, metrics: ServerMetrics, counted: () => boolean = () => true): void {
  socket.setTimeout(ms);
  socket.on('timeout', () => {
    if (counted()) expire(socket, protocol, metrics, 'idle');
    else socket.destroy();
  });
}
