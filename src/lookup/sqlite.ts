/**
 * `Sqlite` lookup store on better-sqlite3, the embedded default (Stalwart's registry schema x:SqliteStore).
 *
 * Tables (created when the store opens; see docs/lookup-stores.md):
 *   spamrule_kv(k TEXT PRIMARY KEY, v TEXT NOT NULL, expires_at INTEGER NULL)  -- Unix ms
 *   spamrule_counter(k TEXT PRIMARY KEY, v INTEGER NOT NULL)
 */
import type Database from 'better-sqlite3';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SqliteStoreConfig } from './config.js';
import { loadSqlite, prefetch, type Sqlite } from './drivers.js';
import { createPrivateFile } from './files.js';
import type { LookupStore, SqlParam, SqlResult } from './types.js';
import { DEFAULT_SQL_MAX_ROWS, isSelect, parseCounter, RequestRefusedError, shapeRows, tooManyRows, wrapError } from './util.js';

/**
 * Statements `sql_query` refuses on a SQLite store, by their first keyword: each reaches beyond the store's
 * own file. ATTACH opens (and creates) any database file the process may write, the registry of tokens
 * included; VACUUM INTO writes a new one anywhere; PRAGMA can move temporary files (temp_store_directory)
 * or unlock the schema (writable_schema). PostgreSQL and MySQL have no statement that reaches the spamrule
 * host's files. better-sqlite3 runs one statement per call and offers no authorizer, so the first keyword
 * decides.
 */
const REFUSED_KEYWORDS = new Set(['ATTACH', 'DETACH', 'VACUUM', 'PRAGMA']);

/**
 * The first keyword of a statement, upper-cased, after white space and comments (`-- …`, `/* … *\/`) and an
 * `EXPLAIN [QUERY PLAN]` prefix. One linear pass (no regular expression a long query could make backtrack).
 */
function firstKeyword(sql: string): string {
  let i = 0;
  const word = (): string => {
    for (;;) {
      while (i < sql.length && /\s/.test(sql[i]!)) i++;
      if (sql.startsWith('--', i)) {
        const nl = sql.indexOf('\n', i);
        i = nl < 0 ? sql.length : nl + 1;
      } else if (sql.startsWith('/*', i)) {
        const end = sql.indexOf('*/', i + 2);
        i = end < 0 ? sql.length : end + 2;
      } else break;
    }
    const start = i;
    while (i < sql.length && /[A-Za-z_]/.test(sql[i]!)) i++;
    return sql.slice(start, i).toUpperCase();
  };
  let w = word();
  if (w === 'EXPLAIN') {
    w = word();
    if (w === 'QUERY') {
      word(); // PLAN
      w = word();
    }
  }
  return w;
}

/** How long a statement waits for another connection's lock before it fails (ms), as better-sqlite3's default. */
const BUSY_WAIT_MS = 5_000;

const isBusy = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
};

/**
 * A SQLite store. `path` names the database file; when it is an existing directory (Stalwart calls it
 * the "data directory") the file `lookup.sqlite3` inside it is used. The file opens lazily in WAL mode;
 * a new one is created with mode 0600 (src/lookup/files.ts).
 * better-sqlite3 is synchronous and each statement takes microseconds, so one connection serves every
 * call: `poolMaxConnections` is an upper bound that is always met, and `poolWorkers` (Stalwart's
 * blocking-thread count) has no counterpart. Integers and floats keep their type (`safeIntegers`).
 * The better-sqlite3 driver is imported when the first store is created (a native module, so a
 * machine without a build of it can still use the other stores). A SELECT of `sql_query` reads at most
 * `sqlMaxRows` rows (default 10,000), more reject with a LookupStoreError.
 */
export class SqliteStore implements LookupStore {
  readonly type = 'Sqlite';
  private db: Database.Database | undefined;
  private stmts: Record<'get' | 'exists' | 'set' | 'cget' | 'incr', Database.Statement> | undefined;
  private closed = false;
  private driver: Sqlite | undefined;
  private readonly maxRows: number;

  /** `opts.sqlMaxRows`: rows a `sql_query` SELECT may return (default 10,000). */
  constructor(
    readonly namespace: string,
    readonly config: SqliteStoreConfig,
    opts: { sqlMaxRows?: number } = {},
  ) {
    this.maxRows = Math.max(1, opts.sqlMaxRows ?? DEFAULT_SQL_MAX_ROWS);
    prefetch(loadSqlite);
  }

  /** The database file this store uses. */
  get file(): string {
    const p = this.config.path;
    try {
      if (statSync(p).isDirectory()) return join(p, 'lookup.sqlite3');
    } catch {
      /* not there yet: a file path */
    }
    return p;
  }

  private open() {
    if (this.closed) throw new Error('store is closed');
    if (this.stmts) return this.stmts;
    const file = this.file;
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true });
      // A new store file (a model holds the mail it learned from) is readable by its owner only.
      createPrivateFile(file);
    }
    // No busy wait inside SQLite (it would block the thread, and with it every connection it serves, while
    // another process holds the write lock): `run` retries a locked statement asynchronously instead.
    const db = new this.driver!(file, { timeout: 0 });
    try {
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE IF NOT EXISTS spamrule_kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, expires_at INTEGER NULL)');
      db.exec('CREATE TABLE IF NOT EXISTS spamrule_counter (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
    } catch (e) {
      db.close(); // locked (the call is retried and opens again) or not a database
      throw e;
    }
    this.db = db;
    this.stmts = {
      get: db.prepare('SELECT v FROM spamrule_kv WHERE k = ? AND (expires_at IS NULL OR expires_at > ?)').pluck(),
      exists: db.prepare('SELECT 1 FROM spamrule_kv WHERE k = ? AND (expires_at IS NULL OR expires_at > ?)').pluck(),
      set: db.prepare('INSERT INTO spamrule_kv (k, v, expires_at) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, expires_at = excluded.expires_at'),
      cget: db.prepare('SELECT v FROM spamrule_counter WHERE k = ?').pluck(),
      incr: db.prepare('INSERT INTO spamrule_counter (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = v + excluded.v RETURNING v').pluck(),
    };
    return this.stmts;
  }

  private run<T>(op: string, fn: () => T): Promise<T> {
    const go = (): Promise<T> => {
      try {
        return Promise.resolve(fn());
      } catch (e) {
        if (isBusy(e)) return this.retryBusy(op, fn);
        return Promise.reject(wrapError(this.namespace, op, e));
      }
    };
    if (this.driver !== undefined) return go();
    return loadSqlite(this.namespace).then((d) => {
      this.driver = d;
      return go();
    });
  }

  /**
   * Runs a statement that found the database locked by another connection again, after 2, 4, … up to
   * 100 ms, for at most {@link BUSY_WAIT_MS}; then rejects with the lock error. A locked statement did
   * nothing (SQLite's statements are atomic), so running it again is safe.
   */
  private async retryBusy<T>(op: string, fn: () => T): Promise<T> {
    const deadline = Date.now() + BUSY_WAIT_MS;
    for (let wait = 2; ; wait = Math.min(wait * 2, 100)) {
      if (Date.now() + wait > deadline) break;
      await new Promise((r) => setTimeout(r, wait));
      try {
        return fn();
      } catch (e) {
        if (!isBusy(e)) throw wrapError(this.namespace, op, e);
      }
    }
    try {
      return fn();
    } catch (e) {
      throw wrapError(this.namespace, op, e);
    }
  }

  keyGet(key: string): Promise<string | null> {
    return this.run('key_get', () => {
      const v = this.open().get.get(key, Date.now());
      return v === undefined || v === null ? null : String(v); // a NULL `v` (hand-made table) is absent
    });
  }
  keyExists(key: string): Promise<boolean> {
    return this.run('key_exists', () => this.open().exists.get(key, Date.now()) !== undefined);
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.run('key_set', () => {
      this.open().set.run(key, value, ttlMs !== undefined && ttlMs > 0 ? Date.now() + ttlMs : null);
    });
  }
  counterGet(key: string): Promise<number> {
    return this.run('counter_get', () => parseCounter(this.namespace, key, this.open().cget.get(key)));
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.run('counter_incr', () => parseCounter(this.namespace, key, this.open().incr.get(key, Math.trunc(by))));
  }
  /**
   * `sql_query` with `?` placeholders; integers come back as BigInt (safeIntegers), floats as numbers.
   * ATTACH, DETACH, VACUUM and PRAGMA statements reject with a RequestRefusedError (a LookupStoreError the
   * circuit breaker does not count; see REFUSED_KEYWORDS).
   */
  sqlQuery(query: string, params: SqlParam[]): Promise<SqlResult> {
    const keyword = firstKeyword(query);
    if (REFUSED_KEYWORDS.has(keyword))
      return Promise.reject(
        new RequestRefusedError(this.namespace, `sql_query refuses ${keyword} statements on a Sqlite store: they reach files other than the store's (docs/lookup-stores.md)`),
      );
    return this.run('sql_query', () => {
      this.open();
      const stmt = this.db!.prepare(query);
      // better-sqlite3 binds every JS number as a REAL; integers go as BigInt so they stay INTEGER (§4.3:
      // Integers keep their type).
      const args = params.map((p) => (typeof p === 'number' && Number.isSafeInteger(p) ? BigInt(p) : p));
      if (!isSelect(query) || !stmt.reader) return stmt.run(...args).changes;
      const rows: unknown[][] = [];
      for (const row of stmt.raw(true).safeIntegers(true).iterate(...args) as IterableIterator<unknown[]>) {
        if (rows.length >= this.maxRows) throw tooManyRows(this.namespace, this.maxRows); // return() ends the iterator
        rows.push(row);
      }
      // With safeIntegers every integer is a BigInt, so a JS number here is a REAL: a Float.
      const floats = rows[0]?.map((c) => typeof c === 'number') ?? [];
      return shapeRows(rows, floats);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db?.close();
  }
}
