/**
 * `Redis`, `RedisCluster`, `RedisSentinel` and `Sharded` lookup stores on ioredis (Stalwart's registry schema).
 *
 * Keys and counters live natively: `key_get` GET, `key_exists` EXISTS, `key_set` SET (PX when a TTL is
 * given), `counter_get` GET and `counter_incr` INCRBY. Counters use the key prefix `spamrule-counter:` so
 * they stay a separate namespace from keys (§4.3: `key_get` on a counter key is missing); plain keys are
 * stored unprefixed so lists filled with `redis-cli SET` are readable as is.
 */
import type { xxh3 as Xxh3 } from '@node-rs/xxhash';
import { createRequire } from 'node:module';
import type { Cluster, ClusterNode, Redis, RedisOptions } from 'ioredis';
import type {
  InMemoryStoreBaseConfig,
  RedisClusterStoreConfig,
  RedisSentinelStoreConfig,
  RedisStoreConfig,
  ShardedStoreConfig,
} from './config.js';
import { loadIoredis, prefetch, type Ioredis } from './drivers.js';
import { resolveSecret } from './secret.js';
import type { LookupStore } from './types.js';
import { withTimeout } from './util.js';

export const COUNTER_PREFIX = 'spamrule-counter:';

/** Reconnect back-off (ms): quick first retries, then every 2 s, forever (reconnects happen by themselves). */
const reconnect = (times: number) => Math.min(times * 100, 2000);

function node(url: string): ClusterNode & { host: string; port: number } {
  const u = new URL(url.includes('://') ? url : `redis://${url}`);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
}

function common(timeout: number, createMs: number | null): RedisOptions {
  return {
    lazyConnect: true,
    connectTimeout: createMs ?? timeout,
    commandTimeout: timeout,
    // Fail fast: a command issued while disconnected is rejected at once instead of waiting in the
    // offline queue for a reconnect, and one cut off by a dropped connection is not retried; the
    // store's circuit breaker (breaker.ts) then answers for the dead server until a probe finds it back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    enableAutoPipelining: true,
    retryStrategy: reconnect,
  };
}

/**
 * AUTH arguments. The username only goes with a password: the schema defaults `authUsername` to
 * "stalwart" even when there is no secret, and `AUTH stalwart ""` would fail against a server without
 * ACLs (redis-rs, which Stalwart uses, likewise sends no AUTH without a password).
 */
function credentials(username: string | null, password: string | undefined): { username?: string; password?: string } {
  return password === undefined ? {} : { password, ...(username ? { username } : {}) };
}
function sentinelCredentials(username: string | null, password: string | undefined): { sentinelUsername?: string; sentinelPassword?: string } {
  const c = credentials(username, password);
  return { ...(c.username ? { sentinelUsername: c.username } : {}), ...(c.password ? { sentinelPassword: c.password } : {}) };
}

type Client = Redis | Cluster;
/**
 * Builds a store's client from the ioredis module once it is loaded. Typed opaquely (a function of
 * the ioredis module) so the public declarations name no ioredis type.
 */
export type RedisClientFactory = (ioredis: never) => unknown;

/**
 * A store over one ioredis client. The client multiplexes every call over one connection per node with
 * auto-pipelining (all lookups issued in one tick go out in one write), so a store never holds more
 * connections per node than `poolMaxConnections` (≥ 1). Every call fails within `timeout` ms with a
 * LookupStoreError; the client reconnects on its own. ioredis is imported when the first store is
 * created and the client is built on the first call.
 */
export class RedisLookupStore implements LookupStore {
  private closed = false;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  constructor(
    readonly namespace: string,
    readonly type: 'Redis' | 'RedisCluster' | 'RedisSentinel',
    private readonly create: RedisClientFactory,
    private readonly timeout: number,
  ) {
    prefetch(loadIoredis);
  }

  private connect(): Promise<Client> {
    if (this.client !== undefined) return Promise.resolve(this.client);
    this.connecting ??= loadIoredis(this.namespace).then(async (io) => {
      const client = (this.create as (io: Ioredis) => Client)(io);
      // ioredis reports connection failures as 'error' events; without a listener Node would crash.
      client.on('error', () => undefined);
      if (this.closed) client.disconnect();
      // Kept even if the first connection fails: ioredis reconnects by itself, and meanwhile calls
      // fail at once (no offline queue).
      this.client = client;
      // With the offline queue off, a command sent before the connection is ready would fail:
      // the first call waits for it (bounded by connectTimeout and the call's timeout).
      await client.connect();
      return client;
    });
    return this.connecting;
  }

  private run<T>(op: string, fn: (c: Client) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    const c = this.client;
    // A client that gave up ('end': its first connection failed before any retry) is restarted.
    if (c !== undefined && c.status === 'end') c.connect().catch(() => undefined);
    return withTimeout(this.namespace, op, this.timeout, () => (c !== undefined ? fn(c) : this.connect().then(fn)));
  }

  keyGet(key: string): Promise<string | null> {
    return this.run('key_get', (c) => c.get(key));
  }
  keyExists(key: string): Promise<boolean> {
    return this.run('key_exists', async (c) => (await c.exists(key)) > 0);
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.run('key_set', async (c) => {
      if (ttlMs !== undefined && ttlMs > 0) await c.set(key, value, 'PX', Math.ceil(ttlMs));
      else await c.set(key, value);
    });
  }
  counterGet(key: string): Promise<number> {
    return this.run('counter_get', async (c) => Number((await c.get(COUNTER_PREFIX + key)) ?? 0));
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.run('counter_incr', (c) => c.incrby(COUNTER_PREFIX + key, Math.trunc(by)));
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // disconnect(), not quit(): quit waits for a reply a dead server never sends.
    this.client?.disconnect();
  }
}

/** `Redis`: one server at `url` (`redis://[user:pass@]host:port[/db]`, `rediss://` for TLS). */
export function createRedisStore(namespace: string, c: RedisStoreConfig): RedisLookupStore {
  const create = (io: Ioredis) => new io.Redis(c.url, { ...common(c.timeout, c.poolTimeoutCreate), protocol: 2 });
  return new RedisLookupStore(namespace, 'Redis', create, c.timeout);
}

/**
 * `RedisCluster`: seed nodes from `urls`. `readFromReplicas` sends reads to replicas (`scaleReads`);
 * `maxRetries` bounds redirections/retries per command, `minRetryWait`/`maxRetryWait` (ms) bound the
 * wait between them (redis-rs semantics mapped onto ioredis' retry delays).
 * @throws LookupConfigError when the secret cannot be read.
 */
export function createRedisClusterStore(namespace: string, c: RedisClusterStoreConfig): RedisLookupStore {
  const minWait = c.minRetryWait ?? 100;
  const maxWait = Math.max(c.maxRetryWait ?? 1024, minWait);
  const password = resolveSecret(c.authSecret, namespace);
  const create = (io: Ioredis) => new io.Cluster(c.urls.map(node), {
    lazyConnect: true,
    enableAutoPipelining: true,
    scaleReads: c.readFromReplicas ? 'slave' : 'master',
    maxRedirections: c.maxRetries ?? 16,
    retryDelayOnFailover: minWait,
    retryDelayOnClusterDown: minWait,
    retryDelayOnTryAgain: minWait,
    clusterRetryStrategy: (times) => Math.min(minWait * times, maxWait),
    redisOptions: {
      ...common(c.timeout, c.poolTimeoutCreate),
      ...credentials(c.authUsername, password),
      protocol: c.protocolVersion === 'resp3' ? 3 : 2,
    },
  });
  return new RedisLookupStore(namespace, 'RedisCluster', create, c.timeout);
}

/**
 * `RedisSentinel`: asks the sentinels at `urls` for the master of `serviceName` and follows failovers
 * (ioredis' failover detector). Data nodes use `authUsername`/`authSecret`, sentinels
 * `sentinelUsername`/`sentinelSecret`.
 * @throws LookupConfigError when a secret cannot be read.
 */
export function createRedisSentinelStore(namespace: string, c: RedisSentinelStoreConfig): RedisLookupStore {
  const password = resolveSecret(c.authSecret, namespace);
  const sentinelPassword = resolveSecret(c.sentinelSecret, namespace);
  const create = (io: Ioredis) => new io.Redis({
    ...common(c.timeout, c.poolTimeoutCreate),
    sentinels: c.urls.map(node),
    name: c.serviceName,
    ...credentials(c.authUsername, password),
    ...sentinelCredentials(c.sentinelUsername, sentinelPassword),
    sentinelRetryStrategy: reconnect,
    // Not ioredis' failoverDetector: its +switch-master disconnect can race a reconnect already under way
    // and leave the client closed for good (seen in the failover test). A dead master is found again
    // through the sentinels on reconnect; a demoted-but-alive one answers READONLY, which reconnects.
    failoverDetector: false,
    reconnectOnError: (e: Error) => (e.message.startsWith('READONLY') ? 2 : false),
    protocol: c.protocolVersion === 'resp3' ? 3 : 2,
  });
  return new RedisLookupStore(namespace, 'RedisSentinel', create, c.timeout);
}

export function createInMemoryStore(namespace: string, c: InMemoryStoreBaseConfig): RedisLookupStore {
  if (c['@type'] === 'Redis') return createRedisStore(namespace, c);
  if (c['@type'] === 'RedisCluster') return createRedisClusterStore(namespace, c);
  return createRedisSentinelStore(namespace, c);
}

let xxh3Module: typeof Xxh3 | undefined;
/** @node-rs/xxhash (a native addon, CommonJS) loaded on the first shard computation, not at import. */
function xxh3(): typeof Xxh3 {
  return (xxh3Module ??= (createRequire(import.meta.url)('@node-rs/xxhash') as { xxh3: typeof Xxh3 }).xxh3);
}

/**
 * The shard (0-based) a key belongs to among `n`: xxh3-64 of the key's UTF-8 bytes modulo `n`, as Stalwart
 * does, so the choice is the same across processes and restarts.
 */
export function shardOf(key: string, n: number): number {
  return Number(xxh3().xxh64(key) % BigInt(n));
}

/**
 * `Sharded`: ≥ 2 in-memory stores; every key and counter goes to `shardOf(key, stores.length)`.
 * Counters hash the same key as `key_*` calls, so a key and its counter share a shard.
 */
export class ShardedStore implements LookupStore {
  readonly type = 'Sharded';
  constructor(
    readonly namespace: string,
    readonly shards: LookupStore[],
  ) {}
  static create(namespace: string, c: ShardedStoreConfig): ShardedStore {
    return new ShardedStore(namespace, c.stores.map((s) => createInMemoryStore(namespace, s)));
  }
  private of(key: string): LookupStore {
    return this.shards[shardOf(key, this.shards.length)]!;
  }
  keyGet(key: string) {
    return this.of(key).keyGet(key);
  }
  keyExists(key: string) {
    return this.of(key).keyExists(key);
  }
  keySet(key: string, value: string, ttlMs?: number) {
    return this.of(key).keySet(key, value, ttlMs);
  }
  counterGet(key: string) {
    return this.of(key).counterGet(key);
  }
  counterIncr(key: string, by: number) {
    return this.of(key).counterIncr(key, by);
  }
  async close(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.close()));
  }
}
