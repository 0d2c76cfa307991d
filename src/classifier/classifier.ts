/**
 * The live classifier (docs/classifier.md): the current model of a {@link ClassifierStore}, the
 * `classify` step of the engine (Stalwart's behaviour: confidence per recipient, averaged, mapped to one
 * `PROB_*` tag), learning (samples into the store) and training (a child process by default, so
 * classification never waits on it). A new model replaces the old one in one assignment, so a message
 * is classified entirely with one model; other processes sharing the store pick it up on their next
 * refresh.
 */
import type { Session } from '../analysis/types.js';
import { isSyncLookup } from '../expr/functions/store.js';
import type { LookupRegistry, LookupStore } from '../lookup/types.js';
import type { MessageContext } from '../message/context.js';
import { preloadClassifierResources, withTokenCounts, type TokenFacts, type TrustCheck } from './features.js';
import { predictCounts, type ClassifierModel } from './model.js';
import type { TokCounter } from './tokens.js';
import type { ClassifierStore } from './store.js';
import { DEFAULT_SETTINGS, trainRun, type ClassifierSettings, type TrainOptions, type TrainReport } from './train.js';
import { trainInWorker } from './worker.js';

export type ProbTag =
  | 'PROB_HAM_HIGH' | 'PROB_HAM_MEDIUM' | 'PROB_HAM_LOW' | 'PROB_SPAM_UNCERTAIN' | 'PROB_SPAM_LOW' | 'PROB_SPAM_MEDIUM' | 'PROB_SPAM_HIGH';

/** What the `classify` step found: the average spam confidence (0–1) and its tag. */
export interface ClassifierVerdict {
  confidence: number;
  tag: ProbTag;
  /** Generation of the model that classified. */
  generation: number;
}

/** What the engine hands the `classify` step. */
export interface ClassifierInput {
  message: MessageContext;
  session: Session;
  lists: LookupRegistry;
}

/** The engine's view of a classifier (`EngineOptions.classifier`). Must not throw for a bad message. */
export interface EngineClassifier {
  /**
   * `undefined`: no model yet (too few samples), or no recipient → no `PROB_*` tag. May answer without a
   * promise (the engine then spends no microtask turn on it); a thrown error and a rejection are both
   * reported in the classify result.
   */
  classify(input: ClassifierInput): ClassifierVerdict | undefined | Promise<ClassifierVerdict | undefined>;
  /**
   * Optional: releases what the classifier holds (`SpamClassifier`: its model store). `SpamEngine.close()`
   * calls it, unless told to keep the classifier.
   */
  close?(): Promise<void>;
}

/** Stalwart's confidence → tag table (single-precision comparisons; NaN → uncertain). */
export function probTag(p: number): ProbTag {
  const f = Math.fround(p);
  if (!Number.isFinite(f)) return 'PROB_SPAM_UNCERTAIN';
  if (f < Math.fround(0.15)) return 'PROB_HAM_HIGH';
  if (f < Math.fround(0.25)) return 'PROB_HAM_MEDIUM';
  if (f < Math.fround(0.4)) return 'PROB_HAM_LOW';
  if (f < Math.fround(0.6)) return 'PROB_SPAM_UNCERTAIN';
  if (f < Math.fround(0.75)) return 'PROB_SPAM_LOW';
  if (f < Math.fround(0.85)) return 'PROB_SPAM_MEDIUM';
  return 'PROB_SPAM_HIGH';
}

/**
 * `trusted-domains` membership: a static list (in memory) answers synchronously, other stores by a
 * promise; a store that fails counts as "not trusted".
 */
function trustCheck(store: LookupStore | undefined): TrustCheck {
  if (store === undefined) return () => false;
  if (isSyncLookup(store)) {
    return (d) => {
      try {
        return store.hasSync(d);
      } catch {
        return false;
      }
    };
  }
  return (d) => store.keyExists(d).catch(() => false);
}

/** A verdict from an average spam confidence. */
function verdictOf(confidence: number, generation: number): ClassifierVerdict {
  return { confidence, tag: probTag(confidence), generation };
}

/**
 * The average confidence over a message's recipients (Stalwart's behaviour): local accounts get their
 * personalised prediction; with no local recipient one global prediction stands for all. No recipient at
 * all (a library call without a session): one global prediction too (Stalwart always has recipients).
 */
function averageConfidence(
  model: ClassifierModel, s: ClassifierSettings, accountOf: ((recipient: string) => number | undefined) | undefined,
  rcptTo: readonly string[], counts: TokCounter,
): number {
  const opts = { logScale: s.featureLogScale, l2: s.featureL2Normalize };
  let sum = 0;
  let n = 0;
  if (accountOf !== undefined) {
    for (const r of rcptTo) {
      const a = accountOf(r);
      if (a === undefined) continue;
      sum += predictCounts(model, counts, { accountId: a, ...opts });
      n++;
    }
  }
  return n === 0 ? predictCounts(model, counts, opts) : sum / n;
}

export interface SpamClassifierOptions {
  settings?: Partial<ClassifierSettings>;
  /**
   * The store's configuration (`x:StoreLookup` `store` object), when it has one: training then runs in
   * a child process that opens its own connection (src/classifier/worker.ts). Without it training runs in
   * this thread.
   */
  storeConfig?: unknown;
  /** How often `classify` checks the store for a newer model (ms, default 60,000; 0 = never). */
  refreshMs?: number;
  /** Local recipients' account ids (personalised predictions); default: no recipient is local. */
  accountOf?: (recipient: string) => number | undefined;
  /** Default options of {@link SpamClassifier.train} (seed, …). */
  train?: Omit<TrainOptions, 'trusted'>;
  /** `trusted-domains` keys for training (their URLs, hosts and addresses give no tokens). */
  trustedDomains?: readonly string[];
  /**
   * Load the stemmers, stop words, segmenters and native addons when the first model is loaded instead
   * of on first use, and have V8 compile each stemmer (400 random words each): about 1–1.5 s and 70 MB per
   * thread (jieba's dictionary: 55 MB), paid at start rather than by the first messages of each language. Default false (a one-shot `classify` of a few messages
   * would pay for languages it never meets); `liveClassifier`, for long-running servers, turns it on.
   */
  preload?: boolean;
}

/**
 * The classifier over one store (docs/classifier.md): `openClassifier`/`liveClassifier` build it from a
 * store configuration, `new SpamClassifier(new ClassifierStore(store), opts)` from a store one has. It
 * owns the store: `close()` closes it. An engine given it (`EngineOptions.classifier`) owns it in turn.
 */
export class SpamClassifier implements EngineClassifier {
  readonly settings: ClassifierSettings;
  private current: { generation: number; model: ClassifierModel } | undefined;
  private lastCheck = 0;
  private refreshing: Promise<boolean> | undefined;
  private training: Promise<TrainReport> | undefined;
  private readonly refreshMs: number;
  /** The first load of a long-running classifier ({@link startLoading}); classify waits for it once. */
  private loading: Promise<unknown> | undefined;
  /** Set by {@link close}: no background refresh starts any more. */
  private closed = false;
  /** Hears failed loads, the background refreshes' too ({@link startLoading}). */
  private onLoadError: ((e: Error) => void) | undefined;
  /** The message of the last failed refresh reported: the same failure every refresh is said once. */
  private lastLoadError: string | undefined;

  constructor(
    readonly store: ClassifierStore,
    private readonly opts: SpamClassifierOptions = {},
  ) {
    this.settings = { ...DEFAULT_SETTINGS, ...opts.settings };
    this.refreshMs = opts.refreshMs ?? 60_000;
  }

  /** Generation of the model in use (0: none). */
  get generation(): number {
    return this.current?.generation ?? 0;
  }

  get model(): ClassifierModel | undefined {
    return this.current?.model;
  }

  /**
   * Loads the store's current model when it is newer than the one in use; resolves true when it
   * switched. Rejects when the store fails, and with a `DamagedRecordError` naming the record when the
   * stored model is damaged (the model in use stays either way).
   */
  async reload(): Promise<boolean> {
    const gen = await this.store.currentGeneration();
    if (gen === this.generation) return false;
    if (gen === 0) {
      this.current = undefined;
      return true;
    }
    const model = await this.store.loadModel(gen);
    if (model === undefined) return false;
    if (this.opts.preload === true) await preloadClassifierResources(model);
    if (gen > this.generation || this.current === undefined) this.current = { generation: gen, model };
    return true;
  }

  /**
   * Starts loading the current model without waiting; the first `classify` waits for this load (up to
   * `waitMs`, default 5,000 ms) instead of classifying without a model. Resolves when the load ends.
   * `onError` hears this load's failure and, later, those of the background refreshes (each distinct failure
   * once until a load succeeds).
   */
  startLoading(onError?: (e: Error) => void, waitMs = 5_000): Promise<unknown> {
    this.onLoadError = onError;
    const load = this.reload().catch((e: unknown) => this.reportLoadError(e));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise((r) => {
      timer = setTimeout(r, waitMs);
      timer.unref();
    });
    this.loading = Promise.race([load, timeout]).finally(() => {
      clearTimeout(timer);
      this.loading = undefined;
    });
    return this.loading;
  }

  private maybeRefresh(): void {
    if (this.refreshMs <= 0 || this.refreshing !== undefined || this.closed) return;
    const now = Date.now();
    if (now - this.lastCheck < this.refreshMs) return;
    this.lastCheck = now;
    this.refreshing = this.reload()
      .then((switched) => {
        this.lastLoadError = undefined;
        return switched;
      })
      .catch((e: unknown) => {
        this.reportLoadError(e);
        return false;
      })
      .finally(() => {
        this.refreshing = undefined;
      });
  }

  /**
   * Tells `startLoading`'s `onError` of a failed load (a store that is down, a damaged record): the model in use
   * stays, so without this a server would go on with an old model, or none, and nobody would know. A failure
   * that repeats every refresh is reported once, until a load succeeds.
   */
  private reportLoadError(e: unknown): void {
    const err = e instanceof Error ? e : new Error(String(e));
    if (err.message === this.lastLoadError) return;
    this.lastLoadError = err.message;
    this.onLoadError?.(err);
  }

  /** Stores a labelled message as a training sample; resolves (with its id) once the store has it. */
  learn(raw: Uint8Array | string, spam: boolean, opts: { account?: number; deleteAfterUse?: boolean } = {}): Promise<number> {
    return this.store.addSample(typeof raw === 'string' ? Buffer.from(raw) : raw, spam, opts);
  }

  /**
   * Runs a training run (one at a time: a second call while one runs gets the running one), in a
   * child process when the store has a configuration, then switches to the new model.
   * @throws when the store fails; the model in use stays.
   */
  train(opts: TrainOptions = {}): Promise<TrainReport> {
    if (this.training !== undefined) return this.training;
    const o = { ...this.opts.train, ...opts };
    const run = async (): Promise<TrainReport> => {
      const domains = [...(this.opts.trustedDomains ?? [])];
      const set = new Set(domains);
      const report =
        this.opts.storeConfig !== undefined && o.trusted === undefined
          ? await trainInWorker(this.opts.storeConfig, this.settings, o, domains)
          : await trainRun(this.store, this.settings, { trusted: (d) => set.has(d), ...o });
      if (report.ready) await this.reload();
      return report;
    };
    this.training = run().finally(() => {
      this.training = undefined;
    });
    return this.training;
  }

  /** Spam probability of an analysed message with the current model (undefined without one). */
  async confidence(m: MessageContext, facts: TokenFacts, trusted: TrustCheck, account?: number): Promise<number | undefined> {
    const cur = this.current;
    if (cur === undefined) return undefined;
    const s = this.settings;
    return withTokenCounts(m, facts, trusted, (map) =>
      predictCounts(cur.model, map, { accountId: account, logScale: s.featureLogScale, l2: s.featureL2Normalize }),
    );
  }

  /**
   * The verdict on an analysed message ({@link EngineClassifier.classify}): without a promise when the
   * model is loaded and the token build needs no await (a static `trusted-domains` list).
   */
  classify(input: ClassifierInput): ClassifierVerdict | undefined | Promise<ClassifierVerdict | undefined> {
    if (this.loading !== undefined) return this.loading.then(() => this.classifyLoaded(input));
    return this.classifyLoaded(input);
  }

  /** The trust check of the last `trusted-domains` store seen (one per store, not one per message). */
  private trustOf: { store: LookupStore | undefined; check: TrustCheck } = { store: undefined, check: trustCheck(undefined) };

  private classifyLoaded(input: ClassifierInput): ClassifierVerdict | undefined | Promise<ClassifierVerdict | undefined> {
    this.maybeRefresh();
    const cur = this.current;
    if (cur === undefined) return undefined;
    const { session, message, lists } = input;
    const store = lists.get('trusted-domains');
    if (store !== this.trustOf.store) this.trustOf = { store, check: trustCheck(store) };
    const facts: TokenFacts = {
      dmarcPass: session.dmarc.result === null ? null : session.dmarc.result === 'pass',
      asn: session.asn,
      envFrom: session.mailFrom,
    };
    // Predictions read the counts' token ids, so they run where the counts are built (withTokenCounts).
    const { settings, opts } = this;
    const confidence = withTokenCounts(message, facts, this.trustOf.check, (counts) =>
      averageConfidence(cur.model, settings, opts.accountOf, session.rcptTo, counts),
    );
    return typeof confidence === 'number' ? verdictOf(confidence, cur.generation) : confidence.then((p) => verdictOf(p, cur.generation));
  }

  /** Waits for a running training run and a background refresh. */
  async idle(): Promise<void> {
    await Promise.allSettled([this.training, this.refreshing]);
  }

  /**
   * Waits for a model load, a training run and a background refresh in progress, then closes the model
   * store (its database file, or its server connections, which would otherwise keep the process
   * alive). Idempotent. After it, `learn` and `train` reject, and `classify` answers with the model
   * in use without looking for a newer one.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.loading, this.training, this.refreshing]);
    await this.store.store.close();
  }
}
