/** Worker-thread side of {@link trainInWorker}: one training run against the configured store. */
import { parentPort, workerData } from 'node:worker_threads';
import { createLookupStore } from '../lookup/factory.js';
import { ClassifierStore } from './store.js';
import { trainRun } from './train.js';
import type { TrainJob } from './worker.js';

const job = workerData as TrainJob;
// No read cache: training reads each sample once, and a cached "current generation" would be stale.
const store = createLookupStore('classifier', job.config, { cache: { enabled: false }, breaker: { slowCallMs: 0 } });
const trusted = new Set(job.trustedDomains ?? []);
try {
  const report = await trainRun(new ClassifierStore(store), job.settings, { ...job.opts, trusted: (d) => trusted.has(d) });
  parentPort!.postMessage({ ok: true, report });
} catch (e) {
  parentPort!.postMessage({ ok: false, error: e instanceof Error ? e.message : String(e) });
} finally {
  await store.close().catch(() => {});
}
