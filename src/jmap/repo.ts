/**
 * Persistence of managed objects. Two backends behind one interface: embedded SQLite
 * (better-sqlite3, WAL, synchronous=FULL) and PostgreSQL (pg, LISTEN/NOTIFY so other processes
 * reload). Every `/set` runs as one transaction: all accepted changes of the call are durable before
 * the response, and a crash leaves either all or none of them.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { importPg, requireSqlite } from '../lookup/drivers.js';
import { openSqlite } from './sqlite-file.js';
import { OBJECT_TYPES, type Data, type ObjectType } from './objects.js';

export interface Snapshot {
  /** Increments once per committed `/set` that changed something; the JMAP `state` is derived from it. */
  state: number;
  objects: Map<string, Data>;
}

/**
 * Runs inside the write transaction with a private copy of the current objects. It mutates
 * `objects` and returns the ids it touched (present in `objects` = upsert, absent = delete).
 */
export type Mutation<T> = (working: Snapshot) => { result: T; touched: Set<string> };

export interface ObjectRepository {
  /** Current committed objects and state of a type (from memory). */
  snapshot(type: ObjectType): Snapshot;
  /** Runs `fn` under the write lock and commits what it touched. Throws on storage failure (nothing applied). */
  transact<T>(type: ObjectType, fn: Mutation<T>): Promise<T>;
  /** Called when another process committed a change that this one has now loaded (PostgreSQL NOTIFY). */
  onExternalChange(cb: (type: ObjectType) => void): void;
  close(): Promise<void>;
}

const TYPES: readonly ObjectType[] = OBJECT_TYPES;

function emptyCache(): Record<ObjectType, Snapshot> {
  return Object.fromEntries(TYPES.map((t) => [t, { state: 0, objects: new Map() }])) as Record<ObjectType, Snapshot>;
}

export class SqliteRepository implements ObjectRepository {
  private readonly cache = emptyCache();
  private readonly db: Database.Database;

  constructor(path: string) {
    this.db = openSqlite(path);
    for (const t of TYPES) this.reload(t);
  }

  private reload(type: ObjectType): void {
    const rows = this.db.prepare('SELECT id, data FROM jmap_object WHERE type = ?').all(type) as { id: string; data: string }[];
    const state = this.stateRow(type);
    this.cache[type] = { state, objects: new Map(rows.map((r) => [r.id, JSON.parse(r.data) as Data])) };
  }

  private stateRow(type: ObjectType): number {
    return (this.db.prepare('SELECT value FROM jmap_state WHERE type = ?').get(type) as { value: number }).value;
  }

  snapshot(type: ObjectType): Snapshot {
    return this.cache[type];
  }

  async transact<T>(type: ObjectType, fn: Mutation<T>): Promise<T> {
    const upsert = this.db.prepare('INSERT INTO jmap_object (type, id, data) VALUES (?, ?, ?) ON CONFLICT (type, id) DO UPDATE SET data = excluded.data');
    const del = this.db.prepare('DELETE FROM jmap_object WHERE type = ? AND id = ?');
    const tx = this.db.transaction(() => {
      // Another process may have written since we loaded (e.g. two servers on one file).
      if (this.stateRow(type) !== this.cache[type].state) this.reload(type);
      const cur = this.cache[type];
      const working: Snapshot = { state: cur.state, objects: new Map(cur.objects) };
      const { result, touched } = fn(working);
      if (touched.size > 0) {
        for (const id of touched) {
          const d = working.objects.get(id);
          if (d === undefined) del.run(type, id);
          else upsert.run(type, id, JSON.stringify(d));
        }
        working.state = cur.state + 1;
        this.db.prepare('UPDATE jmap_state SET value = ? WHERE type = ?').run(working.state, type);
      }
      return { result, working };
    });
    const { result, working } = tx.immediate();
    this.cache[type] = working;
    return result;
  }

  onExternalChange(): void {
    // A single server owns the SQLite file; other processes only read it (classify --db).
  }

  async close(): Promise<void> {
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
`;
const PG_CHANNEL = 'spamrule_jmap';

export class PostgresRepository implements ObjectRepository {
  private readonly cache = emptyCache();
  private listeners: ((t: ObjectType) => void)[] = [];
  private listener?: pg.Client;
  private closed = false;

  private constructor(private readonly pool: pg.Pool) {}

  /** Connects, creates the tables, loads everything and starts LISTENing. Throws when unreachable. */
  static async open(url: string): Promise<PostgresRepository> {
    const pg = await importPg();
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    const repo = new PostgresRepository(pool);
    const c = await pool.connect();
    try {
      // Two servers starting at once would race on CREATE TABLE IF NOT EXISTS; an advisory lock serialises them.
      await c.query('SELECT pg_advisory_lock(7281001)');
      await c.query(PG_SCHEMA);
      await c.query('SELECT pg_advisory_unlock(7281001)');
    } finally {
      c.release();
    }
    for (const t of TYPES) await repo.reload(t, pool);
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', (msg) => void repo.onNotify(msg.payload ?? ''));
    listener.on('error', () => {
      /* connection lost: this instance stops hearing about changes; writes still re-check state */
    });
    await listener.query(`LISTEN ${PG_CHANNEL}`);
    repo.listener = listener;
    return repo;
  }

  private async reload(type: ObjectType, q: pg.Pool | pg.PoolClient): Promise<void> {
    const st = await q.query('SELECT value FROM spamrule_jmap_state WHERE type = $1', [type]);
    const rows = await q.query('SELECT id, data FROM spamrule_jmap_object WHERE type = $1', [type]);
    // TEXT, not JSONB: JSONB reorders keys, and the stored text is what "unchanged" is compared against.
    this.cache[type] = { state: Number(st.rows[0].value), objects: new Map(rows.rows.map((r: { id: string; data: string }) => [r.id, JSON.parse(r.data) as Data])) };
  }

  private async onNotify(payload: string): Promise<void> {
    const [type, state] = payload.split(':') as [ObjectType, string];
    if (!TYPES.includes(type) || this.closed) return;
    if (Number(state) <= this.cache[type].state) return; // our own commit, or already loaded
    try {
      await this.reload(type, this.pool);
    } catch {
      return;
    }
    for (const cb of this.listeners) cb(type);
  }

  snapshot(type: ObjectType): Snapshot {
    return this.cache[type];
  }

  async transact<T>(type: ObjectType, fn: Mutation<T>): Promise<T> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN');
      // The row lock serialises writers across processes; a stale cache is refreshed under it.
      const st = await c.query('SELECT value FROM spamrule_jmap_state WHERE type = $1 FOR UPDATE', [type]);
      const stale = Number(st.rows[0].value) !== this.cache[type].state;
      if (stale) await this.reload(type, c);
      const cur = this.cache[type];
      const working: Snapshot = { state: cur.state, objects: new Map(cur.objects) };
      const { result, touched } = fn(working);
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
        await c.query('SELECT pg_notify($1, $2)', [PG_CHANNEL, `${type}:${working.state}`]);
      }
      await c.query('COMMIT');
      // A later transaction of this process may already have refreshed the cache past us.
      if (working.state >= this.cache[type].state) this.cache[type] = working;
      // We loaded another process's change under the lock; its NOTIFY will now be ignored, so tell the listeners.
      if (stale) for (const cb of this.listeners) cb(type);
      return result;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
  }

  onExternalChange(cb: (type: ObjectType) => void): void {
    this.listeners.push(cb);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}
