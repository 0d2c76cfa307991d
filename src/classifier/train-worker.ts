/**
 * Child-process side of {@link trainInWorker}: says `'ready'`, receives one {@link TrainJob}, runs one training run against
 * the configured store, answers with a {@link TrainAnswer} and exits. Exits as well when the parent goes
 * away (its IPC channel closes), so that no training outlives the server that asked for it.
 */
import { createLookupStore } from '../lookup/factory.js';
import { ClassifierStore } from './store.js';
import { trainRun } from './train.js';
import type { TrainAnswer, TrainJob } from './worker.js';

process.once('disconnect', () => process.exit(1));
process.once('message', (job: TrainJob) => {
  void run(job);
});
process.send!('ready');

async function run(job: TrainJob): Promise<void> {
  let answer: TrainAnswer;
  // No read cache: training reads each sample once, and a cached "current generation" would be stale.
  const store = createLookupStore('classifier', job.config, { cache: { enabled: false }, breaker: { slowCallMs: 0 } });
  const trusted = new Set(job.trustedDomains ?? []);
  try {
    const report = await trainRun(new ClassifierStore(store), job.settings, { ...job.opts, trusted: (d) => trusted.has(d) });
    const cpu = process.cpuUsage();
    answer = { ok: true, report: { ...report, processCpuMs: (cpu.user + cpu.system) / 1000 } };
  } catch (e) {
    answer = { ok: false, error: e instanceof Error ? e.message : String(e) };
  } finally {
    await store.close().catch(() => {});
  }
  process.send!(answer, () => process.exit(0));
}
