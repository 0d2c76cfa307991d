/** Lookup stores: the interface the evaluator calls, in-memory lists, and the database adapters. */
export * from './types.js';
export { StaticLookupList, MemoryStore, LookupMap, type StaticEntry } from './memory.js';
export { Glob, isGlob } from './glob.js';
export * from './config.js';
export { resolveSecret, maskSecrets } from './secret.js';
export { CachedLookupStore, DEFAULT_CACHE_MAX_BYTES, type CacheOptions } from './cache.js';
export { CircuitBreakerStore, PROBE_KEY, type BreakerOptions, type PartitionedStore } from './breaker.js';
export { NotStartedStore } from './not-started.js';
export { DEFAULT_SQL_MAX_ROWS } from './util.js';
export {
  HttpListStore,
  ListDownloadError,
  defaultListCacheDir,
  downloadList,
  parseListBody,
  type HttpListOptions,
  type HttpLookupInput,
} from './http-list.js';
export { createLookupStore, type CreateLookupStoreOptions } from './factory.js';
export type { PinnedHosts } from './store-pins.js';
export { buildLookupMap, type LookupSources, type LookupSourceOptions } from './sources.js';
export { PostgresStore, type RecyclingMethod } from './postgres.js';
export { MySqlStore } from './mysql.js';
export { SqliteStore } from './sqlite.js';
export {
  RedisLookupStore,
  ShardedStore,
  shardOf,
  COUNTER_PREFIX,
  MAX_PENDING_COMMANDS,
  keySlot,
  createRedisStore,
  createRedisClusterStore,
  createRedisSentinelStore,
} from './redis.js';
