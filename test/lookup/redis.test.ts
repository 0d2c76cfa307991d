import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTER_PREFIX, createLookupStore, shardOf, type LookupStore } from '../../src/lookup/index.js';
import { redisCli, startRedis, startRedisCluster, type RedisClusterServer, type RedisServer } from '../servers/index.js';
import { kvContract } from './contract.js';

let single: RedisServer;
let shardA: RedisServer;
let shardB: RedisServer;
let cluster: RedisClusterServer;
const stores: LookupStore[] = [];
const open = (ns: string, config: Record<string, unknown>) => {
  const s = createLookupStore(ns, config, { cache: { enabled: false } });
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

describe('faults', () => {
  it('a store that is never reachable fails every call within its timeout', async () => {
    const s = open('nowhere', { '@type': 'Redis', url: 'redis://127.0.0.1:1', timeout: 300 });
    const errs = await Promise.all([s.keyGet('a'), s.keySet('a', 'b'), s.counterIncr('c', 1)].map((p) => p.then(() => null, (e: unknown) => e)));
    for (const e of errs) expect((e as Error).message).toMatch(/^lookup store "nowhere": (key_get|key_set|counter_incr) (timed out after 300 ms|failed: .*ECONNREFUSED|failed: .*)/);
  });
});
