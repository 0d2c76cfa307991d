/**
 * The learn bench's cost measures: classify the held-out mail with and without the model, alternating
 * (alternatingPerMessage), and the rows of its cost tables.
 *
 * The cold pass classifies mail a process has not seen, in a process whose memos (words, stems,
 * languages, interned tokens, host names) are empty. One runs in the bench's own thread (it also counts
 * the verdicts for the accuracy tables); more run each in a fresh worker thread (its own V8 isolate:
 * fresh JIT, memos and caches), because a cold pass cannot be repeated in a process that has run one,
 * and a single pass's ratio moved by ±0.03 between runs on this project's shared machines.
 *
 * The two sides of a cold pass take turns going first on a message ({@link ColdOrder}), and the side
 * that goes first pays for what the process meets for the first time in that message (code paths V8
 * has not compiled yet, process-wide memos of host names and patterns), which the other side then
 * finds ready. Over this corpus's held-out half that is not even between the two orders: a classifier
 * that does nothing measured 0.95–0.985 in one order and 1.01–1.04 in the other. So the unseen-mail
 * figure pools cold passes run in both orders, as many of each.
 */
import { Worker } from 'node:worker_threads';
import type { SpamClassifier } from '../src/classifier/index.js';
import type { SpamEngine } from '../src/engine/index.js';
import type { ClassifyResult } from '../src/engine/types.js';
import type { CorpusMessage } from '../test/helpers/corpus.js';
import { alternatingPerMessage } from './common.js';

/**
 * Which side goes first on a message in a cold pass: 0, the side without the model on the even-index
 * messages (the order of {@link alternatingPerMessage}'s first round); 1, the side with it.
 */
export type ColdOrder = 0 | 1;

/** How a cost table names a {@link ColdOrder}. */
export function coldOrderName(order: ColdOrder): string {
  return order === 0 ? 'model second on even messages' : 'model first on even messages';
}

/** Each side's summed classify time over a pass (ms) and the number of messages. */
export interface PassTimes {
  withMs: number;
  withoutMs: number;
  messages: number;
}

/** One row of a cost table: the pass's name (or number) and its times. */
export interface CostPass {
  pass: string | number;
  t: PassTimes;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The rows of a cost table: each pass's ms per message on each side and their ratio, then the median
 * ratio, or with `summary` 'pooled' the ratio of all passes' summed times (for cold passes run in both
 * orders, as many of each: see {@link ColdOrder}).
 */
export function costRows(passes: readonly CostPass[], summary: 'median' | 'pooled' = 'median'): Record<string, string | number>[] {
  const rows: Record<string, string | number>[] = passes.map(({ pass, t }) => ({
    pass,
    'without model (ms/msg)': (t.withoutMs / t.messages).toFixed(2),
    'with model (ms/msg)': (t.withMs / t.messages).toFixed(2),
    'ratio with/without': (t.withMs / t.withoutMs).toFixed(3),
  }));
  if (summary === 'median') {
    rows.push({ pass: 'median', 'ratio with/without': median(passes.map(({ t }) => t.withMs / t.withoutMs)).toFixed(3) });
  } else {
    const sum = (f: (t: PassTimes) => number): number => passes.reduce((a, p) => a + f(p.t), 0);
    const n = sum((t) => t.messages);
    rows.push({
      pass: 'pooled',
      'without model (ms/msg)': (sum((t) => t.withoutMs) / n).toFixed(2),
      'with model (ms/msg)': (sum((t) => t.withMs) / n).toFixed(2),
      'ratio with/without': (sum((t) => t.withMs) / sum((t) => t.withoutMs)).toFixed(3),
    });
  }
  return rows;
}

/**
 * {@link alternatingPerMessage} of `engine` without and with `classifier` over `test` (`rounds` passes,
 * the first in `order`), each pass's times as {@link PassTimes}. `onResult` sees every result (for the
 * accuracy counts). Leaves `engine.classifier` set to `classifier`.
 */
export async function alternatingModelPasses(
  engine: SpamEngine,
  classifier: SpamClassifier,
  test: readonly CorpusMessage[],
  rounds: number,
  onResult?: (m: CorpusMessage, withModel: boolean, r: ClassifyResult) => void,
  order: ColdOrder = 0,
): Promise<PassTimes[]> {
  const side = (withModel: boolean) => async (m: CorpusMessage): Promise<void> => {
    engine.classifier = withModel ? classifier : undefined;
    const r = await engine.classify(m.raw);
    onResult?.(m, withModel, r);
  };
  const { passes } = await alternatingPerMessage(test, side(false), side(true), rounds, order);
  engine.classifier = classifier;
  return passes.map((p) => ({ withoutMs: p.baselineMs, withMs: p.candidateMs, messages: test.length }));
}

/**
 * Classifies each of `messages` once without and once with `classifier` (untimed): a process that has
 * run a while, whose memos hold other mail. Leaves `engine.classifier` set to `classifier`.
 */
export async function classifyBothSides(engine: SpamEngine, classifier: SpamClassifier, messages: readonly CorpusMessage[]): Promise<void> {
  for (const m of messages) {
    engine.classifier = undefined;
    await engine.classify(m.raw);
    engine.classifier = classifier;
    await engine.classify(m.raw);
  }
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
 * One pass of {@link alternatingModelPasses} in `order` after one message of each side as JIT warm-up:
 * the cold pass when the process has not classified `test` before.
 */
export async function coldPass(
  engine: SpamEngine,
  classifier: SpamClassifier,
  test: readonly CorpusMessage[],
  onResult?: (m: CorpusMessage, withModel: boolean, r: ClassifyResult) => void,
  order: ColdOrder = 0,
): Promise<PassTimes> {
  engine.classifier = undefined;
  await engine.classify(test[0]!.raw);
  engine.classifier = classifier;
  await engine.classify(test[0]!.raw);
  return (await alternatingModelPasses(engine, classifier, test, 1, onResult, order))[0]!;
}

/**
 * {@link coldPass} in `order` over the held-out half in a fresh worker thread, with the SQLite model at
 * `modelFile` (opened as a second process would: preloaded and warmed up before the pass) and the
 * public rule set. `primed`: the worker first classifies the training half with both sides
 * ({@link classifyBothSides}), so the pass measures new mail in a process that has run a while. Rejects
 * when the worker fails.
 */
export function coldPassInThread(modelFile: string, trustedDomains: readonly string[], order: ColdOrder, primed = false): Promise<PassTimes> {
  return new Promise((resolve, reject) => {
    // Compiled (`npm run bench`), the worker is cold-pass-worker.js beside this file. Run from the TypeScript
    // sources (tsx), a worker does not inherit tsx's loader: the .mjs entry registers it, then loads the .ts.
    const entry = import.meta.url.endsWith('.ts') ? './cold-pass-worker.mjs' : './cold-pass-worker.js';
    const worker = new Worker(new URL(entry, import.meta.url), { workerData: { modelFile, trustedDomains, order, primed } });
    let result: PassTimes | undefined;
    worker.on('message', (m: PassTimes) => {
      result = m;
    });
    worker.on('error', reject);
    worker.on('exit', (code) => (result !== undefined ? resolve(result) : reject(new Error(`cold-pass worker exited with code ${code} and no result`))));
  });
}
