/**
 * A circuit breaker in front of a lookup store, so that a dead store costs nothing per message: after
 * `failureThreshold` consecutive failures that say the store is unreachable (refused, reset, timed
 * out, client offline), the store is marked down and every call rejects at once with a
 * LookupStoreError; a background probe (`key_exists` of a probe key) retries with exponential
 * back-off and closes the breaker as soon as the store answers again. Errors the server itself
 * answers (a bad SQL statement, a Redis error reply) say the store is up and do not count.
 */
import { LookupNotSupportedError, LookupStoreError, type LookupStore, type SqlParam, type SqlResult } from './types.js';

export interface BreakerOptions {
  /** `false` turns the breaker off (calls go straight to the store). Default: on. */
  enabled?: boolean;
  /** Consecutive unreachable-store failures that mark the store down. Default 3. */
  failureThreshold?: number;
  /** Delay before the first probe once down, in ms. Default 250. Doubles after each failed probe. */
  initialBackoffMs?: number;
  /** Longest delay between probes, in ms. Default 5,000. */
  maxBackoffMs?: number;
}

/** The key the background probe asks for (`key_exists`); its answer does not matter, only that one comes. */
export const PROBE_KEY = 'spamrule-probe';

/**
 * Whether an error comes from a store that answered (so it is up): a PostgreSQL error (it carries a
 * `severity`), a MySQL error with an SQL state, a Redis error reply, an SQLite error other than I/O,
 * an unsupported operation, or a closed store.
 */
function storeAnswered(e: unknown): boolean {
  if (e instanceof LookupNotSupportedError) return true;
  let c: unknown = e;
  for (let depth = 0; c instanceof Error && depth < 4; depth++) {
    const x = c as Error & { severity?: unknown; sqlState?: unknown; code?: unknown };
    if (x.name === 'ReplyError' || x.severity !== undefined || x.sqlState !== undefined) return true;
    if (x.name === 'SqliteError') return !/^SQLITE_(CANTOPEN|IOERR|BUSY|LOCKED|FULL|NOTADB|CORRUPT)/.test(String(x.code));
    if (x.message === 'store is closed') return true;
    c = x.cause;
  }
  return false;
}

const strip = (namespace: string, message: string): string => {
  const prefix = `lookup store "${namespace}": `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
};

/** Wraps `inner`; see the module docstring. `type` and `sqlQuery` are the inner store's. */
export class CircuitBreakerStore implements LookupStore {
  readonly type: string;
  readonly sqlQuery?: (query: string, params: SqlParam[]) => Promise<SqlResult>;
  private failures = 0;
  private down: { since: number; lastError: string; backoffMs: number; timer: NodeJS.Timeout | undefined } | undefined;
  private closed = false;
  private readonly threshold: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(
    readonly namespace: string,
    readonly inner: LookupStore,
    opts: BreakerOptions = {},
  ) {
    this.type = inner.type;
    this.threshold = Math.max(1, opts.failureThreshold ?? 3);
    this.initialBackoffMs = Math.max(1, opts.initialBackoffMs ?? 250);
    this.maxBackoffMs = Math.max(this.initialBackoffMs, opts.maxBackoffMs ?? 5_000);
    if (inner.sqlQuery) this.sqlQuery = (q, p) => this.call(() => inner.sqlQuery!(q, p));
  }

  /** True while the store is marked down (calls fail at once; a probe is scheduled). */
  get isDown(): boolean {
    return this.down !== undefined;
  }

  private call<T>(work: () => Promise<T>): Promise<T> {
    const d = this.down;
    if (d !== undefined) {
      const secs = Math.round((Date.now() - d.since) / 1000);
      return Promise.reject(new LookupStoreError(this.namespace, `store is down (for ${secs} s; last error: ${d.lastError}); probing in the background`));
    }
    let p: Promise<T>;
    try {
      p = work();
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.then(
      (v) => {
        this.failures = 0;
        return v;
      },
      (e: unknown) => {
        if (storeAnswered(e)) this.failures = 0;
        else if (++this.failures >= this.threshold) this.markDown(e);
        throw e;
      },
    );
  }

  private markDown(e: unknown): void {
    if (this.down !== undefined || this.closed) return;
    const lastError = strip(this.namespace, e instanceof Error ? e.message : String(e));
    this.down = { since: Date.now(), lastError, backoffMs: this.initialBackoffMs, timer: undefined };
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    const d = this.down;
    if (d === undefined || this.closed) return;
    d.timer = setTimeout(() => {
      d.timer = undefined;
      this.inner.keyExists(PROBE_KEY).then(
        () => this.markUp(),
        (e: unknown) => {
          if (storeAnswered(e)) return this.markUp();
          d.lastError = strip(this.namespace, e instanceof Error ? e.message : String(e));
          d.backoffMs = Math.min(d.backoffMs * 2, this.maxBackoffMs);
          this.scheduleProbe();
        },
      );
    }, d.backoffMs);
    d.timer.unref(); // a probe never keeps the process alive
  }

  private markUp(): void {
    this.down = undefined;
    this.failures = 0;
  }

  keyGet(key: string): Promise<string | number | null> {
    return this.call(() => this.inner.keyGet(key));
  }
  keyExists(key: string): Promise<boolean> {
    return this.call(() => this.inner.keyExists(key));
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.call(() => this.inner.keySet(key, value, ttlMs));
  }
  counterGet(key: string): Promise<number> {
    return this.call(() => this.inner.counterGet(key));
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.call(() => this.inner.counterIncr(key, by));
  }
  async close(): Promise<void> {
    this.closed = true;
    if (this.down?.timer !== undefined) clearTimeout(this.down.timer);
    await this.inner.close();
  }
}
