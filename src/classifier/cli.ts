/**
 * Where the CLI finds the classifier (`--model FILE`, `--db PATH`, `--pg URL`, `--redis URL`): the
 * lookup-store configuration of each, and opening a model file that must already exist.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { requireSqlite } from '../lookup/drivers.js';
import { openClassifier, sqliteModelConfig } from './index.js';
import type { SpamClassifier, SpamClassifierOptions } from './classifier.js';

/**
 * The `x:StoreLookup` store object for the CLI's location flags; undefined when none is given.
 * @throws Error when `--pg` is not a URL (the message does not repeat it: it may hold a password).
 */
export function modelStoreConfig(flags: { model?: string; db?: string; pg?: string; redis?: string }): unknown {
  if (flags.model !== undefined) return sqliteModelConfig(flags.model);
  if (flags.pg !== undefined) {
    try {
      const u = new URL(flags.pg);
      return {
        '@type': 'PostgreSql',
        host: u.hostname,
        port: u.port === '' ? 5432 : Number(u.port),
        database: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
        authUsername: decodeURIComponent(u.username) || 'postgres',
        ...(u.password !== '' ? { authSecret: { '@type': 'Value', secret: decodeURIComponent(u.password) } } : {}),
      };
    } catch {
      // Not the URL in the message: it may hold a password.
      throw new Error('--pg is not a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE; write #, /, ?, @ and % in the password as %23, %2F, %3F, %40 and %25)');
    }
  }
  if (flags.redis !== undefined) return { '@type': 'Redis', url: flags.redis };
  // The registry's SQLite file: the classifier's keys sit beside the registry's tables.
  if (flags.db !== undefined) return sqliteModelConfig(flags.db);
  return undefined;
}

/**
 * Why `path` cannot be a `--model` file, or undefined: a folder (the SQLite store would quietly put a
 * `lookup.sqlite3` inside it, which a later `--model FOLDER` cannot open as a file).
 */
export function modelFileProblem(path: string): string | undefined {
  let folder = false;
  try {
    folder = statSync(path).isDirectory();
  } catch {
    return undefined; // missing: learn creates it, classify says it does not exist
  }
  return folder ? `--model ${path} is a folder: name the model's file, e.g. ${join(path, 'model.sqlite')}` : undefined;
}

/**
 * Opens the classifier of an existing SQLite model file.
 * @throws Error when the file does not exist (a typo would otherwise create an empty model) or is a folder.
 */
export async function openModelFile(file: string, opts: Omit<SpamClassifierOptions, 'storeConfig'> = {}): Promise<SpamClassifier> {
  if (!existsSync(file)) throw new Error(`model file ${file} does not exist (train one with "spamrule learn --model ${file}")`);
  const problem = modelFileProblem(file);
  if (problem !== undefined) throw new Error(problem);
  if (!isModelFile(file)) throw new Error(`${file} holds no spamrule model (no classifier samples or generations; train one with "spamrule learn --model ${file}")`);
  return openClassifier(sqliteModelConfig(file), { refreshMs: 0, ...opts });
}

/**
 * Whether a SQLite file holds the classifier's records (a `learn --model` file, or a `--db` registry
 * learned into), read without writing: opening it as a store would add the store's tables to any
 * database given by mistake. @throws the driver's error for a file that is not a SQLite database.
 */
function isModelFile(file: string): boolean {
  const Sqlite = requireSqlite();
  const db = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
    const has = (table: string): boolean => tables.has(table) && db.prepare(`SELECT 1 FROM ${table} WHERE k >= 'classifier:' AND k < 'classifier;' LIMIT 1`).get() !== undefined;
    return has('spamrule_counter') || has('spamrule_kv');
  } finally {
    db.close();
  }
}
