/**
 * Property-based fuzzing of training and model storage (docs/classifier.md "Where the model lives": a
 * store that fails part way leaves the previous model in use).
 *
 * - Training on hostile samples (empty, binary, huge, not mail, random bytes and text) beside ordinary
 *   ones never corrupts the model: every weight and the bias are finite, the stored model loads back
 *   to the same weights, and predictions on ordinary mail are finite probabilities.
 * - A model or trainer row damaged in the SQLite store (truncated blob, bytes flipped, not base64, a
 *   header of another shape or version, counts that do not match the body, NaN or infinite weights,
 *   indexes past the table) is refused at load with an error naming the record, and the classifier keeps
 *   the model it had: the same generation, the same predictions. A training run over a damaged trainer
 *   rejects the same way and makes nothing current.
 * Campaign: SPAMRULE_FUZZ_RUNS=2000 SPAMRULE_FUZZ_SEED=n npx vitest run test/classifier/fuzz-store.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClassifierStore, DEFAULT_SETTINGS, openClassifier, sampleFeatures, SpamClassifier, sqliteModelConfig, trainRun, type Features } from '../../src/classifier/index.js';
import { MemoryStore } from '../../src/lookup/index.js';
import { fuzzParams, runs } from '../helpers/fuzz.js';

/** A test's timeout: 60 s, or `ms` per run when a campaign (SPAMRULE_FUZZ_RUNS) asks for more runs than `n`. */
const timeoutFor = (n: number, ms: number): number => Math.max(60_000, runs(n) * ms);
import { hamMessage, spamMessage } from './helpers.js';

const settings = { minHamSamples: 4, minSpamSamples: 4, ftrl: { ...DEFAULT_SETTINGS.ftrl, numFeatures: 16 } };
const dir = mkdtempSync(join(tmpdir(), 'spamrule-clsfuzz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The stored record layout (store.ts `pack`): deflate-raw of [u32 BE header length][JSON header][body]
 * [SHA-256 of all before it], base64; the test re-packs a record it changed as a writer would.
 */
function unpackBlob(s: string): { header: Record<string, unknown>; body: Buffer } {
  const b = inflateRawSync(Buffer.from(s, 'base64'));
  const n = b.readUInt32BE(0);
  return { header: JSON.parse(b.subarray(4, 4 + n).toString()) as Record<string, unknown>, body: Buffer.from(b.subarray(4 + n, b.length - 32)) };
}
function packBlob(header: Record<string, unknown>, body: Buffer): string {
  const h = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(h.length);
  const payload = Buffer.concat([len, h, body]);
  return deflateRawSync(Buffer.concat([payload, createHash('sha256').update(payload).digest()])).toString('base64');
}
/** The inflated bytes of a record, or undefined when it does not inflate. */
function inflated(s: string): Buffer | undefined {
  try {
    return inflateRawSync(Buffer.from(s, 'base64'));
  } catch {
    return undefined;
  }
}

/** Ways to damage a stored blob (a model or trainer record). */
type Damage =
  | { k: 'truncate'; at: number }
  | { k: 'flip'; at: number; by: number }
  | { k: 'replace'; with: string }
  | { k: 'header'; field: string; value: unknown }
  | { k: 'body'; cut: number }
  | { k: 'float'; at: number; value: number };
const damageArb: fc.Arbitrary<Damage> = fc.oneof(
  fc.record({ k: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ k: fc.constant('flip' as const), at: fc.nat(), by: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ k: fc.constant('replace' as const), with: fc.oneof(fc.constantFrom('x', '!!!', 'AAAA', 'e30=', '{}', '1'), fc.base64String({ maxLength: 64 })) }),
  fc.record({
    k: fc.constant('header' as const),
    field: fc.constantFrom('bits', 'count', 'bias', 'v', 'params', 'zb', 'nb', 'lastId', 'ham', 'spam'),
    value: fc.constantFrom<unknown>(null, -1, 0, 15, 29, 31, 40, 1e9, 2 ** 32, 0.5, 'x', 'NaN', [], {}, true, 2, 99),
  }),
  fc.record({ k: fc.constant('body' as const), cut: fc.integer({ min: 1, max: 64 }) }),
  fc.record({ k: fc.constant('float' as const), at: fc.nat(), value: fc.constantFrom(NaN, Infinity, -Infinity) }),
);

/**
 * The damaged blob, or undefined when this damage leaves a record that is still valid (a flip that
 * inflates to the same bytes, a header field set to a value it may hold).
 */
function damage(blob: string, d: Damage, kind: 'model' | 'trainer'): string | undefined {
  switch (d.k) {
    case 'truncate': {
      const cut = blob.slice(0, d.at % blob.length);
      return cut === '' ? undefined : cut; // empty: a blanked generation, not damage
    }
    case 'flip': {
      const b = Buffer.from(blob, 'base64');
      const i = d.at % b.length;
      b[i] = b[i]! ^ d.by;
      return b.toString('base64');
    }
    case 'replace':
      return d.with === '' ? undefined : d.with; // empty: a blanked generation (store.ts), not damage
    case 'header': {
      const { header, body } = unpackBlob(blob);
      if (JSON.stringify(header[d.field]) === JSON.stringify(d.value)) return undefined;
      if (kind === 'trainer' && d.field === 'bias') return undefined; // not a trainer field
      if (d.field === 'v' && d.value === 1) return undefined; // the current version
      if (kind === 'model' && !['bits', 'count', 'bias', 'v'].includes(d.field)) return undefined;
      if (kind === 'trainer' && d.field === 'bits') return undefined;
      if (d.field === 'bits' && d.value === settings.ftrl.numFeatures) return undefined;
      if (d.field === 'lastId' && typeof d.value === 'number' && Number.isSafeInteger(d.value) && d.value >= 0) return undefined;
      if ((d.field === 'zb' || d.field === 'nb' || d.field === 'bias') && typeof d.value === 'number' && Number.isFinite(d.value) && (d.field !== 'nb' || d.value >= 0)) return undefined;
      return packBlob({ ...header, [d.field]: d.value }, body);
    }
    case 'body': {
      const { header, body } = unpackBlob(blob);
      return packBlob(header, body.subarray(0, Math.max(0, body.length - d.cut)));
    }
    case 'float': {
      const { header, body } = unpackBlob(blob);
      const count = Number(header.count);
      if (count === 0) return undefined;
      const k = d.at % count;
      // model: idx[count] then f32 weights; trainer: idx[count], z f32[count], n f64[count].
      if (kind === 'model') body.writeFloatLE(d.value, count * 4 + 4 * k);
      else if (d.at % 2 === 0) body.writeFloatLE(d.value, count * 4 + 4 * k);
      else body.writeDoubleLE(d.value, count * 8 + 8 * k);
      return packBlob(header, body);
    }
  }
}

/** A change that leaves the same record (a flipped padding bit, a dropped `=`): nothing to detect. */
function sameRecord(a: string, b: string): boolean {
  const x = inflated(a);
  return x !== undefined && /^[A-Za-z0-9+/]*={0,2}$/.test(a) && a.length % 4 === 0 && x.equals(inflated(b)!);
}

const DAMAGED = /classifier:gen:\d+:(model|trainer).*damaged|damaged.*classifier:gen:\d+:(model|trainer)/s;

describe('a damaged model or trainer record in the SQLite store', () => {
  let c: SpamClassifier;
  let probes: Features[];
  let before: number[];
  beforeAll(async () => {
    c = await openClassifier(sqliteModelConfig(join(dir, 'model.sqlite')), { settings, refreshMs: 0 });
    for (let i = 0; i < 6; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 6; i++) await c.learn(hamMessage(i), false);
    // In this thread (a store of its own over the same file would need a child process per run).
    const report = await trainRun(c.store, c.settings, { seed: 1 });
    expect(report.ready).toBe(true);
    expect(await c.reload()).toBe(true);
    const s = { ...DEFAULT_SETTINGS, ...settings };
    probes = [await sampleFeatures(spamMessage(50), s), await sampleFeatures(hamMessage(50), s)];
    before = probes.map((f) => c.model!.predict(f));
  }, 60_000);
  afterAll(async () => {
    await c?.close();
  });

  /** Makes `bad` the model of a new current generation, expects `reload` to reject with `why`, then restores. */
  async function refused(bad: string, why: RegExp): Promise<void> {
    const store = c.store.store;
    const gen = c.generation;
    const next = await store.counterIncr('classifier:gen', 1);
    await store.keySet(`classifier:gen:${next}:model`, bad);
    await store.keySet('classifier:current', String(next));
    try {
      await expect(c.reload()).rejects.toThrow(why);
      expect(c.generation).toBe(gen);
      expect(probes.map((f) => c.model!.predict(f))).toEqual(before);
    } finally {
      await store.keySet('classifier:current', String(gen));
      await store.keySet(`classifier:gen:${next}:model`, '');
    }
  }
  const goodModel = async (): Promise<string> => (await c.store.store.keyGet(`classifier:gen:${c.generation}:model`)) as string;

  it('refuses a model with a NaN weight (was loaded: every message reading it got NaN, PROB_SPAM_UNCERTAIN)', async () => {
    const bad = damage(await goodModel(), { k: 'float', at: 0, value: NaN }, 'model')!;
    await refused(bad, /classifier:gen:\d+:model is damaged \(weight 0: index \d+, value NaN\)/);
  });

  it('refuses a truncated model naming its key (was zlib\'s bare "unexpected end of file")', async () => {
    const good = await goodModel();
    await refused(good.slice(0, good.length >> 1), /classifier:gen:\d+:model is damaged \((not base64|does not inflate)/);
  });

  it('refuses a model with one byte changed (flip at 1947801816 by 7: was loaded with other weights)', async () => {
    const good = await goodModel();
    const bad = damage(good, { k: 'flip', at: 1947801816, by: 7 }, 'model')!;
    expect(sameRecord(bad, good)).toBe(false);
    await refused(bad, /classifier:gen:\d+:model is damaged/);
  });

  it('refuses a model record of another version, or whose weights are cut short', async () => {
    const good = await goodModel();
    await refused(damage(good, { k: 'header', field: 'v', value: 2 }, 'model')!, /is damaged \(version 2, this reader knows 1\)/);
    await refused(damage(good, { k: 'body', cut: 4 }, 'model')!, /is damaged \(\d+ bytes of weights for \d+\)/);
  });

  it('is refused at load with an error naming it, and the classifier keeps its model', async () => {
    const store = c.store.store;
    const gen = c.generation;
    const good = (await store.keyGet(`classifier:gen:${gen}:model`)) as string;
    await fc.assert(
      fc.asyncProperty(damageArb, async (d) => {
        const bad = damage(good, d, 'model');
        fc.pre(bad !== undefined && bad !== good && !sameRecord(bad, good));
        // A newer generation whose model is damaged, made current as a training run would.
        const next = await store.counterIncr('classifier:gen', 1);
        await store.keySet(`classifier:gen:${next}:model`, bad!);
        await store.keySet('classifier:current', String(next));
        try {
          await expect(c.reload()).rejects.toThrow(DAMAGED);
          expect(c.generation).toBe(gen);
          expect(probes.map((f) => c.model!.predict(f))).toEqual(before);
          // Another process opening the store gets the same clear error.
          await expect(new ClassifierStore(store).loadModel()).rejects.toThrow(DAMAGED);
        } finally {
          await store.keySet('classifier:current', String(gen));
          await store.keySet(`classifier:gen:${next}:model`, '');
        }
      }),
      fuzzParams(150),
    );
  }, timeoutFor(150, 100));

  it('a damaged trainer makes a training run reject, and nothing new becomes current', async () => {
    const store = c.store.store;
    const gen = c.generation;
    const good = (await store.keyGet(`classifier:gen:${gen}:trainer`)) as string;
    await fc.assert(
      fc.asyncProperty(damageArb, async (d) => {
        const bad = damage(good, d, 'trainer');
        fc.pre(bad !== undefined && bad !== good && !sameRecord(bad, good));
        await store.keySet(`classifier:gen:${gen}:trainer`, bad!);
        try {
          await expect(trainRun(c.store, c.settings, { seed: 1 })).rejects.toThrow(DAMAGED);
          expect(await c.store.currentGeneration()).toBe(gen);
          expect(await c.reload()).toBe(false);
          expect(probes.map((f) => c.model!.predict(f))).toEqual(before);
        } finally {
          await store.keySet(`classifier:gen:${gen}:trainer`, good);
        }
      }),
      fuzzParams(100),
    );
  }, timeoutFor(100, 100));
});

/** Hostile training samples: empty, binary, huge, not mail, random. */
const hostileSample: fc.Arbitrary<Uint8Array | string> = fc.oneof(
  fc.constantFrom<Uint8Array | string>(
    '', '\r\n', '\r\n\r\n', 'not a mail at all', '\x00\x01\x02\xff', 'Subject: \r\n\r\n', 'From:\r\n\r\n' + '\u0000'.repeat(100),
    'Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n--x\r\n--x--',
    'Subject: ' + 'A'.repeat(200_000) + '\r\n\r\nbody',
    '\r\n\r\n' + 'a.b-'.repeat(100_000),
    Buffer.alloc(300_000, 0xff),
  ),
  fc.uint8Array({ maxLength: 2000 }),
  fc.string({ unit: 'binary', maxLength: 500 }),
  fc.tuple(fc.nat(40), fc.string({ unit: 'grapheme', maxLength: 300 })).map(([i, s]) => spamMessage(i).replace('Dear friend', s)),
);

describe('training on hostile samples', () => {
  it('never corrupts the model: finite weights, the stored model loads back, finite predictions', async () => {
    const probe = await sampleFeatures(hamMessage(99), { ...DEFAULT_SETTINGS, ...settings });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(hostileSample, fc.boolean()), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 1000 }),
        async (samples, seed) => {
          const c = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings, refreshMs: 0 });
          for (let i = 0; i < 4; i++) {
            await c.learn(spamMessage(i), true);
            await c.learn(hamMessage(i), false);
          }
          for (const [raw, spam] of samples) await c.learn(raw, spam);
          const report = await c.train({ seed });
          expect(report.ready).toBe(true);
          const m = c.model!;
          expect(Number.isFinite(m.bias)).toBe(true);
          expect(m.weights.every((w) => Number.isFinite(w))).toBe(true);
          const loaded = (await c.store.loadModel())!;
          expect(loaded.weights).toEqual(m.weights);
          expect(loaded.bias).toBe(m.bias);
          const p = m.predict(probe);
          expect(p > 0 && p < 1).toBe(true);
          // A second run on top of the stored trainer (more hostile samples) stays sound too.
          for (const [raw, spam] of samples) await c.learn(raw, !spam);
          await c.train({ seed });
          expect(c.model!.weights.every((w) => Number.isFinite(w))).toBe(true);
          await c.close();
        },
      ),
      fuzzParams(40),
    );
  }, timeoutFor(40, 1000));
});
