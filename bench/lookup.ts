/**
 * Lookups per second per store type, with and without the LRU read cache. Starts its own throwaway
 * servers (test/servers: PostgreSQL, MariaDB, Redis, Redis Cluster, Sentinel) on loopback.
 *
 * One task = one message's worth of lookups: BATCH concurrent `key_exists`/`key_get` calls over KEYS keys
 * (half present, half missing), as the engine issues them (pipelined / pooled, not one by one).
 * Ratios: cached vs uncached of the same store, and each store vs SQLite (the embedded default).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { createLookupStore, type LookupStore } from '../src/lookup/index.js';
import { startMariaDb, startPostgres, startRedis, startRedisCluster, startRedisSentinel } from '../test/servers/index.js';

// Not bench/common.ts: that module loads the rule engine, which this suite does not need.
function opsPerSec(bench: Bench, name: string): number {
  const r = bench.tasks.find((t) => t.name === name)?.result as unknown as { throughput?: { mean: number }; hz?: number } | undefined;
  const hz = r?.throughput?.mean ?? r?.hz;
  if (hz === undefined) throw new Error(`bench task ${name} has no result`);
  return hz;
}

const BATCH = 100;
const KEYS = 200;

export async function runLookupBench(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-bench-lookup-'));
  const [pg, my, redis, shardB, cluster, sentinel] = await Promise.all([
    startPostgres(),
    startMariaDb(),
    startRedis(),
    startRedis(),
    startRedisCluster({ masters: 3 }),
    startRedisSentinel(),
  ]);
  const configs: [string, Record<string, unknown>][] = [
    ['Sqlite', { '@type': 'Sqlite', path: join(dir, 'bench.db') }],
    ['PostgreSql', { '@type': 'PostgreSql', host: pg.host, port: pg.port, database: pg.database, authUsername: pg.user }],
    ['MySql', { '@type': 'MySql', host: my.host, port: my.port, database: my.database, authUsername: my.user, authSecret: { '@type': 'Value', secret: my.password } }],
    ['Redis', { '@type': 'Redis', url: redis.url }],
    ['RedisCluster', { '@type': 'RedisCluster', urls: cluster.urls, authUsername: null, readFromReplicas: false }],
    ['RedisSentinel', { '@type': 'RedisSentinel', urls: sentinel.urls, authUsername: null }],
    ['Sharded', { '@type': 'Sharded', stores: [{ '@type': 'Redis', url: redis.url }, { '@type': 'Redis', url: shardB.url }] }],
  ];
  const opened: LookupStore[] = [];
  try {
    const bench = new Bench({ time: 700, warmupTime: 200 });
    for (const [name, cfg] of configs) {
      const plain = createLookupStore(`bench-${name}`, cfg, { cache: { enabled: false } });
      const cached = createLookupStore(`bench-${name}`, cfg, { cache: { ttlMs: 60_000, max: 10_000 } });
      opened.push(plain, cached);
      for (let i = 0; i < KEYS; i += 2) await plain.keySet(`bench-key-${i}`, `value-${i}`);
      let round = 0;
      const batch = (s: LookupStore) => async () => {
        const base = (round++ * BATCH) % KEYS;
        const calls: Promise<unknown>[] = [];
        for (let i = 0; i < BATCH; i++) {
          const k = `bench-key-${(base + i) % KEYS}`;
          calls.push(i % 2 ? s.keyGet(k) : s.keyExists(k));
        }
        await Promise.all(calls);
      };
      bench.add(`${name} uncached`, batch(plain));
      bench.add(`${name} cached`, batch(cached));
    }
    await bench.run();
    const perSec = (task: string) => opsPerSec(bench, task) * BATCH;
    const base = perSec('Sqlite uncached');
    process.stdout.write(`\n## Lookups per second per store type (${BATCH} concurrent key_get/key_exists per task, half misses)\n`);
    console.table(
      configs.map(([name]) => {
        const u = perSec(`${name} uncached`);
        const c = perSec(`${name} cached`);
        return {
          store: name,
          'uncached lookups/s': Math.round(u),
          'cached lookups/s': Math.round(c),
          'cached ÷ uncached': Number((c / u).toFixed(1)),
          'uncached ÷ Sqlite': Number((u / base).toFixed(3)),
        };
      }),
    );
  } finally {
    await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
    await Promise.all([pg, my, redis, shardB, cluster, sentinel].map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runLookupBench();
