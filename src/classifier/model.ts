/**
 * Stalwart's FH classifier (docs/classifier.md "Model"): hashed features, FTRL-Proximal logistic
 * regression (McMahan et al., "Ad Click Prediction: a View from the Trenches", 2013), per-coordinate
 * state z (single precision) and n (double), a bias without L1.
 */
import { createRequire } from 'node:module';
import type { xxh3 as Xxh3 } from '@node-rs/xxhash';
import { xxh3Compact, xxh3CompactString } from './xxh3.js';
import { hashInput, internedCount, keepHash, keptHash, onInternReset, tokenBytes, tokKey, type Tok, type TokCounter, type TokenMap } from './tokens.js';
import { detach } from '../util/index.js';

/** Stalwart's `FtrlParameters` (defaults: 2^20 weights, α 2, β 1, λ₁ 0.001, λ₂ 0.0001). */
export interface FtrlParameters {
  /** log2 of the number of weights, 16–28. */
  numFeatures: number;
  alpha: number;
  beta: number;
  l1Ratio: number;
  l2Ratio: number;
}

export const DEFAULT_FTRL: FtrlParameters = { numFeatures: 20, alpha: 2, beta: 1, l1Ratio: 0.001, l2Ratio: 0.0001 };

/** A sparse feature vector: weight indexes and values (after log scaling, signs and L2 normalisation). */
export interface Features {
  readonly idx: Uint32Array;
  readonly val: Float64Array;
}

const SIGN_BIT = 1n << 63n;
/**
 * token (or token + account) → its hash's low 32 bits and sign (as `low * 2 + negative`), so a token
 * seen in many messages is hashed once and the hot path does no BigInt arithmetic. Indexes use at most
 * 28 bits, so the low 32 bits hold every index.
 */
const hashCache = new Map<string, number>();
let xxh3Module: typeof Xxh3 | undefined;
/** @node-rs/xxhash (a native addon) is loaded on the first hash, not when spamrule is imported. */
export function xxh3(): typeof Xxh3 {
  return (xxh3Module ??= (createRequire(import.meta.url)('@node-rs/xxhash') as { xxh3: typeof Xxh3 }).xxh3);
}
const HASH_CACHE_MAX = 500_000;

/** XXH3-64 (seed 0) of the token's bytes, then the salt's when given, as low 32 bits × 2 + sign. */
function hashToken(token: string, salt: Buffer | undefined): number {
  const bytes = salt === undefined ? hashInput(token) : Buffer.concat([tokenBytes(token), salt]);
  // Tokens are short: XXH3 in JS answers them without the addon call and its BigInt (see xxh3.ts for the costs).
  const compact = typeof bytes === 'string' ? xxh3CompactString(bytes) : xxh3Compact(bytes, bytes.length);
  if (compact !== undefined) return compact;
  // xxh64 answers an unsigned 64-bit BigInt: bit 63 set ⟺ ≥ 2^63.
  const full = xxh3().xxh64(bytes, 0n);
  return Number(BigInt.asUintN(32, full)) * 2 + (full >= SIGN_BIT ? 1 : 0);
}

/** The cached hash of `key` ({@link hashToken} of `token` and `salt`). */
function hash(key: string, token: string, salt: Buffer | undefined): number {
  let h = hashCache.get(key);
  if (h === undefined) {
    h = hashToken(token, salt);
    if (hashCache.size >= HASH_CACHE_MAX) hashCache.clear();
    hashCache.set(detach(key), h);
  }
  return h;
}

/** Vectorize options: account id for the salted features, ln(1 + count) scaling, L2 normalisation. */
export interface VectorizeOptions {
  accountId?: number;
  logScale?: boolean;
  l2?: boolean;
}

/**
 * Token map → feature vector: ln(1 + count) when `logScale`, XXH3-64 (seed 0) of the 2-byte kind and the
 * value, index = low `bits` bits, sign = bit 63; with `accountId` each token also yields a feature salted
 * with the 4-byte big-endian account id; then L2 normalisation when `l2`.
 */
export function vectorize(map: TokenMap, bits: number, opts: VectorizeOptions = {}): Features {
  const keys = [...map.keys()];
  const counts = [...map.values()];
  return features(keys.length, (i) => keys[i]!, (i) => counts[i]!, (i) => hash(keys[i]!, keys[i]!, undefined), bits, opts);
}

/**
 * A token's unsalted hash in the compact form an interned token keeps: the low {@link TOK_HASH_BITS}
 * bits × 2 + sign, a small integer (a V8 Smi: no boxed number per token); indexes of up to that many
 * bits read it as they read the full form.
 */
const TOK_HASH_BITS = 29;
const TOK_HASH_MOD = 2 ** TOK_HASH_BITS;

function tokHash(tok: Tok): number {
  let h = keptHash(tok);
  if (h < 0) {
    const full = hashToken(tokKey(tok), undefined);
    h = (Math.floor(full / 2) % TOK_HASH_MOD) * 2 + (full % 2);
    keepHash(tok, h);
  }
  return h;
}

/**
 * {@link vectorize} of interned token counts (the same features in the same order): an unsalted hash is
 * computed once per interned token and kept on it, so a known token costs no hashing and no lookup.
 */
export function vectorizeCounts(counts: TokCounter, bits: number, opts: VectorizeOptions = {}): Features {
  const { toks, counts: ns } = counts;
  const key = (i: number): string => tokKey(toks[i]!);
  const unsalted = bits <= TOK_HASH_BITS ? (i: number): number => tokHash(toks[i]!) : (i: number): number => hash(key(i), key(i), undefined);
  return features(toks.length, key, (i) => ns[i]!, unsalted, bits, opts);
}

/** `Math.log1p(c)` of the small counts most tokens have (the same values, read from a table). */
const LOG1P = Float64Array.from({ length: 256 }, (_, c) => Math.log1p(c));

/** Entries of the reused buffers of {@link predictCounts}; a message with more gets buffers of its own. */
const SCRATCH_MAX = 65_536;
let scratchW = new Float32Array(1024);
let scratchVal = new Float64Array(1024);

/**
 * Per model, each interned token's signed weight (its weight, negated when its hash's sign bit is set;
 * NaN until first read), indexed by token id. A token seen in an earlier message then costs one read
 * from an array in token order (frequent tokens have small ids, so they share a few pages) instead of
 * two random reads, its kept hash and the weight in the model's 2^bits array: most of prediction's time
 * on a message, after the rest of the analysis has evicted both from the CPU caches and the TLB.
 * Dropped with its model; emptied when the intern table restarts (ids then name other tokens).
 */
const tokenWeights = new WeakMap<ClassifierModel, { epoch: number; w: Float32Array }>();
/** Intern table restarts so far (kept weights of an earlier table name other tokens). */
let internEpoch = 0;
onInternReset(() => {
  internEpoch++;
});

/** The model's kept weights, sized for every token interned so far. */
function tokenWeightsOf(model: ClassifierModel): Float32Array {
  const need = internedCount();
  const kept = tokenWeights.get(model);
  if (kept !== undefined && kept.epoch === internEpoch && need <= kept.w.length) return kept.w;
  const w = new Float32Array(Math.max(4096, 2 * need)).fill(NaN);
  if (kept !== undefined && kept.epoch === internEpoch) w.set(kept.w);
  tokenWeights.set(model, { epoch: internEpoch, w });
  return w;
}

/**
 * `model.predict(vectorizeCounts(counts, model.bits, opts))`, the same number to the last bit: the same
 * products in the same order (a weight negated times a value is the weight times the negated value,
 * exactly), from each token's signed weight kept per model (see {@link tokenWeights}), and without two
 * typed arrays per prediction: the features go to buffers that are reused (the classify path predicts
 * once per message or recipient).
 */
export function predictCounts(model: ClassifierModel, counts: TokCounter, opts: VectorizeOptions = {}): number {
  const { accountId, logScale = true, l2 = true } = opts;
  if (accountId !== undefined || model.bits > TOK_HASH_BITS) return model.predict(vectorizeCounts(counts, model.bits, opts));
  const { toks, counts: ns } = counts;
  const n = toks.length;
  let sw = scratchW;
  let val = scratchVal;
  if (n > sw.length) {
    const size = Math.max(n, 2 * sw.length);
    sw = new Float32Array(size);
    val = new Float64Array(size);
    if (size <= SCRATCH_MAX) {
      scratchW = sw;
      scratchVal = val;
    }
  }
  const kept = tokenWeightsOf(model);
  const weights = model.weights;
  const mask = 2 ** model.bits - 1;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const tok = toks[i]!;
    let w = kept[tok]!;
    if (w !== w) {
      const h = tokHash(tok);
      w = weights[Math.floor(h / 2) & mask]!;
      if (h % 2 === 1) w = -w;
      kept[tok] = w;
    }
    sw[i] = w;
    const c = ns[i]!;
    const v = logScale ? (c < LOG1P.length ? LOG1P[c]! : Math.log1p(c)) : c;
    val[i] = v;
    sum += v * v;
  }
  if (l2 && sum > 0) {
    const norm = Math.sqrt(sum);
    for (let i = 0; i < n; i++) val[i]! /= norm;
  }
  let z = model.bias;
  for (let k = 0; k < n; k++) z += sw[k]! * val[k]!;
  return sigmoid(z);
}

/** The feature vector of `n` tokens given by index: key, count and unsalted hash (see {@link vectorize}). */
function features(
  n: number, key: (i: number) => string, count: (i: number) => number, unsalted: (i: number) => number, bits: number, opts: VectorizeOptions,
): Features {
  const { accountId, logScale = true, l2 = true } = opts;
  const salted = accountId !== undefined;
  const size = n * (salted ? 2 : 1);
  const idx = new Uint32Array(size);
  const val = new Float64Array(size);
  const mask = 2 ** bits - 1;
  let k = 0;
  let sum = 0;
  let salt: Buffer | undefined;
  let suffix = '';
  if (salted) {
    salt = Buffer.alloc(4);
    salt.writeUInt32BE(accountId >>> 0);
    suffix = '\u0000' + String(accountId);
  }
  for (let i = 0; i < n; i++) {
    const c = count(i);
    const v = logScale ? Math.log1p(c) : c;
    for (let pass = 0; pass < (salted ? 2 : 1); pass++) {
      const h = pass === 0 ? unsalted(i) : hash(key(i) + suffix, key(i), salt);
      idx[k] = Math.floor(h / 2) & mask;
      const w = h % 2 === 1 ? -v : v;
      val[k++] = w;
      sum += w * w;
    }
  }
  if (l2 && sum > 0) {
    const norm = Math.sqrt(sum);
    for (let i = 0; i < size; i++) val[i]! /= norm;
  }
  return { idx, val };
}

function sigmoid(z: number): number {
  const c = z < -35 ? -35 : z > 35 ? 35 : z;
  return 1 / (1 + Math.exp(-c));
}

/** FTRL-Proximal optimiser state of the FH model (weights computed lazily from z and n). */
export class FtrlTrainer {
  readonly z: Float32Array;
  readonly n: Float64Array;
  zb = 0;
  nb = 0;

  constructor(
    public params: FtrlParameters,
    state?: { z: Float32Array; n: Float64Array; zb: number; nb: number },
  ) {
    const size = 1 << params.numFeatures;
    this.z = state?.z ?? new Float32Array(size);
    this.n = state?.n ?? new Float64Array(size);
    if (state !== undefined) {
      this.zb = state.zb;
      this.nb = state.nb;
    }
  }

  weight(i: number): number {
    const z = this.z[i]!;
    const { l1Ratio: l1, l2Ratio: l2, alpha, beta } = this.params;
    if (Math.abs(z) <= l1) return 0;
    return -(z - Math.sign(z) * l1) / (l2 + (beta + Math.sqrt(this.n[i]!)) / alpha);
  }

  bias(): number {
    const { l2Ratio: l2, alpha, beta } = this.params;
    return -this.zb / ((Math.sqrt(this.nb) + beta) / alpha + l2);
  }

  predict(f: Features): number {
    let z = this.bias();
    for (let k = 0; k < f.idx.length; k++) z += this.weight(f.idx[k]!) * f.val[k]!;
    return sigmoid(z);
  }

  /** One training step on a sample (`spam`: y = 1). */
  step(f: Features, spam: boolean): void {
    let z = this.bias();
    for (let k = 0; k < f.idx.length; k++) z += this.weight(f.idx[k]!) * f.val[k]!;
    let g = sigmoid(z) - (spam ? 1 : 0);
    g = g > 1e4 ? 1e4 : g < -1e4 ? -1e4 : g;
    const alpha = this.params.alpha;
    for (let k = 0; k < f.idx.length; k++) {
      const i = f.idx[k]!;
      const gi = g * f.val[k]!;
      const w = this.weight(i);
      const ni = this.n[i]!;
      const sigma = (Math.sqrt(ni + gi * gi) - Math.sqrt(ni)) / alpha;
      this.z[i] = this.z[i]! + gi - sigma * w;
      this.n[i] = ni + gi * gi;
    }
    const wb = this.bias();
    const sigma = (Math.sqrt(this.nb + g * g) - Math.sqrt(this.nb)) / alpha;
    this.zb += g - sigma * wb;
    this.nb += g * g;
  }

  /** The classifier this state gives: dense weights and the bias. */
  model(trainedAt: number): ClassifierModel {
    const w = new Float32Array(this.z.length);
    for (let i = 0; i < w.length; i++) if (this.z[i] !== 0) w[i] = this.weight(i);
    return new ClassifierModel(this.params.numFeatures, w, this.bias(), trainedAt);
  }
}

/** A trained FH classifier: p = sigmoid(Σ w[idx]·x + b), z clamped to [−35, 35]. */
export class ClassifierModel {
  constructor(
    readonly bits: number,
    readonly weights: Float32Array,
    readonly bias: number,
    /** When it was trained (ms since the epoch). */
    readonly trainedAt: number,
  ) {}

  /** Spam probability in (0, 1). */
  predict(f: Features): number {
    let z = this.bias;
    const w = this.weights;
    for (let k = 0; k < f.idx.length; k++) z += w[f.idx[k]!]! * f.val[k]!;
    return sigmoid(z);
  }
}
