/**
 * A circuit breaker in front of a lookup store, so that a dead store costs nothing per message: after
 * `failureThreshold` consecutive failures that say the store is unreachable (refused, reset, timed
 * out, client offline), the store is marked down and every call rejects at once with a
 * LookupStoreError; a background probe (`key_exists` of a probe key) retries with exponential
 * back-off and closes the breaker as soon as the store answers again. Errors the server itself
 * answers (a bad SQL statement, a Redis error reply) say the store is up and do not count.
 *
 * A call still unanswered after `slowCallMs` counts as such a failure there and then, without
 * waiting for the store's own timeout (10–15 s by default): a frozen server (it accepts connections
 * but answers nothing) is marked down after about `slowCallMs` rather than after its timeout, during
 * which every message would wait for it. A probe must answer within `slowCallMs` too. The read cache
 * (cache.ts) does not let a lookup join a call that began before the breaker last opened
 * ({@link DownCounter}).
 *
 * A `Sharded` store gets one breaker per shard (factory.ts), each probing its own shard, and a Redis
 * Cluster one state per master node (see {@link PartitionedStore}), so an outage of one server only
 * fails the keys that live there.
 *
 * The state machine (closed, open, probe, doubling back-off) is src/util/breaker.ts's, which the network
 * steps' breaker (src/analysis/step-breaker.ts) shares; here the probe runs on a timer, in the background.
 */
import { BreakerState, type OpenBreaker } from '../util/index.js';
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
  /** Named in the "store is down" error, e.g. `shard 1` for one shard of a Sharded store. */
  label?: string;
  /**
   * A call (or probe) unanswered after this many ms counts as a failure at that moment; 0 = only
   * errors count. Default 2,000: the engine's default `ruleWaitMs`, past which no rule waits for a
   * store anyway (docs/lookup-stores.md, "Faults").
   */
  slowCallMs?: number;
}

/** The default of {@link BreakerOptions.slowCallMs}, in ms. */
export const DEFAULT_SLOW_CALL_MS = 2_000;

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
    if (x.message === 'store is closed' || (x as { requestRefused?: unknown }).requestRefused === true) return true;
    c = x.cause;
  }
  return false;
}

const strip = (namespace: string, message: string): string => {
  const prefix = `lookup store "${namespace}": `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
};

/**
 * Optional hook of an inner store whose keys live on independent servers (Redis Cluster): the name of
 * the server (partition) a key or counter is routed to, or `undefined` when unknown. The breaker then
 * keeps one state per partition, so a dead node only fails the keys it serves.
 */
export interface PartitionedStore {
  partitionOf(key: string, counter: boolean): string | undefined;
}

/** A store's (or partition's) breaker (the state machine of src/util/breaker.ts) and its background probe. */
interface PartState {
  readonly breaker: BreakerState;
  timer: NodeJS.Timeout | undefined;
  /** The call that checks the store (or partition) again, once down. */
  probe: () => Promise<unknown>;
}

/**
 * Optional hook of a store that can be marked down (a {@link CircuitBreakerStore}, or a `Sharded`
 * store of them): how many times it, or one of its parts, has been. The read cache does not let a
 * lookup join a call that started before the last time (it may never answer: a frozen server).
 */
export interface DownCounter {
  readonly downCount: number;
}

/**
 * Wraps `inner`; see the module docstring. `type` and `sqlQuery` are the inner store's.
 * When `inner` implements {@link PartitionedStore} (Redis Cluster), failures are counted and the
 * store marked down per partition (master node); a down partition is probed with the key that
 * failed last (it routes to the same node), the whole store with {@link PROBE_KEY}.
 */
export class CircuitBreakerStore implements LookupStore, DownCounter {
  readonly type: string;
  /** See {@link DownCounter}. */
  downCount = 0;
  readonly sqlQuery?: (query: string, params: SqlParam[]) => Promise<SqlResult>;
  private readonly parts = new Map<string, PartState>();
  private closed = false;
  private readonly timing: { failureThreshold: number; initialBackoffMs: number; maxBackoffMs: number };
  private readonly label: string | undefined;
  private readonly slowCallMs: number;

  constructor(
    readonly namespace: string,
    readonly inner: LookupStore,
    opts: BreakerOptions = {},
  ) {
    this.type = inner.type;
    // Bounded by BreakerState (threshold ≥ 1, back-offs ≥ 1 ms, the longest ≥ the first).
    this.timing = { failureThreshold: opts.failureThreshold ?? 3, initialBackoffMs: opts.initialBackoffMs ?? 250, maxBackoffMs: opts.maxBackoffMs ?? 5_000 };
    this.label = opts.label;
    this.slowCallMs = Math.max(0, opts.slowCallMs ?? DEFAULT_SLOW_CALL_MS);
    if (inner.sqlQuery) this.sqlQuery = (q, p) => this.call('', () => inner.sqlQuery!(q, p), () => inner.keyExists(PROBE_KEY));
  }

  /** True while the store, or (Redis Cluster) one of its nodes, is marked down (calls to it fail at once). */
  get isDown(): boolean {
    for (const p of this.parts.values()) if (p.breaker.open !== undefined) return true;
    return false;
  }

  private part(key: string | undefined, counter: boolean): string {
    if (key === undefined) return '';
    const f = (this.inner as Partial<PartitionedStore>).partitionOf;
    return typeof f === 'function' ? (f.call(this.inner, key, counter) ?? '') : '';
  }

  private downError(partition: string, d: OpenBreaker): LookupStoreError {
    const secs = Math.round((Date.now() - d.since) / 1000);
    const where = [this.label, partition ? `node ${partition}` : undefined].filter(Boolean).join(', ');
    return new LookupStoreError(this.namespace, `store is down (${where ? `${where}, ` : ''}for ${secs} s; last error: ${d.lastError}); probing in the background`);
  }

  private call<T>(partition: string, work: () => Promise<T>, probe: () => Promise<unknown>): Promise<T> {
    const st = this.parts.get(partition);
    if (st?.breaker.open !== undefined) return Promise.reject(this.downError(partition, st.breaker.open));
    let p: Promise<T>;
    try {
      p = work();
    } catch (e) {
      p = Promise.reject(e);
    }
    if (this.slowCallMs <= 0)
      return p.then(
        (v) => {
          st?.breaker.answered();
          return v;
        },
        (e: unknown) => {
          this.settledWithError(partition, e, probe);
          throw e;
        },
      );
    // Counted once: as slow when the timer fires first, else by how it settles.
    let slow = false;
    const timer = setTimeout(() => {
      slow = true;
      this.failed(partition, new Error(`no answer within ${this.slowCallMs} ms`), probe);
    }, this.slowCallMs);
    timer.unref();
    return p.then(
      (v) => {
        clearTimeout(timer);
        if (!slow) st?.breaker.answered();
        return v;
      },
      (e: unknown) => {
        clearTimeout(timer);
        if (!slow) this.settledWithError(partition, e, probe);
        throw e;
      },
    );
  }

  /** A call failed: an error the store answered says it is up; any other counts towards marking it down. */
  private settledWithError(partition: string, e: unknown, probe: () => Promise<unknown>): void {
    if (!storeAnswered(e)) return this.failed(partition, e, probe);
    this.parts.get(partition)?.breaker.answered();
  }

  private failed(partition: string, e: unknown, probe: () => Promise<unknown>): void {
    let st = this.parts.get(partition);
    if (st === undefined) this.parts.set(partition, (st = { breaker: new BreakerState(this.timing), timer: undefined, probe }));
    if (st.breaker.failed() && !this.closed) this.markDown(st, e, partition ? probe : () => this.inner.keyExists(PROBE_KEY));
  }

  private markDown(st: PartState, e: unknown, probe: () => Promise<unknown>): void {
    st.breaker.trip(strip(this.namespace, e instanceof Error ? e.message : String(e)));
    st.probe = probe;
    this.downCount++;
    this.scheduleProbe(st);
  }

  private scheduleProbe(st: PartState): void {
    const b = st.breaker;
    if (b.open === undefined || this.closed) return;
    st.timer = setTimeout(() => {
      st.timer = undefined;
      const t0 = performance.now();
      st.probe().then(
        () => {
          const ms = performance.now() - t0;
          if (this.slowCallMs <= 0 || ms <= this.slowCallMs) return b.close();
          b.probeFailed(`the probe answered in ${Math.round(ms)} ms, over ${this.slowCallMs} ms`);
          this.scheduleProbe(st);
        },
        (e: unknown) => {
          const ms = performance.now() - t0;
          if (storeAnswered(e) && (this.slowCallMs <= 0 || ms <= this.slowCallMs)) return b.close();
          b.probeFailed(strip(this.namespace, e instanceof Error ? e.message : String(e)));
          this.scheduleProbe(st);
        },
      );
    }, b.backoffMs);
    st.timer.unref(); // a probe never keeps the process alive
  }

  keyGet(key: string): Promise<string | number | null> {
    return this.call(this.part(key, false), () => this.inner.keyGet(key), () => this.inner.keyExists(key));
  }
  keyExists(key: string): Promise<boolean> {
    return this.call(this.part(key, false), () => this.inner.keyExists(key), () => this.inner.keyExists(key));
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.call(this.part(key, false), () => this.inner.keySet(key, value, ttlMs), () => this.inner.keyExists(key));
  }
  counterGet(key: string): Promise<number> {
    return this.call(this.part(key, true), () => this.inner.counterGet(key), () => this.inner.counterGet(key));
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.call(this.part(key, true), () => this.inner.counterIncr(key, by), () => this.inner.counterGet(key));
  }
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.parts.values()) if (p.timer !== undefined) clearTimeout(p.timer);
    await this.inner.close();
  }
}
