/**
 * Persistence of managed objects. Two backends behind one interface: embedded SQLite
 * (better-sqlite3, WAL, synchronous=FULL) and PostgreSQL (pg, LISTEN/NOTIFY so other processes
 * reload). Every `/set` runs as one transaction: all accepted changes of the call are durable before
 * the response, and a crash leaves either all or none of them.
 *
 * Several servers may share one database. Each keeps the objects in memory and reloads a type when
 * another one has committed a change to it: on PostgreSQL when its NOTIFY arrives (and, in case one
 * was missed, on a periodic check of the states and after the LISTEN connection is re-established);
 * on SQLite when the file's `PRAGMA data_version` moves (checked every second). Every reload that
 * brings in another process's change is announced to the `onExternalChange` listeners (the engine
 * and the push streams), also when it happens inside a `/set` that then fails (`stateMismatch`), so
 * that what `/get` answers, what the engine runs and what push announces never part.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { importPg, requireSqlite, type Pg } from '../lookup/drivers.js';
import { openSqlite } from './sqlite-file.js';
import { OBJECT_TYPES, type Data, type ObjectType } from './objects.js';
import { changeRows, type ChangeLog, type ChangeRow } from './changes.js';
import { pgChangesSince, pgLogChanges, pgReadSnapshot, sqliteChangesSince, sqliteLogChanges } from './change-log-sql.js';

export interface Snapshot {
  /** Increments once per committed `/set` that changed something; the JMAP `state` is derived from it. */
  state: number;
  objects: Map<string, Data>;
}

/**
 * Runs inside the write transaction with a private copy of the current objects. It mutates
 * `objects` and returns the ids it touched (present in `objects` = upsert, absent = delete).
 * `read(t)` gives the committed objects of another type named in `transact`'s `reads`, current as of
 * the transaction (the writers of that type are held off meanwhile), e.g. for a uniqueness rule that
 * spans two types.
 */
export type Mutation<T> = (working: Snapshot, read: (type: ObjectType) => Snapshot) => { result: T; touched: Set<string> };

export interface ObjectRepository extends ChangeLog {
  /** Current committed objects and state of a type (from memory). */
  snapshot(type: ObjectType): Snapshot;
  /**
   * Runs `fn` under the write lock of `type` (and of each type in `reads`, which `fn` may read through
   * its `read` argument) and commits what it touched. Throws on storage failure (nothing applied).
   */
  transact<T>(type: ObjectType, fn: Mutation<T>, reads?: readonly ObjectType[]): Promise<T>;
  /** Called after this process has loaded a change that another process committed. */
  onExternalChange(cb: (type: ObjectType) => void): void;
  close(): Promise<void>;
}

const TYPES: readonly ObjectType[] = OBJECT_TYPES;

/** How often a SQLite repository looks for another process's commits (ms). */
const SQLITE_POLL_MS = 1_000;
/** How long a SQLite write waits for another process's write lock before failing (ms), without blocking the event loop. */
const SQLITE_BUSY_MS = 5_000;
/** How often a PostgreSQL repository compares the stored states with its own, in case a NOTIFY was missed (ms). */
const PG_CHECK_MS = 30_000;
/** How long opening a connection may take (ms). */
const PG_CONNECT_MS = 10_000;
/** Longest wait between two attempts to re-establish the LISTEN connection (ms). */
const PG_RECONNECT_MAX_MS = 30_000;

function emptyCache(): Record<ObjectType, Snapshot> {
  return Object.fromEntries(TYPES.map((t) => [t, { state: 0, objects: new Map() }])) as Record<ObjectType, Snapshot>;
}

/** The listeners of a repository, told about each type another process changed. */
class ChangeListeners {
  private readonly cbs: ((t: ObjectType) => void)[] = [];

  add(cb: (t: ObjectType) => void): void {
    this.cbs.push(cb);
  }

  tell(types: Iterable<ObjectType>): void {
    for (const t of types)
      for (const cb of this.cbs) {
        try {
          cb(t);
        } catch {
          // A listener's failure (an engine that cannot load the rules) is its own to report.
        }
      }
  }
}

const isBusy = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED';
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class SqliteRepository implements ObjectRepository {
  private readonly cache = emptyCache();
  private readonly db: Database.Database;
  private readonly listeners = new ChangeListeners();
  private dataVersion: number;
  private readonly poll: NodeJS.Timeout;

  constructor(path: string) {
    // No busy wait inside SQLite: it would block the event loop, and with it every listener of the
    // process, for as long as another process holds the write lock. Writes retry asynchronously instead.
    this.db = openSqlite(path, { busyTimeoutMs: 0 });
    for (const t of TYPES) this.reload(t);
    this.dataVersion = this.readDataVersion();
    this.poll = setInterval(() => this.sync(), SQLITE_POLL_MS);
    this.poll.unref();
  }

  private readDataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  private reload(type: ObjectType): void {
    const rows = this.db.prepare('SELECT id, data FROM jmap_object WHERE type = ?').all(type) as { id: string; data: string }[];
    const state = this.stateRow(type);
    this.cache[type] = { state, objects: new Map(rows.map((r) => [r.id, JSON.parse(r.data) as Data])) };
  }

  private stateRow(type: ObjectType): number {
    return (this.db.prepare('SELECT value FROM jmap_state WHERE type = ?').get(type) as { value: number }).value;
  }

  /** Reloads the types whose stored state moved (another process committed); returns them. */
  private reloadStale(types: readonly ObjectType[] = TYPES): ObjectType[] {
    const stale = types.filter((t) => this.stateRow(t) !== this.cache[t].state);
    for (const t of stale) this.reload(t);
    return stale;
  }

  /** Loads and announces what other processes committed since the last look (a no-op when nothing did). */
  private sync(): void {
    try {
      const v = this.readDataVersion();
      if (v === this.dataVersion) return;
      // Read in one transaction, so that each type's state and objects agree.
      const stale = this.db.transaction(() => this.reloadStale())();
      this.dataVersion = v;
      this.listeners.tell(stale);
    } catch {
      // Busy or closed: the next tick tries again.
    }
  }

  snapshot(type: ObjectType): Snapshot {
    return this.cache[type];
  }

  async transact<T>(type: ObjectType, fn: Mutation<T>, reads: readonly ObjectType[] = []): Promise<T> {
    const upsert = this.db.prepare('INSERT INTO jmap_object (type, id, data) VALUES (?, ?, ?) ON CONFLICT (type, id) DO UPDATE SET data = excluded.data');
    const del = this.db.prepare('DELETE FROM jmap_object WHERE type = ? AND id = ?');
    let loaded: ObjectType[] = [];
    const tx = this.db.transaction(() => {
      // Another process may have written since we loaded (two servers on one file). BEGIN IMMEDIATE
      // holds the file's write lock, so what is read here stays current until the commit.
      loaded = this.reloadStale([type, ...reads]);
      const cur = this.cache[type];
      const working: Snapshot = { state: cur.state, objects: new Map(cur.objects) };
      const { result, touched } = fn(working, (t) => this.cache[t]);
      if (touched.size > 0) {
        for (const id of touched) {
          const d = working.objects.get(id);
          if (d === undefined) del.run(type, id);
          else upsert.run(type, id, JSON.stringify(d));
        }
        working.state = cur.state + 1;
        this.db.prepare('UPDATE jmap_state SET value = ? WHERE type = ?').run(working.state, type);
        sqliteLogChanges(this.db, type, changeRows(cur.objects, working.objects, touched, working.state), working.state);
      }
      return { result, working };
    });
    const deadline = Date.now() + SQLITE_BUSY_MS;
    try {
      for (let wait = 2; ; wait = Math.min(wait * 2, 100)) {
        try {
          const { result, working } = tx.immediate();
          this.cache[type] = working;
          return result;
        } catch (e) {
          // BEGIN IMMEDIATE failed before `fn` ran: nothing was read or written, so trying again is safe.
          if (!isBusy(e) || Date.now() + wait > deadline) throw e;
          await sleep(wait);
        }
      }
    } finally {
      // Changes of other processes loaded above are announced whether this call committed or not
      // (e.g. `stateMismatch`), or the engine and push would stay behind what `/get` now answers.
      this.listeners.tell(loaded);
    }
  }

  changesSince(type: ObjectType, since: number, until: number): Promise<ChangeRow[] | undefined> {
    return Promise.resolve(sqliteChangesSince(this.db, type, since, until));
  }

  onExternalChange(cb: (type: ObjectType) => void): void {
    this.listeners.add(cb);
  }

  async close(): Promise<void> {
    clearInterval(this.poll);
    this.db.close();
  }
}

/** Reads the managed objects of a SQLite database without opening it for writing. */
export function readSqliteObjects(path: string): Record<ObjectType, Map<string, Data>> {
  const Sqlite = requireSqlite();
  const db = new Sqlite(path, { readonly: true, fileMustExist: true });
  try {
    const out = Object.fromEntries(TYPES.map((t) => [t, new Map<string, Data>()])) as Record<ObjectType, Map<string, Data>>;
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'jmap_object'").get();
    if (hasTable === undefined) return out;
    for (const r of db.prepare('SELECT type, id, data FROM jmap_object').all() as { type: ObjectType; id: string; data: string }[])
      out[r.type]?.set(r.id, JSON.parse(r.data) as Data);
    return out;
  } finally {
    db.close();
  }
}

const PG_SCHEMA = `
CREATE TABLE IF NOT EXISTS spamrule_jmap_object (type TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (type, id));
CREATE TABLE IF NOT EXISTS spamrule_jmap_state (type TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO spamrule_jmap_state (type, value) VALUES ${TYPES.map((t) => `('${t}', 0)`).join(', ')} ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS spamrule_jmap_change (type TEXT NOT NULL, state BIGINT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (type, state, id));
CREATE TABLE IF NOT EXISTS spamrule_jmap_change_floor (type TEXT PRIMARY KEY, since BIGINT NOT NULL);
INSERT INTO spamrule_jmap_change_floor (type, since) SELECT type, value FROM spamrule_jmap_state ON CONFLICT DO NOTHING;
`;
const PG_CHANNEL = 'spamrule_jmap';

type Queryable = pg.Pool | pg.PoolClient;

export class PostgresRepository implements ObjectRepository {
  private readonly cache = emptyCache();
  private readonly listeners = new ChangeListeners();
  private listener?: pg.Client;
  private closed = false;
  /** One reload of stale types at a time; a request made meanwhile runs after it. */
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private check?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  private reconnectMs = 500;

  private constructor(
    private readonly pg: Pg,
    private readonly url: string,
    private readonly pool: pg.Pool,
  ) {
    // An idle client whose connection dies (a server restart, pg_terminate_backend) emits on the pool;
    // unhandled, that 'error' event would end the process. The pool drops the client and opens another.
    pool.on('error', () => undefined);
  }

  /** Connects, creates the tables, loads everything and starts LISTENing. Throws when unreachable. */
  static async open(url: string): Promise<PostgresRepository> {
    const pgm = await importPg();
    // A database that accepts connections but never answers must not hold a request (or a reload) for ever.
    const pool = new pgm.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: PG_CONNECT_MS });
    const repo = new PostgresRepository(pgm, url, pool);
    try {
      const c = await pool.connect();
      try {
        // Two servers starting at once would race on CREATE TABLE IF NOT EXISTS; an advisory lock serialises them.
        await c.query('SELECT pg_advisory_lock(7281001)');
        await c.query(PG_SCHEMA);
        await c.query('SELECT pg_advisory_unlock(7281001)');
      } finally {
        c.release();
      }
      await repo.reloadAll();
      await repo.listen();
    } catch (e) {
      await repo.close();
      throw e;
    }
    repo.check = setInterval(() => repo.requestSync(), PG_CHECK_MS);
    repo.check.unref();
    return repo;
  }

  /** Opens the LISTEN connection; when it is lost, another is opened (with backoff) and a sync follows. */
  private async listen(): Promise<void> {
    const client = new this.pg.Client({ connectionString: this.url, connectionTimeoutMillis: PG_CONNECT_MS });
    let lost = false;
    const onLost = (): void => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (msg) => this.onNotify(msg.payload ?? ''));
    await client.connect();
    await client.query(`LISTEN ${PG_CHANNEL}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    this.reconnectMs = 500;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer !== undefined) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.listen().then(
        // Notifications sent while we were not listening are lost: compare every state.
        () => this.requestSync(),
        () => {
          this.reconnectMs = Math.min(this.reconnectMs * 2, PG_RECONNECT_MAX_MS);
          this.scheduleReconnect();
        },
      );
    }, this.reconnectMs);
    this.reconnectTimer.unref();
  }

  /** Loads every type's state and objects in one snapshot (REPEATABLE READ), so that they agree. */
  private async readAll(q: Queryable, types: readonly ObjectType[]): Promise<Map<ObjectType, Snapshot>> {
    const st = await q.query('SELECT type, value FROM spamrule_jmap_state WHERE type = ANY($1)', [types]);
    const rows = await q.query('SELECT type, id, data FROM spamrule_jmap_object WHERE type = ANY($1)', [types]);
    const out = new Map<ObjectType, Snapshot>();
    for (const r of st.rows as { type: ObjectType; value: string }[]) out.set(r.type, { state: Number(r.value), objects: new Map() });
    // TEXT, not JSONB: JSONB reorders keys, and the stored text is what "unchanged" is compared against.
    for (const r of rows.rows as { type: ObjectType; id: string; data: string }[]) out.get(r.type)?.objects.set(r.id, JSON.parse(r.data) as Data);
    return out;
  }

  private async reloadAll(): Promise<void> {
    for (const [t, snap] of await this.snapshotRead(TYPES)) this.cache[t] = snap;
  }

  /** `readAll` in a read-only REPEATABLE READ transaction of its own. */
  private snapshotRead(types: readonly ObjectType[]): Promise<Map<ObjectType, Snapshot>> {
    return pgReadSnapshot(this.pool, (c) => this.readAll(c, types));
  }

  private onNotify(payload: string): void {
    const [type, state] = payload.split(':') as [ObjectType, string];
    if (!TYPES.includes(type) || this.closed) return;
    if (Number(state) <= this.cache[type].state) return; // our own commit, or already loaded
    this.requestSync();
  }

  /**
   * Reloads every type whose stored state is ahead of ours and announces it. A failure (the database
   * unreachable) leaves the cache as it is; the periodic check tries again.
   */
  private requestSync(): void {
    if (this.closed) return;
    if (this.syncing !== undefined) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        try {
          const st = await this.pool.query('SELECT type, value FROM spamrule_jmap_state');
          const ahead = (st.rows as { type: ObjectType; value: string }[]).filter((r) => TYPES.includes(r.type) && Number(r.value) > this.cache[r.type].state).map((r) => r.type);
          if (ahead.length === 0) continue;
          const loaded: ObjectType[] = [];
          for (const [t, snap] of await this.snapshotRead(ahead)) {
            // A transaction of ours may have moved the cache past what was read.
            if (snap.state > this.cache[t].state) {
              this.cache[t] = snap;
              loaded.push(t);
            }
          }
          if (!this.closed) this.listeners.tell(loaded);
        } catch {
          return;
        }
      } while (this.syncAgain && !this.closed);
    })().finally(() => {
      this.syncing = undefined;
    });
  }

  snapshot(type: ObjectType): Snapshot {
    return this.cache[type];
  }

  async transact<T>(type: ObjectType, fn: Mutation<T>, reads: readonly ObjectType[] = []): Promise<T> {
    const c = await this.pool.connect();
    const loaded: ObjectType[] = [];
    try {
      await c.query('BEGIN');
      // The state rows' locks serialise writers across processes: of this type, and of the types `fn`
      // reads, locked in one order (by name) so that two writers cannot deadlock. A stale cache is
      // refreshed under them.
      const locked = [...new Set([type, ...reads])].sort();
      const st = await c.query('SELECT type, value FROM spamrule_jmap_state WHERE type = ANY($1) ORDER BY type FOR UPDATE', [locked]);
      const stale = (st.rows as { type: ObjectType; value: string }[]).filter((r) => Number(r.value) !== this.cache[r.type].state).map((r) => r.type);
      if (stale.length > 0) {
        for (const [t, snap] of await this.readAll(c, stale)) this.cache[t] = snap;
        loaded.push(...stale);
      }
      const cur = this.cache[type];
      const working: Snapshot = { state: cur.state, objects: new Map(cur.objects) };
      const { result, touched } = fn(working, (t) => this.cache[t]);
      if (touched.size > 0) {
        for (const id of touched) {
          const d = working.objects.get(id);
          if (d === undefined) await c.query('DELETE FROM spamrule_jmap_object WHERE type = $1 AND id = $2', [type, id]);
          else
            await c.query(
              'INSERT INTO spamrule_jmap_object (type, id, data) VALUES ($1, $2, $3) ON CONFLICT (type, id) DO UPDATE SET data = excluded.data',
              [type, id, JSON.stringify(d)],
            );
        }
        working.state = cur.state + 1;
        await c.query('UPDATE spamrule_jmap_state SET value = $1 WHERE type = $2', [working.state, type]);
        await pgLogChanges(c, type, changeRows(cur.objects, working.objects, touched, working.state), working.state);
        await c.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, `${type}:${working.state}`]);
      }
      await c.query('COMMIT');
      // A later transaction of this process may already have refreshed the cache past us.
      if (working.state >= this.cache[type].state) this.cache[type] = working;
      return result;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
      // Other processes' changes loaded under the lock: their NOTIFY will now be ignored, so they are
      // announced here, whether this call committed or failed (e.g. `stateMismatch`).
      if (!this.closed) this.listeners.tell(loaded);
    }
  }

  changesSince(type: ObjectType, since: number, until: number): Promise<ChangeRow[] | undefined> {
    return pgChangesSince(this.pool, type, since, until);
  }

  onExternalChange(cb: (type: ObjectType) => void): void {
    this.listeners.add(cb);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.check);
    clearTimeout(this.reconnectTimer);
    await this.listener?.end().catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
