/**
 * In-memory lookup stores.
 *
 * - {@link StaticLookupList}: Stalwart's `MemoryLookupKey` / `MemoryLookupKeyValue` namespaces
 *   (`trusted-domains`, `url-redirectors`, …). Read-only: `key_set`/`counter_*` reject (NotSupported),
 *   as in Stalwart. Exact entries are checked first, then glob patterns in insertion order.
 * - {@link MemoryStore}: a writable in-process key/value + counter store, used as the default
 *   store (`""`/`"*"` namespaces) and for tests. Keys and counters are separate namespaces (§4.3).
 */
import { Glob, isGlob, unescapeGlob } from './glob.js';
import { LookupNotSupportedError, type LookupStore } from './types.js';

export interface StaticEntry {
  key: string;
  /** For MemoryLookupKeyValue entries; absent for plain keys. */
  value?: string;
  /** Stalwart's `isGlobPattern`; when omitted, a key with an unescaped `*`/`?` is a pattern. */
  isGlobPattern?: boolean;
}

export class StaticLookupList implements LookupStore {
  readonly type = 'Memory';
  private readonly exact = new Map<string, string | number>();
  private readonly globs: { glob: Glob; value: string | number }[] = [];

  constructor(
    readonly namespace: string,
    entries: Iterable<StaticEntry | string> = [],
  ) {
    for (const e of entries) this.add(typeof e === 'string' ? { key: e } : e);
  }

  /** Adds one entry. A key-only entry reads back as Integer 1 through `key_get`. */
  add(entry: StaticEntry): void {
    const value = entry.value ?? 1;
    const glob = entry.isGlobPattern ?? isGlob(entry.key);
    if (glob && isGlob(entry.key)) this.globs.push({ glob: new Glob(entry.key), value });
    else this.exact.set(glob ? unescapeGlob(entry.key) : entry.key, value);
  }

  get size(): number {
    return this.exact.size + this.globs.length;
  }

  private find(key: string): string | number | null {
    const v = this.exact.get(key);
    if (v !== undefined) return v;
    for (const g of this.globs) if (g.glob.matches(key)) return g.value;
    return null;
  }

  async keyGet(key: string): Promise<string | number | null> {
    return this.find(key);
  }
  async keyExists(key: string): Promise<boolean> {
    return this.find(key) !== null;
  }
  /** Synchronous variants, used by the evaluator's fast path for static lists. */
  hasSync(key: string): boolean {
    return this.find(key) !== null;
  }
  getSync(key: string): string | number | null {
    return this.find(key);
  }
  async keySet(): Promise<void> {
    throw new LookupNotSupportedError(this.namespace, 'key_set');
  }
  async counterGet(): Promise<number> {
    throw new LookupNotSupportedError(this.namespace, 'counter_get');
  }
  async counterIncr(): Promise<number> {
    throw new LookupNotSupportedError(this.namespace, 'counter_incr');
  }
  async close(): Promise<void> {}
}

/** Writable in-process store (keys with optional TTL in milliseconds, and counters). */
export class MemoryStore implements LookupStore {
  readonly type = 'Memory';
  private readonly keys = new Map<string, { value: string; expires: number }>();
  private readonly counters = new Map<string, number>();

  constructor(readonly namespace = '') {}

  async keyGet(key: string): Promise<string | null> {
    const e = this.keys.get(key);
    if (e === undefined) return null;
    if (e.expires !== 0 && e.expires <= Date.now()) {
      this.keys.delete(key);
      return null;
    }
    return e.value;
  }
  async keyExists(key: string): Promise<boolean> {
    return (await this.keyGet(key)) !== null;
  }
  async keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    this.keys.set(key, { value, expires: ttlMs && ttlMs > 0 ? Date.now() + ttlMs : 0 });
  }
  async counterGet(key: string): Promise<number> {
    return this.counters.get(key) ?? 0;
  }
  async counterIncr(key: string, by: number): Promise<number> {
    const n = (this.counters.get(key) ?? 0) + by;
    this.counters.set(key, n);
    return n;
  }
  async close(): Promise<void> {}
}

/**
 * Namespace → store, with a default writable in-memory store for `""` and `"*"`: what `SpamEngine`'s
 * `lookups` is. `get` answers `undefined` for an unknown namespace (its lookups answer `""`). Whoever
 * holds the map closes its stores with `close()`; an engine owns the map it is given.
 */
export class LookupMap {
  private readonly stores = new Map<string, LookupStore>();
  constructor(readonly defaultStore: LookupStore = new MemoryStore('')) {}
  set(namespace: string, store: LookupStore): this {
    this.stores.set(namespace, store);
    return this;
  }
  delete(namespace: string): boolean {
    return this.stores.delete(namespace);
  }
  get(namespace: string): LookupStore | undefined {
    if (namespace === '' || namespace === '*') return this.defaultStore;
    return this.stores.get(namespace);
  }
  namespaces(): string[] {
    return [...this.stores.keys()];
  }
  /** Closes every store, the default one included, at once; a store that fails to close is ignored. Never rejects. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.stores.values(), this.defaultStore].map((s) => s.close()));
  }
}
