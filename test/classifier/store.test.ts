/**
 * The classifier's store: samples, trainer state and models shared by several classifiers over one
 * SQLite file, training in a child process while classification goes on (and dying there harmlessly), an atomic switch to the new
 * model, and bad input (empty, binary, 50 MB messages; a store that fails mid-training).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ClassifierStore, debouncedLearner, openClassifier, sampleFeatures, SpamClassifier, sqliteModelConfig, trainRun, DEFAULT_SETTINGS, sampleHash } from '../../src/classifier/index.js';
import { MemoryStore } from '../../src/lookup/index.js';
import type { LookupStore } from '../../src/lookup/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { minHamSamples: 10, minSpamSamples: 10 };
const dir = mkdtempSync(join(tmpdir(), 'spamrule-classifier-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A store that works until told to fail (every call rejects while `down`). */
class FlakyStore implements LookupStore {
  readonly type = 'Memory';
  down = false;
  /** Fail once this many more calls have been made (undefined: never). */
  failAfter: number | undefined;
  constructor(private readonly inner = new MemoryStore()) {}
  private gate(): void {
    if (this.failAfter !== undefined && this.failAfter-- <= 0) this.down = true;
    if (this.down) throw new Error('store unreachable');
  }
  async keyGet(k: string) { this.gate(); return this.inner.keyGet(k); }
  async keyExists(k: string) { this.gate(); return this.inner.keyExists(k); }
  async keySet(k: string, v: string, ttl?: number) { this.gate(); return this.inner.keySet(k, v, ttl); }
  async counterGet(k: string) { this.gate(); return this.inner.counterGet(k); }
  async counterIncr(k: string, by: number) { this.gate(); return this.inner.counterIncr(k, by); }
  async close() {}
}

describe('a model shared through a SQLite file', () => {
  it('trains in a child process while classification goes on, and other classifiers load the new model', async () => {
    const file = join(dir, 'shared.sqlite');
    const a = await openClassifier(sqliteModelConfig(file), { settings, refreshMs: 0 });
    for (let i = 0; i < 12; i++) await a.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await a.learn(hamMessage(i), false);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const report = await a.train({ seed: 1 });
    clearInterval(timer);
    expect(report).toMatchObject({ ready: true, generation: 1, spam: 12, ham: 10, replayed: 2 });
    // The child's CPU time comes with the report (this process's figures do not count it).
    expect(report.processCpuMs).toBeGreaterThan(0);
    // The event loop kept running during the run (training happened in the child process).
    expect(ticks).toBeGreaterThan(3);
    expect(a.generation).toBe(1);

    const b = await openClassifier(sqliteModelConfig(file), { settings, refreshMs: 0 });
    expect(b.generation).toBe(1);
    const f = await sampleFeatures(spamMessage(40), { ...DEFAULT_SETTINGS, ...settings });
    expect(b.model!.predict(f)).toBeCloseTo(a.model!.predict(f), 6);
    expect(a.model!.predict(f)).toBeGreaterThan(0.85);

    // A second run (on top of the stored trainer) makes generation 2; b switches on reload.
    for (let i = 12; i < 16; i++) await b.learn(spamMessage(i), true);
    const r2 = await b.train({ seed: 1 });
    expect(r2).toMatchObject({ ready: true, generation: 2, spam: 4, ham: 0, totalSpam: 16, totalHam: 10 });
    expect(await a.reload()).toBe(true);
    expect(a.generation).toBe(2);
    await a.store.store.close();
    await b.store.store.close();
  }, 120_000);
});

describe('a training process that dies', () => {
  it('rejects the run and leaves the previous model current; the next run trains', async () => {
    const file = join(dir, 'killed.sqlite');
    const c = await openClassifier(sqliteModelConfig(file), { settings, refreshMs: 0 });
    for (let i = 0; i < 12; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
    expect((await c.train({ seed: 1 })).generation).toBe(1);
    for (let i = 12; i < 16; i++) await c.learn(spamMessage(i), true);
    const run = c.train({ seed: 1 });
    // The child is this process's child running train-worker: kill it as soon as it shows (out of memory, kill -9).
    let killed = false;
    for (let k = 0; k < 400 && !killed; k++) {
      const ps = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
      const line = ps.split('\n').find((l) => l.includes('train-worker'));
      if (line !== undefined) {
        process.kill(Number(line.trim().split(/\s+/)[0]), 'SIGKILL');
        killed = true;
      } else await new Promise((r) => setTimeout(r, 5));
    }
    expect(killed).toBe(true);
    await expect(run).rejects.toThrow(/training process ended \(SIGKILL\) without a report/);
    expect(c.generation).toBe(1);
    expect(await c.reload()).toBe(false);
    expect(c.generation).toBe(1);
    // Nothing was lost: the next run trains the four new samples into generation 2.
    expect(await c.train({ seed: 1 })).toMatchObject({ ready: true, generation: 2, spam: 4, totalSpam: 16, totalHam: 10 });
    expect(c.generation).toBe(2);
    await c.close();
  }, 120_000);
});

describe('bad input', () => {
  it('trains over empty, binary and 50 MB messages without losing a sample or the previous model', async () => {
    const store = new ClassifierStore(new MemoryStore());
    const c = new SpamClassifier(store, { settings, refreshMs: 0 });
    for (let i = 0; i < 10; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
    expect((await c.train({ seed: 1 })).generation).toBe(1);
    const binary = Buffer.alloc(1 << 20);
    for (let i = 0; i < binary.length; i++) binary[i] = (i * 2654435761) >>> 24;
    const huge = Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(50 * 1024 * 1024, 'cheap pills winner lottery ')]);
    const ids = [await c.learn(Buffer.alloc(0), true), await c.learn(binary, true), await c.learn(huge, true), await c.learn(hamMessage(50), false)];
    const t0 = performance.now();
    const r = await c.train({ seed: 1 });
    expect(performance.now() - t0).toBeLessThan(120_000);
    expect(r).toMatchObject({ ready: true, generation: 2, spam: 3, ham: 1 });
    for (const id of ids) expect(await store.getSample(id)).toBeDefined();
    expect((await store.getSample(ids[2]!))!.raw.length).toBe(8 * 1024 * 1024); // stored truncated
  }, 180_000);

  it('a store that fails mid-training leaves the previous model current and every acknowledged sample stored', async () => {
    const flaky = new FlakyStore();
    const store = new ClassifierStore(flaky);
    const c = new SpamClassifier(store, { settings, refreshMs: 0 });
    for (let i = 0; i < 10; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
    await c.train({ seed: 1 });
    const before = c.model;
    const acked: number[] = [];
    for (let i = 10; i < 14; i++) acked.push(await c.learn(spamMessage(i), true));

    flaky.failAfter = 10; // part way through reading the samples back
    await expect(c.train({ seed: 1 })).rejects.toThrow(/store unreachable/);
    expect(c.model).toBe(before);
    expect(c.generation).toBe(1);
    // A sample whose store write failed is not acknowledged: learn rejects.
    await expect(c.learn(spamMessage(99), true)).rejects.toThrow(/store unreachable/);

    flaky.down = false;
    flaky.failAfter = undefined;
    expect(await store.currentGeneration()).toBe(1);
    for (const id of acked) expect(await store.getSample(id)).toBeDefined();
    const r = await trainRun(store, { ...DEFAULT_SETTINGS, ...settings }, { seed: 1 });
    expect(r).toMatchObject({ ready: true, generation: 2, spam: 4 });

    // Failing while the new generation is written: the switch never happens.
    await c.learn(spamMessage(20), true);
    const gen = await store.currentGeneration();
    flaky.failAfter = 8;
    await expect(trainRun(store, { ...DEFAULT_SETTINGS, ...settings }, { seed: 1 })).rejects.toThrow();
    flaky.down = false;
    flaky.failAfter = undefined;
    expect(await store.currentGeneration()).toBe(gen);
    expect(await c.reload()).toBe(true);
    expect(c.generation).toBe(gen);
  }, 120_000);
});

describe('forgetting messages', () => {
  it('removes every sample of the given messages, whatever their class and account, and nothing else', async () => {
    const c = await openClassifier(sqliteModelConfig(join(dir, 'forget.sqlite')), { settings, refreshMs: 0 });
    const store = c.store;
    try {
      const ids: number[] = [];
      for (let i = 0; i < 40; i++) ids.push(await c.learn(i % 2 === 0 ? spamMessage(i) : hamMessage(i), i % 2 === 0));
      // The same bytes learned again with the other class and for an account; another message removed already.
      const relabelled = await c.learn(spamMessage(4), false);
      const personal = await c.learn(spamMessage(4), true, { account: 7 });
      await store.removeSample(ids[10]!);
      // The latest sample of a message, per account: what "already learned" is decided on.
      const h4 = sampleHash(Buffer.from(spamMessage(4)));
      expect(await store.learnedSample(h4)).toMatchObject({ id: relabelled, spam: false });
      expect(await store.learnedSample(h4, 7)).toMatchObject({ id: personal, spam: true });
      expect(await store.learnedSample(h4, 8)).toBeUndefined();
      expect(await store.learnedSample(sampleHash(Buffer.from(spamMessage(10))))).toBeUndefined(); // removed
      const hashes = new Set([sampleHash(Buffer.from(spamMessage(4))), sampleHash(Buffer.from(hamMessage(33))), sampleHash(Buffer.from('never learned'))]);
      expect(await store.removeMessages(hashes, 4)).toBe(4);
      const left = [];
      for (let id = 1; id <= (await store.lastSampleId()); id++) if ((await store.getMeta(id)) !== undefined) left.push(id);
      expect(left).toEqual(ids.filter((id) => ![ids[4], ids[10], ids[33]].includes(id)));
      expect(await store.removeMessages(hashes)).toBe(0);
      expect(await store.learnedSample(h4)).toBeUndefined();
      expect(await store.removeMessages(new Set())).toBe(0);
    } finally {
      await store.store.close();
    }
  });
});

describe('forgetting over a protocol (debouncedLearner.forgetMessage)', () => {
  it('runs one scan of the samples at a time however many forgets arrive together', async () => {
    let inFlight = 0;
    let most = 0;
    const inner = new MemoryStore();
    // Every read of a sample's meta takes a moment, so concurrent scans would overlap.
    const slow: LookupStore = {
      type: 'Memory',
      keyGet: async (k) => {
        if (!k.startsWith('classifier:meta:')) return inner.keyGet(k);
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        return inner.keyGet(k);
      },
      keyExists: (k) => inner.keyExists(k),
      keySet: (k, v, ttl) => inner.keySet(k, v, ttl),
      counterGet: (k) => inner.counterGet(k),
      counterIncr: (k, by) => inner.counterIncr(k, by),
      close: async () => {},
    };
    const c = new SpamClassifier(new ClassifierStore(slow), { settings, refreshMs: 0 });
    for (let i = 0; i < 40; i++) await c.learn(spamMessage(i), true);
    const learner = debouncedLearner(c, 60_000);
    const removed = await Promise.all([0, 1, 2, 3, 4].map((i) => learner.forgetMessage(Buffer.from(spamMessage(i)))));
    expect(removed).toEqual([1, 1, 1, 1, 1]);
    expect(most).toBeLessThanOrEqual(16); // one scan's reads at most, not five scans' at once
    expect(most).toBeGreaterThan(1);
  });
});
