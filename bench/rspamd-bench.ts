/**
 * rspamd itself, for the server bench's side-by-side figure: Debian's rspamd with its stock
 * configuration (`/etc/rspamd`) and a private override directory written here: loopback ports,
 * console logging, DNS pointed at a closed loopback port (every query fails at once) and the
 * modules that only make sense with DNS or network services switched off, so the comparison
 * measures local analysis as spamrule's bench does (DNS off).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

const RSPAMD = '/usr/bin/rspamd';
const NETWORK_MODULES = ['rbl', 'surbl', 'spf', 'dkim', 'dmarc', 'arc', 'asn', 'emails', 'fuzzy_check', 'hfilter', 'mx_check', 'url_redirector', 'rspamd_update', 'reputation', 'whitelist', 'dkim_signing', 'neural', 'ratelimit', 'greylist', 'replies', 'history_redis'];

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function waitForPing(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(`${url}/ping`);
      if (r.ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > until) throw new Error('rspamd did not answer /ping');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Starts rspamd with `workers` normal workers; rejects when it is not installed or does not start. */
export async function startRspamd(workers = 2): Promise<{ name: string; url: string; stop(): Promise<void> }> {
  if (!existsSync(RSPAMD)) throw new Error(`${RSPAMD} not installed`);
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-rspamd-'));
  chmodSync(dir, 0o755);
  for (const d of ['local.d', 'override.d', 'db', 'run', 'log']) mkdirSync(join(dir, d));
  for (const d of ['db', 'run', 'log']) chmodSync(join(dir, d), 0o777);
  const [normal, controller, proxy] = [await freePort(), await freePort(), await freePort()];
  const w = (f: string, text: string): void => writeFileSync(join(dir, f), text + '\n');
  w('override.d/worker-normal.inc', `bind_socket = "127.0.0.1:${normal}";\ncount = ${workers};`);
  w('override.d/worker-controller.inc', `bind_socket = "127.0.0.1:${controller}";`);
  w('override.d/worker-proxy.inc', `bind_socket = "127.0.0.1:${proxy}";`);
  w('override.d/logging.inc', 'type = "console";\nlevel = "error";');
  w('local.d/options.inc', 'dns {\n  nameserver = ["127.0.0.1:9"];\n  timeout = 0.1s;\n  retransmits = 1;\n}');
  for (const m of NETWORK_MODULES) w(`local.d/${m}.conf`, 'enabled = false;');
  const vars = [`CONFDIR=/etc/rspamd`, `LOCAL_CONFDIR=${dir}`, `DBDIR=${join(dir, 'db')}`, `RUNDIR=${join(dir, 'run')}`, `LOGDIR=${join(dir, 'log')}`];
  const args = ['-f', '-c', '/etc/rspamd/rspamd.conf', ...vars.flatMap((v) => ['--var', v])];
  // rspamd refuses to run its workers as root: as root it drops to the package's user.
  if (userInfo().uid === 0) args.push('-u', '_rspamd', '-g', '_rspamd');
  const child = spawn(RSPAMD, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = `http://127.0.0.1:${normal}`;
  try {
    await Promise.race([
      waitForPing(url, 120_000),
      new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`rspamd exited with ${code}: ${err.slice(0, 500)}`)))),
    ]);
  } catch (e) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(e as Error).message}: ${err.slice(0, 800)}`);
  }
  return {
    name: `rspamd ${workers} workers (DNS off)`,
    url,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
