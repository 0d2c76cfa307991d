import { mkdtempSync, rmSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createLookupStore, LookupStoreError, SqliteStore, type LookupStore } from '../../src/lookup/index.js';
import { kvContract, sqlContract } from './contract.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-sqlite-test-'));
const store = createLookupStore('sqlite-test', { '@type': 'Sqlite', path: join(dir, 'lookup.db') }, { cache: { enabled: false } });
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Sqlite store', () => {
  kvContract(() => store, 'sqlite');
  sqlContract(() => store, () => '?', 'people');

  it('sql_query reads at most sqlMaxRows rows; a NULL value is absent; a non-integer counter is an error naming it', async () => {
    const file = join(dir, 'hand-made.db');
    const db = new Database(file);
    db.exec('CREATE TABLE spamrule_kv (k TEXT PRIMARY KEY, v TEXT NULL, expires_at INTEGER NULL)');
    db.exec('CREATE TABLE spamrule_counter (k TEXT PRIMARY KEY, v TEXT NOT NULL)');
    db.exec("INSERT INTO spamrule_kv (k, v) VALUES ('nulled', NULL); INSERT INTO spamrule_counter VALUES ('bad', 'abc')");
    db.close();
    const s = createLookupStore('sqlite-hand', { '@type': 'Sqlite', path: file }, { cache: { enabled: false }, sqlMaxRows: 100 });
    try {
      expect(await s.keyGet('nulled')).toBeNull();
      await expect(s.counterGet('bad')).rejects.toThrow(/^lookup store "sqlite-hand": counter "bad" holds "abc", not an integer$/);
      const series = (n: number) => `SELECT x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) SELECT x FROM c)`;
      expect(((await s.sqlQuery!(series(100), [])) as unknown[]).length).toBe(100);
      await expect(s.sqlQuery!(series(1_000_000), [])).rejects.toThrow(/^lookup store "sqlite-hand": sql_query failed: the query returned more than 100 rows/);
      expect(await s.sqlQuery!('SELECT ? + 1', [1])).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('uses lookup.sqlite3 inside a directory path and persists across reopen', async () => {
    const sub = join(dir, 'datadir');
    const a = new SqliteStore('dir', { '@type': 'Sqlite', path: dir, poolWorkers: null, poolMaxConnections: 10 });
    expect(a.file).toBe(join(dir, 'lookup.sqlite3'));
    await a.keySet('persist', 'yes');
    await a.counterIncr('n', 41);
    await a.close();
    const b = createLookupStore('dir', { '@type': 'Sqlite', path: dir });
    expect(await b.keyGet('persist')).toBe('yes');
    expect(await b.counterIncr('n', 1)).toBe(42);
    await b.close();
    expect(existsSync(sub)).toBe(false);
  });

  it('sql_query refuses the statements that reach other files (ATTACH, DETACH, VACUUM, PRAGMA), whatever their prefix', async () => {
    const other = join(dir, 'other.db');
    for (const q of [`ATTACH DATABASE '${other}' AS o`, `  /* c */ -- c\n attach '${other}' as o`, 'DETACH o', `VACUUM INTO '${join(dir, 'copy.db')}'`, 'explain query plan vacuum', 'PRAGMA temp_store_directory = \'/tmp\'']) {
      const e = await store.sqlQuery!(q, []).catch((x: unknown) => x);
      expect(e, q).toBeInstanceOf(LookupStoreError);
      expect((e as Error).message).toMatch(/^lookup store "sqlite-test": sql_query refuses (ATTACH|DETACH|VACUUM|PRAGMA) statements on a Sqlite store: they reach files other than the store's/);
    }
    expect(existsSync(other)).toBe(false);
    expect(existsSync(join(dir, 'copy.db'))).toBe(false);
    // A word that only starts like one, in a string or a comment, is fine.
    expect(await store.sqlQuery!("SELECT 'ATTACH' -- pragma", [])).toBe('ATTACH');
  });

  it('creates its file (and SQLite its -wal and -shm) readable by the owner only, whatever the umask', async () => {
    const old = process.umask(0o022);
    const file = join(dir, 'private', 'model.db');
    const s = createLookupStore('sqlite-private', { '@type': 'Sqlite', path: file }, { cache: { enabled: false } });
    try {
      await s.keySet('k', 'v');
      for (const f of [file, `${file}-wal`, `${file}-shm`]) expect((statSync(f).mode & 0o777).toString(8), f).toBe('600');
    } finally {
      process.umask(old);
      await s.close();
    }
  });

  it('reports a bad query as a LookupStoreError naming the namespace', async () => {
    const err = await store.sqlQuery!('SELECT * FROM no_such_table', []).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as Error).message).toMatch(/^lookup store "sqlite-test": sql_query failed: no such table: no_such_table/);
  });

  it('a write waits for another process\'s lock without blocking the thread, then applies', async () => {
    const s = createLookupStore('locked', { '@type': 'Sqlite', path: join(dir, 'locked.db') }, { cache: { enabled: false } });
    await s.keySet('before', '1'); // opens the file
    const other = new Database(join(dir, 'locked.db'));
    other.exec('BEGIN IMMEDIATE');
    let done = false;
    const write = s.counterIncr('n', 5).finally(() => {
      done = true;
    });
    // The event loop runs while the write waits (a synchronous busy wait would hold it for 5 s).
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    other.exec('COMMIT');
    expect(await write).toBe(5);
    // Held past the limit: the write fails with the lock error and changes nothing.
    other.exec('BEGIN IMMEDIATE');
    const err = await s.counterIncr('n', 1).catch((e: unknown) => e);
    other.exec('COMMIT');
    other.close();
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as Error).message).toMatch(/^lookup store "locked": counter_incr failed: database is locked/);
    expect(await s.counterGet('n')).toBe(5);
    await s.close();
  });

  it('rejects calls after close', async () => {
    const s: LookupStore = createLookupStore('closed', { '@type': 'Sqlite', path: join(dir, 'closed.db') }, { cache: { enabled: false } });
    await s.keySet('a', 'b');
    await s.close();
    await s.close(); // idempotent
    await expect(s.keyGet('a')).rejects.toThrow(/lookup store "closed": key_get failed: store is closed/);
  });
});
