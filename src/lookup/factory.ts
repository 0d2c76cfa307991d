/** Builds the adapter for a `StoreLookup.store` configuration. */
import { CircuitBreakerStore, type BreakerOptions } from './breaker.js';
import { CachedLookupStore, type CacheOptions } from './cache.js';
import { LookupConfigError, parseLookupStoreConfig, type LookupStoreConfig } from './config.js';
import { MySqlStore } from './mysql.js';
import { PostgresStore } from './postgres.js';
import { createInMemoryStore, ShardedStore } from './redis.js';
import { SqliteStore } from './sqlite.js';
import type { LookupStore } from './types.js';

export interface CreateLookupStoreOptions {
  /** The read cache in front of the store; `{ enabled: false }` turns it off. Default: on, defaults of CacheOptions. */
  cache?: CacheOptions;
  /**
   * The circuit breaker between the cache and the store (src/lookup/breaker.ts): a store that keeps
   * failing is marked down and answers with an error at once until a background probe finds it
   * back. `{ enabled: false }` turns it off. Default: on, defaults of BreakerOptions.
   */
  breaker?: BreakerOptions;
}

/**
 * Creates the lookup store a StoreLookup describes, for lookups naming `namespace`. `config` is a parsed
 * LookupStoreConfig or the raw `x:LookupStore` JSON (validated here). Nothing connects until the first
 * call; secrets are resolved now, so a bad secret source fails at once. A store that is down fails
 * each call at once (see `breaker`) and recovers by itself.
 * @throws LookupConfigError naming the store for an invalid configuration (with its problems) or a
 *   secret that cannot be read (missing environment variable, unreadable file).
 */
export function createLookupStore(namespace: string, config: LookupStoreConfig | unknown, opts: CreateLookupStoreOptions = {}): LookupStore {
  const parsed = parseLookupStoreConfig(config);
  if (!parsed.ok)
    throw new LookupConfigError(namespace, `invalid configuration: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, parsed.errors);
  const c = parsed.value;
  let store: LookupStore;
  switch (c['@type']) {
    case 'PostgreSql':
      store = new PostgresStore(namespace, c);
      break;
    case 'MySql':
      store = new MySqlStore(namespace, c);
      break;
    case 'Sqlite':
      store = new SqliteStore(namespace, c);
      break;
    case 'Sharded':
      store = ShardedStore.create(namespace, c);
      break;
    default:
      store = createInMemoryStore(namespace, c);
  }
  if (opts.breaker?.enabled !== false) store = new CircuitBreakerStore(namespace, store, opts.breaker);
  return opts.cache?.enabled === false ? store : new CachedLookupStore(store, opts.cache);
}
