/**
 * Training in a worker thread (`node:worker_threads`), so that classification in this process never
 * waits on it: the worker opens its own connection to the store from its configuration, runs one
 * training run and reports. The new model becomes current in the store; the caller then reloads it.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ClassifierSettings, TrainOptions, TrainReport } from './train.js';

/** What the worker receives. */
export interface TrainJob {
  /** The `x:StoreLookup` `store` object (JSON), validated by the worker. */
  config: unknown;
  settings: ClassifierSettings;
  opts: Omit<TrainOptions, 'trusted'>;
  /** `trusted-domains` keys (exact names). */
  trustedDomains?: string[];
}

function entry(): string {
  const here = fileURLToPath(import.meta.url);
  // From TypeScript sources (tests, tsx) a small .mjs registers tsx's loader in the thread first.
  if (here.endsWith('.ts')) return fileURLToPath(new URL('./train-worker-ts.mjs', import.meta.url));
  const js = fileURLToPath(new URL('./train-worker.js', import.meta.url));
  if (!existsSync(js)) throw new Error(`spamrule training worker not found at ${js}`);
  return js;
}

/**
 * Runs a training run in a new worker thread. Resolves with its report; rejects with the worker's
 * error (store down, bad configuration), in which case the store's current model is unchanged.
 */
export function trainInWorker(
  config: unknown, settings: ClassifierSettings, opts: Omit<TrainOptions, 'trusted'>, trustedDomains?: string[],
): Promise<TrainReport> {
  const job: TrainJob = { config, settings, opts: { retrain: opts.retrain, seed: opts.seed, now: opts.now }, trustedDomains };
  return new Promise((resolve, reject) => {
    const w = new Worker(entry(), { workerData: job });
    let done = false;
    w.once('message', (m: { ok: true; report: TrainReport } | { ok: false; error: string }) => {
      done = true;
      if (m.ok) resolve(m.report);
      else reject(new Error(m.error));
    });
    w.once('error', (e) => {
      done = true;
      reject(e);
    });
    w.once('exit', (code) => {
      if (!done) reject(new Error(`training worker exited with code ${code}`));
    });
  });
}
