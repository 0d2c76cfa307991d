/**
 * The mail path under load: the corpus scanned over the rspamd protocol (`POST /checkv2`) by 16
 * concurrent keep-alive clients, against `spamrule serve --rspamd` with 1 and with 2 worker threads
 * (Stalwart's public rule set when the shared data is present, else the built-in rules; every
 * analysis module on, DNS off). Throughput and p50/p99 latency per configuration, the 2-worker ÷
 * 1-worker ratio of the same run, and rspamd itself on the same protocol when it is installed
 * (with the DNS-free configuration rspamd-bench.ts writes).
 *
 * The servers are separate processes (as an MTA would see them); passes alternate between
 * configurations so that load that comes and goes on a shared machine hits each alike.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { loadCorpus, printTable } from './common.js';
import { startRspamd } from './rspamd-bench.js';
import { sharedPath } from '../test/helpers/shared-data.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLIENTS = 16;

interface Target {
  name: string;
  url: string;
  stop(): Promise<void>;
}

/** Starts `spamrule serve --rspamd` with `workers` threads; resolves once it says ready. */
function startSpamrule(workers: number, rules: string | undefined): Promise<Target> {
  const args = ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', '--rspamd', '127.0.0.1:0', '--workers', String(workers), '--log-level', 'silent', '--scan-timeout', '0', '--no-refresh-lists'];
  if (rules !== undefined) args.push('--rules', rules);
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.on('exit', (code) => reject(new Error(`spamrule serve exited with ${code}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /rspamd on (http:\/\/\S+)/.exec(out);
      if (m && /ready/.test(out))
        resolve({
          name: `spamrule, ${workers} worker${workers > 1 ? 's' : ''}`,
          url: m[1]!,
          stop: () =>
            new Promise((r) => {
              child.once('exit', () => r());
              child.kill('SIGTERM');
            }),
        });
    });
  });
}

function post(agent: Agent, url: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/checkv2`, { method: 'POST', agent, headers: { 'content-length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Pass {
  msgPerSec: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Scans `messages` with CLIENTS concurrent clients; latency per request in ms. */
async function pass(url: string, messages: Buffer[]): Promise<Pass> {
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const lat: number[] = [];
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < messages.length) {
        const m = messages[next++]!;
        const t = performance.now();
        const status = await post(agent, url, m).catch(() => 0);
        lat.push(performance.now() - t);
        if (status !== 200) errors++;
      }
    }),
  );
  const wall = performance.now() - t0;
  agent.destroy();
  lat.sort((a, b) => a - b);
  const q = (p: number): number => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]!;
  return { msgPerSec: (messages.length * 1000) / wall, p50: q(0.5), p99: q(0.99), errors };
}

/**
 * How much parallel CPU this run really has: the wall time of two threads each spinning the same
 * loop, divided by that of one thread. 1.0 means two free cores; 2.0 means the machine's other
 * load leaves the equivalent of one core, and no worker pool can scale past 1× then.
 */
async function parallelism(): Promise<number> {
  const code = "let x = 0; for (let i = 0; i < 2e8; i++) x += i % 7; require('node:worker_threads').parentPort.postMessage(x);";
  const spin = async (n: number): Promise<number> => {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, () => new Promise<void>((resolve) => {
        const w = new Worker(code, { eval: true });
        w.once('message', () => void w.terminate().then(() => resolve()));
      })),
    );
    return performance.now() - t0;
  };
  let best = Infinity;
  for (let i = 0; i < 2; i++) best = Math.min(best, (await spin(2)) / (await spin(1)));
  return best;
}

export async function runServerBench(opts: { rounds?: number; step?: number } = {}): Promise<void> {
  const corpus = loadCorpus({ step: opts.step ?? 3 }).map((m) => m.raw);
  const publicRules = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
  const rules = existsSync(publicRules) ? publicRules : undefined;
  const targets: Target[] = [await startSpamrule(1, rules), await startSpamrule(2, rules)];
  const rspamd = await startRspamd().catch((e: unknown) => {
    process.stdout.write(`(rspamd not compared: ${e instanceof Error ? e.message : String(e)})\n`);
    return undefined;
  });
  if (rspamd) targets.push(rspamd);
  try {
    // Warm-up: a whole pass each (every worker thread JIT-compiles on its own; rspamd loads maps).
    for (const t of targets) await pass(t.url, corpus);
    const results = new Map<string, Pass[]>(targets.map((t) => [t.name, []]));
    for (let r = 0; r < (opts.rounds ?? 3); r++) for (const t of targets) results.get(t.name)!.push(await pass(t.url, corpus));
    // Best pass per configuration: the one least disturbed by other load on the machine.
    const best = (name: string): Pass => results.get(name)!.reduce((a, b) => (b.msgPerSec > a.msgPerSec ? b : a));
    const one = best(targets[0]!.name);
    const slowdown = await parallelism();
    printTable(`mail path over the rspamd protocol: ${corpus.length} corpus messages, ${CLIENTS} concurrent clients, best of ${opts.rounds ?? 3} passes (${rules ? "Stalwart's public rules" : 'built-in rules'}, all modules, DNS off)`, [
      ...targets.map((t) => {
        const b = best(t.name);
        return {
          server: t.name,
          'msg/s': b.msgPerSec.toFixed(0),
          'p50 ms': b.p50.toFixed(1),
          'p99 ms': b.p99.toFixed(1),
          'vs 1 worker': (b.msgPerSec / one.msgPerSec).toFixed(2) + '×',
          errors: results.get(t.name)!.reduce((n, p) => n + p.errors, 0),
        };
      }),
    ]);
    process.stdout.write(
      `CPU available to this run: 2 spinning threads take ${slowdown.toFixed(2)}× the time of 1 ` +
        `(1.00 = two free cores; ${slowdown > 1.5 ? 'other load leaves about one core: the 1 vs 2 worker ratio cannot show scaling here' : 'the worker ratio is meaningful'}).\n`,
    );
  } finally {
    for (const t of targets) await t.stop();
  }
}
