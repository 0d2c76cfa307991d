/**
 * A throwaway MariaDB: `mariadb-install-db` into a temp dir, `mariadbd` on 127.0.0.1 at a free port
 * (as root it runs with `--user=root`). A user `spamrule` (password `spamrule-pw`) owning database
 * `stalwart` is created over the server's Unix socket. With `tls`, the server also speaks TLS with that
 * certificate (`ssl-cert`, `ssl-key`; clients may still connect without TLS).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { canConnect, freePort, HOST, isRoot, Proc, run, tempDir, waitFor } from './common.js';

export interface MariaDbServer {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** Kills the server (SIGKILL), keeping its data: for fault tests. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startMariaDb(opts: { tls?: { certFile: string; keyFile: string } } = {}): Promise<MariaDbServer> {
  const dir = tempDir('mariadb');
  const data = join(dir, 'data');
  const socket = join(dir, 'mysqld.sock');
  const userArgs = isRoot ? ['--user=root'] : [];
  run('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...userArgs], {
    timeoutMs: 120_000,
  });
  const port = await freePort();
  let proc: Proc | undefined;
  const start = async () => {
    proc = new Proc(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--port=${port}`,
        `--bind-address=${HOST}`,
        `--socket=${socket}`,
        `--pid-file=${join(dir, 'mariadbd.pid')}`,
        '--skip-name-resolve',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=32M',
        // 2: each commit reaches the OS, so data survives the SIGKILL of fault tests (not an OS crash).
        '--innodb-flush-log-at-trx-commit=2',
        '--max-connections=300',
        ...(opts.tls !== undefined ? [`--ssl-cert=${opts.tls.certFile}`, `--ssl-key=${opts.tls.keyFile}`] : []),
        ...userArgs,
      ],
      join(dir, 'log'),
    );
    const p = proc;
    await waitFor(`MariaDB on port ${port} (${p.log()})`, async () => {
      if (!p.running) throw new Error(`mariadbd exited: ${p.log()}`);
      return canConnect(port);
    }, 60_000);
  };
  await start();
  const admin = await mysql.createConnection({ socketPath: socket, user: 'root' });
  await admin.query('CREATE DATABASE IF NOT EXISTS stalwart');
  await admin.query("CREATE USER IF NOT EXISTS 'spamrule'@'%' IDENTIFIED BY 'spamrule-pw'");
  await admin.query("GRANT ALL PRIVILEGES ON *.* TO 'spamrule'@'%'");
  await admin.end();
  let stopped = false;
  return {
    host: HOST,
    port,
    user: 'spamrule',
    password: 'spamrule-pw',
    database: 'stalwart',
    async kill() {
      await proc?.kill('SIGKILL');
    },
    start,
    async stop() {
      if (stopped) return;
      stopped = true;
      await proc?.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
