/** Builds the adapter for a `StoreLookup.store` configuration. */
import { CircuitBreakerStore, type BreakerOptions } from './breaker.js';
import { CachedLookupStore, type CacheOptions } from './cache.js';
import { LookupConfigError, parseLookupStoreConfig, type LookupStoreConfig } from './config.js';
import { MySqlStore } from './mysql.js';
import { PostgresStore } from './postgres.js';
import { createInMemoryStore, ShardedStore } from './redis.js';
import { SqliteStore } from './sqlite.js';
import type { PinnedHosts } from './store-pins.js';
import type { LookupStore } from './types.js';

export interface CreateLookupStoreOptions {
  /** The read cache in front of the store; `{ enabled: false }` turns it off. Default: on, defaults of CacheOptions. */
  cache?: CacheOptions;
  /**
   * The circuit breaker between the cache and the store (src/lookup/breaker.ts): a store that keeps
   * failing is marked down and answers with an error at once until a background probe finds it
   * back. `{ enabled: false }` turns it off. Default: on, defaults of BreakerOptions. A `Sharded` store
   * gets one breaker per shard (a dead shard fails only its own keys), a `RedisCluster` one state per
   * master node.
   */
  breaker?: BreakerOptions;
  /**
   * Rows a `sql_query` SELECT may return (SQL stores); a query returning more fails with a
   * LookupStoreError (`… returned more than N rows …`) and reading stops there. Default 10,000.
   */
  sqlMaxRows?: number;
  /**
   * For a store written by a remote manager (JMAP): the addresses the store policy checked for its host
   * names, and its `allowedHosts` (src/lookup/store-pins.ts). The store then connects to each name at its
   * checked address only (TLS keeps the name), and to the nodes a Redis Cluster or Sentinel announces only
   * at addresses the policy allows. Default: none, the drivers resolve names themselves (the operator's own stores).
   */
  pinned?: PinnedHosts;
}

/**
 * Creates the lookup store a StoreLookup describes, for lookups naming `namespace`. `config` is a parsed
 * LookupStoreConfig or the raw `x:LookupStore` JSON (validated here). Nothing connects until the first
 * call; secrets are resolved now, so a bad secret source fails at once. A store that is down fails
 * each call at once (see `breaker`) and recovers by itself.
 * @throws LookupConfigError naming the store for an invalid configuration (with its problems), a
 *   secret that cannot be read (missing environment variable, unreadable file), or (with `pinned`) a host
 *   name that has no checked address.
 */
export function createLookupStore(namespace: string, config: LookupStoreConfig | unknown, opts: CreateLookupStoreOptions = {}): LookupStore {
  const parsed = parseLookupStoreConfig(config);
  if (!parsed.ok)
    throw new LookupConfigError(namespace, `invalid configuration: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, parsed.errors);
  const c = parsed.value;
  let store: LookupStore;
  const breaker = opts.breaker?.enabled !== false;
  const { pinned } = opts;
  const sql = { sqlMaxRows: opts.sqlMaxRows, ...(pinned !== undefined ? { pinned } : {}) };
  switch (c['@type']) {
    case 'PostgreSql':
      store = new PostgresStore(namespace, c, sql);
      break;
    case 'MySql':
      store = new MySqlStore(namespace, c, sql);
      break;
    case 'Sqlite':
      store = new SqliteStore(namespace, c, sql);
      break;
    case 'Sharded':
      // One breaker per shard, probing that shard: one breaker over the whole store would let a dead
      // shard (or the shard the probe key hashes to) fail the keys of every shard.
      store = ShardedStore.create(
        namespace,
        c,
        breaker ? (shard, i) => new CircuitBreakerStore(namespace, shard, { ...opts.breaker, label: `shard ${i}` }) : undefined,
        pinned,
      );
      break;
    default:
      store = createInMemoryStore(namespace, c, pinned);
  }
  if (breaker && c['@type'] !== 'Sharded') store = new CircuitBreakerStore(namespace, store, opts.breaker);
  return opts.cache?.enabled === false ? store : new CachedLookupStore(store, opts.cache);
}
