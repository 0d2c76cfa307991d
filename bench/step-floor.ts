/**
 * Where the classifier's step waits (docs/classifier-performance.md, "The hot floor"). One process
 * trains a model on the cross-validation's training half (as the learn bench does), classifies that
 * half with and without the model (a process that has run a while), then times the classifier's step
 * alone over the held-out half in five conditions:
 * - in a classification of new mail, with nothing run just before it;
 * - the same, with the previous message's step run again just before it (untimed): the code and the
 *   data that messages share are then warm;
 * - the same, with this message's step run just before it (untimed): its own data is warm too, and its
 *   first-time work (new words, the language detection of new texts) done;
 * - in a classification of a message that each side has just classified twice (every memo warm; the
 *   analysis in between evicts what it evicts), with the ratio of the two sides' times;
 * - on its own: the same message's step run five times in a row, the last four timed.
 * The three conditions of new mail rotate over the held-out messages (each a third of them, every
 * kind of message in each). Prints microseconds a message and their ratio to the step on its own, all
 * measured in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClassifier, sqliteModelConfig, type ClassifierInput, type ClassifierVerdict, type EngineClassifier, type SpamClassifier } from '../src/classifier/index.js';
import type { SpamEngine } from '../src/engine/index.js';
import { classifyBothSides, splitHalves } from './model-cost.js';
import { analysisEngine, loadCorpus, printTable, publicBundle, trustedDomains } from './common.js';

/** What runs, untimed, just before the timed step. */
type Before = 'nothing' | 'previous' | 'same';

/** Times the wrapped classifier's step (milliseconds) per {@link Before} condition. */
class StepTimer implements EngineClassifier {
  before: Before = 'nothing';
  /** The last input seen (the previous message's, when the next one comes). */
  last: ClassifierInput | undefined;
  readonly ms: Record<Before, number> = { nothing: 0, previous: 0, same: 0 };
  readonly count: Record<Before, number> = { nothing: 0, previous: 0, same: 0 };
  /** A step that answered with a promise: its time would not be the step's. */
  asyncSteps = 0;

  constructor(private readonly inner: SpamClassifier) {}

  classify(input: ClassifierInput): ClassifierVerdict | undefined | Promise<ClassifierVerdict | undefined> {
    const pre = this.before === 'same' ? input : this.before === 'previous' ? this.last : undefined;
    if (pre !== undefined) this.sync(this.inner.classify(pre));
    const t0 = performance.now();
    const r = this.sync(this.inner.classify(input));
    this.ms[this.before] += performance.now() - t0;
    this.count[this.before]++;
    this.last = input;
    return r;
  }

  /** `r` when the step answered at once; a promise is counted (the suite then fails) and its rejection dropped. */
  sync(r: ReturnType<SpamClassifier['classify']>): ClassifierVerdict | undefined {
    if (r instanceof Promise) {
      this.asyncSteps++;
      r.catch(() => undefined);
      return undefined;
    }
    return r;
  }

  reset(): void {
    for (const b of ['nothing', 'previous', 'same'] as const) this.ms[b] = this.count[b] = 0;
  }
}

const us = (ms: number, n: number): number => (1000 * ms) / Math.max(n, 1);

/** `npm run bench -- --only step-floor`: prints the step's times (µs a message) in the conditions above. */
export async function runStepFloorBench(): Promise<void> {
  const { train, test } = splitHalves(loadCorpus());
  const bundle = publicBundle();
  const trusted = trustedDomains(bundle);
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-step-floor-'));
  try {
    const classifier = await openClassifier(sqliteModelConfig(join(dir, 'model.sqlite')), { trustedDomains: trusted, refreshMs: 0, preload: true });
    try {
      for (const m of train) await classifier.learn(m.raw, m.isSpam);
      await classifier.train({ seed: 1 });
      if (classifier.generation === 0) throw new Error('training the step-floor model built no model');
      const engine = analysisEngine(bundle);
      await classifyBothSides(engine, classifier, train);
      await report(engine, classifier, test.map((m) => m.raw));
    } finally {
      await classifier.store.store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Times the step over `test` (raw messages) in each condition and prints the two tables. */
async function report(engine: SpamEngine, classifier: SpamClassifier, test: readonly Buffer[]): Promise<void> {
  const timer = new StepTimer(classifier);
  engine.classifier = timer;
  // New mail: the three conditions rotate over the messages.
  const conditions: Before[] = ['nothing', 'previous', 'same'];
  for (let k = 0; k < test.length; k++) {
    timer.before = conditions[k % 3]!;
    await engine.classify(test[k]!);
  }
  const newMail = conditions.map((b) => us(timer.ms[b], timer.count[b]));

  // Every memo warm: each side classifies a message three times in a row, the last timed (sides
  // alternating which goes first); then the step alone on that message's input.
  timer.before = 'nothing';
  const sides = [0, 0];
  let warm = 0;
  let alone = 0;
  for (let k = 0; k < test.length; k++) {
    for (const withModel of k % 2 === 0 ? [false, true] : [true, false]) {
      engine.classifier = withModel ? timer : undefined;
      for (let r = 0; r < 3; r++) {
        timer.reset();
        const t0 = performance.now();
        await engine.classify(test[k]!);
        if (r === 2) sides[withModel ? 1 : 0] += performance.now() - t0;
      }
      if (!withModel) continue;
      warm += timer.ms.nothing;
      const input = timer.last!;
      for (let r = 0; r < 5; r++) {
        const t0 = performance.now();
        timer.sync(classifier.classify(input));
        if (r > 0) alone += (performance.now() - t0) / 4;
      }
    }
  }
  if (timer.asyncSteps > 0) throw new Error(`${timer.asyncSteps} classifier steps answered with a promise: their times are not the step's`);
  const n = test.length;
  const aloneUs = us(alone, n);
  const row = (condition: string, stepUs: number): Record<string, string> => ({
    condition,
    'step (µs/msg)': stepUs.toFixed(0),
    'times the step alone': (stepUs / aloneUs).toFixed(2),
  });
  printTable(`where the classifier's step waits: ${n} held-out messages, in a process that has classified the training half`, [
    row('new mail, nothing run just before', newMail[0]!),
    row("new mail, the previous message's step run just before", newMail[1]!),
    row("new mail, this message's step run just before", newMail[2]!),
    row('a message each side has just classified twice (every memo warm)', us(warm, n)),
    row('the step alone (its input 5 times in a row, the last 4 timed)', aloneUs),
  ]);
  printTable('classify with the model against without it, every memo warm (the same messages, third classification in a row)', [
    { 'without model (ms/msg)': (sides[0]! / n).toFixed(2), 'with model (ms/msg)': (sides[1]! / n).toFixed(2), 'ratio with/without': (sides[1]! / sides[0]!).toFixed(3) },
  ]);
}
