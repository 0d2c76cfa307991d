/**
 * `MySql` lookup store on mysql2 pools, tested against MariaDB (Stalwart's registry schema x:MySqlStore).
 *
 * Tables (created on first use if missing; see docs/lookup-stores.md):
 *   spamrule_kv(k VARCHAR(255) PRIMARY KEY, v LONGTEXT NOT NULL, expires_at BIGINT NULL)  -- Unix ms
 *   spamrule_counter(k VARCHAR(255) PRIMARY KEY, v BIGINT NOT NULL)
 * VARCHAR(255) because MySQL cannot index a TEXT primary key without a prefix length; utf8mb4_bin so
 * any UTF-8 key fits and keys compare exactly (case-sensitive), as in the other stores. `v` is LONGTEXT
 * (up to 4 GB; TEXT holds only 64 KB, too small for classifier samples and models): a table created by
 * an older version with a smaller `v` (TEXT, VARCHAR, …) is altered once, when the store first connects.
 * The server's `max_allowed_packet` (16 MiB by default on MariaDB ≥ 10.2.4 and 64 MiB on MySQL 8, but
 * 4 MiB on MySQL 5.7) bounds the statement size, so a value is refused with an error naming that
 * setting when the statement carrying it would exceed it.
 */
import type mysql from 'mysql2/promise';
import type { MySqlSettings, MySqlStoreConfig } from './config.js';
import { loadMySql, prefetch, type MySql } from './drivers.js';
import { createConnection, isIP, type Socket } from 'node:net';
import { resolveSecret } from './secret.js';
import { refusedError, storePins, type HostPins, type PinnedHosts } from './store-pins.js';
import type { LookupStore, SqlParam, SqlResult } from './types.js';
import { closePools, DEFAULT_SQL_MAX_ROWS, isSelect, parseCounter, RequestRefusedError, RoundRobin, shapeRows, tooManyRows, withTimeout, type DestroyableSocket } from './util.js';

/** The core (callback) mysql2 query of a pooled connection, used to stream SELECT rows. */
interface CoreQuery {
  on(event: 'fields', f: (fields: { columnType?: number }[]) => void): CoreQuery;
  on(event: 'result', f: (row: unknown[]) => void): CoreQuery;
  on(event: 'error', f: (e: Error) => void): CoreQuery;
  on(event: 'end', f: () => void): CoreQuery;
}
interface CoreConnection {
  query(opts: { sql: string; values: unknown[]; rowsAsArray: boolean; timeout?: number }): CoreQuery;
  execute(opts: { sql: string; values: unknown[]; rowsAsArray: boolean; timeout?: number }): CoreQuery;
}

const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS spamrule_kv (k VARCHAR(255) PRIMARY KEY, v LONGTEXT NOT NULL, expires_at BIGINT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  'CREATE TABLE IF NOT EXISTS spamrule_counter (k VARCHAR(255) PRIMARY KEY, v BIGINT NOT NULL) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
];
/**
 * mysql2's pool queues `getConnection` calls when all connections are busy. With `queueLimit: 0`
 * (unbounded) a frozen server (connections open, no answers) let timed-out calls pile up there for
 * ever, growing the heap by MBs per second and delaying recovery while the backlog drained. The queue
 * is bounded instead: past this many waiting calls a call fails at once ("Queue limit reached"), so a
 * frozen server costs at most this many small closures. 1000 is far above what the engine issues
 * in a burst (a message's lookups run on `poolMaxConnections` connections within milliseconds).
 */
const POOL_QUEUE_LIMIT = 1000;
/** Extra bytes a statement carries besides its SQL and parameters (packet header, quoting). */
const PACKET_OVERHEAD = 1024;

/**
 * Prepared statements mysql2 keeps per connection (its default is 16,000). The store's own statements are
 * a handful and each rule's `sql_query` text is fixed, so a few hundred is plenty, and `poolMaxConnections`
 * times this stays far below the server's `max_prepared_stmt_count` (16,382 by default, for all clients).
 */
const MAX_PREPARED_STATEMENTS = 256;

/**
 * A TCP connection for mysql2's `stream` option. `checkAs`: the IP address the server's certificate is to be
 * checked against. mysql2 sends no TLS `servername` for an IP address (RFC 6066 §3 allows none), and Node's TLS
 * then checks the certificate against the socket's `_host`, which a socket connected to an address does not
 * set, or else against "localhost": a certificate for "localhost" would pass for any address. Setting `_host`
 * makes the check the address's (its IP subjectAltName entries), as mysql_async does for Stalwart.
 */
function tcpTo(port: number, address: string, checkAs: string | undefined): Socket {
  const socket = createConnection(port, address).setNoDelay(true);
  if (checkAs !== undefined) (socket as Socket & { _host?: string })._host = checkAs;
  return socket;
}

/** mysql2 column types that are Floats in the expression language: DECIMAL, FLOAT, DOUBLE, NEWDECIMAL. */
const FLOAT_TYPES = new Set([0, 4, 5, 246]);

/**
 * A MySQL/MariaDB store. Reads go to `readReplicas` round robin when configured, writes to the primary.
 * Each call fails within `timeout` ms with a LookupStoreError. Pools open lazily, hold at most
 * `poolMaxConnections` connections and keep up to `poolMinConnections` idle ones. `maxAllowedPacket`
 * (bytes) is enforced client-side: a call whose statement and parameters exceed it is refused before
 * it is sent, as the server would refuse it; so is one exceeding the server's own `max_allowed_packet`
 * (read when the store connects). A SELECT of `sql_query` reads at most `sqlMaxRows` rows (default
 * 10,000): past that it fails with a LookupStoreError and the connection is dropped, so a huge result
 * is never held in memory.
 * The `mysql2` driver is imported when the first store is created; pools are built on the first call.
 * `useTls` makes every connection TLS with the server's certificate checked, its chain and its host name
 * against `host` (mysql2 `rejectUnauthorized` and `verifyIdentity`), as PostgreSQL's and Redis's TLS do;
 * `allowInvalidCerts` (Stalwart's one switch for it) turns both checks off. A `host` that is an IP address is
 * checked against the certificate's IP addresses (mysql2 alone would check it as "localhost": see `tcpTo`).
 * With `pinned` (a store written over JMAP: src/lookup/store-pins.ts), each host name is connected to at
 * the address the store policy checked (mysql2's `stream` opens the socket there), while mysql2 keeps the
 * name as its `host`, which it sends as the TLS `servername` and checks the certificate against.
 * @throws LookupConfigError from the constructor when a secret source cannot be read, or a host name has
 *   no address in `pinned`.
 */
export class MySqlStore implements LookupStore {
  readonly type = 'MySql';
  /** Passwords of the primary and each replica, resolved at construction so a bad secret fails at once. */
  private readonly passwords: (string | undefined)[];
  private pools: Promise<{ primary: mysql.Pool; replicas: RoundRobin<mysql.Pool> | undefined; all: mysql.Pool[] }> | undefined;
  private schema: Promise<void> | undefined;
  private closed = false;
  /** The primary's `@@max_allowed_packet` in bytes, once connected. */
  private serverMaxPacket: number | undefined;
  private readonly maxRows: number;
  /** The mysql2 module, once loaded (every statement runs after `connect`). */
  private driver: MySql | undefined;
  private readonly pins: HostPins | undefined;

  /**
   * `opts.sqlMaxRows`: rows a `sql_query` SELECT may return (default 10,000; see the class docs);
   * `opts.pinned`: the addresses the store policy checked (see the class docs).
   */
  constructor(
    readonly namespace: string,
    readonly config: MySqlStoreConfig,
    opts: { sqlMaxRows?: number; pinned?: PinnedHosts } = {},
  ) {
    this.maxRows = Math.max(1, opts.sqlMaxRows ?? DEFAULT_SQL_MAX_ROWS);
    this.pins = storePins(namespace, config, opts.pinned);
    this.passwords = [config, ...config.readReplicas].map((s) => resolveSecret(s.authSecret, namespace));
    prefetch(loadMySql);
  }

  private connect() {
    this.pools ??= loadMySql(this.namespace).then((driver) => {
      this.driver = driver;
      const [primary, ...reps] = [this.config, ...this.config.readReplicas].map((s, i) => this.pool(driver, s, this.passwords[i]));
      return { primary: primary!, replicas: reps.length ? new RoundRobin(reps) : undefined, all: [primary!, ...reps] };
    });
    return this.pools;
  }

  private pool(driver: MySql, s: MySqlSettings, password: string | undefined): mysql.Pool {
    const c = this.config;
    const max = c.poolMaxConnections ?? 10;
    const route = this.pins?.route(s.host);
    // Checked at construction; a pool that cannot be built fails the store's calls with the reason.
    if (route !== undefined && 'problem' in route) throw refusedError(s.host, route.problem);
    // Pinned: the socket goes to the checked address; `host` stays the name, for TLS (servername) and messages.
    // TLS to an IP address: our socket too, so that the certificate is checked against the address (tcpTo).
    const ipTls = c.useTls && isIP(s.host) !== 0;
    const to = route !== undefined && !route.host.startsWith('/') ? route.host : ipTls ? s.host : undefined;
    const p = driver.createPool({
      host: s.host,
      ...(to !== undefined ? { stream: () => tcpTo(s.port, to, ipTls ? s.host : undefined) } : {}),
      port: s.port,
      database: s.database,
      user: s.authUsername ?? undefined,
      password,
      // verifyIdentity: mysql2 checks the certificate's host name only when asked (rejectUnauthorized alone
      // accepts a certificate from a trusted CA for any name). The check is against `host`, the name.
      ssl: c.useTls ? { rejectUnauthorized: !c.allowInvalidCerts, verifyIdentity: !c.allowInvalidCerts } : undefined,
      connectionLimit: max,
      maxIdle: Math.min(c.poolMinConnections ?? 5, max),
      idleTimeout: 30_000,
      connectTimeout: c.timeout ?? 10_000,
      charset: 'UTF8MB4_BIN',
      decimalNumbers: true,
      supportBigNumbers: true,
      bigNumberStrings: false,
      waitForConnections: true,
      queueLimit: POOL_QUEUE_LIMIT,
      maxPreparedStatements: MAX_PREPARED_STATEMENTS,
      // No `LOAD DATA LOCAL INFILE`: a server (any host a store names) must never get to ask for a local file.
      flags: ['-LOCAL_FILES'],
    });
    // Errors of idle connections (server gone) must not crash the process; the pool replaces them.
    (p as unknown as { pool: { on(e: string, f: () => void): void } }).pool.on('error', () => undefined);
    return p;
  }

  private ensureSchema(primary: mysql.Pool): Promise<void> {
    this.schema ??= (async () => {
      for (const q of SCHEMA) await primary.query(q);
      // Tables of older versions had `v TEXT` (64 KB): widen once, keeping the column's nullability.
      const [cols] = await primary.query(
        "SELECT DATA_TYPE, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'spamrule_kv' AND COLUMN_NAME = 'v'",
      );
      const col = (cols as { DATA_TYPE?: string; IS_NULLABLE?: string }[])[0];
      if (col && String(col.DATA_TYPE).toLowerCase() !== 'longtext')
        await primary.query(
          `ALTER TABLE spamrule_kv MODIFY v LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin ${col.IS_NULLABLE === 'YES' ? 'NULL' : 'NOT NULL'}`,
        );
      const [packet] = await primary.query('SELECT @@max_allowed_packet AS m');
      const m = Number((packet as { m?: unknown }[])[0]?.m);
      this.serverMaxPacket = Number.isFinite(m) && m > 0 ? m : undefined;
    })().catch((e) => {
      this.schema = undefined;
      throw e;
    });
    return this.schema;
  }

  private checkPacket(query: string, params: unknown[]): void {
    const max = this.config.maxAllowedPacket;
    const server = this.serverMaxPacket;
    if (max == null && server === undefined) return;
    let size = Buffer.byteLength(query);
    for (const p of params) size += typeof p === 'string' ? Buffer.byteLength(p) : 8;
    if (max != null && size > max) throw new RequestRefusedError(this.namespace, `statement of ${size} bytes exceeds maxAllowedPacket (${max} bytes)`);
    if (server !== undefined && size + PACKET_OVERHEAD > server)
      throw new RequestRefusedError(
        this.namespace,
        `statement of ${size} bytes exceeds the server's max_allowed_packet (${server} bytes); raise max_allowed_packet in the MySQL/MariaDB server configuration (e.g. max_allowed_packet = 64M under [mysqld])`,
      );
  }

  private run<T>(op: string, read: boolean, fn: (pool: mysql.Pool) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return withTimeout(this.namespace, op, this.config.timeout, async () => {
      const { primary, replicas } = await this.connect();
      await this.ensureSchema(primary);
      return fn(read && replicas ? replicas.next() : primary);
    });
  }

  /**
   * The parameters as the server binds them (COM_STMT_EXECUTE): integers as BIGINT, other numbers as
   * DOUBLE, so they keep their type (§4.3) as the text protocol's literals did; strings as strings.
   */
  private bind(values: unknown[]): unknown[] {
    const typed = this.driver!.TypedParameter;
    return values.map((v) => (typeof v !== 'number' ? v : Number.isSafeInteger(v) ? typed.LONGLONG(v) : typed.DOUBLE(v)));
  }

  /**
   * Runs a statement. With parameters it is prepared and its parameters bound by the server (`execute`):
   * mysql2's `query` would splice them into the text on the client with backslash escapes, which a server
   * in `sql_mode=NO_BACKSLASH_ESCAPES` reads differently, so a lookup key such as `' OR 1=1 -- ` would
   * become SQL. A statement without parameters carries nothing to splice and is sent as it is (`query`),
   * so statements the server cannot prepare (some DDL) still run from `sql_query`.
   */
  private async exec(p: mysql.Pool | mysql.PoolConnection, sql: string, values: unknown[]) {
    this.checkPacket(sql, values);
    const opts = { sql, rowsAsArray: true, timeout: this.config.timeout ?? undefined };
    try {
      return values.length === 0 ? await p.query(opts) : await p.execute({ ...opts, values: this.bind(values) } as never);
    } catch (e) {
      // The server refuses (and drops the connection) when a packet exceeds its max_allowed_packet.
      if ((e as { code?: string }).code === 'ER_NET_PACKET_TOO_LARGE')
        throw new RequestRefusedError(
          this.namespace,
          `statement exceeds the server's max_allowed_packet; raise max_allowed_packet in the MySQL/MariaDB server configuration (${(e as Error).message})`,
          { cause: e },
        );
      throw e;
    }
  }

  /**
   * A SELECT whose rows are streamed: reading stops (and the connection is dropped rather than drained)
   * past `maxRows`, so a result of millions of rows never sits in memory.
   */
  private async selectCapped(pool: mysql.Pool, sql: string, values: unknown[]): Promise<{ rows: unknown[][]; floats: boolean[] }> {
    this.checkPacket(sql, values);
    const conn = await pool.getConnection();
    let drop = false;
    try {
      return await new Promise((resolve, reject) => {
        const rows: unknown[][] = [];
        let floats: boolean[] = [];
        const core = (conn as unknown as { connection: CoreConnection }).connection;
        // Server-side parameters, as `exec` says why.
        const opts = { sql, values: this.bind(values), rowsAsArray: true, timeout: this.config.timeout ?? undefined };
        (values.length === 0 ? core.query(opts) : core.execute(opts))
          .on('fields', (f) => (floats = (f ?? []).map((x) => FLOAT_TYPES.has(x.columnType ?? -1))))
          .on('result', (row) => {
            if (drop || !Array.isArray(row)) return; // (an OK packet, e.g. SELECT … INTO, is no row)
            if (rows.length >= this.maxRows) {
              drop = true;
              reject(tooManyRows(this.namespace, this.maxRows));
            } else rows.push(row);
          })
          .on('error', (e: Error & { fatal?: boolean; code?: string }) => {
            // A timed-out query may still run on the connection: drop it rather than reuse it.
            if (e.fatal || e.code === 'PROTOCOL_SEQUENCE_TIMEOUT') drop = true;
            reject(e);
          })
          .on('end', () => resolve({ rows, floats }));
      });
    } finally {
      if (drop) conn.destroy();
      else conn.release();
    }
  }

  keyGet(key: string): Promise<string | null> {
    return this.run('key_get', true, async (p) => {
      const [rows] = await this.exec(p, 'SELECT v FROM spamrule_kv WHERE k = ? AND (expires_at IS NULL OR expires_at > ?)', [key, Date.now()]);
      const r = rows as unknown[][];
      const v = r.length ? r[0]![0] : null;
      return v === null || v === undefined ? null : String(v); // a NULL `v` (hand-made table) is absent
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
      return parseCounter(this.namespace, key, r.length ? r[0]![0] : null);
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
        return parseCounter(this.namespace, key, (rows as unknown[][])[0]![0]);
      } catch (e) {
        await conn.rollback().catch(() => undefined);
        throw e;
      } finally {
        conn.release();
      }
    });
  }
  /**
   * `sql_query` with `?` placeholders (MySQL's own); shaped per §4.3. A SELECT reads at most `sqlMaxRows`
   * rows; more reject with a LookupStoreError ("returned more than N rows").
   */
  sqlQuery(query: string, params: SqlParam[]): Promise<SqlResult> {
    const select = isSelect(query);
    return this.run('sql_query', select, async (p) => {
      if (select) {
        const { rows, floats } = await this.selectCapped(p, query, params);
        return shapeRows(rows, floats);
      }
      const [res] = await this.exec(p, query, params);
      return (res as { affectedRows?: number }).affectedRows ?? 0;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pools = await this.pools?.catch(() => undefined);
    // mysql2 keeps every connection (one still connecting included) in the core pool's `_allConnections`;
    // past the grace their sockets are destroyed, which ends them and lets `end()` resolve.
    await closePools(pools?.all ?? [], (p) => {
      const core = (p as unknown as { pool?: { _allConnections?: { toArray(): { stream?: DestroyableSocket }[] } } }).pool;
      return core?._allConnections?.toArray().map((c) => c.stream) ?? [];
    });
  }
}
