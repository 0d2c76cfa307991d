/**
 * `PostgreSql` lookup store on node-postgres pools (Stalwart's registry schema x:PostgreSqlStore).
 *
 * Tables (created on first use if missing; see docs/lookup-stores.md):
 *   spamrule_kv(k TEXT PRIMARY KEY, v TEXT NOT NULL, expires_at BIGINT NULL)  -- expires_at: Unix ms
 *   spamrule_counter(k TEXT PRIMARY KEY, v BIGINT NOT NULL)
 * Keys and counters are separate tables, so `key_get` on a counter key is missing (§4.3).
 */
import type pg from 'pg';
import type { PostgreSqlSettings, PostgreSqlStoreConfig } from './config.js';
import { loadPg, prefetch, type Pg } from './drivers.js';
import { resolveSecret } from './secret.js';
import { refusedError, storePins, type HostPins, type PinnedHosts } from './store-pins.js';
import type { LookupStore, SqlParam, SqlResult } from './types.js';
import { closePools, DEFAULT_SQL_MAX_ROWS, isSelect, parseCounter, RoundRobin, shapeRows, tooManyRows, withTimeout, type DestroyableSocket } from './util.js';

const SCHEMA = [
  'CREATE TABLE IF NOT EXISTS spamrule_kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, expires_at BIGINT NULL)',
  'CREATE TABLE IF NOT EXISTS spamrule_counter (k TEXT PRIMARY KEY, v BIGINT NOT NULL)',
];
/** float4, float8, numeric: their values are Floats in the expression language. */
const FLOAT_OIDS = new Set([700, 701, 1700]);
// int8 and numeric come back as strings by default; parse them so integers and floats keep their type.
const typesOf = (driver: Pg) => ({
  getTypeParser(oid: number, format?: string) {
    if (oid === 20) return (v: string) => Number(v);
    if (oid === 1700) return (v: string) => Number(v);
    return (driver.types.getTypeParser as (o: number, f?: string) => (v: string) => unknown)(oid, format);
  },
});

interface Pools {
  driver: Pg;
  primary: pg.Pool;
  replicas: RoundRobin<pg.Pool> | undefined;
  all: pg.Pool[];
}

/** How a pooled connection is checked before reuse (the names of deadpool-postgres, which Stalwart uses). */
export type RecyclingMethod = PostgreSqlStoreConfig['poolRecyclingMethod'];

/**
 * A PostgreSQL store. Reads (`key_get`, `key_exists`, `counter_get`, `sql_query` SELECTs) go to the
 * `readReplicas` round robin when there are any; writes go to the primary. Each call fails within
 * `timeout` ms with a LookupStoreError. Connections open lazily; a pool never holds more than
 * `poolMaxConnections` (per server). `poolRecyclingMethod`:
 * - `fast`: reuse an idle connection as is (a broken one is dropped when it errors);
 * - `verified`: run an empty statement on the connection before each use, so a dead one is replaced
 *   before the real query runs;
 * - `clean`: additionally reset session state (`DISCARD ALL`) before each use, so a `sql_query` that
 *   changed settings or created temp tables cannot affect the next caller.
 * A SELECT of `sql_query` reads at most `sqlMaxRows` rows (default 10,000): past that it fails with a
 * LookupStoreError and the connection is dropped, so a huge result is never held in memory.
 * The `pg` driver is imported when the first store is created; pools are built on the first call.
 * With `pinned` (a store written over JMAP: src/lookup/store-pins.ts), each host name is connected to at
 * the address the store policy checked, with TLS `servername` the name (node-postgres checks the
 * certificate against it).
 * @throws LookupConfigError from the constructor when a secret source cannot be read, or a host name has
 *   no address in `pinned`.
 */
export class PostgresStore implements LookupStore {
  readonly type = 'PostgreSql';
  /** Passwords of the primary and each replica, resolved at construction so a bad secret fails at once. */
  private readonly passwords: (string | undefined)[];
  private pools: Promise<Pools> | undefined;
  private schema: Promise<void> | undefined;
  private closed = false;
  private readonly maxRows: number;
  private readonly pins: HostPins | undefined;

  /**
   * `opts.sqlMaxRows`: rows a `sql_query` SELECT may return (default 10,000; see the class docs);
   * `opts.pinned`: the addresses the store policy checked (see the class docs).
   */
  constructor(
    readonly namespace: string,
    readonly config: PostgreSqlStoreConfig,
    opts: { sqlMaxRows?: number; pinned?: PinnedHosts } = {},
  ) {
    this.maxRows = Math.max(1, opts.sqlMaxRows ?? DEFAULT_SQL_MAX_ROWS);
    this.pins = storePins(namespace, config, opts.pinned);
    this.passwords = [config, ...config.readReplicas].map((s) => resolveSecret(s.authSecret, namespace));
    prefetch(loadPg);
  }

  private connect(): Promise<Pools> {
    this.pools ??= loadPg(this.namespace).then((driver) => {
      const [primary, ...reps] = [this.config, ...this.config.readReplicas].map((s, i) => this.pool(driver, s, this.passwords[i]));
      return { driver, primary: primary!, replicas: reps.length ? new RoundRobin(reps) : undefined, all: [primary!, ...reps] };
    });
    return this.pools;
  }

  private pool(driver: Pg, s: PostgreSqlSettings, password: string | undefined): pg.Pool {
    const c = this.config;
    const route = this.pins?.route(s.host) ?? { host: s.host };
    // Checked at construction; a pool that cannot be built fails the store's calls with the reason.
    if ('problem' in route) throw refusedError(s.host, route.problem);
    const p = new driver.Pool({
      host: route.host,
      port: s.port,
      database: s.database,
      user: s.authUsername ?? undefined,
      password,
      options: s.options ?? undefined,
      // node-postgres sets `servername` itself only for a host name; for the pinned address it keeps this one.
      ssl: c.useTls ? { rejectUnauthorized: !c.allowInvalidCerts, ...(route.servername !== undefined ? { servername: route.servername } : {}) } : false,
      max: c.poolMaxConnections ?? 10,
      connectionTimeoutMillis: c.timeout ?? 0,
      query_timeout: c.timeout ?? undefined,
      idleTimeoutMillis: 30_000,
      types: typesOf(driver),
    });
    // An idle connection whose server went away emits 'error' on the pool; without a listener Node would
    // crash. The pool drops that client and opens a new one on the next call (reconnect by itself).
    p.on('error', () => undefined);
    return p;
  }

  private ensureSchema(primary: pg.Pool): Promise<void> {
    this.schema ??= (async () => {
      for (const q of SCHEMA)
        await primary.query(q).catch((e: { code?: string }) => {
          // Two processes creating the same table at once: IF NOT EXISTS is not atomic in PostgreSQL, the
          // loser gets a unique violation on pg_type (23505) or "already exists" (42P07). The table exists.
          if (e.code !== '23505' && e.code !== '42P07') throw e;
        });
    })().catch((e) => {
      this.schema = undefined; // retry on the next call, e.g. once the server is back
      throw e;
    });
    return this.schema;
  }

  private async query(pool: pg.Pool, text: string, values: unknown[]): Promise<pg.QueryResult> {
    const method = this.config.poolRecyclingMethod;
    if (method === 'fast') return pool.query({ text, values, rowMode: 'array' });
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      await client.query(method === 'clean' ? 'DISCARD ALL' : ';');
      return await client.query({ text, values, rowMode: 'array' });
    } catch (e) {
      broken = e as Error;
      throw e;
    } finally {
      client.release(broken);
    }
  }

  /**
   * A SELECT whose rows are counted as they arrive: past `maxRows` it rejects and the connection is
   * destroyed instead of reading the rest, so at most `maxRows + 1` rows are ever held. (The Query's
   * callback, not its 'end'/'error' events, settles it: pg reports its `query_timeout` only there.)
   */
  private async selectCapped(driver: Pg, pool: pg.Pool, text: string, values: unknown[]): Promise<SqlResult> {
    const method = this.config.poolRecyclingMethod;
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      if (method !== 'fast') await client.query(method === 'clean' ? 'DISCARD ALL' : ';');
      return await new Promise<SqlResult>((resolve, reject) => {
        let count = 0;
        const callback = (err: Error | undefined, r: pg.QueryResult | undefined) => {
          if (err) {
            broken ??= err;
            reject(err);
          } else if (broken === undefined) resolve(shapeRows((r?.rows ?? []) as unknown[][], (r?.fields ?? []).map((f) => FLOAT_OIDS.has(f.dataTypeID))));
        };
        const q = client.query(new driver.Query({ text, values, rowMode: 'array', callback } as pg.QueryConfig));
        q.on('row', () => {
          if (++count > this.maxRows && broken === undefined) {
            broken = tooManyRows(this.namespace, this.maxRows);
            reject(broken);
          }
        });
      });
    } catch (e) {
      broken ??= e as Error;
      throw e;
    } finally {
      client.release(broken); // an Error destroys the connection (and stops an over-long result)
    }
  }

  private run<T>(op: string, read: boolean, fn: (pool: pg.Pool, driver: Pg) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return withTimeout(this.namespace, op, this.config.timeout, async () => {
      const { driver, primary, replicas } = await this.connect();
      await this.ensureSchema(primary);
      return fn(read && replicas ? replicas.next() : primary, driver);
    });
  }

  keyGet(key: string): Promise<string | null> {
    return this.run('key_get', true, async (p) => {
      const r = await this.query(p, 'SELECT v FROM spamrule_kv WHERE k = $1 AND (expires_at IS NULL OR expires_at > $2)', [key, Date.now()]);
      const v = r.rows.length ? (r.rows[0] as unknown[])[0] : null;
      return v === null || v === undefined ? null : String(v); // a NULL `v` (hand-made table) is absent
    });
  }
  keyExists(key: string): Promise<boolean> {
    return this.run('key_exists', true, async (p) => {
      const r = await this.query(p, 'SELECT 1 FROM spamrule_kv WHERE k = $1 AND (expires_at IS NULL OR expires_at > $2)', [key, Date.now()]);
      return r.rows.length > 0;
    });
  }
  keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.run('key_set', false, async (p) => {
      const exp = ttlMs !== undefined && ttlMs > 0 ? Date.now() + ttlMs : null;
      await this.query(
        p,
        'INSERT INTO spamrule_kv (k, v, expires_at) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, expires_at = EXCLUDED.expires_at',
        [key, value, exp],
      );
    });
  }
  counterGet(key: string): Promise<number> {
    return this.run('counter_get', true, async (p) => {
      const r = await this.query(p, 'SELECT v FROM spamrule_counter WHERE k = $1', [key]);
      return parseCounter(this.namespace, key, r.rows.length ? (r.rows[0] as unknown[])[0] : null);
    });
  }
  counterIncr(key: string, by: number): Promise<number> {
    return this.run('counter_incr', false, async (p) => {
      const r = await this.query(
        p,
        'INSERT INTO spamrule_counter (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = spamrule_counter.v + EXCLUDED.v RETURNING v',
        [key, Math.trunc(by)],
      );
      return parseCounter(this.namespace, key, (r.rows[0] as unknown[])[0]);
    });
  }
  /**
   * `sql_query` with `$1, $2, …` placeholders (PostgreSQL's own); shaped per §4.3. A SELECT reads at most
   * `sqlMaxRows` rows; more reject with a LookupStoreError ("returned more than N rows").
   */
  sqlQuery(query: string, params: SqlParam[]): Promise<SqlResult> {
    const select = isSelect(query);
    return this.run('sql_query', select, async (p, driver) => {
      if (select) return this.selectCapped(driver, p, query, params);
      const r = await this.query(p, query, params);
      return r.rowCount ?? 0;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const pools = await this.pools?.catch(() => undefined);
    // pg-pool keeps its clients (a connect still in progress included) in `_clients` (emptied by `end()`
    // before their sockets have closed); past the grace, their sockets are destroyed, which ends the
    // connects and lets `end()` resolve.
    await closePools(pools?.all ?? [], (p) =>
      (p as unknown as { _clients?: { connection?: { stream?: DestroyableSocket } }[] })._clients?.map((c) => c.connection?.stream) ?? [],
    );
  }
}
