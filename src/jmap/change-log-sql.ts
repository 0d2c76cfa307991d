/**
 * The change log's storage (changes.ts), written in the `/set`'s transaction by repo.ts: one row per id
 * and step; every 100 steps the rows past CHANGES_KEPT are deleted and the type's floor (the oldest
 * `sinceState` answered) raised. Kept apart from changes.ts so that the public declarations name no
 * driver type (better-sqlite3 ships no types of its own).
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { CHANGES_KEPT, type ChangeRow } from './changes.js';
import type { ObjectType } from './kind.js';

/** Writes one step's change rows (SQLite) and forgets the steps past {@link CHANGES_KEPT}. */
export function sqliteLogChanges(db: Database.Database, type: ObjectType, rows: ChangeRow[], state: number): void {
  const ins = db.prepare('INSERT OR REPLACE INTO jmap_change (type, state, id, kind) VALUES (?, ?, ?, ?)');
  for (const r of rows) ins.run(type, r.state, r.id, r.kind);
  const floor = state - CHANGES_KEPT;
  if (floor > 0 && floor % 100 === 0) {
    db.prepare('DELETE FROM jmap_change WHERE type = ? AND state <= ?').run(type, floor);
    db.prepare('UPDATE jmap_change_floor SET since = max(since, ?) WHERE type = ?').run(floor, type);
  }
}

/** {@link ChangeLog.changesSince} on SQLite (one read transaction). */
export function sqliteChangesSince(db: Database.Database, type: ObjectType, since: number, until: number): ChangeRow[] | undefined {
  return db.transaction(() => {
    const floor = (db.prepare('SELECT since FROM jmap_change_floor WHERE type = ?').get(type) as { since: number } | undefined)?.since ?? Infinity;
    if (since < floor) return undefined;
    return db.prepare('SELECT state, id, kind FROM jmap_change WHERE type = ? AND state > ? AND state <= ? ORDER BY state, id').all(type, since, until) as ChangeRow[];
  })();
}

/** As {@link sqliteLogChanges}, on PostgreSQL. */
export async function pgLogChanges(c: pg.PoolClient, type: ObjectType, rows: ChangeRow[], state: number): Promise<void> {
  if (rows.length > 0)
    await c.query(
      'INSERT INTO spamrule_jmap_change (type, state, id, kind) SELECT $1, $2, id, kind FROM unnest($3::text[], $4::text[]) AS t(id, kind) ON CONFLICT DO NOTHING',
      [type, state, rows.map((r) => r.id), rows.map((r) => r.kind)],
    );
  const floor = state - CHANGES_KEPT;
  if (floor > 0 && floor % 100 === 0) {
    await c.query('DELETE FROM spamrule_jmap_change WHERE type = $1 AND state <= $2', [type, floor]);
    await c.query('UPDATE spamrule_jmap_change_floor SET since = GREATEST(since, $1) WHERE type = $2', [floor, type]);
  }
}

/** Runs `fn` in a read-only REPEATABLE READ transaction of its own, so that what it reads is one snapshot. */
export async function pgReadSnapshot<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
}

/** {@link ChangeLog.changesSince} on PostgreSQL (one REPEATABLE READ snapshot). */
export function pgChangesSince(pool: pg.Pool, type: ObjectType, since: number, until: number): Promise<ChangeRow[] | undefined> {
  return pgReadSnapshot(pool, async (c) => {
    const f = await c.query('SELECT since FROM spamrule_jmap_change_floor WHERE type = $1', [type]);
    const floor = f.rows.length > 0 ? Number((f.rows[0] as { since: string }).since) : Infinity;
    if (since < floor) return undefined;
    const rows = await c.query('SELECT state, id, kind FROM spamrule_jmap_change WHERE type = $1 AND state > $2 AND state <= $3 ORDER BY state, id', [type, since, until]);
    return (rows.rows as { state: string; id: string; kind: ChangeRow['kind'] }[]).map((r) => ({ state: Number(r.state), id: r.id, kind: r.kind }));
  });
}
