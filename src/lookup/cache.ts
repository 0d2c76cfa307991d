/** An LRU read cache in front of a lookup store (issue #3: "an LRU cache in front of reads"). */
import { LRUCache } from 'lru-cache';
import type { DownCounter } from './breaker.js';
import type { LookupStore, SqlParam, SqlResult } from './types.js';
import { detach } from '../util/index.js';

export interface CacheOptions {
  /** false turns the cache off (the store is used directly). Default true. */
  enabled?: boolean;
  /** Lifetime of a cached hit, milliseconds. Default 30000. */
  ttlMs?: number;
  /** Lifetime of a cached miss (`null` / `false`), milliseconds; 0 disables negative caching. Default `ttlMs`. */
  negativeTtlMs?: number;
  /** Maximum number of cached entries. Default 10000. */
  max?: number;
  /**
   * Memory bound of the cache in bytes (estimated: UTF-16 size of key and value plus ~100 bytes per
   * entry), whichever of `max` and `maxBytes` is reached first evicts. Default 64 MiB (67,108,864).
   */
  maxBytes?: number;
  /**
   * Largest single entry cached, in bytes (same estimate). A larger value is returned but not cached,
   * so a few huge values cannot push everything else out. Default `maxBytes / 16` (4 MiB by default).
   */
  maxEntryBytes?: number;
  /**
   * Also cache `counter_get`. Default false: counters are rate data other processes update, and a
   * cached count would hide them; our own `counter_incr` invalidates either way.
   */
  counters?: boolean;
}

type Cached = { v: string | number | boolean | null };

/** Default `maxBytes`: 64 MiB. */
export const DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024;
/** Estimated bytes an entry holds: JS strings are UTF-16 (2 bytes a code unit) plus object/LRU overhead. */
const entrySize = (v: Cached, id: string): number => 100 + 2 * id.length + (typeof v.v === 'string' ? 2 * v.v.length : 8);

/**
 * Caches `key_get`, `key_exists` (and optionally `counter_get`) of the wrapped store in an lru-cache
 * with a TTL; misses are cached for `negativeTtlMs`. The cache holds at most `max` entries and
 * `maxBytes` bytes (estimated), and never a value over `maxEntryBytes`. Concurrent reads of one key share one store call,
 * unless the store's circuit breaker has opened since that call started (a frozen server may never answer it):
 * a read then asks the store again, which the breaker answers at once.
 * `key_set` and `counter_incr` drop the key's entries, and a read that started before a write never
 * stores its (possibly stale) answer. Failures are never cached. `sql_query` passes through.
 */
export class CachedLookupStore implements LookupStore {
  readonly type: string;
  private readonly cache: LRUCache<string, Cached>;
  /** Store calls under way by cache id, with the store's `downCount` when each started. */
  private readonly inflight = new Map<string, { p: Promise<Cached>; down: number }>();
  private readonly ttl: number;
  private readonly negTtl: number;
  private readonly counters: boolean;
  /** Bumped by each write; reads that straddle a write don't fill the cache. */
  private epoch = 0;
  readonly sqlQuery?: (query: string, params: SqlParam[]) => Promise<SqlResult>;

  constructor(
    readonly inner: LookupStore,
    opts: CacheOptions = {},
  ) {
    this.type = inner.type;
    this.ttl = opts.ttlMs ?? 30_000;
    this.negTtl = opts.negativeTtlMs ?? this.ttl;
    this.counters = opts.counters ?? false;
    const maxBytes = Math.max(1024, opts.maxBytes ?? DEFAULT_CACHE_MAX_BYTES);
    const maxEntryBytes = Math.min(maxBytes, Math.max(1, opts.maxEntryBytes ?? Math.floor(maxBytes / 16)));
    this.cache = new LRUCache({
      max: opts.max ?? 10_000,
      ttl: this.ttl,
      ttlAutopurge: false,
      maxSize: maxBytes,
      maxEntrySize: maxEntryBytes, // a larger entry is not stored (lru-cache skips it)
      sizeCalculation: entrySize,
    });
    if (inner.sqlQuery) this.sqlQuery = (q, p) => inner.sqlQuery!(q, p);
  }

  private read(id: string, load: () => Promise<Cached['v']>): Promise<Cached['v']> {
    const hit = this.cache.get(id);
    if (hit) return Promise.resolve(hit.v);
    const down = (this.inner as Partial<DownCounter>).downCount ?? 0;
    let f = this.inflight.get(id);
    if (f === undefined || f.down !== down) {
      const epoch = this.epoch;
      const entry = { p: undefined as unknown as Promise<Cached>, down };
      const done = (): void => {
        if (this.inflight.get(id) === entry) this.inflight.delete(id);
      };
      entry.p = load().then(
        (v) => {
          done();
          const negative = v === null || v === false;
          if (epoch === this.epoch && (!negative || this.negTtl > 0))
            this.cache.set(detach(id), { v }, { ttl: negative ? this.negTtl : this.ttl });
          return { v };
        },
        (e) => {
          done();
          throw e;
        },
      );
      this.inflight.set(id, entry);
      f = entry;
    }
    return f.p.then((c) => c.v);
  }

  private invalidate(key: string): void {
    this.epoch++;
    for (const id of ['g\0' + key, 'e\0' + key, 'c\0' + key]) {
      this.cache.delete(id);
      this.inflight.delete(id);
    }
  }

  keyGet(key: string): Promise<string | number | null> {
    return this.read('g\0' + key, () => this.inner.keyGet(key)) as Promise<string | number | null>;
  }
  keyExists(key: string): Promise<boolean> {
    return this.read('e\0' + key, () => this.inner.keyExists(key)) as Promise<boolean>;
  }
  async keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    this.invalidate(key);
    try {
      await this.inner.keySet(key, value, ttlMs);
    } finally {
      this.invalidate(key); // also drop what a read may have cached while the write was in flight
    }
  }
  counterGet(key: string): Promise<number> {
    if (!this.counters) return this.inner.counterGet(key);
    return this.read('c\0' + key, () => this.inner.counterGet(key)) as Promise<number>;
  }
  async counterIncr(key: string, by: number): Promise<number> {
    this.invalidate(key);
    try {
      return await this.inner.counterIncr(key, by);
    } finally {
      this.invalidate(key);
    }
  }
  /** Drops every cached entry. */
  clear(): void {
    this.epoch++;
    this.cache.clear();
    this.inflight.clear();
  }
  close(): Promise<void> {
    this.clear();
    return this.inner.close();
  }
}
