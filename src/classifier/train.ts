/**
 * A training run (Stalwart's `spam_train`, docs/classifier.md "Training"): read the samples added since
 * the last run, keep per-class replay reservoirs, wait until both classes have their minimum count,
 * balance the classes with replays, shuffle, train in chunks of 128 for 3/2/1 epochs (by the smaller
 * class's count), then save trainer and model as a new generation and switch to it.
 *
 * Deterministic given `seed` (Stalwart shuffles with an unseeded generator; the per-epoch shuffle of a
 * chunk uses seed 42 as Stalwart does). One difference, documented: the last trained sample id
 * advances after every run (Stalwart sets it on the first run only, so later runs re-read every sample
 * added since then).
 */
import { analyzeMessage, messageContextOf } from '../message/index.js';
import { prng } from '../util/index.js';
import { buildTokens, trainFacts, type TrustCheck } from './features.js';
import { DEFAULT_FTRL, FtrlTrainer, vectorize, type Features, type FtrlParameters } from './model.js';
import type { ClassifierStore, PendingSample, Reservoir, SampleMeta, TrainerState } from './store.js';

/**
 * How long (ms) a sample id whose meta is absent stays pending (`TrainerState.pending`): a sample being
 * written (up to 8 MB) takes seconds; an id still absent after this is taken for one whose writer died.
 */
export const PENDING_LIMIT_MS = 10 * 60 * 1000;
/** Pending sample ids kept at most per trainer state (the oldest dropped beyond it). */
export const MAX_PENDING = 10_000;

export interface ClassifierSettings {
  ftrl: FtrlParameters;
  /** ln(1 + count) instead of count (default true). */
  featureLogScale: boolean;
  /** Divide the feature vector by its L2 norm (default true). */
  featureL2Normalize: boolean;
  /** Cumulative samples of each class needed before a model is built (Stalwart: 100 / 100). */
  minHamSamples: number;
  minSpamSamples: number;
  /** Replay reservoir size per class (1024). */
  reservoirCapacity: number;
}

export const DEFAULT_SETTINGS: ClassifierSettings = {
  ftrl: DEFAULT_FTRL,
  featureLogScale: true,
  featureL2Normalize: true,
  minHamSamples: 100,
  minSpamSamples: 100,
  reservoirCapacity: 1024,
};

export interface TrainOptions {
  /** Ignore the stored trainer and start afresh over every stored sample (Stalwart's Retrain). */
  retrain?: boolean;
  /** Seed of the run's shuffles and reservoir draws (default 1). */
  seed?: number;
  /** `trusted-domains` (and local domains): their URLs, hosts and addresses give no tokens. */
  trusted?: TrustCheck;
  /**
   * Current time (ms since the epoch) stamped on the model and used to age pending samples
   * (`PENDING_LIMIT_MS`); default `Date.now()`.
   */
  now?: number;
}

export interface TrainReport {
  /** Both classes reached their minimum: a model was built and is now current. */
  ready: boolean;
  /** Generation made current (absent when not ready). */
  generation?: number;
  /** New samples read this run, by class. */
  ham: number;
  spam: number;
  /** Cumulative samples seen per class. */
  totalHam: number;
  totalSpam: number;
  replayed: number;
  epochs: number;
  /** Samples that could not be read or parsed (skipped). */
  skipped: number;
  /** Duplicates removed. */
  duplicates: number;
  /**
   * Sample ids whose meta was absent (being written by another process) and which a later run will
   * train once complete: the size of the pending list saved with this run's generation.
   */
  pending: number;
  /** Pending ids given up this run: still absent after `PENDING_LIMIT_MS`, or beyond `MAX_PENDING`. */
  abandoned: number;
  /**
   * An overlapping run of another process made a newer generation current before this one could be:
   * `generation` was written but is not current (the model it holds is reloaded instead).
   */
  superseded?: boolean;
  /** Wall time of the run, in milliseconds. */
  ms: number;
  /**
   * CPU time (user + system, milliseconds) of the child process that ran it, start-up included, when it ran in
   * one ({@link trainInWorker}): the calling process's own CPU figures do not count a child's.
   */
  processCpuMs?: number;
}

function shuffle<T>(a: T[], rnd: () => number): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
}

/** Algorithm R. */
export function offer(r: Reservoir, id: number, capacity: number, rnd: () => number): void {
  r.totalSeen++;
  if (r.buffer.length < capacity) r.buffer.push(id);
  else {
    const j = Math.floor(rnd() * r.totalSeen);
    if (j < capacity) r.buffer[j] = id;
  }
}

/** Epochs per chunk from the smaller class's cumulative count: ≤ 50 → 3, ≤ 200 → 2, else 1. */
export function epochsFor(m: number): number {
  return m <= 50 ? 3 : m <= 200 ? 2 : 1;
}

const nothingTrusted: TrustCheck = () => false;

/** The feature vector of a raw message as training sees it (train mode: no session). */
export async function sampleFeatures(raw: Uint8Array | string, settings: ClassifierSettings, trusted: TrustCheck = nothingTrusted, account?: number): Promise<Features> {
  const msg = await analyzeMessage(raw, undefined, { isTrustedDomain: (d) => trusted(d) === true });
  const m = messageContextOf(msg);
  const map = await buildTokens(m, trainFacts(m), trusted);
  return vectorize(map, settings.ftrl.numFeatures, { accountId: account, logScale: settings.featureLogScale, l2: settings.featureL2Normalize });
}

/** Runs one training run over `store`. Rejects when the store fails; the current model then stays in use. */
export async function trainRun(store: ClassifierStore, settings: ClassifierSettings = DEFAULT_SETTINGS, opts: TrainOptions = {}): Promise<TrainReport> {
  const t0 = performance.now();
  const rnd = prng(opts.seed ?? 1);
  const trusted = opts.trusted ?? nothingTrusted;
  const loaded = opts.retrain === true ? undefined : await store.loadTrainer();
  const state: TrainerState = loaded ?? {
    trainer: new FtrlTrainer(settings.ftrl),
    ham: { buffer: [], totalSeen: 0 },
    spam: { buffer: [], totalSeen: 0 },
    lastId: 0,
    pending: [],
  };
  // Hyper-parameters follow the configuration; the bucket count of a stored trainer does not change.
  state.trainer.params = { ...settings.ftrl, numFeatures: state.trainer.params.numFeatures };

  const report: TrainReport = { ready: false, ham: 0, spam: 0, totalHam: 0, totalSpam: 0, replayed: 0, epochs: 0, skipped: 0, duplicates: 0, pending: 0, abandoned: 0, ms: 0 };
  const now = opts.now ?? Date.now();
  const last = await store.lastSampleId();
  const list: SampleMeta[] = [];
  const seen = new Set<string>();
  const duplicates: number[] = [];
  const take = (s: SampleMeta): void => {
    const identity = `${s.hash}/${s.account ?? 'none'}`;
    if (seen.has(identity)) {
      duplicates.push(s.id);
      return;
    }
    seen.add(identity);
    const r = s.spam ? state.spam : state.ham;
    if (s.deleteAfterUse === true) r.totalSeen++;
    else offer(r, s.id, settings.reservoirCapacity, rnd);
    list.push(s);
    if (s.spam) report.spam++;
    else report.ham++;
  };
  // New ids first, newest first (a message learned again counts with its latest label), then the ids a
  // previous run found still being written (all older than the new ones). An id whose meta is absent
  // now is another process's sample being written: it becomes pending rather than skipped for ever.
  const pending: PendingSample[] = [];
  for (let id = last; id > state.lastId; id--) {
    const s = await store.sampleState(id);
    if (s === 'absent') pending.push({ id, since: now });
    else if (s === 'unreadable') report.skipped++;
    else if (s !== 'removed') take(s);
  }
  for (const p of [...(state.pending ?? [])].sort((a, b) => b.id - a.id)) {
    const s = await store.sampleState(p.id);
    if (s === 'removed') continue;
    if (s === 'unreadable') report.skipped++;
    else if (s !== 'absent') take(s);
    else if (now - p.since < PENDING_LIMIT_MS) pending.push(p);
    else report.abandoned++;
  }
  pending.sort((a, b) => b.since - a.since || b.id - a.id); // newest first, to keep the newest
  report.abandoned += Math.max(0, pending.length - MAX_PENDING);
  const kept = pending.slice(0, MAX_PENDING).sort((a, b) => a.id - b.id);
  state.pending = kept;
  report.pending = kept.length;
  report.totalHam = state.ham.totalSeen;
  report.totalSpam = state.spam.totalSeen;
  report.duplicates = duplicates.length;
  const cleanup = async (used: SampleMeta[]): Promise<void> => {
    for (const id of duplicates) await store.removeSample(id);
    for (const s of used) if (s.deleteAfterUse === true) await store.removeSample(s.id);
  };
  if (list.length === 0 || state.ham.totalSeen < settings.minHamSamples || state.spam.totalSeen < settings.minSpamSamples) {
    // Not ready: nothing is saved, so the counts are recomputed from the samples next time.
    await cleanup([]); // deleteAfterUse samples wait for a run that uses them (Stalwart deletes them here)
    report.ms = performance.now() - t0;
    return report;
  }

  // Class balancing with replays of the smaller class (drawn without replacement).
  const work: { id: number; spam: boolean; account?: number; replay: boolean }[] = list.map((s) => ({ id: s.id, spam: s.spam, account: s.account, replay: false }));
  const diff = report.spam - report.ham;
  if (diff !== 0) {
    const pool = [...(diff > 0 ? state.ham : state.spam).buffer];
    shuffle(pool, rnd);
    for (const id of pool.slice(0, Math.abs(diff))) work.push({ id, spam: diff < 0, replay: true });
  }
  shuffle(work, rnd);
  const epochs = epochsFor(Math.min(state.ham.totalSeen, state.spam.totalSeen));
  report.epochs = epochs;

  // A replayed sample of this run is featurised once.
  const featureMemo = new Map<number, Features>();
  for (let c = 0; c < work.length; c += 128) {
    const chunk: { f: Features; spam: boolean }[] = [];
    for (const w of work.slice(c, c + 128)) {
      const known = featureMemo.get(w.id);
      if (known !== undefined) {
        chunk.push({ f: known, spam: w.spam });
        if (w.replay) report.replayed++;
        continue;
      }
      const s = await store.getSample(w.id);
      const r = w.spam ? state.spam : state.ham;
      if (s === undefined) {
        report.skipped++;
        if (w.replay) r.buffer = r.buffer.filter((x) => x !== w.id);
        continue;
      }
      try {
        const f = await sampleFeatures(s.raw, settings, trusted, s.account);
        featureMemo.set(w.id, f);
        chunk.push({ f, spam: s.spam });
        if (w.replay) report.replayed++;
      } catch {
        report.skipped++;
        if (w.replay) r.buffer = r.buffer.filter((x) => x !== w.id);
      }
    }
    for (let e = 0; e < epochs; e++) {
      const order = chunk.map((_, i) => i);
      shuffle(order, prng(42));
      for (const i of order) state.trainer.step(chunk[i]!.f, chunk[i]!.spam);
    }
  }
  // Every id up to `last` is now trained, removed or pending (an absent id is in `state.pending`).
  state.lastId = Math.max(state.lastId, last);
  const model = state.trainer.model(now);
  const commit = await store.commitGeneration(state, model);
  report.generation = commit.generation;
  report.ready = true;
  if (commit.current > commit.generation) {
    // An overlapping run's newer generation is current; it may not have trained this run's samples, so
    // its deleteAfterUse samples stay for a later run (removing them here could lose them).
    report.superseded = true;
    await cleanup([]);
  } else await cleanup(list);
  report.ms = performance.now() - t0;
  return report;
}
