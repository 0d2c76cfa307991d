/**
 * The learn bench's cold pass: classify mail a process has not seen, with and without the model,
 * alternating per message, in a process whose memos (words, stems, languages, interned tokens, host
 * names) are empty. One pass runs in the bench's own thread (it also counts the verdicts for the
 * accuracy tables); more passes run each in a fresh worker thread (its own V8 isolate: fresh JIT,
 * memos and caches), because a cold pass cannot be repeated in a process that has run one, and a
 * single pass's ratio moved by ±0.03 between runs on this project's shared machines.
 */
import { Worker } from 'node:worker_threads';
import type { SpamClassifier } from '../src/classifier/index.js';
import type { SpamEngine } from '../src/engine/index.js';
import type { ClassifyResult } from '../src/engine/types.js';
import type { CorpusMessage } from '../test/helpers/corpus.js';

/** Each side's summed classify time over the pass (ms) and the number of messages. */
export interface ColdPassTimes {
  withMs: number;
  withoutMs: number;
  messages: number;
}

/** The cross-validation split: every other message of each corpus folder, from the first (train) or the second (held-out). */
export function splitHalves(corpus: readonly CorpusMessage[]): { train: CorpusMessage[]; test: CorpusMessage[] } {
  const index = new Map<string, number>();
  const train: CorpusMessage[] = [];
  const test: CorpusMessage[] = [];
  for (const m of corpus) {
    const i = index.get(m.group) ?? 0;
    index.set(m.group, i + 1);
    (i % 2 === 0 ? train : test).push(m);
  }
  return { train, test };
}

/**
 * Classifies each of `test` once without and once with `classifier` (the order switching from one
 * message to the next, so drifting machine load favours neither side), after one message of each as
 * JIT warm-up, and sums each side's time. `onResult` sees every result (for the accuracy counts).
 * Leaves `engine.classifier` set to `classifier`.
 */
export async function coldPass(
  engine: SpamEngine,
  classifier: SpamClassifier,
  test: readonly CorpusMessage[],
  onResult?: (m: CorpusMessage, withModel: boolean, r: ClassifyResult) => void,
): Promise<ColdPassTimes> {
  engine.classifier = undefined;
  await engine.classify(test[0]!.raw);
  engine.classifier = classifier;
  await engine.classify(test[0]!.raw);
  let withoutMs = 0;
  let withMs = 0;
  for (let i = 0; i < test.length; i++) {
    const m = test[i]!;
    for (const withModel of i % 2 === 0 ? [false, true] : [true, false]) {
      engine.classifier = withModel ? classifier : undefined;
      const s = performance.now();
      const r = await engine.classify(m.raw);
      const ms = performance.now() - s;
      if (withModel) withMs += ms;
      else withoutMs += ms;
      onResult?.(m, withModel, r);
    }
  }
  engine.classifier = classifier;
  return { withMs, withoutMs, messages: test.length };
}

/**
 * {@link coldPass} over the held-out half in a fresh worker thread, with the SQLite model at
 * `modelFile` (opened as a second process would: preloaded and warmed up before the pass) and the
 * public rule set. Rejects when the worker fails.
 */
export function coldPassInThread(modelFile: string, trustedDomains: readonly string[]): Promise<ColdPassTimes> {
  return new Promise((resolve, reject) => {
    // A worker does not inherit tsx's loader: this entry registers it, then loads cold-pass-worker.ts.
    const worker = new Worker(new URL('./cold-pass-worker.mjs', import.meta.url), { workerData: { modelFile, trustedDomains } });
    let result: ColdPassTimes | undefined;
    worker.on('message', (m: ColdPassTimes) => {
      result = m;
    });
    worker.on('error', reject);
    worker.on('exit', (code) => (result !== undefined ? resolve(result) : reject(new Error(`cold-pass worker exited with code ${code} and no result`))));
  });
}
