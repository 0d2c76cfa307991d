/**
 * `MySql` lookup store on mysql2 pools, tested against MariaDB (Stalwart's registry schema x:MySqlStore).
 *
 * Tables (created on first use if missing; see docs/lookup-stores.md):
 *   spamrule_kv(k VARCHAR(255) PRIMARY KEY, v TEXT NOT NULL, expires_at BIGINT NULL)  -- Unix ms
 *   spamrule_counter(k VARCHAR(255) PRIMARY KEY, v BIGINT NOT NULL)
 * VARCHAR(255) because MySQL cannot index a TEXT primary key without a prefix length; utf8mb4_bin so
 * any UTF-8 key fits and keys compare exactly (case-sensitive), as in the other stores.
 */
import type mysql from 'mysql2/promise';
import type { MySqlSettings, MySqlStoreConfig } from './config.js';
import { loadMySql, prefetch, type MySql } from './drivers.js';
import { resolveSecret } from './secret.js';
import { LookupStoreError, type LookupStore, type SqlParam, type SqlResult } from './types.js';
import { isSelect, RoundRobin, shapeRows, withTimeout } from './util.js';

const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS spamrule_kv (k VARCHAR(255) PRIMARY KEY, v TEXT NOT NULL, expires_at BIGINT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  'CREATE TABLE IF NOT EXISTS spamrule_counter (k VARCHAR(255) PRIMARY KEY, v BIGINT NOT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
];
/** mysql2 column types that are Floats in the expression language: DECIMAL, FLOAT, DOUBLE, NEWDECIMAL. */
const FLOAT_TYPES = new Set([0, 4, 5, 246]);

/**
 * A MySQL/MariaDB store. Reads go to `readReplicas` round robin when configured, writes to the primary.
 * Each call fails within `timeout` ms with a LookupStoreError. Pools open lazily, hold at most
 * `poolMaxConnections` connections and keep up to `poolMinConnections` idle ones. `maxAllowedPacket`
 * (bytes) is enforced client-side: a call whose statement and parameters exceed it is refused before
 * it is sent, as the server would refuse it.
 * The `mysql2` driver is imported when the first store is created; pools are built on the first call.
 * @throws LookupConfigError from the constructor when a secret source cannot be read.
 */
export class MySqlStore implements LookupStore {
  readonly type = 'MySql';
  /** Passwords of the primary and each replica, resolved at construction so a bad secret fails at once. */
  private readonly passwords: (string | undefined)[];
  private pools: Promise<{ primary: mysql.Pool; replicas: RoundRobin<mysql.Pool> | undefined; all: mysql.Pool[] }> | undefined;
  private schema: Promise<void> | undefined;
  private closed = false;

  constructor(
    readonly namespace: string,
    readonly config: MySqlStoreConfig,
  ) {
    this.passwords = [config, ...config.readReplicas].map((s) => resolveSecret(s.authSecret, namespace));
    prefetch(loadMySql);
  }

  private connect() {
    this.pools ??= loadMySql(this.namespace).then((driver) => {
      const [primary, ...reps] = [this.config, ...this.config.readReplicas].map((s, i) => this.pool(driver, s, this.passwords[i]));
      return { primary: primary!, replicas: reps.length ? new RoundRobin(reps) : undefined, all: [primary!, ...reps] };
    });
    return this.pools;
  }

  private pool(driver: MySql, s: MySqlSettings, password: string | undefined): mysql.Pool {
    const c = this.config;
    const max = c.poolMaxConnections ?? 10;
    const p = driver.createPool({
      host: s.host,
      port: s.port,
      database: s.database,
      user: s.authUsername ?? undefined,
      password,
      ssl: c.useTls ? { rejectUnauthorized: !c.allowInvalidCerts } : undefined,
      connectionLimit: max,
      maxIdle: Math.min(c.poolMinConnections ?? 5, max),
      idleTimeout: 30_000,
      connectTimeout: c.timeout ?? 10_000,
      charset: 'UTF8MB4_BIN',
      decimalNumbers: true,
      supportBigNumbers: true,
      bigNumberStrings: false,
      waitForConnections: true,
      queueLimit: 0,
    });
    // Errors of idle connections (server gone) must not crash the process; the pool replaces them.
    (p as unknown as { pool: { on(e: string, f: () => void): void } }).pool.on('error', () => undefined);
    return p;
  }

  private ensureSchema(primary: mysql.Pool): Promise<void> {
    this.schema ??= (async () => {
      for (const q of SCHEMA) await primary.query(q);
    })().catch((e) => {
      this.schema = undefined;
      throw e;
    });
    return this.schema;
  }

  private checkPacket(query: string, params: unknown[]): void {
    const max = this.config.maxAllowedPacket;
    if (max == null) return;
    let size = Buffer.byteLength(query);
    for (const p of params) size += typeof p === 'string' ? Buffer.byteLength(p) : 8;
    if (size > max) throw new LookupStoreError(this.namespace, `statement of ${size} bytes exceeds maxAllowedPacket (${max} bytes)`);
  }

  private run<T>(op: string, read: boolean, fn: (pool: mysql.Pool) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return withTimeout(this.namespace, op, this.config.timeout, async () => {
      const { primary, replicas } = await this.connect();
      await this.ensureSchema(primary);
      return fn(read && replicas ? replicas.next() : primary);
    });
  }

  private exec(p: mysql.Pool | mysql.PoolConnection, sql: string, values: unknown[]) {
    this.checkPacket(sql, values);
    return p.query({ sql, values, rowsAsArray: true, timeout: this.config.timeout ?? undefined });
  }

  keyGet(key: string): Promise<string | null> {
    return this.run('key_get', true, async (p) => {
      const [rows] = await this.exec(p, 'SELECT v FROM spamrule_kv WHERE k = ? AND (expires_at IS NULL OR expires_at > ?)', [key, Date.now()]);
      const r = rows as unknown[][];
      return r.length ? String(r[0]![0]) : null;
    });
  }
  keyExists(key: string): Promise<boolean> {
    return this.run('key_exists', true, async (p) => {
      const [rows] = await this.exec(p, 'SELECT 1 FROM spamrule_kv WHERE k = ? AND (expires_at IS NULL OR expires_at > ?)', [key, Date.now()]);
      return (rows as unknown[]).length > 0;
    });
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.run('key_set', false, async (p) => {
      const exp = ttlMs !== undefined && ttlMs > 0 ? Date.now() + ttlMs : null;
      await this.exec(
        p,
        'INSERT INTO spamrule_kv (k, v, expires_at) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v), expires_at = VALUES(expires_at)',
        [key, value, exp],
      );
    });
  }
  counterGet(key: string): Promise<number> {
    return this.run('counter_get', true, async (p) => {
      const [rows] = await this.exec(p, 'SELECT v FROM spamrule_counter WHERE k = ?', [key]);
      const r = rows as unknown[][];
      return r.length ? Number(r[0]![0]) : 0;
    });
  }
  /** Upsert and read back in one transaction: the upsert's row lock makes the read see our own increment. */
  counterIncr(key: string, by: number): Promise<number> {
    return this.run('counter_incr', false, async (p) => {
      const conn = await p.getConnection();
      try {
        await conn.beginTransaction();
        await this.exec(conn, 'INSERT INTO spamrule_counter (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = v + VALUES(v)', [key, Math.trunc(by)]);
        const [rows] = await this.exec(conn, 'SELECT v FROM spamrule_counter WHERE k = ?', [key]);
        await conn.commit();
        return Number((rows as unknown[][])[0]![0]);
      } catch (e) {
        await conn.rollback().catch(() => undefined);
        throw e;
      } finally {
        conn.release();
      }
    });
  }
  /** `sql_query` with `?` placeholders (MySQL's own); shaped per §4.3. */
  sqlQuery(query: string, params: SqlParam[]): Promise<SqlResult> {
    const select = isSelect(query);
    return this.run('sql_query', select, async (p) => {
      const [res, fields] = await this.exec(p, query, params);
      if (!select) return (res as { affectedRows?: number }).affectedRows ?? 0;
      return shapeRows(res as unknown[][], (fields ?? []).map((f) => FLOAT_TYPES.has(f.columnType ?? -1)));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pools = await this.pools?.catch(() => undefined);
    await Promise.all((pools?.all ?? []).map((p) => p.end().catch(() => undefined)));
  }
}
