/**
 * `SpamEngine.close()` against real servers: an engine whose rules read a Redis, a PostgreSQL and a
 * SQLite store (built as a library user builds it, with engineOptionsFromBundle) leaves no connection
 * on the servers and no handle in the process once closed; a classify under way finishes first; a
 * classify after it rejects with EngineClosedError; a second close is the first one. And what the
 * engine owns: the DNS resolver's queries are cancelled and the classifier closed, unless kept.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createResolver, EngineClosedError, engineOptionsFromBundle, MemoryStore, openClassifier, SpamEngine, sqliteModelConfig, type SpamRuleInput,
} from '../../src/index.js';
import { TestDnsServer } from '../dns/server.js';
import { redisCli, startPostgres, startRedis, type PostgresServer, type RedisServer } from '../servers/index.js';

let redis: RedisServer;
let postgres: PostgresServer;
/** A connection of the test's own to PostgreSQL, opened before any baseline is taken. */
let watcher: pg.Client;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  watcher = new pg.Client({ host: postgres.host, port: postgres.port, user: postgres.user, database: postgres.database });
  await watcher.connect();
});
afterAll(async () => {
  await watcher?.end();
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

const APP = 'spamrule-close-test';
const reads = (name: string, ns: string): SpamRuleInput => ({
  '@type': 'Any', name, priority: 1, condition: { match: [{ if: `key_exists('${ns}', 'listed.example')`, then: `'${name}'` }], else: 'false' },
});
const MESSAGE = 'From: a@sender.example\r\nTo: b@example.net\r\nSubject: hello\r\n\r\nhi\r\n';

/** An engine with three real stores, as `engineOptionsFromBundle` builds it from a rule file's `stores`. */
function engineWithStores(): SpamEngine {
  const sqlite = join(mkdtempSync(join(tmpdir(), 'spamrule-close-')), 'lookup.sqlite3');
  const stores = [
    { namespace: 'redis', config: { '@type': 'Redis', url: redis.url } },
    {
      namespace: 'pg',
      config: {
        '@type': 'PostgreSql', host: postgres.host, port: postgres.port, database: postgres.database, authUsername: postgres.user,
        authSecret: { '@type': 'Value', secret: 'ignored-by-trust-auth' }, options: `-c application_name=${APP}`,
      },
    },
    { namespace: 'sqlite', config: { '@type': 'Sqlite', path: sqlite } },
  ];
  const rules = [reads('IN_REDIS', 'redis'), reads('IN_PG', 'pg'), reads('IN_SQLITE', 'sqlite')];
  return new SpamEngine({ ...engineOptionsFromBundle({ rules, stores }), analysis: false });
}

/** Connections the Redis server has, other than redis-cli's own. */
const redisClients = (): number => redisCli(redis.port, 'CLIENT', 'LIST').split('\n').filter((l) => l !== '' && !l.includes('cmd=client')).length;
const pgClients = async (): Promise<number> =>
  (await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [APP])).rows[0]!.n;
/** Polls `count` until it is 0 (up to 2 s): a server notices a client's close when it reads the socket's end. */
async function gone(count: () => number | Promise<number>): Promise<number> {
  for (let i = 0; i < 100 && (await count()) > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return count();
}
/** The process's sockets (TCP: Redis and PostgreSQL; UDP: c-ares) by kind. */
const sockets = (): string[] => process.getActiveResourcesInfo().filter((r) => /TCP|UDP|Pipe/.test(r)).sort();

describe('SpamEngine.close() with real stores', () => {
  it('closes every store connection the engine holds: the servers see them go and the process has no socket left', async () => {
    const before = sockets();
    const engine = engineWithStores();
    redisCli(redis.port, 'SET', 'listed.example', '1');
    const r = await engine.classify(MESSAGE);
    expect(r.errors).toEqual([]);
    expect(r.tags).toContain('IN_REDIS');
    // The lookups connected: one Redis client, at least one PostgreSQL backend, and sockets of ours.
    expect(redisClients()).toBe(1);
    expect(await pgClients()).toBeGreaterThanOrEqual(1);
    expect(sockets().length).toBeGreaterThan(before.length);

    await engine.close();
    expect(engine.closed).toBe(true);
    // Nothing left in the process as soon as close() resolves.
    expect(sockets()).toEqual(before);
    expect(await gone(redisClients)).toBe(0);
    expect(await gone(pgClients)).toBe(0);
  });

  it('rejects classify after close with EngineClosedError, refuses setLookup, and a second close is the first one', async () => {
    const engine = engineWithStores();
    await engine.classify(MESSAGE);
    const first = engine.close();
    expect(engine.close()).toBe(first);
    await first;
    await expect(engine.close()).resolves.toBeUndefined();
    await expect(engine.classify(MESSAGE)).rejects.toBeInstanceOf(EngineClosedError);
    await expect(engine.classify(MESSAGE)).rejects.toThrow(/classify: the engine is closed/);
    expect(() => engine.setLookup('late', new MemoryStore('late'))).toThrow(EngineClosedError);
    // Still readable after close: the load report, the thresholds.
    expect(engine.loadReport.loaded).toBe(3);
  });

  it('lets a classify under way finish with its stores before closing them', async () => {
    const engine = engineWithStores();
    const running = engine.classify(MESSAGE);
    const closing = engine.close();
    // The message was taken before close(), so it gets a full verdict, not store errors.
    const r = await running;
    expect(r.errors).toEqual([]);
    expect(r.tags).toContain('IN_REDIS');
    await closing;
    expect(await gone(redisClients)).toBe(0);
  });

  it('closes at the end of an `await using` block (Symbol.asyncDispose)', async () => {
    let engine: SpamEngine | undefined;
    {
      await using e = engineWithStores();
      engine = e;
      await e.classify(MESSAGE);
      expect(redisClients()).toBe(1);
    }
    expect(engine.closed).toBe(true);
    expect(await gone(redisClients)).toBe(0);
  });
});

describe('what else the engine owns', () => {
  it('cancels the DNS queries still in flight, unless the resolver is kept for another engine', async () => {
    const server = new TestDnsServer();
    server.mode = 'drop';
    const addr = await server.start();
    try {
      const resolver = createResolver(`system:${addr}`);
      const kept = new SpamEngine({ dns: resolver, analysis: false });
      const pending = resolver.query('silent.example', 'A');
      while (server.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      await kept.close({ keep: ['dns'] });
      // Not cancelled: another engine may be waiting on this query.
      const first = await Promise.race([pending, new Promise((resolve) => setTimeout(() => resolve('pending'), 100))]);
      expect(first).toBe('pending');

      const owner = new SpamEngine({ dns: resolver, analysis: false });
      await owner.close();
      // Answered by the cancel, not by the resolver's 2,000 ms timeout.
      expect(await pending).toEqual({ status: 'error', error: 'ECANCELLED' });
    } finally {
      await server.stop();
    }
  });

  it('closes its classifier (and with it the model store), unless kept', async () => {
    const model = join(mkdtempSync(join(tmpdir(), 'spamrule-close-')), 'model.sqlite');
    const classifier = await openClassifier(sqliteModelConfig(model), { refreshMs: 0 });
    const a = new SpamEngine({ classifier, analysis: false });
    await a.close({ keep: ['classifier'] });
    expect(await classifier.learn(MESSAGE, true)).toBe(1);
    const b = new SpamEngine({ classifier, analysis: false });
    await b.close();
    await expect(classifier.learn(MESSAGE, false)).rejects.toThrow();
  });
});
