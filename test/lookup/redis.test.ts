import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CachedLookupStore, CircuitBreakerStore, COUNTER_PREFIX, createLookupStore, keySlot, MAX_PENDING_COMMANDS, shardOf, ShardedStore, type LookupStore } from '../../src/lookup/index.js';
import { freePort, redisCli, startRedis, startRedisCluster, waitFor, type RedisClusterServer, type RedisServer } from '../servers/index.js';
import { kvContract } from './contract.js';

let single: RedisServer;
let shardA: RedisServer;
let shardB: RedisServer;
let cluster: RedisClusterServer;
const stores: LookupStore[] = [];
const open = (ns: string, config: Record<string, unknown>, opts: Parameters<typeof createLookupStore>[2] = {}) => {
  const s = createLookupStore(ns, config, { cache: { enabled: false }, ...opts });
  stores.push(s);
  return s;
};

beforeAll(async () => {
  [single, shardA, shardB, cluster] = await Promise.all([startRedis(), startRedis(), startRedis(), startRedisCluster({ masters: 3 })]);
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all([single, shardA, shardB, cluster].map((s) => s?.stop()));
});

describe('Redis store', () => {
  let store: LookupStore;
  beforeAll(() => {
    store = open('redis-test', { '@type': 'Redis', url: single.url, timeout: 2000 });
  });
  kvContract(() => store, 'redis');

  it('keeps keys and counters natively (GET/SET, INCRBY under the counter prefix)', async () => {
    redisCli(single.port, 'SET', 'native-key', 'from-cli');
    expect(await store.keyGet('native-key')).toBe('from-cli');
    expect(await store.keyExists('native-key')).toBe(true);
    await store.counterIncr('hits', 3);
    expect(redisCli(single.port, 'GET', `${COUNTER_PREFIX}hits`)).toBe('3');
    await store.keySet('ttl-key', 'v', 60_000);
    expect(Number(redisCli(single.port, 'PTTL', 'ttl-key'))).toBeGreaterThan(50_000);
  });

  it('pipelines many lookups over one connection (never more than the pool)', async () => {
    const s = open('redis-pipe', { '@type': 'Redis', url: single.url, poolMaxConnections: 2 });
    const got = await Promise.all(Array.from({ length: 500 }, (_, i) => s.keyExists(`pipe-${i}`)));
    expect(got.every((v) => v === false)).toBe(true);
    const clients = redisCli(single.port, 'CLIENT', 'LIST').split('\n').filter((l) => !l.includes('cmd=client')).length;
    // one connection per store opened so far in this file (redis-test, redis-pipe), plus none extra
    expect(clients).toBe(2);
  });
});

describe('Redis Cluster store', () => {
  let store: LookupStore;
  beforeAll(() => {
    // Schema defaults otherwise (authUsername "stalwart" without a secret must not send AUTH).
    store = open('cluster-test', { '@type': 'RedisCluster', urls: { [cluster.urls[0]!]: true }, timeout: 3000, readFromReplicas: false });
  });
  kvContract(() => store, 'cluster');

  it('spreads keys over the masters by hash slot', async () => {
    await Promise.all(Array.from({ length: 60 }, (_, i) => store.keySet(`spread-${i}`, String(i))));
    const sizes = cluster.ports.map((p) => Number(redisCli(p, 'DBSIZE')));
    expect(sizes.every((n) => n > 0)).toBe(true);
    expect(await store.keyGet('spread-42')).toBe('42');
  });

  it('computes hash slots as the cluster does (hash tags included)', () => {
    for (const k of ['123456789', 'a', 'spamrule-probe', '{user1000}.following', 'foo{}{bar}', 'ünï', `${COUNTER_PREFIX}x`])
      expect(keySlot(k)).toBe(Number(redisCli(cluster.ports[0]!, 'CLUSTER', 'KEYSLOT', k)));
    expect(keySlot('123456789')).toBe(12739);
  });

  it('close() resolves once the sockets to every node have closed (ioredis reports the end before)', async () => {
    const sockets = () => process.getActiveResourcesInfo().filter((r) => r.startsWith('TCP')).length;
    const before = sockets();
    const s = createLookupStore('cluster-close', { '@type': 'RedisCluster', urls: cluster.urls, authUsername: null }, { cache: { enabled: false } });
    await Promise.all(Array.from({ length: 30 }, (_, i) => s.keySet(`close-${i}`, '1'))); // keys on every master
    expect(sockets()).toBeGreaterThan(before);
    await s.close();
    expect(sockets()).toBe(before);
  });

  it('speaks RESP3 when asked', async () => {
    const s = open('cluster-resp3', { '@type': 'RedisCluster', urls: cluster.urls, authUsername: null, protocolVersion: 'resp3', minRetryWait: 10, maxRetryWait: 500, maxRetries: 5 });
    await s.keySet('resp3', 'yes');
    expect(await s.keyGet('resp3')).toBe('yes');
    expect(await s.counterIncr('resp3-n', 2)).toBe(2);
  });
});

describe('Sharded store', () => {
  let store: LookupStore;
  beforeAll(() => {
    store = open('sharded-test', {
      '@type': 'Sharded',
      stores: [
        { '@type': 'Redis', url: shardA.url },
        { '@type': 'Redis', url: shardB.url },
      ],
    });
  });
  kvContract(() => store, 'sharded');

  it('uses xxh3-64 % n, so the shard of a key is fixed', () => {
    // xxh3-64("abc") = 0x78AF5F94892F3950 (reference vector); even → shard 0 of 2, 3 → shard 2 of 3.
    expect(shardOf('abc', 2)).toBe(0);
    expect(shardOf('abc', 3)).toBe(Number(0x78af5f94892f3950n % 3n));
    expect(shardOf('', 2)).toBe(Number(0x2d06800538d394c2n % 2n));
  });

  it('puts each key (and its counter) on the shard its hash names, and only there', async () => {
    const ports = [shardA.port, shardB.port];
    const keys = Array.from({ length: 40 }, (_, i) => `shard-key-${i}`);
    await Promise.all(keys.map((k) => store.keySet(k, k.toUpperCase())));
    await Promise.all(keys.map((k) => store.counterIncr(k, 1)));
    const perShard = [0, 0];
    for (const k of keys) {
      const home = shardOf(k, 2);
      perShard[home]!++;
      expect(redisCli(ports[home]!, 'GET', k)).toBe(k.toUpperCase());
      expect(redisCli(ports[home]!, 'GET', COUNTER_PREFIX + k)).toBe('1');
      expect(redisCli(ports[1 - home]!, 'EXISTS', k)).toBe('0');
    }
    expect(perShard[0]! > 5 && perShard[1]! > 5).toBe(true);
  });
});

describe('cache', () => {
  it('the default cache holds at most 64 MiB of big values read from Redis', async () => {
    const s = createLookupStore('redis-cache', { '@type': 'Redis', url: single.url, timeout: 5000 });
    stores.push(s);
    const MB = 1024 * 1024;
    for (let i = 0; i < 50; i++) await s.keySet(`cache-big-${i}`, String(i % 10).repeat(MB)); // ~2 MB each in memory (UTF-16)
    for (let i = 0; i < 50; i++) expect(((await s.keyGet(`cache-big-${i}`)) as string).length).toBe(MB);
    const lru = (s as unknown as { cache: { calculatedSize: number; size: number } }).cache;
    expect(lru.calculatedSize).toBeLessThanOrEqual(64 * MB);
    expect(lru.size).toBeGreaterThan(10);
    expect(lru.size).toBeLessThan(50);
    for (let i = 0; i < 50; i++) redisCli(single.port, 'DEL', `cache-big-${i}`);
  }, 60_000);
});

describe('counters', () => {
  it('a counter that is not an integer is an error naming it (not NaN), and does not open the breaker', async () => {
    const s = open('redis-counters', { '@type': 'Redis', url: single.url, timeout: 2000 });
    redisCli(single.port, 'SET', `${COUNTER_PREFIX}bad`, 'abc');
    for (let i = 0; i < 4; i++) {
      await expect(s.counterGet('bad')).rejects.toThrow(/^lookup store "redis-counters": counter "bad" holds "abc", not an integer$/);
      await expect(s.counterIncr('bad', 1)).rejects.toThrow(/^lookup store "redis-counters": counter_incr failed: counter "bad": ERR value is not an integer/);
    }
    expect((s as CircuitBreakerStore).isDown).toBe(false);
    expect(await s.counterIncr('fine', 2)).toBe(2);
  });
});

describe('faults', () => {
  it('a store that is never reachable fails every call within its timeout', async () => {
    const s = open('nowhere', { '@type': 'Redis', url: 'redis://127.0.0.1:1', timeout: 300 });
    const errs = await Promise.all([s.keyGet('a'), s.keySet('a', 'b'), s.counterIncr('c', 1)].map((p) => p.then(() => null, (e: unknown) => e)));
    for (const e of errs) expect((e as Error).message).toMatch(/^lookup store "nowhere": (key_get|key_set|counter_incr) (timed out after 300 ms|failed: .*ECONNREFUSED|failed: .*)/);
  });

  it('Sharded: one shard killed fails only its own keys (one breaker per shard, each probing its shard)', async () => {
    const [a, b] = await Promise.all([startRedis(), startRedis()]);
    try {
      const s = open('sharded-fault', { '@type': 'Sharded', stores: [{ '@type': 'Redis', url: a.url, timeout: 500 }, { '@type': 'Redis', url: b.url, timeout: 500 }] }, { breaker: { initialBackoffMs: 100, maxBackoffMs: 500 } });
      const keys = Array.from({ length: 40 }, (_, i) => `sf-${i}`);
      await Promise.all(keys.map((k) => s.keySet(k, k)));
      // Kill the shard the breaker's probe key used to hash to, the case that blocked every key before.
      const deadIdx = shardOf('spamrule-probe', 2);
      const dead = deadIdx === 0 ? a : b;
      const live = keys.filter((k) => shardOf(k, 2) !== deadIdx);
      const gone = keys.filter((k) => shardOf(k, 2) === deadIdx);
      expect(live.length > 5 && gone.length > 5).toBe(true);
      await dead.kill();
      await waitFor('the dead shard marked down', async () => {
        const e = await s.keyGet(gone[0]!).then(() => null, (x: Error) => x.message);
        return e !== null && new RegExp(`store is down \\(shard ${deadIdx}, for \\d+ s; last error: `).test(e);
      }, 20_000, 50);
      for (let round = 0; round < 5; round++) {
        const got = await Promise.all(live.map((k) => s.keyGet(k)));
        expect(got).toEqual(live);
        const failed = await Promise.all(gone.map((k) => s.keyGet(k).then(() => 'ok', () => 'failed')));
        expect(failed.every((x) => x === 'failed')).toBe(true);
      }
      await dead.start(); // empty again (no persistence)
      await waitFor('the shard back', async () => (await s.keyGet(gone[0]!).then(() => true, () => false)), 20_000, 100);
      await s.keySet(gone[0]!, 'again');
      expect(await s.keyGet(gone[0]!)).toBe('again');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 90_000);

  it('Sharded behind the read cache: a lookup does not join a frozen shard\'s call once that shard is marked down', async () => {
    const [a, b] = await Promise.all([startRedis(), startRedis()]);
    try {
      const config = { '@type': 'Sharded', stores: [{ '@type': 'Redis', url: a.url, timeout: 10_000 }, { '@type': 'Redis', url: b.url, timeout: 10_000 }] };
      const s = createLookupStore('sharded-frozen', config, { breaker: { slowCallMs: 300, initialBackoffMs: 60_000 } });
      stores.push(s);
      const keys = Array.from({ length: 40 }, (_, i) => `sz-${i}`);
      const frozenIdx = 0;
      const frozen = keys.filter((k) => shardOf(k, 2) === frozenIdx);
      const live = keys.filter((k) => shardOf(k, 2) !== frozenIdx);
      expect(frozen.length >= 5 && live.length >= 5).toBe(true);
      a.pause();
      try {
        // A popular key's call freezes on shard 0; three other keys of that shard open its breaker.
        const popular = s.keyExists(frozen[0]!).catch((e: unknown) => e);
        const others = frozen.slice(1, 4).map((k) => s.keyExists(k).catch((e: unknown) => e));
        const sharded = (s as CachedLookupStore).inner as ShardedStore;
        await waitFor('shard 0 marked down', async () => (sharded.shards[0] as CircuitBreakerStore).isDown, 3_000, 20);
        expect(sharded.downCount).toBe(1);
        // A new lookup of the popular key is answered at once instead of waiting for the 10 s timeout.
        const t0 = performance.now();
        await expect(s.keyExists(frozen[0]!)).rejects.toThrow(/store is down \(shard 0, /);
        expect(performance.now() - t0).toBeLessThan(100);
        // The other shard answers as ever.
        expect(await Promise.all(live.map((k) => s.keyExists(k)))).toEqual(live.map(() => false));
        a.resume();
        expect(await popular).toBe(false);
        expect(await Promise.all(others)).toEqual([false, false, false]);
      } finally {
        a.resume();
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 60_000);

  it('Redis Cluster with cluster-require-full-coverage no: a dead master fails only the keys of its slots', async () => {
    const c = await startRedisCluster({ masters: 3 });
    try {
      for (const port of c.ports) redisCli(port, 'CONFIG', 'SET', 'cluster-require-full-coverage', 'no');
      const s = open('cluster-partial', { '@type': 'RedisCluster', urls: c.urls, authUsername: null, timeout: 500, maxRetries: 2, minRetryWait: 10, maxRetryWait: 100 }, { breaker: { initialBackoffMs: 100, maxBackoffMs: 500 } });
      const keys = Array.from({ length: 30 }, (_, i) => `cp-${i}`);
      await Promise.all(keys.map((k) => s.keySet(k, k)));
      // The master serving the probe key's slot dies: that slot no longer decides for the whole cluster.
      const probeSlot = keySlot('spamrule-probe');
      const owner = redisCli(c.ports[0]!, 'CLUSTER', 'NODES')
        .split('\n')
        .find((l) =>
          l.split(' ').slice(8).some((r) => {
            const [lo, hi] = r.split('-').map(Number);
            return lo! <= probeSlot && probeSlot <= (hi ?? lo)!;
          }),
        )!;
      const deadPort = Number(owner.split(' ')[1]!.split('@')[0]!.split(':').pop());
      expect(deadPort).toBeDefined();
      const gone = keys.filter((k) => redisCli(deadPort, 'EXISTS', k) === '1');
      const live = keys.filter((k) => !gone.includes(k));
      expect(live.length > 5 && gone.length > 2).toBe(true);
      try {
        redisCli(deadPort, 'SHUTDOWN', 'NOSAVE');
      } catch {
        // the connection drops as the server exits
      }
      const survivor = c.ports.find((p) => p !== deadPort)!;
      await waitFor('the survivors to mark the master failed, keeping cluster_state:ok', () => {
        const info = redisCli(survivor, 'CLUSTER', 'INFO');
        return info.includes('cluster_state:ok') && redisCli(survivor, 'CLUSTER', 'NODES').includes('fail');
      }, 30_000, 200);
      await waitFor('the dead master marked down', async () => {
        await Promise.all(keys.map((k) => s.keyGet(k).catch(() => null)));
        const e = await s.keyGet(gone[0]!).then(() => null, (x: Error) => x.message);
        return e !== null && /store is down \(node [^,]+:\d+, for \d+ s/.test(e);
      }, 30_000, 100);
      for (let round = 0; round < 3; round++) {
        const got = await Promise.all(live.map((k) => s.keyGet(k).catch((e: Error) => e.message)));
        expect(got).toEqual(live);
        await Promise.all(gone.map((k) => expect(s.keyGet(k)).rejects.toThrow(/lookup store "cluster-partial": /)));
      }
    } finally {
      await c.stop();
    }
  }, 120_000);

  it.each([
    ['a wrong password', (p: number) => `redis://:not-the-pw-42@127.0.0.1:${p}`, /WRONGPASS|invalid password|invalid username-password/],
    ['no password', (p: number) => `redis://127.0.0.1:${p}`, /NOAUTH/],
  ])('Redis with %s: the error names the cause, never the password', async (_what, url, cause) => {
    const r = await startRedis();
    try {
      redisCli(r.port, 'CONFIG', 'SET', 'requirepass', 'right-pw-1234');
      const s = open(`redis-auth-${_what.length}`, { '@type': 'Redis', url: url(r.port), timeout: 1000 }, { breaker: { enabled: false } });
      const msg = await s.keyGet('a').then(() => 'no error', (e: Error) => e.message);
      expect(msg).toMatch(/^lookup store "redis-auth-\d+": key_get (failed|timed out).*last connection error: /);
      expect(msg).toMatch(cause);
      expect(msg).not.toContain('not-the-pw-42');
      expect(msg).not.toContain('right-pw-1234');
    } finally {
      await r.stop();
    }
  });

  it('Redis Cluster without authSecret uses the credentials written in its URLs, which must agree (as redis-rs)', async () => {
    const c = await startRedisCluster({ masters: 3 });
    try {
      for (const port of c.ports) redisCli(port, 'CONFIG', 'SET', 'requirepass', 'cluster-pw-77');
      const withPw = c.urls.map((u) => u.replace('redis://', 'redis://:cluster-pw-77@'));
      const s = open('cluster-url-auth', { '@type': 'RedisCluster', urls: withPw, authUsername: null, timeout: 2000 }, { breaker: { enabled: false } });
      // Keys over every master: each node connection authenticated with the URLs' password.
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      for (const k of keys) await s.keySet(k, 'v');
      const sizes = c.ports.map((p) => Number(redisCli(p, '--no-auth-warning', '-a', 'cluster-pw-77', 'DBSIZE')));
      expect(sizes.filter((n) => n > 0).length).toBeGreaterThan(1);
      expect(await Promise.all(keys.map((k) => s.keyGet(k)))).toEqual(keys.map(() => 'v'));
      await s.close();
      // Without a password anywhere the nodes refuse it, and say why.
      const none = open('cluster-no-auth', { '@type': 'RedisCluster', urls: c.urls, authUsername: null, timeout: 1000, maxRetries: 1 }, { breaker: { enabled: false } });
      expect(await none.keyGet('k0').then(() => 'no error', (e: Error) => e.message)).toMatch(/NOAUTH|Failed to refresh slots cache|timed out/);
      await none.close();
      // URLs that disagree are refused when the store is created, the passwords masked.
      const mixed = [withPw[0]!, c.urls[1]!.replace('redis://', 'redis://:other-pw-99@')];
      expect(() => createLookupStore('cluster-mixed', { '@type': 'RedisCluster', urls: mixed })).toThrow(/urls: the URLs carry different user names or passwords/);
      expect(() => createLookupStore('cluster-mixed', { '@type': 'RedisCluster', urls: mixed })).not.toThrow(/other-pw-99|cluster-pw-77/);
    } finally {
      await c.stop();
    }
  }, 120_000);

  it('Redis connection errors name their cause: closed port, unresolvable host, TLS to a plain server', async () => {
    const closed = await freePort();
    const s1 = open('redis-closed', { '@type': 'Redis', url: `redis://127.0.0.1:${closed}`, timeout: 1000 }, { breaker: { enabled: false } });
    expect(await s1.keyGet('a').then(() => '', (e: Error) => e.message)).toMatch(/last connection error: .*ECONNREFUSED/);
    const s2 = open('redis-nohost', { '@type': 'Redis', url: 'redis://no-such-host.invalid:6379', timeout: 2000 }, { breaker: { enabled: false } });
    expect(await s2.keyGet('a').then(() => '', (e: Error) => e.message)).toMatch(/last connection error: .*(ENOTFOUND|EAI_AGAIN)/);
    // A plain server never completes the TLS handshake: the call says the connection is pending, and once
    // the connect timeout (poolTimeoutCreate) has fired, names it.
    const s3 = open('redis-tls', { '@type': 'Redis', url: `rediss://127.0.0.1:${single.port}`, timeout: 1000 }, { breaker: { enabled: false } });
    expect(await s3.keyGet('a').then(() => '', (e: Error) => e.message)).toMatch(
      /^lookup store "redis-tls": key_get timed out after 1000 ms \((not connected: the connection \(or its TLS handshake\) is still pending|last connection error: .*ETIMEDOUT)/,
    );
    const s4 = open('redis-tls-2', { '@type': 'Redis', url: `rediss://127.0.0.1:${single.port}`, timeout: 1500, poolTimeoutCreate: 300 }, { breaker: { enabled: false } });
    await s4.keyGet('a').catch(() => undefined);
    expect(await s4.keyGet('a').then(() => '', (e: Error) => e.message)).toMatch(/^lookup store "redis-tls-2": key_get (failed|timed out).*last connection error: .*ETIMEDOUT/);
  });

  it('a frozen Redis (SIGSTOP), breaker off: unanswered commands are capped, calls past the cap fail at once, and the store recovers', async () => {
    const r = await startRedis();
    try {
      const pid = Number(/process_id:(\d+)/.exec(redisCli(r.port, 'INFO', 'server'))![1]);
      const s = open('redis-frozen', { '@type': 'Redis', url: r.url, timeout: 2000 }, { breaker: { enabled: false } });
      await s.keySet('frozen', 'ok');
      process.kill(pid, 'SIGSTOP');
      try {
        const all: Promise<string>[] = [];
        for (let batch = 0; batch < 30; batch++) {
          for (let i = 0; i < 1000; i++) all.push(s.keyGet(`f-${batch}-${i}`).then(() => 'ok', (e: Error) => e.message));
          await new Promise((res) => setTimeout(res, 5)); // separate ticks: auto-pipelined batches are sent
        }
        const results = await Promise.all(all);
        const refused = results.filter((m) => m.includes(`${MAX_PENDING_COMMANDS} commands are already waiting for replies`)).length;
        expect(refused).toBeGreaterThanOrEqual(15_000);
        expect(results.every((m) => m.startsWith('lookup store "redis-frozen": key_get '))).toBe(true);
        const queued = (s as unknown as { client: { commandQueue: { length: number } } }).client.commandQueue.length;
        expect(queued).toBeLessThanOrEqual(MAX_PENDING_COMMANDS + 1000);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await waitFor('recovery after SIGCONT', async () => (await s.keyGet('frozen').catch(() => null)) === 'ok', 30_000, 200);
    } finally {
      await r.stop();
    }
  }, 90_000);
});
