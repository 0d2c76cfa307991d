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
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type {
  InMemoryStoreBaseConfig,
  RedisClusterStoreConfig,
  RedisSentinelStoreConfig,
  RedisStoreConfig,
  ShardedStoreConfig,
} from './config.js';
import { loadIoredis, prefetch, type Ioredis } from './drivers.js';
import { resolveSecret } from './secret.js';
import type { PartitionedStore } from './breaker.js';
import { LookupStoreError, type LookupStore } from './types.js';
import { pinnedConnector, sentinelConnector, sentinelNatCheck } from './redis-pins.js';
import { checkRedisUrl, node, storeTlsMode, tlsMode, tlsOptions, urlCredentials } from './redis-urls.js';
import { storePins, type HostPins, type PinnedHosts } from './store-pins.js';
import { closedWithin, parseCounter, RequestRefusedError, socketClosed, withTimeout, type ClosingSocket } from './util.js';

export const COUNTER_PREFIX = 'spamrule-counter:';

/**
 * Most commands a store lets wait for replies at once. ioredis keeps a command that timed out in its
 * queue until the server answers it (replies are matched in order), so a frozen server (connection
 * open, no replies) would let the queue, and the heap, grow for as long as calls keep coming. Past
 * this many unanswered commands a call fails at once without being sent. With the offline queue off and
 * `maxRetriesPerRequest: 0` (see `common`), nothing else queues: a disconnected client rejects at once.
 * 10,000 small lookups are a few MB; normal traffic never gets near it, since a live server answers
 * within milliseconds.
 */
export const MAX_PENDING_COMMANDS = 10_000;

const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** The Redis Cluster hash slot (0–16383) of a key: CRC16-XMODEM of the key, or of its `{hash tag}`, mod 16384. */
export function keySlot(key: string): number {
  let buf = Buffer.from(key, 'utf8');
  const open = buf.indexOf(0x7b);
  if (open >= 0) {
    const close = buf.indexOf(0x7d, open + 1);
    if (close > open + 1) buf = buf.subarray(open + 1, close);
  }
  let crc = 0;
  for (const b of buf) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xff]!;
  return crc & 16383;
}

/** `lookup store "ns": rest` → `rest`. */
const stripPrefix = (namespace: string, message: string): string => {
  const prefix = `lookup store "${namespace}": `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
};

/** Reconnect back-off (ms): quick first retries, then every 2 s, forever (reconnects happen by themselves). */
const reconnect = (times: number) => Math.min(times * 100, 2000);

/**
 * A sentinel at its pinned address (unchanged without pins). Every host of the store's own configuration has a
 * route: `storePins` refused the store otherwise, and its addresses passed this same policy when it started.
 */
function pinnedNode<N extends { host: string }>(n: N, pins: HostPins | undefined): N {
  const route = pins?.route(n.host);
  return route === undefined || 'problem' in route ? n : { ...n, host: route.host };
}

/** A Cluster `dnsLookup` answering each seed name with its pinned address (an error for any other name). */
function pinnedLookup(pins: HostPins): (hostname: string, callback: (err: NodeJS.ErrnoException | null, address: string) => void) => void {
  return (hostname, callback) => {
    const route = pins.route(hostname);
    if ('problem' in route) callback(Object.assign(new Error(route.problem), { code: 'ESPAMRULE_ADDRESS' }), '');
    else callback(null, route.host);
  };
}

/** A Cluster `dnsLookup` that leaves each seed name as it is (TLS: see createRedisClusterStore). */
function keepName(hostname: string, callback: (err: NodeJS.ErrnoException | null, address: string) => void): void {
  callback(null, hostname);
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
 * the ioredis module and of the store's {@link ClientHooks}) so the public declarations name no ioredis type.
 */
export type RedisClientFactory = (ioredis: never, hooks: never) => unknown;
/** What a store offers the client it builds: `socketError` records an error of one of the client's sockets. */
interface ClientHooks {
  socketError(e: Error): void;
}
type Factory = (io: Ioredis, hooks: ClientHooks) => Client;

/**
 * A store over one ioredis client. The client multiplexes every call over one connection per node with
 * auto-pipelining (all lookups issued in one tick go out in one write), so a store never holds more
 * connections per node than `poolMaxConnections` (≥ 1). Every call fails within `timeout` ms with a
 * LookupStoreError; the client reconnects on its own. ioredis is imported when the first store is
 * created and the client is built on the first call.
 *
 * While the client is not connected, a failing call's message ends with the last connection error
 * ioredis reported (`(last connection error: connect ECONNREFUSED 127.0.0.1:6379)`, `WRONGPASS …`,
 * `NOAUTH …`, `getaddrinfo ENOTFOUND …`, a TLS error), never a password (`secrets` are masked).
 * At most {@link MAX_PENDING_COMMANDS} commands wait for replies; past that a call fails at once.
 * A counter holding something other than an integer fails `counter_get` with an error naming it.
 * Redis Cluster stores tell the circuit breaker which master serves a key (`partitionOf`).
 */
export class RedisLookupStore implements LookupStore, PartitionedStore {
  private closed = false;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  /** The last 'error' event of the client (or one of its cluster nodes) since it was last ready. */
  private lastError: Error | undefined;
  /**
   * The last error of a socket opened by the store's connector (TLS stores, pinned stores) since the client was
   * last ready: ioredis drops those of the connections it makes to ask a cluster node or a sentinel, and reports
   * "Failed to refresh slots cache." or "Connection is closed." instead, which say nothing of a refused certificate.
   */
  private lastSocketError: Error | undefined;
  constructor(
    readonly namespace: string,
    readonly type: 'Redis' | 'RedisCluster' | 'RedisSentinel',
    private readonly create: RedisClientFactory,
    private readonly timeout: number,
    private readonly secrets: (string | undefined)[] = [],
  ) {
    prefetch(loadIoredis);
  }

  /** The master (`host:port`) serving `key` (or its counter) in a Redis Cluster, once the slots are known. */
  partitionOf(key: string, counter: boolean): string | undefined {
    if (this.type !== 'RedisCluster' || this.client === undefined) return undefined;
    const slots = (this.client as Cluster).slots as (string[] | undefined)[] | undefined;
    return slots?.[keySlot(counter ? COUNTER_PREFIX + key : key)]?.[0];
  }

  /**
   * Commands waiting for a reply or a connection, over all of the client's connections: sent and
   * unanswered (`commandQueue`), offline, and auto-pipelined ones waiting for the running pipeline
   * (`_autoPipelines`: ioredis runs one pipeline at a time, so behind a frozen server they pile up there).
   */
  private pending(c: Client): number {
    type Queues = { commandQueue?: { length: number }; offlineQueue?: { length: number }; _autoPipelines?: Map<string, { length?: number }> };
    const q = (r: unknown): number => {
      const x = r as Queues;
      let n = (x.commandQueue?.length ?? 0) + (x.offlineQueue?.length ?? 0);
      for (const p of x._autoPipelines?.values() ?? []) n += p.length ?? 0;
      return n;
    };
    let n = q(c);
    if (this.type === 'RedisCluster') for (const node of (c as Cluster).nodes('all')) n += q(node);
    return n;
  }

  private mask(message: string): string {
    let m = message;
    for (const s of this.secrets) if (s !== undefined && s.length >= 3) m = m.split(s).join('***');
    return m;
  }

  /** Adds the last connection error to a failure while the client is not connected (see the class docs). */
  private explain(e: unknown): unknown {
    const last = this.lastError;
    const status = this.client?.status;
    if (!(e instanceof LookupStoreError) || status === undefined || status === 'ready') return e;
    const text = (x: Error): string => this.mask(x.message || (x as { code?: string }).code || x.name);
    const sock = this.lastSocketError;
    const socketWhy = sock !== undefined && (last === undefined || !text(last).includes(text(sock))) ? `; socket error: ${text(sock)}` : '';
    const why =
      last !== undefined
        ? `last connection error: ${text(last)}${socketWhy}`
        : `not connected: the connection (or its TLS handshake) is still pending, status ${status}${socketWhy}`;
    if (e.message.includes(why)) return e;
    return new LookupStoreError(this.namespace, `${stripPrefix(this.namespace, e.message)} (${why})`, { cause: e });
  }

  private connect(): Promise<Client> {
    if (this.client !== undefined) return Promise.resolve(this.client);
    this.connecting ??= loadIoredis(this.namespace).then(async (io) => {
      const client = (this.create as Factory)(io, { socketError: (e) => (this.lastSocketError = e) });
      // ioredis reports connection failures as 'error' events (cluster nodes as 'node error'); without a
      // listener Node would crash. The last one explains later failures (see `explain`).
      const keep = (e: unknown) => {
        if (e instanceof Error) this.lastError = e;
      };
      client.on('error', keep);
      client.on('node error', keep);
      client.on('ready', () => {
        this.lastError = undefined;
        this.lastSocketError = undefined;
      });
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
    if (c !== undefined && this.pending(c) >= MAX_PENDING_COMMANDS)
      return Promise.reject(
        this.explain(new LookupStoreError(this.namespace, `${op} failed: ${MAX_PENDING_COMMANDS} commands are already waiting for replies (server not answering)`)),
      );
    return withTimeout(this.namespace, op, this.timeout, () => (c !== undefined ? fn(c) : this.connect().then(fn))).catch((e: unknown) => {
      throw this.explain(e);
    });
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
    return this.run('counter_get', async (c) => parseCounter(this.namespace, key, await c.get(COUNTER_PREFIX + key)));
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.run('counter_incr', (c) =>
      c.incrby(COUNTER_PREFIX + key, Math.trunc(by)).catch((e: unknown) => {
        // "ERR value is not an integer or out of range": name the counter (the reply stays the cause).
        if (e instanceof Error && e.name === 'ReplyError') throw new RequestRefusedError(this.namespace, `counter_incr failed: counter "${key}": ${e.message}`, { cause: e });
        throw e;
      }),
    );
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const c = this.client;
    if (c === undefined) return; // a connect under way disconnects by itself (see connect)
    // disconnect() returns before the sockets have closed (a cluster even reports 'end' before its nodes'
    // sockets have), so close() waits for the sockets themselves: one per node of a cluster.
    const nodes: readonly (Redis | Cluster)[] = 'nodes' in c ? c.nodes('all') : [c];
    const closes = nodes.map((n) => socketClosed((n as { stream?: ClosingSocket }).stream));
    // disconnect(), not quit(): quit waits for a reply a dead server never sends.
    c.disconnect();
    await closedWithin(closes);
  }
}

/**
 * `Redis`: one server at `url` (`redis://[user:pass@]host:port[/db]`; `rediss://` for TLS, the certificate
 * checked against the host name, `rediss://…#insecure` accepting any certificate, as redis-rs). TLS sends
 * the host name as `servername` (SNI). With `pinned` (a store written over JMAP: src/lookup/store-pins.ts),
 * a host name is connected to at the address the store policy checked, with TLS `servername` the name.
 * @throws LookupConfigError for a URL that is not a Redis URL, or a host name without an address in `pinned`.
 */
export function createRedisStore(namespace: string, c: RedisStoreConfig, pinned?: PinnedHosts): RedisLookupStore {
  checkRedisUrl(namespace, 'url', c.url, false);
  const pins = storePins(namespace, c, pinned);
  const tls = c.url.startsWith('/') ? undefined : tlsOptions(tlsMode(c.url));
  const routed = pins !== undefined || tls !== undefined;
  // ioredis sets `tls` itself for a rediss:// URL, but reads no #insecure: the options given say which.
  const create: Factory = (io, hooks) =>
    new io.Redis(c.url, {
      ...common(c.timeout, c.poolTimeoutCreate),
      protocol: 2,
      ...(tls !== undefined ? { tls } : {}),
      ...(routed ? { Connector: pinnedConnector(io, pins, hooks.socketError) } : {}),
    });
  let secret: string | undefined;
  try {
    secret = decodeURIComponent(new URL(c.url).password) || undefined;
  } catch {
    secret = undefined;
  }
  return new RedisLookupStore(namespace, 'Redis', create, c.timeout, [secret]);
}

/**
 * `RedisCluster`: seed nodes from `urls`. `readFromReplicas` sends reads to replicas (`scaleReads`);
 * Credentials: `authUsername`/`authSecret`; without `authSecret`, those written in the URLs
 * (`redis://user:password@host:port`), which must then be the same in every URL, as redis-rs takes them.
 * `maxRetries` bounds redirections/retries per command, `minRetryWait`/`maxRetryWait` (ms) bound the
 * wait between them (redis-rs semantics mapped onto ioredis' retry delays). With `pinned` (a store written
 * over JMAP: src/lookup/store-pins.ts), the seed names are connected to at the addresses the store policy
 * checked, and every node connection, announced nodes included (CLUSTER SLOTS, MOVED, ASK), goes through
 * the pins: a node at an address the policy refuses fails to connect with the reason.
 *
 * TLS: `rediss://` URLs make every node connection TLS, the certificate checked against the host the
 * connection is for (with `servername`, SNI, that host when it is a name): a seed node's name (seed names are
 * not resolved to addresses beforehand, so that the check is the name's; ioredis' `dnsLookup` is the
 * identity, as ioredis documents for TLS clusters such as AWS ElastiCache), and for the nodes the cluster
 * announces, what it announces (an IP address, checked against the certificate's IP addresses, or a host
 * name with `cluster-preferred-endpoint-type hostname`), as redis-rs does. `rediss://…#insecure` accepts any
 * certificate. All URLs must agree on the scheme and `#insecure`.
 * @throws LookupConfigError when the secret cannot be read, a host name has no address in `pinned`, or the
 *   URLs mix TLS modes.
 */
export function createRedisClusterStore(namespace: string, c: RedisClusterStoreConfig, pinned?: PinnedHosts): RedisLookupStore {
  for (const u of c.urls) checkRedisUrl(namespace, 'urls', u, true);
  const tls = tlsOptions(storeTlsMode(namespace, c.urls));
  const pins = storePins(namespace, c, pinned);
  const minWait = c.minRetryWait ?? 100;
  const maxWait = Math.max(c.maxRetryWait ?? 1024, minWait);
  const password = resolveSecret(c.authSecret, namespace);
  // Without authSecret, the URLs' own credentials (redis-rs takes the first URL's; they must all agree).
  const auth = password !== undefined ? credentials(c.authUsername, password) : urlCredentials(namespace, c.urls);
  const create: Factory = (io, hooks) => new io.Cluster(c.urls.map(node), {
    lazyConnect: true,
    enableAutoPipelining: true,
    scaleReads: c.readFromReplicas ? 'slave' : 'master',
    maxRedirections: c.maxRetries ?? 16,
    retryDelayOnFailover: minWait,
    retryDelayOnClusterDown: minWait,
    retryDelayOnTryAgain: minWait,
    clusterRetryStrategy: (times) => Math.min(minWait * times, maxWait),
    // TLS: seed names stay names (the connector resolves them, or routes them to their pins) for the certificate
    // check. Plain and pinned: the seed names resolve to their checked addresses, never through DNS.
    ...(tls !== undefined ? { dnsLookup: keepName } : pins !== undefined ? { dnsLookup: pinnedLookup(pins) } : {}),
    redisOptions: {
      ...common(c.timeout, c.poolTimeoutCreate),
      ...(tls !== undefined ? { tls } : {}),
      ...(pins !== undefined || tls !== undefined ? { Connector: pinnedConnector(io, pins, hooks.socketError) } : {}),
      ...auth,
      protocol: c.protocolVersion === 'resp3' ? 3 : 2,
    },
  });
  return new RedisLookupStore(namespace, 'RedisCluster', create, c.timeout, [password]);
}

/**
 * `RedisSentinel`: asks the sentinels at `urls` for the master of `serviceName` and follows failovers (on
 * reconnect, and when a demoted master answers READONLY; not ioredis' failover detector, see below). Data
 * nodes use `authUsername`/`authSecret`, sentinels `sentinelUsername`/`sentinelSecret` or, without
 * `sentinelSecret`, the credentials written in the URLs (the same in every URL: ioredis has one sentinel password). With `pinned` (a store written over JMAP: src/lookup/store-pins.ts),
 * the sentinels are connected to at the addresses the store policy checked, only those (ioredis'
 * `updateSentinels`, which adds the sentinels a sentinel lists, is off), and the master a sentinel names is
 * connected to only when the pins allow its address; otherwise that sentinel counts as failed, with the reason.
 *
 * TLS, as Stalwart: `rediss://` sentinel URLs make the connections to the sentinels and to the master they name
 * TLS (ioredis `sentinelTLS`, and `tls` with `enableTLSForSentinelMode`), each certificate checked against the
 * host it is for, with `servername` (SNI) that host when it is a name: a sentinel's name from `urls` (pinned: the
 * connection goes to the checked address, the check is the name's), the master's address as the sentinel
 * names it (an IP address, or a host name with `announce-hostnames yes`), as redis-rs does.
 * `rediss://…#insecure` accepts any certificate. All URLs must agree on the scheme and `#insecure`.
 * @throws LookupConfigError when a secret cannot be read, a host name has no address in `pinned`, or the URLs
 *   mix TLS modes.
 */
export function createRedisSentinelStore(namespace: string, c: RedisSentinelStoreConfig, pinned?: PinnedHosts): RedisLookupStore {
  for (const u of c.urls) checkRedisUrl(namespace, 'urls', u, true);
  const tls = tlsOptions(storeTlsMode(namespace, c.urls));
  const pins = storePins(namespace, c, pinned);
  const password = resolveSecret(c.authSecret, namespace);
  const sentinelPassword = resolveSecret(c.sentinelSecret, namespace);
  const fromUrls = sentinelPassword === undefined ? urlCredentials(namespace, c.urls) : {};
  const sentinelUrlCredentials = {
    ...(fromUrls.password !== undefined ? { sentinelPassword: fromUrls.password } : {}),
    ...(fromUrls.username !== undefined ? { sentinelUsername: fromUrls.username } : {}),
  };
  const create: Factory = (io, hooks) => new io.Redis({
    ...common(c.timeout, c.poolTimeoutCreate),
    // TLS: the sentinels keep their names and are connected to through the connector (pins, servername);
    // plain: a pinned sentinel is given by its checked address.
    ...(tls !== undefined
      ? { sentinels: c.urls.map(node), tls, sentinelTLS: tls, enableTLSForSentinelMode: true, Connector: sentinelConnector(io, pinnedConnector(io, pins, hooks.socketError)), natMap: sentinelNatCheck(pins) }
      : { sentinels: c.urls.map((u) => pinnedNode(node(u), pins)), ...(pins !== undefined ? { natMap: sentinelNatCheck(pins) } : {}) }),
    ...(pins !== undefined ? { updateSentinels: false } : {}),
    name: c.serviceName,
    ...credentials(c.authUsername, password),
    // Without sentinelSecret, the sentinel URLs' own credentials (redis-rs connects to each sentinel with its URL's).
    ...(sentinelPassword !== undefined ? sentinelCredentials(c.sentinelUsername, sentinelPassword) : sentinelUrlCredentials),
    sentinelRetryStrategy: reconnect,
    // Not ioredis' failoverDetector: its +switch-master disconnect can race a reconnect already under way
    // and leave the client closed for good (seen in the failover test). A dead master is found again
    // through the sentinels on reconnect; a demoted-but-alive one answers READONLY, which reconnects.
    failoverDetector: false,
    reconnectOnError: (e: Error) => (e.message.startsWith('READONLY') ? 2 : false),
    protocol: c.protocolVersion === 'resp3' ? 3 : 2,
  });
  return new RedisLookupStore(namespace, 'RedisSentinel', create, c.timeout, [password, sentinelPassword]);
}

/** A Redis, Redis Cluster or Redis Sentinel store; `pinned` as each of them takes it. */
export function createInMemoryStore(namespace: string, c: InMemoryStoreBaseConfig, pinned?: PinnedHosts): RedisLookupStore {
  if (c['@type'] === 'Redis') return createRedisStore(namespace, c, pinned);
  if (c['@type'] === 'RedisCluster') return createRedisClusterStore(namespace, c, pinned);
  return createRedisSentinelStore(namespace, c, pinned);
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
  /**
   * Builds the shards of `c`; `wrap` (createLookupStore passes a per-shard circuit breaker) is applied
   * to each shard with its 0-based index; `pinned` goes to each shard (see `createRedisStore`).
   */
  static create(namespace: string, c: ShardedStoreConfig, wrap?: (shard: LookupStore, index: number) => LookupStore, pinned?: PinnedHosts): ShardedStore {
    return new ShardedStore(
      namespace,
      c.stores.map((s, i) => {
        const shard = createInMemoryStore(namespace, s, pinned);
        return wrap ? wrap(shard, i) : shard;
      }),
    );
  }
  private of(key: string): LookupStore {
    return this.shards[shardOf(key, this.shards.length)]!;
  }
  /** How many times a shard's breaker has opened, in all (the read cache's `DownCounter`). */
  get downCount(): number {
    let n = 0;
    for (const s of this.shards) n += (s as Partial<{ downCount: number }>).downCount ?? 0;
    return n;
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
