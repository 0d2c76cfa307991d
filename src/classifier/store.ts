/**
 * Where the classifier keeps its training samples, its trainer state and its model: any lookup store
 * (SQLite by default, PostgreSQL, MySQL, Redis; `createLookupStore`), so that several spamrule processes
 * share one model (docs/classifier.md "Where the model lives"). Only `key_get`, `key_set` and
 * `counter_incr` are used, under keys prefixed `classifier:`:
 *
 * - `classifier:seq` (counter): the last sample id handed out (ids increase with creation time);
 * - `classifier:sample:<id>`: one sample's message, base64-encoded;
 * - `classifier:meta:<id>`: its JSON `{spam, account?, hash, deleteAfterUse?, at}`, written after the message
 *   (the acknowledgement); a removed sample has an empty value;
 * - `classifier:learned:<hash>[:<account>]`: the id of the latest sample of that message (`learnedSample`),
 *   written after its meta; samples stored before this key existed have none;
 * - `classifier:gen:<n>:trainer`, `classifier:gen:<n>:model`: trainer state and model of generation n
 *   (deflated binary with a SHA-256 trailer, base64; record.ts: a damaged one is refused at load);
 * - `classifier:current`: the generation in use. A training run writes its generation first and flips
 *   this key last, so readers switch to a complete model at once, and a run that fails part way leaves
 *   the previous model in use. Overlapping runs never move it back to an older complete generation
 *   once they have finished (see `commitGeneration`).
 *
 * Several processes may add samples and train at once. A sample id is handed out before its message and
 * meta are written, so a training run can meet an id whose meta is absent: the sample is being written
 * (or its writer crashed). The run keeps such ids as *pending* in its trainer state and trains them on a
 * later run once complete (`TrainerState.pending`, src/classifier/train.ts).
 */
import { createHash } from 'node:crypto';
import type { LookupStore } from '../lookup/types.js';
import { ClassifierModel, FtrlTrainer, type FtrlParameters } from './model.js';
import { DamagedRecordError, finiteField, intField, MAX_BITS, pack, reservoirField, unpack } from './record.js';

export { DamagedRecordError } from './record.js';

/** Bytes of a message kept as a sample at most: a longer message is stored (and trained) truncated. */
export const MAX_SAMPLE_BYTES = 8 * 1024 * 1024;
/** Old generations are overwritten with an empty value this many generations later. */
const KEEP_GENERATIONS = 2;

/**
 * What a store holds for a sample id: its meta (complete), `'removed'` (`removeSample`: an empty meta,
 * never to be trained), `'absent'` (no meta key: being written, or its writer died before writing it) or
 * `'unreadable'` (a meta that is not a sample description).
 */
export type SampleState = SampleMeta | 'removed' | 'absent' | 'unreadable';

/** A stored sample description, or undefined when the text is not one (damaged or foreign data). */
function parseMeta(v: string, id: number): SampleMeta | undefined {
  let m: unknown;
  try {
    m = JSON.parse(v);
  } catch {
    return undefined;
  }
  if (m === null || typeof m !== 'object' || typeof (m as { spam?: unknown }).spam !== 'boolean' || typeof (m as { hash?: unknown }).hash !== 'string') return undefined;
  return { ...(m as Omit<SampleMeta, 'id'>), id };
}

export interface SampleMeta {
  id: number;
  spam: boolean;
  /** Personalised sample of this account (features salted with it); absent = global. */
  account?: number;
  /** SHA-256 (hex) of the raw message: the sample's identity with `account`. */
  hash: string;
  /** Removed after the next training run that uses it. */
  deleteAfterUse?: boolean;
  /** Creation time, ms since the epoch. */
  at: number;
}

export interface Sample extends SampleMeta {
  raw: Buffer;
}

/** Per-class replay reservoir (Algorithm R) of sample ids. */
export interface Reservoir {
  buffer: number[];
  totalSeen: number;
}

/** What a training run carries over to the next. */
export interface TrainerState {
  trainer: FtrlTrainer;
  ham: Reservoir;
  spam: Reservoir;
  /**
   * Samples with ids up to this one are trained, removed, or listed in `pending`.
   */
  lastId: number;
  /**
   * Ids at or below `lastId` whose meta was absent when a run read them (a sample still being written),
   * with `since`, the time (ms since the epoch, the run's clock) it was first seen absent; ascending by
   * id. Each run re-reads them first: trained once complete, dropped once removed or older than
   * `PENDING_LIMIT_MS`; at most `MAX_PENDING` (the oldest dropped). Empty for a trainer stored before
   * this list existed (and when absent here).
   */
  pending?: PendingSample[];
}

/** A sample id a training run met before its meta was written (`TrainerState.pending`). */
export interface PendingSample {
  id: number;
  /** When a run first found its meta absent, ms since the epoch. */
  since: number;
}

/** Outcome of `commitGeneration`. */
export interface CommitResult {
  /** The generation written. */
  generation: number;
  /**
   * The generation `classifier:current` named at the end (after the re-check): `generation`, or a newer
   * one of an overlapping run (this one is then superseded: `current` may have named it for a moment).
   */
  current: number;
}

function learnedKey(hash: string, account: number | undefined): string {
  return account === undefined ? `classifier:learned:${hash}` : `classifier:learned:${hash}:${account}`;
}

export function sampleHash(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex');
}

/** Sparse (index, value) pairs of a float array: most weights are zero. */
function sparse(a: Float32Array | Float64Array, keep: (i: number) => boolean): { idx: Uint32Array; f32?: Float32Array; f64?: Float64Array } {
  const ids: number[] = [];
  for (let i = 0; i < a.length; i++) if (keep(i)) ids.push(i);
  const idx = Uint32Array.from(ids);
  if (a instanceof Float32Array) return { idx, f32: Float32Array.from(ids, (i) => a[i]!) };
  return { idx, f64: Float64Array.from(ids, (i) => a[i]!) };
}

function copyOut<T extends Float32Array | Float64Array | Uint32Array>(ctor: new (b: ArrayBuffer) => T, body: Buffer, offset: number, bytes: number): T {
  const ab = new ArrayBuffer(bytes);
  new Uint8Array(ab).set(body.subarray(offset, offset + bytes));
  return new ctor(ab);
}

/**
 * The classifier's records in one lookup store. Every method may reject when the store fails. From
 * outside the package it is built only to give a `SpamClassifier` a store one already has
 * (`new SpamClassifier(new ClassifierStore(store))`; docs/classifier.md); the methods are the
 * classifier's own.
 */
export class ClassifierStore {
  /** `store`: any lookup store (SQLite, PostgreSQL, MySQL, Redis, a `MemoryStore`); the classifier that uses this closes it. */
  constructor(readonly store: LookupStore) {}

  /** Stores a sample; once this resolves the sample is acknowledged (durable in the store). Returns its id. */
  async addSample(raw: Uint8Array, spam: boolean, opts: { account?: number; deleteAfterUse?: boolean } = {}): Promise<number> {
    const body = raw.byteLength > MAX_SAMPLE_BYTES ? raw.subarray(0, MAX_SAMPLE_BYTES) : raw;
    const id = await this.store.counterIncr('classifier:seq', 1);
    const meta: Omit<SampleMeta, 'id'> = { spam, hash: sampleHash(raw), at: Date.now() };
    if (opts.account !== undefined) meta.account = opts.account;
    if (opts.deleteAfterUse === true) meta.deleteAfterUse = true;
    await this.store.keySet(`classifier:sample:${id}`, Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'));
    await this.store.keySet(`classifier:meta:${id}`, JSON.stringify(meta));
    await this.store.keySet(learnedKey(meta.hash, opts.account), String(id));
    return id;
  }

  /**
   * The latest stored sample of this message (`sampleHash`) for `account` (absent: global), if it is still
   * there: what the protocols' learners ask before storing a message again (SpamAssassin's and rspamd's
   * "already learned"). Undefined for a message never learned, removed, or stored before this index existed.
   */
  async learnedSample(hash: string, account?: number): Promise<SampleMeta | undefined> {
    const v = await this.store.keyGet(learnedKey(hash, account));
    const id = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : NaN;
    if (!Number.isSafeInteger(id) || id <= 0) return undefined;
    const m = await this.getMeta(id);
    return m !== undefined && m.hash === hash && m.account === account ? m : undefined;
  }

  /** A sample's description without its message (undefined when removed, never completed or unreadable). */
  async getMeta(id: number): Promise<SampleMeta | undefined> {
    const s = await this.sampleState(id);
    return typeof s === 'object' ? s : undefined;
  }

  /**
   * Like `getMeta`, but tells a removed sample from one whose meta is not (yet) written, and from one
   * whose meta is not a sample description (`'unreadable'`: a damaged record, which training skips
   * and counts rather than failing on for ever).
   */
  async sampleState(id: number): Promise<SampleState> {
    const v = await this.store.keyGet(`classifier:meta:${id}`);
    if (v === null) return 'absent';
    if (typeof v !== 'string' || v === '') return 'removed';
    return parseMeta(v, id) ?? 'unreadable';
  }

  /** The highest sample id handed out so far. */
  async lastSampleId(): Promise<number> {
    return this.store.counterGet('classifier:seq');
  }

  async getSample(id: number): Promise<Sample | undefined> {
    const meta = await this.getMeta(id);
    if (meta === undefined) return undefined;
    const v = await this.store.keyGet(`classifier:sample:${id}`);
    if (typeof v !== 'string') return undefined;
    return { ...meta, raw: Buffer.from(v, 'base64') };
  }

  async removeSample(id: number): Promise<void> {
    await this.store.keySet(`classifier:meta:${id}`, '');
    await this.store.keySet(`classifier:sample:${id}`, '');
  }

  /**
   * Removes every stored sample of these messages (given by `sampleHash`: the same bytes, any class and
   * account), as `sa-learn --forget` and spamd's `TELL` with `Remove: local` do. Returns how many were
   * removed. The store has no index by hash, so this reads every sample's meta (`concurrency` reads at a
   * time): about 4 µs a sample on a SQLite file (0.4 s for 100,000 samples), a round trip each on a
   * server store. FTRL cannot subtract a sample, so the caller retrains (`train({ retrain: true })`) for
   * the model to forget them too.
   */
  async removeMessages(hashes: ReadonlySet<string>, concurrency = 16): Promise<number> {
    const last = hashes.size === 0 ? 0 : await this.lastSampleId();
    let next = 1;
    let removed = 0;
    const worker = async (): Promise<void> => {
      for (let id = next++; id <= last; id = next++) {
        const m = await this.getMeta(id);
        if (m !== undefined && hashes.has(m.hash)) {
          await this.removeSample(id);
          removed++;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, last)) }, worker));
    return removed;
  }

  /** The generation in use (0: no model). @throws Error when the stored value is not a generation number. */
  async currentGeneration(): Promise<number> {
    const v = await this.store.keyGet('classifier:current');
    if (v === null || v === '') return 0;
    const g = Number(v);
    // A damaged or foreign value would otherwise read as "no model" without a word.
    if (!Number.isSafeInteger(g) || g < 0) throw new Error(`classifier:current holds ${JSON.stringify(String(v).slice(0, 40))}, not a generation number: the model store is damaged`);
    return g;
  }

  /**
   * The model of generation `gen`, or of the current one; undefined when there is none (or it was blanked).
   * @throws DamagedRecordError when the stored record is damaged (see record.ts); rejects when the store fails.
   */
  async loadModel(gen?: number): Promise<ClassifierModel | undefined> {
    const g = gen ?? (await this.currentGeneration());
    if (g === 0) return undefined;
    const key = `classifier:gen:${g}:model`;
    const v = await this.store.keyGet(key);
    if (typeof v !== 'string' || v === '') return undefined;
    const { header, body } = unpack(key, v);
    const bits = intField(key, header, 'bits', 1, MAX_BITS);
    const count = intField(key, header, 'count', 0, 2 ** bits);
    if (body.length !== count * 8) throw new DamagedRecordError(key, `${body.length} bytes of weights for ${count}`);
    const bias = finiteField(key, header, 'bias');
    const trainedAt = finiteField(key, header, 'trainedAt');
    const idx = copyOut(Uint32Array, body, 0, count * 4);
    const vals = copyOut(Float32Array, body, count * 4, count * 4);
    const w = new Float32Array(2 ** bits);
    for (let k = 0; k < count; k++) {
      const i = idx[k]!;
      const x = vals[k]!;
      // A NaN or infinite weight would make every prediction that reads it NaN (PROB_SPAM_UNCERTAIN).
      if (i >= w.length || !Number.isFinite(x)) throw new DamagedRecordError(key, `weight ${k}: index ${i}, value ${x}`);
      w[i] = x;
    }
    return new ClassifierModel(bits, w, bias, trainedAt);
  }

  /**
   * The trainer state of generation `gen`, or of the current one. Without `gen`, a blank trainer (the
   * generation was blanked while `current` named it for a moment, `commitGeneration`) is read again from
   * the generation `current` names next, if that changed.
   * @throws DamagedRecordError when the stored record is damaged (see record.ts); rejects when the store fails.
   */
  async loadTrainer(gen?: number): Promise<TrainerState | undefined> {
    if (gen !== undefined) return this.loadTrainerOf(gen);
    let g = await this.currentGeneration();
    for (let tries = 0; ; tries++) {
      const t = await this.loadTrainerOf(g);
      if (t !== undefined || tries >= 3) return t;
      const again = await this.currentGeneration();
      if (again === g) return undefined;
      g = again;
    }
  }

  private async loadTrainerOf(g: number): Promise<TrainerState | undefined> {
    if (g === 0) return undefined;
    const key = `classifier:gen:${g}:trainer`;
    const v = await this.store.keyGet(key);
    if (typeof v !== 'string' || v === '') return undefined;
    const { header, body } = unpack(key, v);
    const p = header.params as Record<string, unknown> | null;
    if (p === null || typeof p !== 'object') throw new DamagedRecordError(key, 'params is not an object');
    const params: FtrlParameters = {
      numFeatures: intField(key, p, 'numFeatures', 1, MAX_BITS),
      alpha: finiteField(key, p, 'alpha'),
      beta: finiteField(key, p, 'beta'),
      l1Ratio: finiteField(key, p, 'l1Ratio'),
      l2Ratio: finiteField(key, p, 'l2Ratio'),
    };
    const size = 2 ** params.numFeatures;
    const count = intField(key, header, 'count', 0, size);
    if (body.length !== count * 16) throw new DamagedRecordError(key, `${body.length} bytes of state for ${count} coordinates`);
    const zb = finiteField(key, header, 'zb');
    const nb = finiteField(key, header, 'nb', 0);
    const lastId = intField(key, header, 'lastId', 0, Number.MAX_SAFE_INTEGER);
    const ham = reservoirField(key, header, 'ham');
    const spam = reservoirField(key, header, 'spam');
    const idx = copyOut(Uint32Array, body, 0, count * 4);
    const zs = copyOut(Float32Array, body, count * 4, count * 4);
    const ns = copyOut(Float64Array, body, count * 8, count * 8);
    const trainer = new FtrlTrainer(params);
    for (let k = 0; k < count; k++) {
      const i = idx[k]!;
      // Non-finite state would train NaN weights into every later generation.
      if (i >= size || !Number.isFinite(zs[k]!) || !(ns[k]! >= 0 && ns[k]! < Infinity)) {
        throw new DamagedRecordError(key, `coordinate ${k}: index ${i}, z ${zs[k]}, n ${ns[k]}`);
      }
      trainer.z[i] = zs[k]!;
      trainer.n[i] = ns[k]!;
    }
    trainer.zb = zb;
    trainer.nb = nb;
    // `pending`: [[id, since], ...]; absent in trainers stored by earlier versions.
    const raw = header.pending;
    if (raw !== undefined && !(Array.isArray(raw) && raw.every((e) => Array.isArray(e) && Number.isSafeInteger(e[0]) && Number.isFinite(e[1])))) {
      throw new DamagedRecordError(key, 'pending is not a list of [id, since]');
    }
    const pending = ((raw ?? []) as [number, number][]).map(([id, since]) => ({ id, since }));
    return { trainer, ham, spam, lastId, pending };
  }

  /**
   * Saves trainer state and model as a new generation, then makes it current unless a newer complete
   * generation already is (`commitGeneration`). Returns the generation written.
   */
  async saveGeneration(state: TrainerState, model: ClassifierModel): Promise<number> {
    return (await this.commitGeneration(state, model)).generation;
  }

  /**
   * Saves trainer state and model as a new generation n (`classifier:gen` counter), then makes
   * `classifier:current` the highest complete generation it can see, which is n unless an overlapping run
   * has completed a newer one, and re-checks after every write.
   *
   * Overlapping runs (several processes training into one store). The LookupStore interface has no
   * compare-and-set, so `current` is kept from moving backwards this way:
   * - a generation is *complete* once its model key holds a non-empty value; the numbers of complete
   *   generations newer than n are at most `classifier:gen`, and are read back before setting;
   * - before setting, the run reads `current` and the models of generations above max(n, current); it
   *   sets the highest complete one (never below `current` as read);
   * - after each write it reads again, and writes again if it now sees a newer complete generation.
   * Whoever writes `current` last re-checks after that write and sees every generation completed before
   * it, so once all overlapping runs have finished `current` names the highest complete generation.
   * What remains: between one run's read and its write, `current` can step back for a moment (run A reads
   * 4, run B sets 6 and re-checks, A sets 5, A's re-check restores 6); and a run that dies (or whose store
   * fails) right after such a write leaves `current` on an older, complete, self-consistent generation
   * until the next run. Both are harmless: a reader (`SpamClassifier.reload`) only switches to a higher
   * generation than the one it holds, and the next training run continues from the generation `current`
   * names (each generation's trainer state and model are consistent, and its `lastId`/`pending` say which
   * samples it has trained, so nothing is trained twice or skipped in that lineage). Such a momentary
   * write can even name a generation the cleanup below has just blanked (three runs: C blanks A's
   * generation while A is about to set it); a reader then finds no model and keeps its own, and
   * `loadTrainer` reads `current` again. A run superseded this way keeps its deleteAfterUse samples
   * (`trainRun`); but a run that was current for a while and then superseded by a newer generation that
   * read fewer samples has removed its deleteAfterUse samples already: those are lost to training (only
   * with overlapping runs and deleteAfterUse samples).
   *
   * Why not a lease (a `classifier:lease` key with a TTL) to serialise runs instead: without an atomic
   * set-if-absent, two processes can both find the lease free and both take it, and a holder that stalls
   * past the TTL (a long run, a 50 MB sample, a slow store) overlaps the next one anyway; correctness
   * would still need all of the above, and a crashed holder would hold training up for the TTL. Overlap
   * costs only duplicated work here, so there is no lease.
   *
   * Cleanup: generation n − KEEP_GENERATIONS is blanked only when it is below the current generation read
   * after the re-check, so no generation that is current or newer than current is blanked (a third
   * overlapping run can no longer blank the generation another run has just made current).
   */
  async commitGeneration(state: TrainerState, model: ClassifierModel): Promise<CommitResult> {
    const gen = await this.store.counterIncr('classifier:gen', 1);
    const t = state.trainer;
    // The 12 bytes of z and n per touched coordinate: n is 0 exactly where no gradient arrived.
    const touched = sparse(t.n, (i) => t.n[i] !== 0);
    const idx = touched.idx;
    const zs = Float32Array.from(idx, (i) => t.z[i]!);
    const ns = Float64Array.from(idx, (i) => t.n[i]!);
    // n (8-byte values) goes after idx and z, so it starts at count*8: aligned.
    const trainer = pack([idx, zs, ns], {
      params: t.params, count: idx.length, zb: t.zb, nb: t.nb, ham: state.ham, spam: state.spam, lastId: state.lastId,
      pending: (state.pending ?? []).map((p) => [p.id, p.since]),
    });
    const w = sparse(model.weights, (i) => model.weights[i] !== 0);
    const modelBlob = pack([w.idx, w.f32!], { bits: model.bits, count: w.idx.length, bias: model.bias, trainedAt: model.trainedAt });
    await this.store.keySet(`classifier:gen:${gen}:trainer`, trainer);
    await this.store.keySet(`classifier:gen:${gen}:model`, modelBlob);

    // Make the highest complete generation current, re-checking after each write (see above).
    let target = gen;
    let current = await this.currentGeneration();
    for (;;) {
      const best = Math.max(target, await this.newestCompleteAbove(Math.max(target, current)));
      if (best <= current) break; // current is already at least as new: never move it back
      await this.store.keySet('classifier:current', String(best));
      target = best;
      current = await this.currentGeneration();
    }

    // A superseded generation is blanked like any other, by the run of generation gen + KEEP_GENERATIONS.
    const old = gen - KEEP_GENERATIONS;
    // Best effort: a reader still loading the old generation has had a full run's time to finish.
    if (old > 0 && old < current) await this.blankGeneration(old);
    return { generation: gen, current };
  }

  /** The highest complete generation above `floor` (0 when none); reads models only above `floor`. */
  private async newestCompleteAbove(floor: number): Promise<number> {
    const handedOut = await this.store.counterGet('classifier:gen');
    for (let g = handedOut; g > floor; g--) {
      const v = await this.store.keyGet(`classifier:gen:${g}:model`);
      if (typeof v === 'string' && v !== '') return g;
    }
    return 0;
  }

  private async blankGeneration(g: number): Promise<void> {
    await this.store.keySet(`classifier:gen:${g}:trainer`, '').catch(() => {});
    await this.store.keySet(`classifier:gen:${g}:model`, '').catch(() => {});
  }

  /** Forgets the model and the trainer (Stalwart's Reset); samples stay unless `samples` is true. */
  async reset(samples = false): Promise<void> {
    await this.store.keySet('classifier:current', '');
    if (samples) {
      const last = await this.lastSampleId();
      for (let id = 1; id <= last; id++) await this.removeSample(id);
    }
  }
}
