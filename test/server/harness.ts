/**
 * Shared setup for the mail-path suites: a worker pool and the protocol listeners on loopback,
 * plus small raw clients (HTTP, spamd, milter, SMTP) for the cases real clients cannot produce.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { readRuleSet } from '../../src/cli/ruleset.js';
import {
  createLogger,
  SpamEnginePool,
  startScanServer,
  type RuleSetSpec,
  type ScanServer,
  type ScanServerOptions,
  type ServerLimits,
} from '../../src/server/index.js';

export const run = promisify(execFile);

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A `spamrule serve` process (from the sources, as an operator runs the command), its output so far and its exit. */
export interface ServeProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/**
 * Starts `spamrule serve ARGS` in a separate process and collects its output. Each process is added to
 * `children`, so that the suite's afterAll can kill what is left running.
 */
export function spawnServe(args: string[], children: ChildProcess[]): ServeProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'serve', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** The rule set `spamrule classify` uses without flags (the built-in default rules). */
export function defaultSpec(): RuleSetSpec {
  const set = readRuleSet({});
  return { rules: set.rules, tags: set.tags, lists: [...set.lists], engine: { analysis: { dnsblServers: set.dnsblServers } } };
}

export interface Started {
  pool: SpamEnginePool;
  server: ScanServer;
  logs: Record<string, unknown>[];
  /** host and port of a listener. */
  hostPort(name: 'rspamd' | 'milter' | 'spamd'): { host: string; port: number };
  close(): Promise<void>;
}

export async function startAll(
  opts: {
    workers?: number;
    limits?: Partial<ServerLimits>;
    spec?: RuleSetSpec;
    timeoutMs?: number;
    learner?: ScanServerOptions['learner'];
    allowLearn?: boolean;
    allowTell?: boolean;
    milterBusyAction?: ScanServerOptions['milterBusyAction'];
    milterErrorAction?: ScanServerOptions['milterErrorAction'];
  } = {},
): Promise<Started> {
  const pool = new SpamEnginePool({ ...(opts.spec ?? defaultSpec()), workers: opts.workers ?? 2, timeoutMs: opts.timeoutMs });
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const any = { host: '127.0.0.1', port: 0 };
  const server = await startScanServer({
    pool,
    rspamd: any,
    milter: any,
    spamd: any,
    limits: opts.limits,
    logger: createLogger({ destination }),
    learner: opts.learner,
    allowLearn: opts.allowLearn,
    allowTell: opts.allowTell,
    milterBusyAction: opts.milterBusyAction,
    milterErrorAction: opts.milterErrorAction,
  });
  return {
    pool,
    server,
    logs,
    hostPort(name) {
      const a = server.addresses[name]!.replace(/^http:\/\//, '');
      const i = a.lastIndexOf(':');
      return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
    },
    async close() {
      await server.close(2000);
      await pool.close();
    },
  };
}

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request on its own connection. */
export function http(
  url: string,
  opts: { method?: string; headers?: Record<string, string | string[]>; body?: Uint8Array | string } = {},
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Sends raw bytes on a new TCP connection (optionally half-closing), and collects everything until the server closes. */
export function raw(host: string, port: number, data: Uint8Array | string, opts: { halfClose?: boolean; timeoutMs?: number } = {}): Promise<{ reply: Buffer; closedBy: 'server' | 'timeout' }> {
  return new Promise((resolve) => {
    const s = connect(port, host);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closedBy: 'server' | 'timeout'): void => {
      if (done) return;
      done = true;
      s.destroy();
      resolve({ reply: Buffer.concat(chunks), closedBy });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 10_000);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('close', () => {
      clearTimeout(timer);
      finish('server');
    });
    s.on('error', () => undefined);
    s.write(data, () => {
      if (opts.halfClose) s.end();
    });
  });
}

/**
 * Sends `parts` on a new TCP connection, `gapMs` milliseconds apart (a slow client), and collects
 * everything until the server closes the connection, or `timeoutMs` passes.
 */
export function trickle(host: string, port: number, parts: (Uint8Array | string)[], gapMs: number, timeoutMs = 15_000): Promise<{ reply: Buffer; closedBy: 'server' | 'timeout' }> {
  return new Promise((resolve) => {
    const s = connect(port, host);
    const chunks: Buffer[] = [];
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedBy: 'server' | 'timeout'): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(deadline);
      s.destroy();
      resolve({ reply: Buffer.concat(chunks), closedBy });
    };
    const deadline = setTimeout(() => finish('timeout'), timeoutMs);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('close', () => finish('server'));
    s.on('error', () => undefined);
    let i = 0;
    const next = (): void => {
      if (done || i >= parts.length) return;
      s.write(parts[i++]!);
      timer = setTimeout(next, gapMs);
    };
    next();
  });
}

/** One milter packet: length, command byte, data. */
export function milterPacket(cmd: string, data: Buffer | string = ''): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const h = Buffer.alloc(5);
  h.writeUInt32BE(body.length + 1, 0);
  h.write(cmd, 4, 'latin1');
  return Buffer.concat([h, body]);
}

/** The MTA's option negotiation: version 6, every action and protocol flag offered. */
export function milterOptneg(): Buffer {
  const d = Buffer.alloc(12);
  d.writeUInt32BE(6, 0);
  d.writeUInt32BE(0x1ff, 4);
  d.writeUInt32BE(0x1fffff, 8);
  return milterPacket('O', d);
}

/** Milter replies as [command, data] pairs. */
export function milterReplies(buf: Buffer): [string, string][] {
  const out: [string, string][] = [];
  for (let o = 0; o + 5 <= buf.length; ) {
    const len = buf.readUInt32BE(o);
    out.push([String.fromCharCode(buf[o + 4]!), buf.toString('latin1', o + 5, o + 4 + len)]);
    o += 4 + len;
  }
  return out;
}

/**
 * Resolves once something accepts connections on 127.0.0.1:`port`; rejects after `ms`, or as soon as
 * `gaveUp()` says the server will not come (e.g. its process exited), with `why()` in the message.
 */
export function waitForPort(port: number, ms: number, why: () => string, gaveUp: () => boolean = () => false): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const c = connect(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        resolve();
      });
      c.once('error', () => {
        c.destroy();
        if (Date.now() > until || gaveUp()) reject(new Error(`nothing listens on ${port}: ${why()}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** A free TCP port on loopback (for daemons that bind themselves, such as Postfix). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** A tiny SMTP server that accepts everything and keeps each message's DATA. */
export async function startSmtpSink(): Promise<{ port: number; messages: string[]; close(): Promise<void> }> {
  const messages: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    s.write('220 sink.test ESMTP\r\n');
    let buf = '';
    let inData = false;
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (;;) {
        if (inData) {
          const e = buf.indexOf('\r\n.\r\n');
          if (e < 0) return;
          messages.push(buf.slice(0, e + 2).replace(/^\.\./gm, '.'));
          buf = buf.slice(e + 5);
          inData = false;
          s.write('250 2.0.0 kept\r\n');
          continue;
        }
        const i = buf.indexOf('\r\n');
        if (i < 0) return;
        const verb = buf.slice(0, 4).toUpperCase();
        buf = buf.slice(i + 2);
        if (verb === 'EHLO' || verb === 'HELO') s.write('250 sink.test\r\n');
        else if (verb === 'DATA') {
          inData = true;
          s.write('354 go on\r\n');
        } else if (verb === 'QUIT') s.end('221 bye\r\n');
        else s.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    messages,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * One SMTP transaction (EHLO, MAIL, RCPT, DATA, QUIT) with dot-stuffing; resolves to every reply
 * line the server sent.
 */
export function sendSmtp(port: number, from: string, to: string, message: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    const body = message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    const steps: (string | (() => string))[] = ['EHLO client.example.net', `MAIL FROM:<${from}>`, `RCPT TO:<${to}>`, 'DATA', () => `${body}${body.endsWith('\r\n') ? '' : '\r\n'}.`, 'QUIT'];
    const lines: string[] = [];
    let buf = '';
    let i = 0;
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`SMTP timed out; got ${JSON.stringify(lines)}`));
    }, 30_000);
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      let k;
      while ((k = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, k);
        buf = buf.slice(k + 2);
        lines.push(line);
        if (line[3] === '-') continue;
        const step = steps[i++];
        if (step === undefined) continue;
        // After a failed RCPT there is no point in DATA: quit.
        if (/^[45]/.test(line) && i > 1 && i < steps.length) {
          i = steps.length;
          s.write('QUIT\r\n');
          continue;
        }
        s.write((typeof step === 'function' ? step() : step) + '\r\n');
      }
    });
    s.on('error', reject);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(lines);
    });
  });
}

/** The subject that makes a {@link slotHolderSpec} scan hold its slot. */
export const HOLD_SUBJECT = 'hold the slot';

/**
 * A "Redis" on loopback that accepts connections and never answers: a lookup in it waits for the
 * store's timeout. `close` ends it and the connections it holds.
 */
export async function startSilentRedis(): Promise<{ port: number; close(): void }> {
  const held: Socket[] = [];
  const server = createServer((c) => {
    held.push(c);
    c.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      for (const c of held) c.destroy();
      server.close();
    },
  };
}

/**
 * A rule set whose scan of a message with the subject {@link HOLD_SUBJECT} waits `holdMs` for a lookup in
 * the silent Redis at `redisPort`, so that it holds its scan slot that long; other messages skip the
 * lookup (`&&` short-circuits) and scan at once.
 */
export function slotHolderSpec(redisPort: number, holdMs: number): RuleSetSpec {
  return {
    rules: [
      {
        '@type': 'Any',
        name: 'holder',
        priority: 1,
        condition: { match: [{ if: `contains(subject, '${HOLD_SUBJECT}') && key_exists('frozen', 'someone@example.org')`, then: "'HOLD_SEEN'" }], else: 'false' },
      },
    ],
    stores: [{ namespace: 'frozen', config: { '@type': 'Redis', url: `redis://127.0.0.1:${redisPort}`, timeout: holdMs } }],
    engine: { ruleWaitMs: holdMs + 1000 },
  };
}

/**
 * Sends a spamd CHECK of a {@link HOLD_SUBJECT} message, whose scan then holds a slot of `s`; resolves once
 * the scan runs (the scanner's depth is 1), with `done`, the spamd reply to come.
 */
export async function holdSlot(s: Started): Promise<{ done: Promise<{ reply: Buffer; closedBy: string }> }> {
  const { host, port } = s.hostPort('spamd');
  const msg = `From: a@example.org\r\nTo: b@example.org\r\nSubject: ${HOLD_SUBJECT}\r\n\r\nhold\r\n`;
  const reply = raw(host, port, `CHECK SPAMC/1.5\r\nContent-length: ${msg.length}\r\n\r\n${msg}`, { halfClose: true, timeoutMs: 30_000 });
  const until = Date.now() + 10_000;
  while (s.server.scanner.depth < 1) {
    if (Date.now() > until) throw new Error('the holder scan did not start');
    await new Promise((r) => setTimeout(r, 10));
  }
  // In an object: an async function returning the promise itself would wait for it.
  return { done: reply };
}

/** Resolves once `s`'s pool has had `n` threads ready ({@link SpamEnginePool.threadsLoaded}: a replaced thread counts again). */
export async function threadsLoaded(s: Started, n: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (s.pool.threadsLoaded < n) {
    if (Date.now() > until) throw new Error(`${s.pool.threadsLoaded} of ${n} threads loaded`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Ends `s`'s worker threads once a scan runs in one (as a thread that crashes, or runs out of memory,
 * ends): the pool rejects that scan as a worker failure and piscina starts a new thread.
 */
export async function killWorkersMidScan(s: Started): Promise<void> {
  const until = Date.now() + 10_000;
  while (s.pool.pending < 1 || s.pool.queueSize > 0) {
    if (Date.now() > until) throw new Error('no scan reached a thread');
    await new Promise((r) => setTimeout(r, 10));
  }
  // The task is posted to the thread as the scan starts; a moment more for it to be under way there.
  await new Promise((r) => setTimeout(r, 100));
  const { piscina } = s.pool as unknown as { piscina: { threads: Worker[] } };
  await Promise.all(piscina.threads.map((t) => t.terminate()));
}
