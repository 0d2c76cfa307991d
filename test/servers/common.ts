/**
 * Plumbing for the throwaway test servers: free loopback ports, temp dirs, child processes that are
 * killed and awaited, and bounded waits. Nothing here listens on anything but 127.0.0.1.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const HOST = '127.0.0.1';
export const isRoot = process.getuid?.() === 0;

/** A free TCP port on 127.0.0.1 (the OS picks it). With `plus`, port+plus must be free too (Redis cluster bus). */
export async function freePort(below = 65535): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.listen(0, HOST, () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
      s.on('error', reject);
    });
    if (p <= below) return p;
  }
  throw new Error('no free port found');
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `spamrule-${prefix}-`));
}

/** Polls `check` every `everyMs` until it returns true, for at most `timeoutMs`; throws with `what` after. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000, everyMs = 100): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: HOST, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.setTimeout(1000, () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** A child process whose output goes to `logFile`; `kill` sends a signal and waits for the exit. */
export class Proc {
  readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  constructor(
    cmd: string,
    args: string[],
    readonly logFile: string,
    opts: { asUser?: string } = {},
  ) {
    const fd = openSync(logFile, 'a');
    const [c, a] = opts.asUser && isRoot ? ['runuser', ['-u', opts.asUser, '--', cmd, ...args]] : [cmd, args];
    this.child = spawn(c, a, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  async kill(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    if (!this.running) return;
    this.child.kill(signal);
    const t = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8').slice(-2000);
    } catch {
      return '';
    }
  }
}

/** Runs a command to completion (bounded by `timeoutMs`); throws with its output when it fails. */
export function run(cmd: string, args: string[], opts: { asUser?: string; timeoutMs?: number } = {}): string {
  const [c, a] = opts.asUser && isRoot ? ['runuser', ['-u', opts.asUser, '--', cmd, ...args]] : [cmd, args];
  const r = spawnSync(c, a, { encoding: 'utf8', timeout: opts.timeoutMs ?? 60_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  return r.stdout;
}
