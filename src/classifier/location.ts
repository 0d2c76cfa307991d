/**
 * Where a model lives, from the CLI's words for it (`--model FILE|URL`, `--db PATH`, `--pg URL`,
 * `--redis URL`): the lookup-store configuration of each. Kept apart from the classifier's code so that
 * `serve` reads its configuration without loading the classifier.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { maskUrlPassword } from '../lookup/secret.js';

/** The `x:StoreLookup` store object of a SQLite model file. */
export function sqliteModelConfig(file: string): { '@type': 'Sqlite'; path: string } {
  return { '@type': 'Sqlite', path: file };
}

/**
 * The `x:StoreLookup` store object for the CLI's location flags; undefined when none is given.
 * @throws Error when a PostgreSQL location is not a URL (the message does not repeat it: it may hold a password).
 */
export function modelStoreConfig(flags: { model?: string; db?: string; pg?: string; redis?: string }): unknown {
  if (flags.model !== undefined) {
    const kind = modelLocationKind(flags.model);
    if (kind === 'file') return sqliteModelConfig(flags.model);
    return modelStoreConfig(kind === 'pg' ? { pg: flags.model } : { redis: flags.model });
  }
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
      throw new Error('not a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE; write #, /, ?, @ and % in the password as %23, %2F, %3F, %40 and %25)');
    }
  }
  if (flags.redis !== undefined) return { '@type': 'Redis', url: flags.redis };
  // The registry's SQLite file: the classifier's keys sit beside the registry's tables.
  if (flags.db !== undefined) return sqliteModelConfig(flags.db);
  return undefined;
}

/**
 * What a `--model` value names: a PostgreSQL database (`postgres://` or `postgresql://` URL), a Redis server
 * (`redis://` or `rediss://` URL; Redis Cluster and Sentinel are configured as stores, not here), or else a
 * SQLite file. Several processes, on several hosts, share a model kept in PostgreSQL or Redis.
 */
export function modelLocationKind(model: string): 'file' | 'pg' | 'redis' {
  if (/^postgres(?:ql)?:\/\//i.test(model)) return 'pg';
  if (/^rediss?:\/\//i.test(model)) return 'redis';
  return 'file';
}

/** A `--model` value fit for a message: a URL's password masked (the value itself may hold one). */
export function modelLocationName(model: string): string {
  return modelLocationKind(model) === 'file' ? model : maskUrlPassword(model);
}

/**
 * Why `path` cannot be a `--model` file, or undefined (always undefined for a URL): a folder (the SQLite
 * store would quietly put a `lookup.sqlite3` inside it, which a later `--model FOLDER` cannot open as a file).
 */
export function modelFileProblem(path: string): string | undefined {
  if (modelLocationKind(path) !== 'file') return undefined;
  let folder = false;
  try {
    folder = statSync(path).isDirectory();
  } catch {
    return undefined; // missing: learn creates it, classify says it does not exist
  }
  return folder ? `--model ${path} is a folder: name the model's file, e.g. ${join(path, 'model.sqlite')}` : undefined;
}

