import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreakerStore, createLookupStore, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
import { startPostgres, waitFor, type PostgresServer } from '../servers/index.js';
import { kvContract, sqlContract } from './contract.js';

let server: PostgresServer;
let store: LookupStore;
const extra: LookupStore[] = [];
const cfg = (more: Record<string, unknown> = {}) => ({
  '@type': 'PostgreSql',
  host: server.host,
  port: server.port,
  database: server.database,
  authUsername: server.user,
  authSecret: { '@type': 'Value', secret: 'ignored-by-trust-auth' },
  timeout: 2000,
  ...more,
});
const open = (more: Record<string, unknown> = {}, ns = 'pg-extra', opts: Parameters<typeof createLookupStore>[2] = {}) => {
  const s = createLookupStore(ns, cfg(more), { cache: { enabled: false }, ...opts });
  extra.push(s);
  return s;
};

beforeAll(async () => {
  server = await startPostgres();
  store = createLookupStore('pg-test', cfg(), { cache: { enabled: false } });
});
afterAll(async () => {
  await Promise.all([store, ...extra].map((s) => s.close()));
  await server?.stop();
});

describe('PostgreSql store', () => {
  kvContract(() => store, 'pg');
  sqlContract(() => store, (i) => `$${i}`, 'people');

  it('a NULL value reads as absent, a counter that is not an integer is an error naming it (hand-made tables)', async () => {
    await store.sqlQuery!('DROP SCHEMA IF EXISTS legacy CASCADE', []);
    await store.sqlQuery!('CREATE SCHEMA legacy', []);
    await store.sqlQuery!('CREATE TABLE legacy.spamrule_kv (k TEXT PRIMARY KEY, v TEXT NULL, expires_at BIGINT NULL)', []);
    await store.sqlQuery!('CREATE TABLE legacy.spamrule_counter (k TEXT PRIMARY KEY, v TEXT NOT NULL)', []);
    await store.sqlQuery!("INSERT INTO legacy.spamrule_kv (k, v) VALUES ('nulled', NULL), ('set', 'yes')", []);
    await store.sqlQuery!("INSERT INTO legacy.spamrule_counter (k, v) VALUES ('bad', 'abc'), ('good', '12')", []);
    const s = open({ options: '-c search_path=legacy' }, 'pg-legacy');
    expect(await s.keyGet('nulled')).toBeNull();
    expect(await s.keyGet('set')).toBe('yes');
    expect(await s.counterGet('good')).toBe(12);
    for (let i = 0; i < 4; i++) await expect(s.counterGet('bad')).rejects.toThrow(/^lookup store "pg-legacy": counter "bad" holds "abc", not an integer$/);
    expect((s as CircuitBreakerStore).isDown).toBe(false);
  });

  it.each(['fast', 'verified'])('sql_query reads at most sqlMaxRows rows (default 10,000), recycling %s', async (method) => {
    const capped = open({ poolRecyclingMethod: method }, 'pg-rows', { sqlMaxRows: 100 });
    expect(((await capped.sqlQuery!('SELECT g FROM generate_series(1, 100) g', [])) as unknown[]).length).toBe(100);
    await expect(capped.sqlQuery!('SELECT g FROM generate_series(1, 101) g', [])).rejects.toThrow(/^lookup store "pg-rows": sql_query failed: the query returned more than 100 rows/);
    expect(await capped.sqlQuery!('SELECT $1::int + 1', [4])).toBe(5);
    const dflt = open({ poolRecyclingMethod: method, timeout: 30_000 }, 'pg-rows-default');
    await expect(dflt.sqlQuery!('SELECT g, repeat($1, 100) FROM generate_series(1, 1000000) g', ['x'])).rejects.toThrow(/returned more than 10000 rows/);
    expect(await dflt.sqlQuery!('SELECT count(*)::int FROM generate_series(1, 10) g', [])).toBe(10);
    expect((dflt as CircuitBreakerStore).isDown).toBe(false);
  }, 60_000);

  it.each(['verified', 'clean'])('works with poolRecyclingMethod %s', async (method) => {
    const s = open({ poolRecyclingMethod: method });
    await s.keySet(`recycle-${method}`, method);
    expect(await s.keyGet(`recycle-${method}`)).toBe(method);
    // clean resets session state between uses: a setting made by one query is gone for the next
    await s.sqlQuery!("SET application_name = 'changed'", []);
    expect(await s.sqlQuery!("SELECT current_setting('application_name')", [])).toBe(method === 'clean' ? '' : 'changed');
  });

  it('reads go to the read replicas round robin, writes to the primary', async () => {
    await store.sqlQuery!('CREATE DATABASE replica1', []);
    await store.sqlQuery!('CREATE DATABASE replica2', []);
    await open({ database: 'replica1' }).keySet('where', 'replica1');
    await open({ database: 'replica2' }).keySet('where', 'replica2');
    await store.keySet('where', 'primary');
    const replicated = open({
      readReplicas: [
        { host: server.host, port: server.port, database: 'replica1', authUsername: server.user },
        { host: server.host, port: server.port, database: 'replica2', authUsername: server.user },
      ],
    });
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push(await replicated.keyGet('where'));
    expect(reads).toEqual(['replica1', 'replica2', 'replica1', 'replica2']);
    await replicated.keySet('where', 'written');
    expect(await store.keyGet('where')).toBe('written');
    expect(await open({ database: 'replica1' }).keyGet('where')).toBe('replica1');
  });

  it('never opens more connections than poolMaxConnections', async () => {
    const s = open({ poolMaxConnections: 3, options: '-c application_name=poolcheck' });
    const watcher = new pg.Client({ host: server.host, port: server.port, user: server.user, database: server.database });
    await watcher.connect();
    let peak = 0;
    let done = false;
    const sample = (async () => {
      while (!done) {
        const r = await watcher.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'poolcheck'");
        peak = Math.max(peak, r.rows[0].n as number);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => s.sqlQuery!('SELECT $1::int FROM pg_sleep(0.02)', [i])));
    done = true;
    await sample;
    await watcher.end();
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThanOrEqual(2);
  });

  it('a slow query fails within the timeout with a LookupStoreError', async () => {
    const s = open({ timeout: 300 }, 'pg-slow');
    const err = await s.sqlQuery!('SELECT pg_sleep(3)', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as LookupStoreError).namespace).toBe('pg-slow');
    expect((err as Error).message).toMatch(/timed out after 300 ms|timeout/i);
  });

  it('server stopped mid-run: calls fail with LookupStoreError, then reconnect by themselves', async () => {
    const s = open({ timeout: 1000 }, 'pg-fault');
    await s.keySet('survives', 'yes');
    expect(await s.keyGet('survives')).toBe('yes');
    await server.kill();
    const errs = await Promise.all([s.keyGet('survives'), s.counterIncr('x', 1), s.keyExists('y')].map((p) => p.then(() => null, (e: unknown) => e)));
    for (const e of errs) {
      expect(e).toBeInstanceOf(LookupStoreError);
      expect((e as Error).message).toMatch(/^lookup store "pg-fault": /);
    }
    await server.start();
    await waitFor('reconnect', async () => (await s.keyGet('survives').catch(() => null)) === 'yes', 20_000, 200);
    expect(await s.keyGet('survives')).toBe('yes');
  }, 60_000);
});
