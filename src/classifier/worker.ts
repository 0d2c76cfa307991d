/**
 * Training in a child process (`node:child_process` `fork`), so that classification in this process
 * never waits on it: the child opens its own connection to the store from its configuration, runs one
 * training run, reports and exits. The new model becomes current in the store; the caller then reloads it.
 *
 * A process rather than a worker thread: a training run allocates a few hundred megabytes (the samples'
 * token maps), and a thread's freed heap stays in this process's allocator arenas when the thread ends
 * (measured: 80–130 MB more resident memory for good after each run in a thread). A process gives all of
 * it back when it exits, and a crash or out-of-memory there leaves the server running.
 */
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClassifierSettings, TrainOptions, TrainReport } from './train.js';

/** What the training process receives (one IPC message, after it has said `'ready'`). */
export interface TrainJob {
  /** The `x:StoreLookup` `store` object (JSON), validated by the child. */
  config: unknown;
  settings: ClassifierSettings;
  opts: Omit<TrainOptions, 'trusted'>;
  /** `trusted-domains` keys (exact names). */
  trustedDomains?: string[];
}

/** The child's one answer. */
export type TrainAnswer = { ok: true; report: TrainReport } | { ok: false; error: string };

function entry(): string {
  const here = fileURLToPath(import.meta.url);
  // From TypeScript sources (tests, tsx) a small .mjs registers tsx's loader in the child first.
  if (here.endsWith('.ts')) return fileURLToPath(new URL('./train-worker-ts.mjs', import.meta.url));
  const js = fileURLToPath(new URL('./train-worker.js', import.meta.url));
  if (!existsSync(js)) throw new Error(`spamrule training worker not found at ${js}`);
  return js;
}

/**
 * Runs a training run in a new child process (the same Node binary). Resolves with its report; rejects
 * with the child's error (store down, bad configuration) or when it dies (signal, out of memory), in
 * which case the store's current model is unchanged (a run commits its model last, atomically).
 */
export function trainInWorker(
  config: unknown, settings: ClassifierSettings, opts: Omit<TrainOptions, 'trusted'>, trustedDomains?: string[],
): Promise<TrainReport> {
  const job: TrainJob = { config, settings, opts: { retrain: opts.retrain, seed: opts.seed, now: opts.now }, trustedDomains };
  return new Promise((resolve, reject) => {
    // No inherited --inspect and the like; 'advanced' serialization carries the report's numbers as they are.
    const child = fork(entry(), [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let answer: TrainAnswer | undefined;
    // The job goes out once the child listens: a message sent before its module has loaded is lost.
    child.on('message', (m: TrainAnswer | 'ready') => {
      if (m === 'ready') child.send(job);
      else answer = m;
    });
    child.once('error', (e) => {
      if (answer === undefined) reject(e);
      answer ??= { ok: false, error: e.message };
    });
    child.once('exit', (code, signal) => {
      if (answer === undefined) reject(new Error(`training process ended (${signal ?? `exit code ${code}`}) without a report`));
      else if (answer.ok) resolve(answer.report);
      else reject(new Error(answer.error));
    });
  });
}
