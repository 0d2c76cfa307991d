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
 * - `classifier:gen:<n>:trainer`, `classifier:gen:<n>:model`: trainer state and model of generation n
 *   (deflated binary, base64);
 * - `classifier:current`: the generation in use. A training run writes its generation first and flips
 *   this key last, so readers switch to a complete model at once, and a run that fails part way leaves
 *   the previous model in use.
 */
import { createHash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { LookupStore } from '../lookup/types.js';
import { ClassifierModel, FtrlTrainer, type FtrlParameters } from './model.js';

/** Bytes of a message kept as a sample at most: a longer message is stored (and trained) truncated. */
export const MAX_SAMPLE_BYTES = 8 * 1024 * 1024;
/** Old generations are overwritten with an empty value this many generations later. */
const KEEP_GENERATIONS = 2;

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
  /** Samples with ids up to this one are trained. */
  lastId: number;
}

export function sampleHash(raw: Uint8Array): string {
  return createHash('sha256').update(raw).digest('hex');
}

function pack(parts: ArrayBufferView[], header: object): string {
  const h = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(h.length);
  return deflateRawSync(Buffer.concat([len, h, ...parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))])).toString('base64');
}

function unpack(s: string): { header: Record<string, unknown>; body: Buffer } {
  const b = inflateRawSync(Buffer.from(s, 'base64'));
  const n = b.readUInt32BE(0);
  return { header: JSON.parse(b.subarray(4, 4 + n).toString()) as Record<string, unknown>, body: b.subarray(4 + n) };
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

/** The classifier's records in one lookup store. Every method may reject when the store fails. */
export class ClassifierStore {
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
    return id;
  }

  /** A sample's description without its message (undefined when removed or never completed). */
  async getMeta(id: number): Promise<SampleMeta | undefined> {
    const v = await this.store.keyGet(`classifier:meta:${id}`);
    if (typeof v !== 'string' || v === '') return undefined;
    return { ...(JSON.parse(v) as Omit<SampleMeta, 'id'>), id };
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

  /** The generation in use (0: no model). */
  async currentGeneration(): Promise<number> {
    const v = await this.store.keyGet('classifier:current');
    return v === null || v === '' ? 0 : Number(v);
  }

  async loadModel(gen?: number): Promise<ClassifierModel | undefined> {
    const g = gen ?? (await this.currentGeneration());
    if (g === 0) return undefined;
    const v = await this.store.keyGet(`classifier:gen:${g}:model`);
    if (typeof v !== 'string' || v === '') return undefined;
    const { header, body } = unpack(v);
    const bits = Number(header.bits);
    const count = Number(header.count);
    const idx = copyOut(Uint32Array, body, 0, count * 4);
    const vals = copyOut(Float32Array, body, count * 4, count * 4);
    const w = new Float32Array(1 << bits);
    for (let k = 0; k < count; k++) w[idx[k]!] = vals[k]!;
    return new ClassifierModel(bits, w, Number(header.bias), Number(header.trainedAt));
  }

  async loadTrainer(gen?: number): Promise<TrainerState | undefined> {
    const g = gen ?? (await this.currentGeneration());
    if (g === 0) return undefined;
    const v = await this.store.keyGet(`classifier:gen:${g}:trainer`);
    if (typeof v !== 'string' || v === '') return undefined;
    const { header, body } = unpack(v);
    const params = header.params as FtrlParameters;
    const count = Number(header.count);
    const idx = copyOut(Uint32Array, body, 0, count * 4);
    const zs = copyOut(Float32Array, body, count * 4, count * 4);
    const ns = copyOut(Float64Array, body, count * 8, count * 8);
    const trainer = new FtrlTrainer(params);
    for (let k = 0; k < count; k++) {
      trainer.z[idx[k]!] = zs[k]!;
      trainer.n[idx[k]!] = ns[k]!;
    }
    trainer.zb = Number(header.zb);
    trainer.nb = Number(header.nb);
    return { trainer, ham: header.ham as Reservoir, spam: header.spam as Reservoir, lastId: Number(header.lastId) };
  }

  /**
   * Saves trainer state and model as a new generation, then makes it current (the atomic switch).
   * Returns the generation.
   */
  async saveGeneration(state: TrainerState, model: ClassifierModel): Promise<number> {
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
    });
    const w = sparse(model.weights, (i) => model.weights[i] !== 0);
    const modelBlob = pack([w.idx, w.f32!], { bits: model.bits, count: w.idx.length, bias: model.bias, trainedAt: model.trainedAt });
    await this.store.keySet(`classifier:gen:${gen}:trainer`, trainer);
    await this.store.keySet(`classifier:gen:${gen}:model`, modelBlob);
    await this.store.keySet('classifier:current', String(gen));
    const old = gen - KEEP_GENERATIONS;
    if (old > 0) {
      // Best effort: a reader still loading the old generation has had a full run's time to finish.
      await this.store.keySet(`classifier:gen:${old}:trainer`, '').catch(() => {});
      await this.store.keySet(`classifier:gen:${old}:model`, '').catch(() => {});
    }
    return gen;
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
