import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLookupStore, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
import { startMariaDb, waitFor, type MariaDbServer } from '../servers/index.js';
import { kvContract, sqlContract } from './contract.js';

let server: MariaDbServer;
let store: LookupStore;
const extra: LookupStore[] = [];
const cfg = (more: Record<string, unknown> = {}) => ({
  '@type': 'MySql',
  host: server.host,
  port: server.port,
  database: server.database,
  authUsername: server.user,
  authSecret: { '@type': 'Value', secret: server.password },
  timeout: 2000,
  ...more,
});
const open = (more: Record<string, unknown> = {}, ns = 'mysql-extra') => {
  const s = createLookupStore(ns, cfg(more), { cache: { enabled: false } });
  extra.push(s);
  return s;
};

beforeAll(async () => {
  server = await startMariaDb();
  store = createLookupStore('mysql-test', cfg(), { cache: { enabled: false } });
});
afterAll(async () => {
  await Promise.all([store, ...extra].map((s) => s.close()));
  await server?.stop();
});

describe('MySql store (MariaDB)', () => {
  kvContract(() => store, 'my');
  sqlContract(() => store, () => '?', 'people');

  it('a wrong password is reported as a LookupStoreError naming the store', async () => {
    const s = open({ authSecret: { '@type': 'Value', secret: 'wrong' } }, 'mysql-badpw');
    const err = await s.keyGet('a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as Error).message).toMatch(/^lookup store "mysql-badpw": key_get failed: Access denied for user 'spamrule'/);
  });

  it('refuses a statement larger than maxAllowedPacket before sending it', async () => {
    const s = open({ maxAllowedPacket: 1024 }, 'mysql-packet');
    await s.keySet('small', 'x'.repeat(100));
    expect(await s.keyGet('small')).toBe('x'.repeat(100));
    await expect(s.keySet('big', 'x'.repeat(2000))).rejects.toThrow(/lookup store "mysql-packet": statement of \d+ bytes exceeds maxAllowedPacket \(1024 bytes\)/);
    expect(await s.keyGet('big')).toBeNull();
  });

  it('reads go to the read replicas round robin, writes to the primary', async () => {
    await store.sqlQuery!('CREATE DATABASE IF NOT EXISTS replica1', []);
    await store.sqlQuery!('CREATE DATABASE IF NOT EXISTS replica2', []);
    await open({ database: 'replica1' }).keySet('where', 'replica1');
    await open({ database: 'replica2' }).keySet('where', 'replica2');
    await store.keySet('where', 'primary');
    const rep = (database: string) => ({ host: server.host, port: server.port, database, authUsername: server.user, authSecret: { '@type': 'Value', secret: server.password } });
    const replicated = open({ readReplicas: { 0: rep('replica1'), 1: rep('replica2') } });
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push(await replicated.keyGet('where'));
    expect(reads).toEqual(['replica1', 'replica2', 'replica1', 'replica2']);
    await replicated.keySet('where', 'written');
    expect(await store.keyGet('where')).toBe('written');
  });

  it('never opens more connections than poolMaxConnections', async () => {
    await store.sqlQuery!('CREATE DATABASE IF NOT EXISTS poolcheck', []);
    const s = open({ database: 'poolcheck', poolMaxConnections: 3, poolMinConnections: 1 });
    const watcher = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password });
    let peak = 0;
    let done = false;
    const sample = (async () => {
      while (!done) {
        const [rows] = await watcher.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = 'poolcheck'");
        peak = Math.max(peak, Number((rows as { n: number }[])[0]!.n));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => s.sqlQuery!('SELECT ?, SLEEP(0.02)', [i])));
    done = true;
    await sample;
    await watcher.end();
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => [i, 0]));
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThanOrEqual(2);
  });

  it('server stopped mid-run: calls fail with LookupStoreError, then reconnect by themselves', async () => {
    const s = open({ timeout: 1000 }, 'mysql-fault');
    await s.keySet('survives', 'yes');
    expect(await s.keyGet('survives')).toBe('yes');
    await server.kill();
    const errs = await Promise.all([s.keyGet('survives'), s.counterIncr('x', 1), s.keyExists('y')].map((p) => p.then(() => null, (e: unknown) => e)));
    for (const e of errs) {
      expect(e).toBeInstanceOf(LookupStoreError);
      expect((e as Error).message).toMatch(/^lookup store "mysql-fault": /);
    }
    await server.start();
    await waitFor('reconnect', async () => (await s.keyGet('survives').catch(() => null)) === 'yes', 30_000, 200);
    expect(await s.keyGet('survives')).toBe('yes');
  }, 90_000);
});
