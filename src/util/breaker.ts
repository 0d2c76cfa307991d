/**
 * The state machine of a circuit breaker, shared by the lookup stores' breaker (src/lookup/breaker.ts, probed
 * in the background) and the network steps' (src/analysis/step-breaker.ts, probed by the next message):
 *
 * - **closed**: calls go through; {@link BreakerState.failed} counts consecutive failures, an answer
 *   ({@link BreakerState.answered}) starts the count again. The `failureThreshold`-th failure in a row asks the
 *   owner to open it ({@link BreakerState.trip});
 * - **open**: calls fail (or are skipped) at once for a cool-down of `initialBackoffMs`; then one probe goes
 *   (half-open). A probe that answers closes the breaker ({@link BreakerState.close}); one that fails reopens it
 *   for twice the previous cool-down, at most `maxBackoffMs` ({@link BreakerState.probeFailed}).
 *
 * Who probes, and when, is the owner's: a timer ({@link BreakerState.backoffMs} after opening) or the first call
 * {@link BreakerState.admit} lets through once the cool-down has passed.
 */

/** The breaker's numbers, every one given. */
export interface BreakerTiming {
  /** Consecutive failures that open the breaker (≥ 1). */
  failureThreshold: number;
  /** The first cool-down once open, in ms (≥ 1). */
  initialBackoffMs: number;
  /** The longest cool-down, in ms (≥ `initialBackoffMs`); each failed probe doubles the previous one up to it. */
  maxBackoffMs: number;
}

/** Why and since when a breaker is open. */
export interface OpenBreaker {
  /** When it opened (ms since the epoch). */
  readonly since: number;
  /** The last failure's message. */
  lastError: string;
  /** The current cool-down, in ms. */
  backoffMs: number;
  /** When the cool-down ends (`performance.now()` ms). */
  retryAt: number;
  /** A probe let through by {@link BreakerState.admit} has not settled yet. */
  probing: boolean;
}

/** What {@link BreakerState.admit} lets a call do: go (closed), go as the probe (half-open), or not go (open). */
export type Admission = 'call' | 'probe' | 'skip';

export class BreakerState {
  /** Consecutive failures (those while open included, so a failed probe adds one). */
  failures = 0;
  /** Set while open. */
  open: OpenBreaker | undefined;
  private readonly timing: BreakerTiming;

  /** Bounds `timing` (threshold ≥ 1, cool-downs ≥ 1 ms, the longest ≥ the first). */
  constructor(timing: BreakerTiming) {
    const initialBackoffMs = Math.max(1, timing.initialBackoffMs);
    this.timing = {
      failureThreshold: Math.max(1, timing.failureThreshold),
      initialBackoffMs,
      maxBackoffMs: Math.max(initialBackoffMs, timing.maxBackoffMs),
    };
  }

  get failureThreshold(): number {
    return this.timing.failureThreshold;
  }

  /** The cool-down in force (ms): the open breaker's, else the first one. */
  get backoffMs(): number {
    return this.open?.backoffMs ?? this.timing.initialBackoffMs;
  }

  /** A call answered: closed, the count of consecutive failures starts again; open, nothing (only a probe closes it). */
  answered(): void {
    if (this.open === undefined) this.failures = 0;
  }

  /** A call failed: one more in a row. True when the breaker is closed and this reached `failureThreshold` (the owner then trips it). */
  failed(): boolean {
    return ++this.failures >= this.timing.failureThreshold && this.open === undefined;
  }

  /** Opens the breaker (no-op when open) for `initialBackoffMs`, `lastError` the failure that opened it. */
  trip(lastError: string): void {
    if (this.open !== undefined) return;
    this.open = { since: Date.now(), lastError, backoffMs: this.timing.initialBackoffMs, retryAt: performance.now() + this.timing.initialBackoffMs, probing: false };
  }

  /** The probe failed: open again for twice the previous cool-down (at most `maxBackoffMs`), one more failure in a row. */
  probeFailed(lastError: string): void {
    const o = this.open;
    if (o === undefined) return;
    this.failures++;
    o.lastError = lastError;
    o.backoffMs = Math.min(o.backoffMs * 2, this.timing.maxBackoffMs);
    o.retryAt = performance.now() + o.backoffMs;
    o.probing = false;
  }

  /** The probe ended without saying whether the other end is up (the call was never made): the next call probes instead. */
  probeAbandoned(): void {
    if (this.open !== undefined) this.open.probing = false;
  }

  /** The probe answered: closed, no failures. */
  close(): void {
    this.open = undefined;
    this.failures = 0;
  }

  /**
   * For a breaker its calls probe: `call` when closed; when open, `probe` for the first call once the cool-down
   * has passed (marked as probing until {@link close}, {@link probeFailed} or {@link probeAbandoned}), `skip` for
   * every other.
   */
  admit(): Admission {
    const o = this.open;
    if (o === undefined) return 'call';
    if (o.probing || performance.now() < o.retryAt) return 'skip';
    o.probing = true;
    return 'probe';
  }
}
