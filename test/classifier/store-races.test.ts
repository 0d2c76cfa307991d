/**
 * Races between spamrule processes sharing one classifier store, replayed deterministically: the
 * interleavings are forced by a wrapper store that holds chosen writes until released (no timing).
 *
 * - A sample being written (id taken, meta not yet written) while another process trains: it becomes
 *    pending in the trainer state and is trained once complete, exactly once; a removed sample and one
 *    whose writer died are told apart from it.
 * - Two or three training runs saving generations at once: `classifier:current` ends on the newest
 *    complete generation, and no generation that is current or newer than current is blanked.
 *
 * On SQLite, a real PostgreSQL and a real Redis (test/servers), as servers.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClassifierStore, FtrlTrainer, SpamClassifier, sqliteModelConfig, trainRun, DEFAULT_SETTINGS, DEFAULT_FTRL } from '../../src/classifier/index.js';
import type { TrainerState } from '../../src/classifier/store.js';
import { MAX_PENDING, PENDING_LIMIT_MS } from '../../src/classifier/train.js';
import { createLookupStore, MemoryStore, type LookupStore } from '../../src/lookup/index.js';
import { startPostgres, startRedis, type PostgresServer, type RedisServer } from '../servers/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { ...DEFAULT_SETTINGS, minHamSamples: 2, minSpamSamples: 2 };
const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;

/** A promise with its resolver. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Passes every call to `inner`, except that a `keySet` whose key matches a hold waits there: `reached`
 * resolves when the write arrives, and the write goes on when `release` is called. Records the values
 * written to `classifier:current`.
 */
class GatedStore implements LookupStore {
  readonly type = 'Gated';
  private holds: { match: (k: string) => boolean; reached: ReturnType<typeof deferred>; go: ReturnType<typeof deferred> }[] = [];
  constructor(readonly inner: LookupStore, readonly currentWrites: string[] = []) {}
  /** Holds the next keySet of a key matching `match`. */
  hold(match: string | RegExp): { reached: Promise<void>; release: () => void } {
    const h = { match: (k: string) => (typeof match === 'string' ? k === match : match.test(k)), reached: deferred(), go: deferred() };
    this.holds.push(h);
    return { reached: h.reached.promise, release: h.go.resolve };
  }
  keyGet(k: string) { return this.inner.keyGet(k); }
  keyExists(k: string) { return this.inner.keyExists(k); }
  async keySet(k: string, v: string, ttl?: number) {
    const i = this.holds.findIndex((h) => h.match(k));
    if (i >= 0) {
      const [h] = this.holds.splice(i, 1);
      h!.reached.resolve();
      await h!.go.promise;
    }
    if (k === 'classifier:current') this.currentWrites.push(v);
    return this.inner.keySet(k, v, ttl);
  }
  counterGet(k: string) { return this.inner.counterGet(k); }
  counterIncr(k: string, by: number) { return this.inner.counterIncr(k, by); }
  async close() {}
}

function emptyState(): TrainerState {
  return { trainer: new FtrlTrainer(DEFAULT_FTRL), ham: { buffer: [], totalSeen: 0 }, spam: { buffer: [], totalSeen: 0 }, lastId: 0, pending: [] };
}

/** A small model to save (all weights zero except one, so that it has a body). */
function someModel(state: TrainerState, at: number) {
  const m = state.trainer.model(at);
  m.weights[7] = 0.5;
  return m;
}

/** Stores enough samples of both classes for a first model, trains it. */
async function seed(store: ClassifierStore): Promise<void> {
  for (let i = 0; i < 3; i++) await store.addSample(Buffer.from(spamMessage(i)), true);
  for (let i = 0; i < 3; i++) await store.addSample(Buffer.from(hamMessage(i)), false);
  const r = await trainRun(store, settings, { seed: 1, now: T0 });
  expect(r).toMatchObject({ ready: true, spam: 3, ham: 3, pending: 0 });
}

type Backend = { name: string; open: () => Promise<LookupStore>; close: (s: LookupStore) => Promise<void> };

const dir = mkdtempSync(join(tmpdir(), 'spamrule-races-'));
let pg: PostgresServer | undefined;
let redis: RedisServer | undefined;
let files = 0;
let redisDb = 0;

const backends: Backend[] = [
  {
    name: 'SQLite',
    open: async () => createLookupStore('classifier', sqliteModelConfig(join(dir, `m${files++}.sqlite`)), { cache: { enabled: false } }),
    close: (s) => s.close(),
  },
  {
    name: 'PostgreSQL',
    open: async () => {
      // A fresh model each test: the store creates its tables again on first use.
      const s = createLookupStore('classifier', {
        '@type': 'PostgreSql', host: pg!.host, port: pg!.port, database: pg!.database, authUsername: pg!.user,
        authSecret: { '@type': 'Value', secret: 'ignored-by-trust-auth' }, timeout: 5000,
      }, { cache: { enabled: false } });
      await s.sqlQuery!('DROP TABLE IF EXISTS spamrule_kv, spamrule_counter', []);
      await s.close();
      return createLookupStore('classifier', {
        '@type': 'PostgreSql', host: pg!.host, port: pg!.port, database: pg!.database, authUsername: pg!.user,
        authSecret: { '@type': 'Value', secret: 'ignored-by-trust-auth' }, timeout: 5000,
      }, { cache: { enabled: false } });
    },
    close: (s) => s.close(),
  },
  {
    name: 'Redis',
    open: async () => createLookupStore('classifier', { '@type': 'Redis', url: `${redis!.url}/${++redisDb}`, timeout: 5000 }, { cache: { enabled: false } }),
    close: (s) => s.close(),
  },
];

beforeAll(async () => {
  [pg, redis] = await Promise.all([startPostgres(), startRedis()]);
}, 120_000);
afterAll(async () => {
  await Promise.all([pg?.stop(), redis?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe.each(backends)('a sample being written while another process trains ($name)', (backend) => {
  it('is kept pending, trained once complete, and never trained twice', async () => {
    const raw = await backend.open();
    try {
      const trainer = new ClassifierStore(raw);
      await seed(trainer);
      // Process X stores a large sample: id taken and message written, the meta (acknowledgement) held.
      const gated = new GatedStore(raw);
      const held = gated.hold(/^classifier:meta:/);
      const writer = new ClassifierStore(gated);
      const big = Buffer.from(`Subject: quarterly report\r\n\r\n${'meeting project report schedule agenda review budget\r\n'.repeat(20_000)}`);
      const acked = writer.addSample(big, false);
      await held.reached;
      const k = await trainer.lastSampleId();
      expect(await trainer.sampleState(k)).toBe('absent');
      // Process Y stores a small sample after it and trains while X is still writing.
      const y = await trainer.addSample(Buffer.from(spamMessage(10)), true);
      expect(y).toBe(k + 1);
      const r1 = await trainRun(trainer, settings, { seed: 1, now: T0 + MIN });
      expect(r1).toMatchObject({ ready: true, spam: 1, ham: 0, pending: 1, abandoned: 0 });
      const s1 = (await trainer.loadTrainer())!;
      expect(s1.lastId).toBe(k + 1);
      expect(s1.pending).toEqual([{ id: k, since: T0 + MIN }]);

      // X finishes: the sample is acknowledged. The next run (another spam arrived meanwhile) trains it.
      held.release();
      expect(await acked).toBe(k);
      await trainer.addSample(Buffer.from(spamMessage(11)), true);
      const r2 = await trainRun(trainer, settings, { seed: 1, now: T0 + 2 * MIN });
      expect(r2).toMatchObject({ ready: true, spam: 1, ham: 1, pending: 0, totalHam: 4, totalSpam: 5 });
      const s2 = (await trainer.loadTrainer())!;
      expect(s2.pending).toEqual([]);
      expect(s2.ham.buffer).toContain(k);

      // Later runs never train it again.
      await trainer.addSample(Buffer.from(spamMessage(12)), true);
      const r3 = await trainRun(trainer, settings, { seed: 1, now: T0 + 3 * MIN });
      expect(r3).toMatchObject({ ready: true, spam: 1, ham: 0, pending: 0, totalHam: 4, totalSpam: 6 });
    } finally {
      await backend.close(raw);
    }
  }, 120_000);
});

describe('pending sample ids (SQLite)', () => {
  it('tells a removed sample and a dead writer from a sample being written', async () => {
    const raw = await backends[0]!.open();
    try {
      const store = new ClassifierStore(raw);
      await seed(store);
      const dead = await raw.counterIncr('classifier:seq', 1); // writer died right after taking the id
      const removed = await raw.counterIncr('classifier:seq', 1); // being written, then forgotten
      await store.addSample(Buffer.from(spamMessage(20)), true);
      const r1 = await trainRun(store, settings, { seed: 1, now: T0 });
      expect(r1).toMatchObject({ ready: true, spam: 1, pending: 2 });
      expect((await store.loadTrainer())!.pending!.map((p) => p.id)).toEqual([dead, removed]);

      await store.removeSample(removed);
      expect(await store.sampleState(removed)).toBe('removed');
      await store.addSample(Buffer.from(spamMessage(21)), true);
      // Before the limit: the dead writer's id is still waited for; the removed one is dropped untrained.
      const r2 = await trainRun(store, settings, { seed: 1, now: T0 + PENDING_LIMIT_MS - 1 });
      expect(r2).toMatchObject({ ready: true, spam: 1, ham: 0, pending: 1, abandoned: 0 });
      expect((await store.loadTrainer())!.pending).toEqual([{ id: dead, since: T0 }]);

      // At the limit (its first sighting counts, not the later runs): given up.
      await store.addSample(Buffer.from(spamMessage(22)), true);
      const r3 = await trainRun(store, settings, { seed: 1, now: T0 + PENDING_LIMIT_MS });
      expect(r3).toMatchObject({ ready: true, spam: 1, ham: 0, pending: 0, abandoned: 1 });
      expect((await store.loadTrainer())!.pending).toEqual([]);
    } finally {
      await raw.close();
    }
  }, 60_000);

  it('a damaged sample description is skipped and counted, and training goes on', async () => {
    const raw = new MemoryStore();
    const store = new ClassifierStore(raw);
    await seed(store);
    const bad = await store.addSample(Buffer.from(spamMessage(30)), true);
    await raw.keySet(`classifier:meta:${bad}`, '{not json');
    const foreign = await store.addSample(Buffer.from(spamMessage(31)), true);
    await raw.keySet(`classifier:meta:${foreign}`, '[1,2]');
    await store.addSample(Buffer.from(spamMessage(32)), true);
    expect(await store.sampleState(bad)).toBe('unreadable');
    expect(await store.getMeta(foreign)).toBeUndefined();
    const r = await trainRun(store, settings, { seed: 1, now: T0 });
    expect(r).toMatchObject({ ready: true, skipped: 2, pending: 0 });
    expect(r.spam + r.ham).toBeGreaterThan(0);
  });

  it('a pending sample that completes as a copy of a newer sample counts once (the newer one)', async () => {
    const store = new ClassifierStore(new MemoryStore());
    await seed(store);
    const gated = new GatedStore(store.store);
    const held = gated.hold(/^classifier:meta:/);
    const msg = Buffer.from(hamMessage(30));
    const acked = new ClassifierStore(gated).addSample(msg, false);
    await held.reached;
    await store.addSample(Buffer.from(spamMessage(30)), true);
    expect(await trainRun(store, settings, { seed: 1, now: T0 })).toMatchObject({ spam: 1, ham: 0, pending: 1 });
    held.release();
    const older = await acked;
    const newer = await store.addSample(msg, true); // the same message learned again, relabelled
    const r = await trainRun(store, settings, { seed: 1, now: T0 + MIN });
    expect(r).toMatchObject({ ready: true, spam: 1, ham: 0, duplicates: 1, pending: 0 });
    expect(await store.sampleState(older)).toBe('removed');
    expect(await store.getMeta(newer)).toMatchObject({ spam: true });
  }, 60_000);

  it('keeps at most MAX_PENDING ids, the newest', async () => {
    const store = new ClassifierStore(new MemoryStore());
    await seed(store);
    const first = (await store.lastSampleId()) + 1;
    await store.store.counterIncr('classifier:seq', MAX_PENDING + 5); // ids taken, never written
    await store.addSample(Buffer.from(spamMessage(40)), true);
    const r = await trainRun(store, settings, { seed: 1, now: T0 });
    expect(r).toMatchObject({ ready: true, spam: 1, pending: MAX_PENDING, abandoned: 5 });
    const p = (await store.loadTrainer())!.pending!;
    expect(p.length).toBe(MAX_PENDING);
    expect(p[0]!.id).toBe(first + 5);
    expect(p.at(-1)!.id).toBe(first + MAX_PENDING + 4);
  }, 60_000);

  it('loads a trainer stored before the pending list existed', async () => {
    const store = new ClassifierStore(new MemoryStore());
    await seed(store);
    const gen = await store.currentGeneration();
    const key = `classifier:gen:${gen}:trainer`;
    const b = inflateRawSync(Buffer.from(String(await store.store.keyGet(key)), 'base64'));
    const n = b.readUInt32BE(0);
    const header = JSON.parse(b.subarray(4, 4 + n).toString()) as Record<string, unknown>;
    expect(header.pending).toEqual([]);
    // As an earlier version wrote it: no pending list, and no record version nor SHA-256 trailer (record.ts).
    delete header.pending;
    expect(header.v).toBe(1);
    delete header.v;
    const h = Buffer.from(JSON.stringify(header));
    const len = Buffer.alloc(4);
    len.writeUInt32BE(h.length);
    await store.store.keySet(key, deflateRawSync(Buffer.concat([len, h, b.subarray(4 + n, b.length - 32)])).toString('base64'));
    const t = (await store.loadTrainer())!;
    expect(t.pending).toEqual([]);
    expect(t.lastId).toBe(6);
    await store.addSample(Buffer.from(spamMessage(50)), true);
    expect(await trainRun(store, settings, { seed: 1, now: T0 })).toMatchObject({ ready: true, spam: 1, totalSpam: 4, pending: 0 });
  }, 60_000);
});

describe.each(backends)('overlapping generation saves ($name)', (backend) => {
  it('two runs finishing together leave current on the newer generation', async () => {
    const raw = await backend.open();
    try {
      const writes: string[] = [];
      const a = new GatedStore(raw, writes);
      const b = new GatedStore(raw, writes);
      // Run A (generation 1) has checked and is about to set current; run B (generation 2) then saves
      // completely; A's write lands last, as in the campaign's failing case.
      const held = a.hold('classifier:current');
      const sa = emptyState();
      const pa = new ClassifierStore(a).commitGeneration(sa, someModel(sa, T0));
      await held.reached;
      const sb = emptyState();
      expect(await new ClassifierStore(b).commitGeneration(sb, someModel(sb, T0 + 1))).toEqual({ generation: 2, current: 2 });
      held.release();
      expect(await pa).toEqual({ generation: 1, current: 2 });
      const store = new ClassifierStore(raw);
      expect(await store.currentGeneration()).toBe(2);
      // The only step back is A's own write, which its re-check undoes at once.
      expect(writes).toEqual(['2', '1', '2']);

      // A run that finds a newer generation current does not touch it.
      const sc = emptyState();
      const held2 = a.hold(/^classifier:gen:3:model$/);
      const pc = new ClassifierStore(a).commitGeneration(sc, someModel(sc, T0 + 2));
      await held2.reached;
      const sd = emptyState();
      expect(await new ClassifierStore(b).commitGeneration(sd, someModel(sd, T0 + 3))).toEqual({ generation: 4, current: 4 });
      held2.release();
      expect(await pc).toEqual({ generation: 3, current: 4 });
      expect(writes).toEqual(['2', '1', '2', '4']);
      expect(await store.currentGeneration()).toBe(4);
      expect(await store.loadModel()).toBeDefined();
      expect(await store.loadTrainer()).toBeDefined();
    } finally {
      await backend.close(raw);
    }
  }, 60_000);

  it('three overlapping runs never blank the generation left current', async () => {
    const raw = await backend.open();
    try {
      const writes: string[] = [];
      const store = new ClassifierStore(raw);
      const s0 = emptyState();
      expect(await store.commitGeneration(s0, someModel(s0, T0))).toEqual({ generation: 1, current: 1 });
      // A (gen 2) about to set current; B (gen 3) still writing; C (gen 4) saves completely and may
      // blank gen 2 (= 4 - 2), which is below current then; B must not blank anything newer than current.
      const a = new GatedStore(raw, writes);
      const b = new GatedStore(raw, writes);
      const c = new GatedStore(raw, writes);
      const ha = a.hold('classifier:current');
      const pa = new ClassifierStore(a).commitGeneration(emptyState(), someModel(emptyState(), T0 + 1));
      await ha.reached;
      const hb = b.hold(/^classifier:gen:3:trainer$/);
      const pb = new ClassifierStore(b).commitGeneration(emptyState(), someModel(emptyState(), T0 + 2));
      await hb.reached;
      expect(await new ClassifierStore(c).commitGeneration(emptyState(), someModel(emptyState(), T0 + 3))).toEqual({ generation: 4, current: 4 });
      ha.release();
      expect(await pa).toEqual({ generation: 2, current: 4 });
      hb.release();
      expect(await pb).toEqual({ generation: 3, current: 4 });
      expect(await store.currentGeneration()).toBe(4);
      expect(await store.loadModel(4)).toBeDefined();
      expect(await store.loadTrainer(4)).toBeDefined();
      expect(await store.loadModel(3)).toBeDefined(); // newer than the current one when B saved it: kept
      expect(await store.loadModel(2)).toBeUndefined(); // below current: cleaned up
      expect(writes.at(-1)).toBe('4');

      // A fourth run later is the newest again and blanks gen 3 (now below current).
      const s5 = emptyState();
      expect(await store.commitGeneration(s5, someModel(s5, T0 + 4))).toEqual({ generation: 5, current: 5 });
      expect(await store.loadModel(3)).toBeUndefined();
      expect(await store.loadModel(4)).toBeDefined();
    } finally {
      await backend.close(raw);
    }
  }, 60_000);
});

describe('readers', () => {
  it('keep a newer model they already loaded when current steps back for a moment', async () => {
    const store = new ClassifierStore(new MemoryStore());
    for (let g = 0; g < 3; g++) {
      const s = emptyState();
      await store.commitGeneration(s, someModel(s, T0 + g));
    }
    const c = new SpamClassifier(store, { settings, refreshMs: 0 });
    await c.reload();
    expect(c.generation).toBe(3);
    await store.store.keySet('classifier:current', '2'); // a stale writer, before its re-check
    await c.reload();
    expect(c.generation).toBe(3);
  });
});
