/**
 * A throwaway PostgreSQL: `initdb` into a temp dir, trust auth, listening on 127.0.0.1 at a free port.
 * PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user (created by
 * Debian's postgresql package) via `runuser`.
 */
import { chownSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { freePort, HOST, isRoot, run, tempDir } from './common.js';

export interface PostgresServer {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** `postgres://spamrule@127.0.0.1:PORT/stalwart`, for clients that take a connection URL. */
  url: string;
  /** Stops the server abruptly (`-m immediate`), keeping its data: for fault tests. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes the data dir. */
  stop(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'postgres'))) return join(root, v, 'bin');
  throw new Error('PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)');
}

const RUN_AS = 'postgres';

export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  const dir = tempDir('pg');
  const data = join(dir, 'data');
  if (isRoot) {
    const uid = Number(execFileSync('id', ['-u', RUN_AS]).toString());
    const gid = Number(execFileSync('id', ['-g', RUN_AS]).toString());
    chownSync(dir, uid, gid);
  }
  const as = { asUser: RUN_AS };
  run(join(bin, 'initdb'), ['-D', data, '-U', 'spamrule', '--auth=trust', '-E', 'UTF8', '--no-sync'], as);
  const port = await freePort();
  const pgctl = join(bin, 'pg_ctl');
  const start = async () => {
    // -F: no fsync (throwaway data); small shared memory keeps several instances cheap.
    run(pgctl, ['-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), '-o', `-h ${HOST} -p ${port} -k ${dir} -F -c max_connections=200`, 'start'], as);
  };
  await start();
  run(join(bin, 'createdb'), ['-h', HOST, '-p', String(port), '-U', 'spamrule', 'stalwart'], as);
  let stopped = false;
  return {
    host: HOST,
    port,
    user: 'spamrule',
    password: '',
    database: 'stalwart',
    url: `postgres://spamrule@${HOST}:${port}/stalwart`,
    async kill() {
      run(pgctl, ['-D', data, '-m', 'immediate', '-w', 'stop'], as);
    },
    start,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(pgctl, ['-D', data, '-m', 'immediate', '-w', 'stop'], as);
      } catch {
        /* already down */
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
