/**
 * The database drivers, imported on first use: `import('spamrule')` loads none of them, and a process
 * that only uses PostgreSQL never loads mysql2, ioredis or better-sqlite3. Each loader imports its
 * module once (the promise is shared) and hands back the module's main export.
 *
 * The driver types are only named here and in private members of the adapters, so the package's public
 * `.d.ts` files reference no driver type (pg and better-sqlite3 have no bundled types; a user who does not
 * install `@types/*` would otherwise get TS7016 under `strict` without `skipLibCheck`).
 * @internal
 */
import type * as PgModule from 'pg';
import type * as MySqlModule from 'mysql2/promise';
import type * as IoredisModule from 'ioredis';
import type SqliteModule from 'better-sqlite3';
import { createRequire } from 'node:module';
import { LookupStoreError } from './types.js';

export type Pg = typeof PgModule.default;
export type MySql = typeof MySqlModule.default;
export type Ioredis = typeof IoredisModule;
export type Sqlite = typeof SqliteModule;

/** One shared import per module; a failed import is retried by the next call (e.g. after an install). */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () =>
    (p ??= load().catch((e: unknown) => {
      p = undefined;
      throw e;
    }));
}

/** A driver import that failed (not installed, native build missing) as the store's LookupStoreError. */
function missing(namespace: string, pkg: string, e: unknown): LookupStoreError {
  const why = e instanceof Error ? e.message : String(e);
  return new LookupStoreError(namespace, `cannot load the ${pkg} driver (npm install ${pkg}): ${why}`, { cause: e });
}

const pg = once(async () => (await import('pg')).default);
/** node-postgres itself (for the JMAP object repository); rejects with the import's own error. */
export const importPg: () => Promise<Pg> = pg;
const mysql = once(async () => (await import('mysql2/promise')).default);
const ioredis = once(async () => await import('ioredis'));
const sqlite = once(async () => (await import('better-sqlite3')).default);

/** node-postgres (`pg`), for `PostgreSql` stores. @throws LookupStoreError when it cannot be imported. */
export const loadPg = (namespace: string): Promise<Pg> => pg().catch((e) => Promise.reject(missing(namespace, 'pg', e)));
/** mysql2's promise API, for `MySql` stores. @throws LookupStoreError when it cannot be imported. */
export const loadMySql = (namespace: string): Promise<MySql> => mysql().catch((e) => Promise.reject(missing(namespace, 'mysql2', e)));
/** ioredis, for `Redis`, `RedisCluster`, `RedisSentinel` and `Sharded` stores. @throws LookupStoreError when it cannot be imported. */
export const loadIoredis = (namespace: string): Promise<Ioredis> => ioredis().catch((e) => Promise.reject(missing(namespace, 'ioredis', e)));
/** better-sqlite3, for `Sqlite` stores. @throws LookupStoreError when it cannot be imported. */
export const loadSqlite = (namespace: string): Promise<Sqlite> => sqlite().catch((e) => Promise.reject(missing(namespace, 'better-sqlite3', e)));

let sqliteSync: Sqlite | undefined;
/**
 * better-sqlite3 loaded synchronously, for the JMAP server's token and object files whose API is
 * synchronous. better-sqlite3 is a CommonJS module, so `require` loads it on every supported Node.
 * @throws Error (the loader's) when better-sqlite3 is not installed or its native build is missing.
 */
export function requireSqlite(): Sqlite {
  return (sqliteSync ??= createRequire(import.meta.url)('better-sqlite3') as Sqlite);
}

/** Starts a driver's import in the background (at store creation) without an unhandled rejection. */
export function prefetch(load: (namespace: string) => Promise<unknown>): void {
  load('').catch(() => undefined);
}
