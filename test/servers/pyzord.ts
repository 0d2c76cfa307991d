/**
 * A throwaway Pyzor server (`pyzord` from Debian's `pyzor` package, its gdbm database in a temp homedir) on
 * 127.0.0.1 and a free UDP port, and the real `pyzor` client pointed at it, to report and whitelist
 * messages. The anonymous account may do everything (a `pyzord.access` file), so tests can whitelist too.
 */
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST, Proc, tempDir, waitFor } from './common.js';

/** A UDP port on 127.0.0.1 that nothing is bound to right now (the OS picks it). */
export function freeUdpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.once('error', reject);
    s.bind(0, HOST, () => {
      const port = s.address().port;
      s.close(() => resolve(port));
    });
  });
}

export interface PyzorServer {
  host: string;
  port: number;
  /** `pyzor <command>` with the message on stdin (`report`, `whitelist`, `check`, `digest`, `predigest`); its stdout. */
  pyzor(command: string, message: string | Uint8Array): string;
  /** Freezes the server (SIGSTOP): it keeps its socket and answers nothing, until `resume`. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** Runs the `pyzor` client with `homedir`; returns stdout, throws with its output when it exits with an error. */
export function runPyzor(homedir: string, command: string, message: string | Uint8Array, okCodes: readonly number[] = [0]): string {
  const r = spawnSync('pyzor', ['--homedir', homedir, '-t', '5', command], { input: message, encoding: 'utf8', timeout: 30_000 });
  if (r.error !== undefined) throw new Error(`pyzor ${command}: ${r.error.message} (is Debian's "pyzor" package installed? .ci/run installs it)`);
  if (!okCodes.includes(r.status ?? -1)) throw new Error(`pyzor ${command} exited ${r.status ?? r.signal}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** `access`: the server's ACL file (pyzord.access); default: the anonymous account may do everything. */
export async function startPyzord(opts: { access?: string } = {}): Promise<PyzorServer> {
  const dir = tempDir('pyzord');
  const serverHome = join(dir, 'server');
  const clientHome = join(dir, 'client');
  mkdirSync(serverHome);
  mkdirSync(clientHome);
  // pyzord's default ACL lets the anonymous account check, report, ping and info; whitelisting needs it said.
  writeFileSync(join(serverHome, 'pyzord.access'), opts.access ?? 'all : anonymous : allow\n');
  const port = await freeUdpPort();
  writeFileSync(join(clientHome, 'servers'), `${HOST}:${port}\n`);
  const proc = new Proc('pyzord', ['--homedir', serverHome, '-a', HOST, '-p', String(port)], join(dir, 'pyzord.log'));
  const pyzor = (command: string, message: string | Uint8Array): string => runPyzor(clientHome, command, message, command === 'check' ? [0, 1] : [0]);
  try {
    await waitFor(`pyzord on ${port}`, () => {
      if (!proc.running) throw new Error(`pyzord exited: ${proc.log()}`);
      const r = spawnSync('pyzor', ['--homedir', clientHome, '-t', '1', 'ping'], { encoding: 'utf8', timeout: 10_000 });
      return r.status === 0 && r.stdout.includes('200');
    });
  } catch (e) {
    await proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    host: HOST,
    port,
    pyzor,
    pause: () => void proc.child.kill('SIGSTOP'),
    resume: () => void proc.child.kill('SIGCONT'),
    async stop() {
      proc.child.kill('SIGCONT');
      await proc.kill('SIGTERM', 5_000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
