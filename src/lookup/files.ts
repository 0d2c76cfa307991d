/**
 * The SQLite files spamrule creates hold what other local users must not read: the registry keeps the
 * stores' `Value` secrets in clear (and the tokens' hashes), a model keeps the messages it learned from,
 * a lookup store whatever the rules put there. They are created owner-only (0600) whatever the process
 * umask; SQLite gives a database's `-wal`, `-shm` and `-journal` files the mode of the database file.
 */
import { chmodSync, closeSync, openSync, statSync } from 'node:fs';

/** What SQLite keeps beside a database, with the same data. */
const COMPANIONS = ['-wal', '-shm', '-journal'];

/**
 * Creates `file` empty with mode 0600 unless it exists (SQLite takes an empty file as a new database), so
 * that the database and its companions are never readable by others, even for an instant. `:memory:` and
 * an existing file are left alone. Never throws: a file that cannot be created here (missing directory, no
 * permission) cannot be created by SQLite either, whose open then fails with its own, familiar error.
 */
export function createPrivateFile(file: string): void {
  if (file === ':memory:' || file === '') return;
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch {
    /* exists (EEXIST), or left to SQLite to report */
  }
}

/**
 * Takes every permission of "others" away from an existing database and its companions (`chmod o-rwx`):
 * what an older version created with the umask (0644) stops being world-readable. The group's bits are
 * kept, as an operator may have given a backup group read access on purpose. Files of another owner, or
 * that cannot be changed, are left as they are.
 */
export function withholdFromOthers(file: string): void {
  if (file === ':memory:' || file === '') return;
  for (const f of [file, ...COMPANIONS.map((c) => file + c)]) {
    try {
      const mode = statSync(f).mode & 0o7777;
      if ((mode & 0o007) !== 0) chmodSync(f, mode & ~0o007);
    } catch {
      /* absent, or not ours to change */
    }
  }
}
