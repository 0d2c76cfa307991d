/**
 * The registry (`--db`: tokens, and the stores' `Value` secrets in clear) is never readable by other local
 * users: a new one, and the `-wal`/`-shm` files SQLite puts beside it, are created 0600 whatever the umask,
 * and an existing one (created 0644 by an older version) loses the permissions of "others" when opened
 * (src/lookup/files.ts; docs/deployment.md). The security review read a PostgreSQL password as `nobody`.
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJmapServer, TokenStore } from '../../src/jmap/index.js';

let dir: string;
let umask: number;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'spamrule-modes-'));
  umask = process.umask(0o022);
});
afterAll(() => {
  process.umask(umask);
  rmSync(dir, { recursive: true, force: true });
});

const mode = (f: string): string => (statSync(f).mode & 0o777).toString(8);

describe('registry file modes', () => {
  it('a new registry and its -wal and -shm are 0600 (token create, then serve)', async () => {
    const db = join(dir, 'new.db');
    const tokens = new TokenStore(db);
    tokens.create('admin', ['sysStoreLookupCreate']);
    expect(mode(db)).toBe('600');
    tokens.close();
    const server = await createJmapServer({ db, log: () => undefined });
    try {
      for (const f of [db, `${db}-wal`, `${db}-shm`]) expect(mode(f), f).toBe('600');
    } finally {
      await server.close();
    }
  });

  it('an existing world-readable registry loses the permissions of others when opened; the group keeps its own', () => {
    const db = join(dir, 'old.db');
    const old = new Database(db);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE t (x)'); // open, so its -wal is there too
    chmodSync(db, 0o644);
    chmodSync(`${db}-wal`, 0o664);
    const tokens = new TokenStore(db);
    try {
      expect(mode(db)).toBe('640');
      expect(mode(`${db}-wal`)).toBe('660');
    } finally {
      tokens.close();
      old.close();
    }
  });
});
