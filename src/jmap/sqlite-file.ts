/**
 * Opening the server's SQLite file (objects, state and tokens). Kept apart from `repo.ts` so the
 * public declarations of the repositories name no better-sqlite3 type (it ships no types of its own).
 */
import type Database from 'better-sqlite3';
import { requireSqlite } from '../lookup/drivers.js';
import { createPrivateFile, withholdFromOthers } from '../lookup/files.js';
import { OBJECT_TYPES } from './objects.js';

const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS jmap_object (type TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (type, id));
CREATE TABLE IF NOT EXISTS jmap_state (type TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO jmap_state (type, value) VALUES ${OBJECT_TYPES.map((t) => `('${t}', 0)`).join(', ')};
CREATE TABLE IF NOT EXISTS jmap_change (type TEXT NOT NULL, state INTEGER NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (type, state, id));
CREATE TABLE IF NOT EXISTS jmap_change_floor (type TEXT PRIMARY KEY, since INTEGER NOT NULL);
INSERT OR IGNORE INTO jmap_change_floor (type, since) SELECT type, value FROM jmap_state;
`;

/**
 * Opens (creating if needed, mode 0600) a SQLite database with the durability settings the facade relies
 * on; an existing file loses any permission of "others" (src/lookup/files.ts).
 * `busyTimeoutMs` (default 5,000): how long a statement waits, blocking the thread, for another
 * connection's lock; the JMAP repository passes 0 and retries without blocking (repo.ts).
 */
export function openSqlite(path: string, opts: { busyTimeoutMs?: number } = {}): Database.Database {
  const Sqlite = requireSqlite(); // loaded on first use, not when the package is imported
  // The file holds the stores' secrets in clear: owner-only when new, and never world-readable (docs/deployment.md).
  createPrivateFile(path);
  withholdFromOthers(path);
  const db = new Sqlite(path);
  db.pragma('journal_mode = WAL');
  // FULL: a commit is on disk (WAL fsynced) before `transact` resolves, so an acknowledged change survives kill -9.
  db.pragma('synchronous = FULL');
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
  db.exec(SQLITE_SCHEMA);
  return db;
}
