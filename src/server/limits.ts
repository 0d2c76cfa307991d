/**
 * Limits of the scanning server: message size cap, per-message time limit, a bound on concurrent
 * scans (back-pressure instead of an unbounded queue), a budget of buffered request bytes,
 * connection caps and timeouts, and the caps on learning over the mail-path protocols.
 */
import { totalmem } from 'node:os';
import { MAX_TIMER_MS } from '../util/index.js';

export interface ServerLimits {
  /** Largest message scanned, in bytes (default 50 MiB). Larger ones are not scanned; each protocol says so its own way. */
  maxSize: number;
  /** Per-message time limit in ms (default 30 000; 0 = none). */
  scanTimeoutMs: number;
  /** Scans handed to the worker pool at once (default 4 per worker). */
  maxConcurrentScans: number;
  /** Scans that may wait for a slot beyond those (default 256); more are refused as busy. */
  maxWaitingScans: number;
  /** A spamd or rspamd connection idle (nothing read or written) this long is closed, in ms (default 60 000). */
  idleTimeoutMs: number;
  /**
   * The same for a milter connection, in ms (default 7 210 000, libmilter's). The MTA keeps one
   * connection for a whole SMTP session and sends the message only once its client has sent all of it,
   * so the connection is quiet for as long as that client is slow; the MTA's own timeouts
   * (`smtpd_timeout`, `milter_*_timeout`) bound the session.
   */
  milterIdleTimeoutMs: number;
  /**
   * A request head must arrive within this many ms, however steadily it trickles in (default
   * 30 000; 0 = none): spamd's request line and headers and the rspamd HTTP request line and headers,
   * timed from the connection's start (for HTTP keep-alive, from the previous reply); for milter,
   * the first packet (the MTA's option negotiation) from the connection's start, and each later
   * packet from its first byte. Over it, the connection is closed.
   */
  headTimeoutMs: number;
  /**
   * A whole spamd or rspamd request (head and body) must arrive within this many ms of its start
   * (default 300 000; 0 = none). Over it, the connection is closed. Milter has its own,
   * {@link milterMessageTimeoutMs}.
   */
  requestTimeoutMs: number;
  /**
   * A milter message's content (headers, body, end of message) must arrive within this many ms of
   * its first header (default 600 000, the 10 minutes RFC 5321 §4.5.3.2.6 gives the end of DATA;
   * 0 = none). Postfix and Sendmail send the content only once their SMTP client has sent all of
   * it, so an MTA sends it in one go. Over it, the message is dropped and the connection closed
   * (the MTA applies its `milter_default_action`).
   */
  milterMessageTimeoutMs: number;
  /** Open connections per listener (default 1024); more are closed as soon as they are accepted. */
  maxConnections: number;
  /**
   * Open connections per listener from one peer (default 256): an IPv4 address, or an IPv6 /64
   * (one host's usual allocation); more from that peer are closed as soon as they are accepted.
   * Unix-socket connections have no peer address and count only against {@link maxConnections}.
   * Keep it above the connections the MTA opens at once: Postfix opens one milter connection per
   * smtpd process (`default_process_limit`, 100 by default).
   */
  maxConnectionsPerPeer: number;
  /**
   * Request bytes every listener together may hold in memory, in bytes: bodies being received,
   * waiting for a scan or being scanned, inflated zlib bodies, milter packets and envelopes (default
   * {@link defaultBufferBudget}: 4 × maxSize and at least 64 MiB, at most a quarter of the memory the
   * process may use, at least maxSize). A request whose next bytes do not fit is refused with its protocol's
   * temporary failure. At least `maxSize`, so that one message of the largest size always fits.
   */
  maxBufferedBytes: number;
  /**
   * Largest message taken as a training sample over rspamd's `/learnspam`/`/learnham` and spamd's
   * `TELL`, in bytes (default 1 MiB; at most maxSize). SpamAssassin's `sa-learn` skips messages over
   * 256 KB by default and spamc does not send those over 500 KB: the classifier learns from text, and
   * a large attachment adds bytes to the model file, not words.
   */
  maxLearnSize: number;
  /**
   * Training samples taken over those protocols per minute, all clients together (default 60; 0 =
   * no limit). More are refused as a temporary failure (rspamd 429 with `Retry-After`, spamd 75).
   */
  learnPerMinute: number;
  /**
   * On shutdown, how long the requests already begun may take to arrive, be scanned and be answered,
   * in ms (default 30 000); those still open then are answered "shutting down" (docs/deployment.md).
   */
  shutdownGraceMs: number;
}

export function defaultLimits(workers: number): ServerLimits {
  return {
    maxSize: 50 * 1024 * 1024,
    scanTimeoutMs: 30_000,
    maxConcurrentScans: 4 * Math.max(1, workers),
    maxWaitingScans: 256,
    idleTimeoutMs: 60_000,
    milterIdleTimeoutMs: 7_210_000,
    // spamd's own --timeout-tcp (headers) is 30 s and Postfix waits 30 s for a milter's reply to a
    // command (milter_command_timeout): a peer on the mail path that takes longer is broken anyway.
    headTimeoutMs: 30_000,
    // Postfix's milter_content_timeout and spamd's --timeout-child are both 300 s; a 50 MiB message
    // then needs 175 KB/s, far below any link between an MTA and its filter.
    requestTimeoutMs: 300_000,
    milterMessageTimeoutMs: 600_000,
    maxConnections: 1024,
    maxConnectionsPerPeer: 256,
    maxBufferedBytes: defaultBufferBudget(50 * 1024 * 1024),
    maxLearnSize: 1024 * 1024,
    learnPerMinute: 60,
    shutdownGraceMs: 30_000,
  };
}

/** The longest timeout a limit may set (src/util/timer.ts). */
export { MAX_TIMER_MS };

/** The limits that become timer delays, each checked against {@link MAX_TIMER_MS}. */
const TIMER_LIMITS = ['scanTimeoutMs', 'idleTimeoutMs', 'milterIdleTimeoutMs', 'headTimeoutMs', 'requestTimeoutMs', 'milterMessageTimeoutMs', 'shutdownGraceMs'] as const;

/**
 * The limits in effect: the defaults for `workers`, `given` over them. A buffer budget not given
 * follows `maxSize` ({@link defaultBufferBudget}); the learn size is at most `maxSize`. Throws `RangeError` for a budget below maxSize
 * (a message of the largest size could never be received), a per-peer cap below 1, or a timeout (`…Ms`) that is not
 * whole milliseconds or that no timer can wait (over {@link MAX_TIMER_MS}: it would fire at once).
 */
export function resolveLimits(workers: number, given: Partial<ServerLimits> = {}): ServerLimits {
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<ServerLimits>;
  const l: ServerLimits = { ...defaultLimits(workers), ...defined };
  if (defined.maxBufferedBytes === undefined) l.maxBufferedBytes = defaultBufferBudget(l.maxSize);
  l.maxLearnSize = Math.min(l.maxLearnSize, l.maxSize);
  for (const key of TIMER_LIMITS) {
    const ms = l[key];
    // Idle timeouts have no "0 = none" (a socket timeout of 0 is none in Node, but the docs promise a close).
    const min = key === 'idleTimeoutMs' || key === 'milterIdleTimeoutMs' ? 1 : 0;
    if (!Number.isInteger(ms) || ms < min || ms > MAX_TIMER_MS) {
      throw new RangeError(`limits.${key} must be whole milliseconds from ${min} to ${MAX_TIMER_MS} (about 24.8 days), not ${ms}`);
    }
  }
  if (!Number.isInteger(l.maxConnectionsPerPeer) || l.maxConnectionsPerPeer < 1) throw new RangeError(`limits.maxConnectionsPerPeer must be a positive integer, not ${l.maxConnectionsPerPeer}`);
  if (l.maxBufferedBytes < l.maxSize) throw new RangeError(`limits.maxBufferedBytes (${l.maxBufferedBytes} bytes) must be at least limits.maxSize (${l.maxSize} bytes)`);
  return l;
}

/**
 * The default buffer budget, in bytes: room for four messages of `maxSize` (200 MiB for the 50 MiB
 * default; at least 64 MiB, so that a small `maxSize` does not also cap how many ordinary messages
 * are in flight), lowered to a quarter of `memory` (what the process may use: its cgroup limit,
 * such as the systemd unit's `MemoryMax`, else the machine's memory) so that buffers leave room for
 * the workers, but never below `maxSize`.
 */
export function defaultBufferBudget(maxSize: number, memory = availableMemory()): number {
  return Math.max(maxSize, Math.min(Math.max(4 * maxSize, MIN_DEFAULT_BUDGET), Math.floor(memory / 4)));
}

const MIN_DEFAULT_BUDGET = 64 * 1024 * 1024;

/** Bytes of memory the process may use: its cgroup limit when there is one below the machine's memory. */
function availableMemory(): number {
  const total = totalmem();
  // Undefined (Node 20) or 0 (Node 22) without a limit; a huge number for an unlimited cgroup.
  const constrained = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  return constrained !== undefined && constrained > 0 && constrained < total ? constrained : total;
}

/** Thrown by {@link ScanGate.acquire} when both the slots and the waiting room are full. */
export class BusyError extends Error {
  constructor() {
    super('too many scans at once; try again later');
    this.name = 'BusyError';
  }
}

/** The message of an `abandoned` scan ({@link AbandonedError}). */
export const ABANDONED = 'the client closed the connection before the scan began';

/** Thrown by {@link ScanGate.acquire} when its signal aborts while the caller waits for a slot. */
export class AbandonedError extends Error {
  constructor() {
    super(ABANDONED);
    this.name = 'AbandonedError';
  }
}

/**
 * A counting semaphore with a bounded waiting room: `acquire` resolves to a release function once a
 * slot is free, and throws {@link BusyError} at once when `maxWaiting` callers already wait, or
 * {@link AbandonedError} when its `signal` aborts before a slot is free (the waiter leaves the queue).
 */
export class ScanGate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly maxActive: number,
    private readonly maxWaiting: number,
  ) {}

  /** Scans running plus scans waiting for a slot. */
  get depth(): number {
    return this.active + this.waiting.length;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted === true) throw new AbandonedError();
    if (this.active >= this.maxActive) {
      if (this.waiting.length >= this.maxWaiting) throw new BusyError();
      await new Promise<void>((resolve, reject) => {
        const waiter = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const i = this.waiting.indexOf(waiter);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new AbandonedError());
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(waiter);
      });
    } else this.active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `active` stays as it is.
      if (next !== undefined) next();
      else this.active--;
    };
  }
}

/**
 * Parses `50M`, `512k`, `1g` or a plain byte count into whole bytes (at least 1). Throws `Error` for
 * anything else, and for a size under one byte: `"0"`, `"0.5"` or `0.5` would be a `maxSize` of 0, with
 * which no message is ever scanned (the number 0 was refused already, the string "0" was not).
 */
export function parseSize(s: string | number): number {
  if (typeof s === 'number') {
    if (!Number.isFinite(s) || s < 1) throw new Error(`expected a positive size, got ${s}`);
    return Math.floor(s);
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmg]?)i?b?\s*$/i.exec(s);
  if (!m) throw new Error(`expected a size such as 50M, 512k or 1048576, got "${s}"`);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  const n = Math.floor(Number(m[1]) * mult);
  if (n < 1) throw new Error(`expected a positive size, got "${s}"`);
  return n;
}

/**
 * Most steps an operator may allow one `matches` search (`--regex-work-limit`, `analysis.regexWorkLimit`):
 * 2^36, about 1,000 times the default of 2^26 (which is about a second on the worst pattern shape,
 * docs/expression-language.md, "Work per search"). A search cannot be interrupted, so a limit much over the
 * default lets one rule hold a worker past the time budget.
 */
export const MAX_REGEX_WORK_LIMIT = 2 ** 36;
/** Smallest regex DFA cache budget per thread (`--regex-cache`, `analysis.regexCacheBytes`): 1 MiB, the engine's minimum. */
export const MIN_REGEX_CACHE_SETTING = 1024 ** 2;
/** Largest one an operator may set: 16 GiB per thread (the default is 64 MiB). */
export const MAX_REGEX_CACHE_SETTING = 16 * 1024 ** 3;

/**
 * An operator's `regexWorkLimit` (steps per `matches` search, `EngineOptions.regexWorkLimit`): an integer from
 * 1 to {@link MAX_REGEX_WORK_LIMIT}, as a number or decimal digits. Throws `Error` saying what is expected.
 */
export function parseRegexWorkLimit(v: string | number): number {
  const n = typeof v === 'number' ? v : /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_REGEX_WORK_LIMIT) {
    throw new Error(`expected steps per search, an integer from 1 to ${MAX_REGEX_WORK_LIMIT} (2^36; the default is 2^26 = 67108864), got ${JSON.stringify(v)}`);
  }
  return n;
}

/**
 * An operator's `regexCacheBytes` (the DFA cache budget of each thread, `EngineOptions.regexCacheBytes`): a
 * size in bytes or with a k, M or G suffix (binary multiples), from 1 MiB to 16 GiB. Throws `Error` saying
 * what is expected.
 */
export function parseRegexCacheBytes(v: string | number): number {
  const n = parseSize(v);
  if (n < MIN_REGEX_CACHE_SETTING || n > MAX_REGEX_CACHE_SETTING) {
    throw new Error(`expected a size from 1M to 16G (bytes, or with a k, M or G suffix; the default is 64M), got ${JSON.stringify(v)} (${n} bytes)`);
  }
  return n;
}
