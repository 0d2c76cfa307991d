/**
 * What every protocol listener shares: the size cap, the bound on concurrent scans, the worker
 * pool, metrics and the per-scan log line. A listener turns its wire format into a
 * {@link ScanRequest} and a {@link ScanOutcome} back into its own reply.
 */
import type { SessionInput } from '../analysis/types.js';
import type { ClassifyOptions, ClassifyResult } from '../engine/types.js';
import { ByteBudget } from './budget.js';
import { ABANDONED, AbandonedError, BusyError, ScanGate, type ServerLimits } from './limits.js';
import type { Logger, ScanLogLine } from './log.js';
import type { Protocol, ServerMetrics } from './metrics.js';
import type { ReplyFormat } from './rspamd-reply.js';
import { ScanError, type ReplyVerdict } from './pool.js';

/** What classifies: a {@link SpamEnginePool} (or a `SpamEngine`, in-process). */
export interface Classifier {
  classify(raw: Uint8Array | string, opts?: ClassifyOptions): Promise<ClassifyResult>;
  /** A pool's: the reply serialised in the worker thread, which sends back only it and the verdict's action, score and errors. */
  classifyWithReply?(raw: Uint8Array | string, opts: ClassifyOptions, reply: ReplyFormat): Promise<{ verdict: ReplyVerdict; body: Uint8Array }>;
}

export interface ScanRequest {
  protocol: Protocol;
  raw: Uint8Array;
  session: SessionInput;
  /** Tags the MTA already set upstream. */
  tags?: string[];
  queueId?: string;
  /**
   * The request as its listener registered it ({@link Scanner.begin}): one that began before the
   * shutdown started is still scanned while the server drains.
   */
  open?: OpenRequest;
  /**
   * Aborted when the client has gone (its connection closed): a scan still waiting for a slot is
   * then dropped, as `abandoned`. A scan already handed to a worker runs to its end (within
   * `scanTimeoutMs`): stopping it would cost the worker thread.
   */
  signal?: AbortSignal;
}

/**
 * Why a message got no verdict. `closing`: the server is shutting down (the request began after
 * the shutdown started, or was still unanswered when the grace period ended); `abandoned`: the
 * client closed its connection while the scan waited for a slot (nobody is answered);
 * `buffer_full`: its bytes did not fit in the buffer budget (`limits.maxBufferedBytes`).
 */
export type NotScanned = 'too_large' | 'timeout' | 'busy' | 'session' | 'error' | 'closing' | 'abandoned' | 'buffer_full';

/**
 * A request that a listener has begun to receive, scan or answer ({@link Scanner.begin}). The
 * server's shutdown waits for the open ones, up to its grace period, and then calls their
 * `shutdown`, which answers "shutting down" where the protocol has a way to say it.
 */
export interface OpenRequest {
  /** False for a request that began after the shutdown started: its scan is refused as `closing`. */
  readonly admitted: boolean;
  /** The request is answered, or its connection closed. Idempotent. */
  end(): void;
}

/** A message that got no verdict: why, the error's text, and the milliseconds spent. */
export type UnscannedOutcome = { ok: false; reason: NotScanned; message: string; ms: number };

export type ScanOutcome = { ok: true; result: ClassifyResult; ms: number } | UnscannedOutcome;

/** A scan asked for a reply that the classifier built ({@link Classifier.classifyWithReply}): `body` is the reply's UTF-8 text, to send as it is. */
export interface RepliedOutcome {
  ok: true;
  verdict: ReplyVerdict;
  body: Uint8Array;
  ms: number;
}

/** The message of a `closing` refusal. */
export const SHUTTING_DOWN = 'the server is shutting down';

/** The message of a `buffer_full` refusal. */
export const BUFFERS_FULL = 'the server holds as many message bytes as it may (limits.maxBufferedBytes); try again later';

/** At most one `lookup store failing` log line per store in this long (ms). */
const STORE_WARN_INTERVAL_MS = 60_000;

export class Scanner {
  /** The bytes every listener's requests hold in memory together (`limits.maxBufferedBytes`). */
  readonly budget: ByteBudget;
  private readonly gate: ScanGate;
  private inFlight = 0;
  private idle: (() => void)[] = [];
  private closing = false;
  /** Admitted requests not yet answered, each with what answers it at the end of the grace period. */
  private readonly open = new Map<OpenRequest, () => void>();
  /** When each failing lookup store was last logged (ms since the epoch). */
  private readonly storeWarned = new Map<string, number>();

  constructor(
    readonly classifier: Classifier,
    readonly limits: ServerLimits,
    readonly metrics: ServerMetrics,
    readonly log: Logger,
  ) {
    this.gate = new ScanGate(limits.maxConcurrentScans, limits.maxWaitingScans);
    const budget = (this.budget = new ByteBudget(limits.maxBufferedBytes));
    metrics.watchBuffer({ used: () => budget.used, peak: () => budget.peak, limit: budget.limit });
    // Read when metrics are collected rather than set twice per scan.
    metrics.watchQueueDepth(() => this.gate.depth);
  }

  /** Scans running or waiting. */
  get depth(): number {
    return this.gate.depth;
  }

  /**
   * Classifies one message within the limits. Never throws. With `reply`, a classifier that can
   * (a pool) also builds that reply in its worker thread, and the outcome is then a
   * {@link RepliedOutcome}; otherwise the listener builds its reply from the result.
   */
  async scan(req: ScanRequest): Promise<ScanOutcome>;
  async scan(req: ScanRequest, reply: ReplyFormat): Promise<ScanOutcome | RepliedOutcome>;
  async scan(req: ScanRequest, reply?: ReplyFormat): Promise<ScanOutcome | RepliedOutcome> {
    const t0 = performance.now();
    if (req.raw.length > this.limits.maxSize) return this.refuse(req.protocol, 'too_large', this.tooLargeMessage(), req.raw.length, req.queueId);
    if (this.closing && req.open?.admitted !== true) return this.refuse(req.protocol, 'closing', SHUTTING_DOWN, req.raw.length, req.queueId);
    if (req.signal?.aborted === true) return this.refuse(req.protocol, 'abandoned', ABANDONED, req.raw.length, req.queueId);
    this.inFlight++;
    let release: (() => void) | undefined;
    try {
      release = await this.gate.acquire(req.signal);
      const opts: ClassifyOptions = { session: req.session };
      if (req.tags !== undefined && req.tags.length > 0) opts.tags = req.tags;
      if (reply !== undefined && this.classifier.classifyWithReply !== undefined) {
        const { verdict, body } = await this.classifier.classifyWithReply(req.raw, opts, reply);
        return { ok: true, verdict, body, ms: this.scanned(req, verdict, t0) };
      }
      const result = await this.classifier.classify(req.raw, opts);
      return { ok: true, result, ms: this.scanned(req, result, t0) };
    } catch (e) {
      const reason: NotScanned = e instanceof BusyError ? 'busy' : e instanceof AbandonedError ? 'abandoned' : e instanceof ScanError ? (e.reason === 'timeout' ? 'timeout' : e.reason === 'session' ? 'session' : e.reason === 'closed' ? 'closing' : 'error') : 'error';
      const message = e instanceof Error ? e.message : String(e);
      return this.refuse(req.protocol, reason, message, req.raw.length, req.queueId, performance.now() - t0);
    } finally {
      release?.();
      this.inFlight--;
      this.settled();
    }
  }

  /** Counts and logs a verdict; returns the scan's milliseconds. */
  private scanned(req: ScanRequest, v: ReplyVerdict, t0: number): number {
    const ms = performance.now() - t0;
    this.metrics.countScan(req.protocol, v.action, ms);
    this.metrics.countErrors(v);
    for (const e of v.errors) if (e.store !== undefined) this.storeFailing(e.store, e.message);
    this.line({ protocol: req.protocol, queueId: req.queueId, action: v.action, score: v.score, ms: round(ms), size: req.raw.length, remoteIp: req.session.remoteIp });
    return ms;
  }

  /**
   * Logs at `warn` that a lookup store fails, at most once a minute per store: a store that is down
   * fails every scan's lookups, which the metrics count but which would otherwise never reach the log.
   */
  private storeFailing(namespace: string, error: string): void {
    const now = Date.now();
    if (now - (this.storeWarned.get(namespace) ?? 0) < STORE_WARN_INTERVAL_MS) return;
    this.storeWarned.set(namespace, now);
    this.log.warn({ store: namespace, error }, 'lookup store failing');
  }

  /** The outcome (counted and logged) for a message that was not scanned, e.g. one refused before it was read. */
  refuse(protocol: Protocol, reason: NotScanned, message: string, size: number, queueId?: string, ms = 0): UnscannedOutcome {
    this.metrics.scans.inc({ protocol, action: reason });
    this.line({ protocol, queueId, action: reason, ms: round(ms), size, error: message });
    return { ok: false, reason, message, ms };
  }

  /**
   * Counts a request refused because its bytes did not fit in the buffer budget (in
   * `spamrule_buffer_refusals_total`), and, when it was a message to scan (`scan`), as a
   * `buffer_full` scan outcome. `size`: the bytes received so far.
   */
  overBudget(protocol: Protocol, size: number, scan: boolean, queueId?: string): void {
    this.metrics.bufferRefusals.inc({ protocol });
    if (scan) this.refuse(protocol, 'buffer_full', BUFFERS_FULL, size, queueId);
  }

  tooLargeMessage(): string {
    return `message larger than the ${this.limits.maxSize} bytes limit; not scanned`;
  }

  /**
   * Registers a request that has begun to arrive (its first bytes read): the shutdown waits for it
   * ({@link drain}), and its scan is not refused while the server drains. `shutdown` is called if
   * it is still open when the grace period ends ({@link shutdownOpen}); it should answer
   * "shutting down" if the protocol can, and end the connection. A request that begins once the
   * shutdown has started is not admitted.
   */
  begin(shutdown: () => void): OpenRequest {
    const admitted = !this.closing;
    let ended = false;
    const r: OpenRequest = {
      admitted,
      end: () => {
        if (ended) return;
        ended = true;
        if (this.open.delete(r)) this.settled();
      },
    };
    if (admitted) this.open.set(r, shutdown);
    return r;
  }

  /**
   * Refuses new requests and scans, and resolves once the admitted requests are answered and the
   * scans in flight have finished.
   */
  drain(): Promise<void> {
    this.closing = true;
    if (this.inFlight === 0 && this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /**
   * The grace period is over: every request still open is told so (its `shutdown`, which answers
   * "shutting down" where the protocol can) and counts as answered. Returns how many there were.
   */
  shutdownOpen(): number {
    const open = [...this.open];
    this.open.clear();
    for (const [, shutdown] of open) {
      try {
        shutdown();
      } catch (e) {
        this.log.error({ err: e instanceof Error ? e.message : String(e) }, 'shutdown reply failed');
      }
    }
    this.settled();
    return open.length;
  }

  private settled(): void {
    if (this.inFlight === 0 && this.open.size === 0) for (const f of this.idle.splice(0)) f();
  }

  private line(l: ScanLogLine): void {
    // Most servers log scans at info; at a quieter level the line is not even assembled.
    if (!this.log.isLevelEnabled(l.error !== undefined ? 'warn' : 'info')) return;
    const fields = Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined));
    if (l.error !== undefined) this.log.warn(fields, 'scan');
    else this.log.info(fields, 'scan');
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Strips `<…>` around an SMTP path and lowercases nothing (the session does that). */
export function unbracket(s: string): string {
  const t = s.trim();
  return t.startsWith('<') && t.endsWith('>') ? t.slice(1, -1) : t;
}
