/**
 * Stalwart's statistical spam classifier (docs/classifier.md): hashed message features, an
 * FTRL-Proximal logistic model trained from labelled mail, `PROB_*` tags from its confidence.
 */
import { createLookupStore } from '../lookup/factory.js';
import { ClassifierStore, sampleHash } from './store.js';
import { SpamClassifier, type SpamClassifierOptions } from './classifier.js';

export { SpamClassifier, probTag, type ClassifierInput, type ClassifierVerdict, type EngineClassifier, type ProbTag, type SpamClassifierOptions } from './classifier.js';
export { buildTokens, trainFacts, type TokenFacts, type TrustCheck } from './features.js';
export { ClassifierModel, DEFAULT_FTRL, FtrlTrainer, vectorize, type Features, type FtrlParameters } from './model.js';
export { ClassifierStore, DamagedRecordError, MAX_SAMPLE_BYTES, sampleHash, type CommitResult, type PendingSample, type Sample, type SampleMeta, type SampleState } from './store.js';
export { compareTokens, tokenJson, type TokenMap } from './tokens.js';
export { DEFAULT_SETTINGS, epochsFor, MAX_PENDING, PENDING_LIMIT_MS, sampleFeatures, trainRun, type ClassifierSettings, type TrainOptions, type TrainReport } from './train.js';
export { trainInWorker } from './worker.js';

export { sqliteModelConfig } from './location.js';
import { sqliteModelConfig } from './location.js';

/**
 * Opens the classifier kept in a store (`x:StoreLookup` `store` object: Sqlite, PostgreSql, MySql,
 * Redis, …) and loads its current model, if any. No read cache sits in front of the store, so every
 * process sees a new model on its next refresh.
 * @throws LookupConfigError for an invalid configuration; rejects when the store is down or its
 * `classifier:current` is not a generation number (the store is then closed).
 */
export async function openClassifier(config: unknown, opts: Omit<SpamClassifierOptions, 'storeConfig'> = {}): Promise<SpamClassifier> {
  // No slow-call limit: saving or loading a model moves megabytes, and may take seconds on a busy server.
  const store = createLookupStore('classifier', config, { cache: { enabled: false }, breaker: { slowCallMs: 0 } });
  const c = new SpamClassifier(new ClassifierStore(store), { ...opts, storeConfig: config });
  try {
    await c.reload();
  } catch (e) {
    // Not left open: a Redis client that cannot connect retries for ever and keeps the process alive.
    await store.close().catch(() => undefined);
    throw e;
  }
  return c;
}

/**
 * Stores labelled messages and trains (Stalwart's SpamTrainingSample + Train task, as a library call):
 * each message becomes a sample (acknowledged once stored), then one training run makes a new model
 * current when both classes have their minimum count. Rejects when the store fails: samples already
 * stored stay, and the previous model stays current.
 */
export async function train(
  classifier: SpamClassifier,
  samples: { spam?: Iterable<Uint8Array | string>; ham?: Iterable<Uint8Array | string> },
  opts: { seed?: number; retrain?: boolean } = {},
): Promise<import('./train.js').TrainReport> {
  for (const m of samples.spam ?? []) await classifier.learn(m, true);
  for (const m of samples.ham ?? []) await classifier.learn(m, false);
  return classifier.train(opts);
}

/**
 * A classifier for a long-running engine (the `serve` workers): opens the store now and starts loading
 * the current model (the first message waits for that load, at most 5 s), then looks for a newer one
 * every `refreshMs` (default 30 s), and loads its language resources with the first model (`preload`,
 * default true here). `onError` hears a failed load, the background refreshes' too (a failure that repeats at every
 * refresh once, until a load succeeds); the model in use stays.
 * @throws LookupConfigError for an invalid store configuration.
 */
export function liveClassifier(config: unknown, opts: Omit<SpamClassifierOptions, 'storeConfig'> = {}, onError?: (e: Error) => void): SpamClassifier {
  // No slow-call limit: saving or loading a model moves megabytes, and may take seconds on a busy server.
  const store = createLookupStore('classifier', config, { cache: { enabled: false }, breaker: { slowCallMs: 0 } });
  const c = new SpamClassifier(new ClassifierStore(store), { refreshMs: 30_000, preload: true, ...opts, storeConfig: config });
  void c.startLoading(onError);
  return c;
}

/** Takes labelled messages from a protocol (rspamd's `learnspam`/`learnham`, JMAP) and trains soon after. */
export interface Learner {
  /** Stores the message as a sample; resolves with its id once stored (acknowledged). */
  learn(raw: Uint8Array, spam: boolean, opts?: { account?: number; deleteAfterUse?: boolean }): Promise<number>;
  /** Forgets a stored sample (JMAP `x:SpamTrainingSample/set destroy`); later runs no longer see it. */
  forget(id: number): Promise<void>;
  /**
   * Stores the message as a sample unless its latest sample (the same bytes) has this class already:
   * spamd's `TELL` and rspamd's `learnspam`/`learnham`, whose clients expect "already learned" then.
   * Learned with the other class, it is stored again (training keeps the latest label).
   */
  learnNew(raw: Uint8Array, spam: boolean): Promise<{ id: number; already: boolean }>;
  /**
   * Forgets every sample of this message (spamd's `TELL` with `Remove: local`, `spamc -L forget`) and, when
   * one was removed, retrains the model from the samples that remain, so the model forgets it too. Resolves
   * with how many samples were removed (0: the message was not learned).
   */
  forgetMessage(raw: Uint8Array): Promise<number>;
}

/**
 * A {@link Learner} over a classifier: each message becomes a sample at once; a training run (in a
 * child process) starts `delayMs` (default 10 s) after the last message, so a burst trains once.
 * A failed run is reported to `onError` and retried with the next message.
 */
export function debouncedLearner(classifier: SpamClassifier, delayMs = 10_000, onError?: (e: Error) => void): Learner & { flush(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  // A forgotten message must leave the model too: a run rebuilds it from the remaining samples while a
  // forget is newer than the last retrain that succeeded (counted, so a forget during a retrain is not lost).
  let forgets = 0;
  let forgetting: Promise<unknown> = Promise.resolve();
  let retrained = 0;
  const run = async (): Promise<void> => {
    timer = undefined;
    const upTo = forgets;
    const full = upTo > retrained;
    try {
      await classifier.train(full ? { retrain: true } : {});
      if (full) retrained = Math.max(retrained, upTo);
    } catch (e) {
      onError?.(e instanceof Error ? e : new Error(String(e)));
    }
  };
  const schedule = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => void run(), delayMs);
    timer.unref();
  };
  const learn: Learner['learn'] = async (raw, spam, opts = {}) => {
    const id = await classifier.learn(raw, spam, opts);
    schedule();
    return id;
  };
  return {
    learn,
    forget: (id) => classifier.store.removeSample(id),
    async learnNew(raw, spam) {
      const prior = await classifier.store.learnedSample(sampleHash(raw));
      if (prior?.spam === spam) return { id: prior.id, already: true };
      return { id: await learn(raw, spam), already: false };
    },
    forgetMessage(raw) {
      // One at a time: each reads every sample's meta, so a burst of forgets must not multiply that load.
      const job = forgetting.then(async () => {
        const n = await classifier.store.removeMessages(new Set([sampleHash(raw)]));
        if (n > 0) {
          forgets++;
          schedule();
        }
        return n;
      });
      forgetting = job.then(
        () => undefined,
        () => undefined,
      );
      return job;
    },
    /** Trains now if a run is pending. */
    async flush() {
      if (timer === undefined) return;
      clearTimeout(timer);
      await run();
    },
  };
}
