import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreakerStore, createLookupStore, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
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
const open = (more: Record<string, unknown> = {}, ns = 'mysql-extra', opts: Parameters<typeof createLookupStore>[2] = {}) => {
  const s = createLookupStore(ns, cfg(more), { cache: { enabled: false }, ...opts });
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

  it('values of 1 MB and 12 MB round-trip (v is LONGTEXT)', async () => {
    const mb = 'a'.repeat(1024 * 1024);
    const big = Buffer.alloc(9 * 1024 * 1024, 7).toString('base64'); // 12 MiB of base64, as classifier blobs
    expect(big.length).toBe(12 * 1024 * 1024);
    await store.keySet('big-1mb', mb);
    await store.keySet('big-12mb', big);
    expect(await store.keyGet('big-1mb')).toBe(mb);
    expect(await store.keyGet('big-12mb')).toBe(big);
    expect(
      await store.sqlQuery!("SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'spamrule_kv' AND COLUMN_NAME = 'v'", []),
    ).toBe('longtext');
  }, 60_000);

  it('an existing table with v TEXT is migrated to LONGTEXT once, keeping rows and nullability; NULL v reads as absent', async () => {
    await store.sqlQuery!('DROP DATABASE IF EXISTS legacy', []);
    await store.sqlQuery!('CREATE DATABASE legacy', []);
    await store.sqlQuery!(
      'CREATE TABLE legacy.spamrule_kv (k VARCHAR(255) PRIMARY KEY, v TEXT NULL, expires_at BIGINT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
      [],
    );
    await store.sqlQuery!('CREATE TABLE legacy.spamrule_counter (k VARCHAR(255) PRIMARY KEY, v VARCHAR(40) NOT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin', []);
    await store.sqlQuery!("INSERT INTO legacy.spamrule_kv (k, v) VALUES ('old', 'kept'), ('nulled', NULL)", []);
    await store.sqlQuery!("INSERT INTO legacy.spamrule_counter (k, v) VALUES ('bad', 'abc')", []);
    const s = open({ database: 'legacy' }, 'mysql-legacy');
    const value = 'x'.repeat(200_000); // over TEXT's 65,535 bytes
    await s.keySet('large', value);
    expect(await s.keyGet('large')).toBe(value);
    expect(await s.keyGet('old')).toBe('kept');
    expect(await s.keyGet('nulled')).toBeNull();
    const col = await store.sqlQuery!(
      "SELECT DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'legacy' AND TABLE_NAME = 'spamrule_kv' AND COLUMN_NAME = 'v'",
      [],
    );
    expect(col).toEqual(['longtext', 'YES']);
    // A counter that is not a number is an error naming it, not NaN; it does not open the breaker.
    for (let i = 0; i < 4; i++) await expect(s.counterGet('bad')).rejects.toThrow(/lookup store "mysql-legacy": counter "bad" holds "abc", not an integer/);
    expect((s as CircuitBreakerStore).isDown).toBe(false);
  });

  it("a value over the server's max_allowed_packet is refused with an error naming the setting", async () => {
    await store.sqlQuery!('SET GLOBAL max_allowed_packet = 1048576', []);
    try {
      const s = open({}, 'mysql-small-packet'); // new connections take the new global value
      await s.keySet('fits', 'y'.repeat(500_000));
      expect(await s.keyGet('fits')).toBe('y'.repeat(500_000));
      for (let i = 0; i < 4; i++)
        await expect(s.keySet('too-big', 'z'.repeat(2 * 1024 * 1024))).rejects.toThrow(
          /lookup store "mysql-small-packet": statement of \d+ bytes exceeds the server's max_allowed_packet \(1048576 bytes\); raise max_allowed_packet/,
        );
      expect((s as CircuitBreakerStore).isDown).toBe(false);
      expect(await s.keyGet('fits')).toBe('y'.repeat(500_000));
    } finally {
      await store.sqlQuery!('SET GLOBAL max_allowed_packet = 16777216', []);
    }
  });

  it('sql_query reads at most sqlMaxRows rows (default 10,000): more is an error, and the store goes on', async () => {
    const capped = open({}, 'mysql-rows', { sqlMaxRows: 100 });
    expect(((await capped.sqlQuery!('SELECT seq FROM seq_1_to_100', [])) as unknown[]).length).toBe(100);
    await expect(capped.sqlQuery!('SELECT seq FROM seq_1_to_101', [])).rejects.toThrow(/lookup store "mysql-rows": sql_query failed: the query returned more than 100 rows/);
    expect(await capped.sqlQuery!('SELECT ?', [5])).toBe(5);
    // A million rows with the default cap: refused after 10,000, not read whole.
    await expect(store.sqlQuery!('SELECT seq, REPEAT(?, 100) FROM seq_1_to_1000000', ['x'])).rejects.toThrow(/returned more than 10000 rows/);
    expect(await store.sqlQuery!('SELECT seq FROM seq_1_to_3 WHERE seq = ?', [2])).toBe(2);
    expect((store as CircuitBreakerStore).isDown).toBe(false);
  }, 60_000);

  it('lookup keys and sql_query arguments never become SQL, even with sql_mode=NO_BACKSLASH_ESCAPES (security review repro)', async () => {
    // mysql2's query() escaped parameters with backslashes on the client; in this mode the server reads a
    // backslash as a character, so `' OR 1=1 -- ` ended the string and became SQL.
    const admin = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password });
    const before = ((await admin.query('SELECT @@GLOBAL.sql_mode AS m')) as unknown as [{ m: string }[]])[0][0]!.m;
    await admin.query("SET GLOBAL sql_mode = 'NO_BACKSLASH_ESCAPES'");
    try {
      const s = open({}, 'mysql-nobackslash'); // new connections: the new mode
      expect(String(await s.sqlQuery!('SELECT @@SESSION.sql_mode', []))).toContain('NO_BACKSLASH_ESCAPES');
      await s.keySet('evil.example', '1');
      expect(await s.keyExists("' OR 1=1 -- ")).toBe(false);
      expect(await s.keyGet("' OR 1=1 -- ")).toBeNull();
      expect(await s.keyGet("' UNION SELECT @@version -- ")).toBeNull();
      expect(await s.keyGet("\\' UNION SELECT @@version -- ")).toBeNull();
      await s.keySet("it\\'s", 'quoted');
      expect(await s.keyGet("it\\'s")).toBe('quoted');
      expect(await s.sqlQuery!('SELECT COUNT(*) FROM spamrule_kv WHERE k = ?', ["' OR 1=1 -- "])).toBe(0);
      expect(await s.counterIncr("' OR 1=1 -- ", 2)).toBe(2);
      // Server-side parameters keep their type (§4.3).
      expect(await s.sqlQuery!('SELECT ? + 1', [1])).toBe(2);
      expect(await s.sqlQuery!('SELECT ?', [1.5])).toEqual({ float: 1.5 });
      expect(await s.sqlQuery!('SELECT ?', ["a'b"])).toBe("a'b");
    } finally {
      await admin.query('SET GLOBAL sql_mode = ?', [before]);
      await admin.end();
    }
  });

  it('a slow SELECT fails within the timeout, and the store goes on', async () => {
    const s = open({ timeout: 300, poolMaxConnections: 1 }, 'mysql-slow');
    const err = await s.sqlQuery!('SELECT SLEEP(3)', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as Error).message).toMatch(/^lookup store "mysql-slow": sql_query (timed out after 300 ms|failed: Query inactivity timeout)/);
    await waitFor('the store answers again', async () => (await s.sqlQuery!('SELECT ?', [3]).catch(() => null)) === 3, 20_000, 100);
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

  it('a frozen server (SIGSTOP), breaker off: waiting calls are bounded, fail at once past the queue limit, and the store recovers', async () => {
    const pidFile = (await store.sqlQuery!('SELECT @@pid_file', [])) as string;
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    const s = open({ timeout: 1000, poolMaxConnections: 2, poolMinConnections: 2 }, 'mysql-frozen', { breaker: { enabled: false } });
    await s.keySet('frozen', 'ok');
    process.kill(pid, 'SIGSTOP');
    try {
      const results = await Promise.all(Array.from({ length: 3000 }, (_, i) => s.keyGet(`frozen-${i}`).then(() => 'ok', (e: Error) => e.message)));
      const queueFull = results.filter((m) => /Queue limit reached/.test(m)).length;
      expect(results.every((m) => /^lookup store "mysql-frozen": key_get (timed out after 1000 ms|failed: Queue limit reached)/.test(m))).toBe(true);
      expect(queueFull).toBeGreaterThanOrEqual(1500); // 2 on connections + at most 1000 waiting; the rest refused at once
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor('recovery after SIGCONT', async () => (await s.keyGet('frozen').catch(() => null)) === 'ok', 30_000, 200);
  }, 90_000);
});
