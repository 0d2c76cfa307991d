import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLookupStore, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
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
const open = (more: Record<string, unknown> = {}, ns = 'pg-extra') => {
  const s = createLookupStore(ns, cfg(more), { cache: { enabled: false } });
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
