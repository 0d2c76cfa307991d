/**
 * API tokens for `Authorization: Bearer <token>` (RFC 6750). Only the SHA-256 of a token is stored;
 * the token itself is shown once, by `spamrule token create`. Each token carries a set of the
 * registry permissions of Stalwart's registry schema (`sysSpamRuleGet`, …, `sysStoreLookupDestroy`).
 */
import { createHash, randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite-file.js';

/** The thirty-five registry permissions a token can carry (Stalwart's registry schema), per type: Get, Create, Update, Destroy, Query. */
export const PERMISSIONS = [
  'sysSpamRuleGet',
  'sysSpamRuleCreate',
  'sysSpamRuleUpdate',
  'sysSpamRuleDestroy',
  'sysSpamRuleQuery',
  'sysStoreLookupGet',
  'sysStoreLookupCreate',
  'sysStoreLookupUpdate',
  'sysStoreLookupDestroy',
  'sysStoreLookupQuery',
  'sysSpamTagGet',
  'sysSpamTagCreate',
  'sysSpamTagUpdate',
  'sysSpamTagDestroy',
  'sysSpamTagQuery',
  'sysSpamDnsblServerGet',
  'sysSpamDnsblServerCreate',
  'sysSpamDnsblServerUpdate',
  'sysSpamDnsblServerDestroy',
  'sysSpamDnsblServerQuery',
  'sysHttpLookupGet',
  'sysHttpLookupCreate',
  'sysHttpLookupUpdate',
  'sysHttpLookupDestroy',
  'sysHttpLookupQuery',
  'sysSpamFileExtensionGet',
  'sysSpamFileExtensionCreate',
  'sysSpamFileExtensionUpdate',
  'sysSpamFileExtensionDestroy',
  'sysSpamFileExtensionQuery',
  'sysSpamTrainingSampleGet',
  'sysSpamTrainingSampleCreate',
  'sysSpamTrainingSampleUpdate',
  'sysSpamTrainingSampleDestroy',
  'sysSpamTrainingSampleQuery',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface TokenInfo {
  id: number;
  name: string;
  permissions: Permission[];
  /** ISO-8601 UTC. */
  created: string;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS jmap_token (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
  permissions TEXT NOT NULL, created TEXT NOT NULL)`;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Parses `a,b,…` (or `all`) into permissions. Throws `Error` naming an unknown permission.
 */
export function parsePermissions(list: string): Permission[] {
  const items = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 1 && items[0] === 'all') return [...PERMISSIONS];
  for (const p of items) if (!(PERMISSIONS as readonly string[]).includes(p)) throw new Error(`unknown permission "${p}" (known: ${PERMISSIONS.join(', ')}, or all)`);
  return [...new Set(items)] as Permission[];
}

/**
 * Token table in the server's SQLite database (`--db`), shared by `serve` and `spamrule token`
 * (`JmapServer.tokens`; docs/jmap.md, "Library use").
 */
export class TokenStore {
  private readonly db: Database.Database;

  /** Opens (creating if needed) the table in the SQLite file at `path`; throws the driver's error for a file that is not a SQLite database. */
  constructor(path: string) {
    this.db = openSqlite(path);
    this.db.exec(SCHEMA);
  }

  /** Creates a token and returns it in clear (the only time it is available) with its record. */
  create(name: string, permissions: Permission[]): { token: string; info: TokenInfo } {
    const token = `srt_${randomBytes(32).toString('base64url')}`;
    const created = new Date().toISOString();
    const r = this.db
      .prepare('INSERT INTO jmap_token (name, hash, permissions, created) VALUES (?, ?, ?, ?)')
      .run(name, hashToken(token), permissions.join(','), created);
    return { token, info: { id: Number(r.lastInsertRowid), name, permissions, created } };
  }

  /** The token's record, or undefined for an unknown or revoked token. Looked up per request so revocation is immediate. */
  verify(token: string): TokenInfo | undefined {
    const r = this.db.prepare('SELECT id, name, permissions, created FROM jmap_token WHERE hash = ?').get(hashToken(token)) as
      | { id: number; name: string; permissions: string; created: string }
      | undefined;
    return r && { ...r, permissions: r.permissions === '' ? [] : (r.permissions.split(',') as Permission[]) };
  }

  /** Every token's record, by id. */
  list(): TokenInfo[] {
    const rows = this.db.prepare('SELECT id, name, permissions, created FROM jmap_token ORDER BY id').all() as {
      id: number;
      name: string;
      permissions: string;
      created: string;
    }[];
    return rows.map((r) => ({ ...r, permissions: r.permissions === '' ? [] : (r.permissions.split(',') as Permission[]) }));
  }

  /** Deletes a token by id or name; returns how many were removed. */
  revoke(idOrName: string): number {
    return /^\d+$/.test(idOrName)
      ? this.db.prepare('DELETE FROM jmap_token WHERE id = ?').run(Number(idOrName)).changes
      : this.db.prepare('DELETE FROM jmap_token WHERE name = ?').run(idOrName).changes;
  }

  /** Closes the database; the store is unusable afterwards. */
  close(): void {
    this.db.close();
  }
}
