/**
 * `x:SpamTrainingSample` over JMAP: a message uploaded (RFC 8620 §6.1) becomes a training sample in
 * a real classifier's SQLite store, the sample trains a model, destroying the object forgets the
 * sample, and bad requests (unknown blob, bad properties, missing permission, no classifier, a store
 * that is down, an upload over maxSizeUpload) get their errors without leaving half a sample.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debouncedLearner, openClassifier, sqliteModelConfig, type SpamClassifier } from '../../src/classifier/index.js';
import { hamMessage, spamMessage } from '../classifier/helpers.js';
import { startHarness, type Harness } from './harness.js';

const T = 'x:SpamTrainingSample';

async function upload(h: Harness, body: string | Buffer, type = 'message/rfc822', token = h.admin): Promise<{ status: number; json: any }> {
  const res = await fetch(`${h.server.url}/jmap/upload/a/`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': type }, body });
  return { status: res.status, json: await res.json() };
}

describe('x:SpamTrainingSample with a classifier', () => {
  let h: Harness;
  let classifier: SpamClassifier;
  beforeAll(async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const modelDir = mkdtempSync(join(tmpdir(), 'spamrule-samples-'));
    classifier = await openClassifier(sqliteModelConfig(join(modelDir, 'model.sqlite')), { settings: { minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
    const learner = debouncedLearner(classifier, 3_600_000);
    h = await startHarness({ trainingSamples: { add: (raw, spam, o) => learner.learn(raw, spam, o), remove: (id) => learner.forget(id) }, limits: { maxSizeUpload: 100_000 } });
  });
  afterAll(async () => {
    await h.close();
    await classifier.store.store.close();
  });

  it('uploads a message, creates a sample from its blobId, and keeps the message in the classifier store', async () => {
    const raw = spamMessage(1);
    const up = await upload(h, raw);
    expect(up.status).toBe(201);
    expect(up.json).toMatchObject({ accountId: 'a', type: 'message/rfc822', size: Buffer.byteLength(raw) });
    expect(up.json.blobId).toMatch(/^G[A-Za-z0-9_-]{43}$/);
    // The same bytes give the same blob; download returns them.
    expect((await upload(h, raw)).json.blobId).toBe(up.json.blobId);
    const dl = await fetch(`${h.server.url}/jmap/download/a/${up.json.blobId}/m.eml?accept=message/rfc822`, { headers: { authorization: `Bearer ${h.admin}` } });
    expect(dl.status).toBe(200);
    expect(dl.headers.get('content-type')).toBe('message/rfc822');
    expect(await dl.text()).toBe(raw);

    const before = await classifier.store.lastSampleId();
    const [[name, res]] = await h.call([[`${T}/set`, { create: { s1: { blobId: up.json.blobId, isSpam: true } } }, 'c1']]);
    expect(name).toBe(`${T}/set`);
    const created = res.created.s1;
    expect(created.id).toEqual(expect.any(String));
    expect(created).toMatchObject({ accountId: null, deleteAfterUse: false });
    expect(created.subject).toBe(raw.match(/^Subject: (.*)$/m)![1]);
    expect(Date.parse(created.expiresAt) - Date.now()).toBeGreaterThan(179 * 86_400_000);
    // Acknowledged means stored: the classifier's store has the message under a new sample id.
    const sampleId = await classifier.store.lastSampleId();
    expect(sampleId).toBe(before + 1);
    const sample = await classifier.store.getSample(sampleId);
    expect(sample?.spam).toBe(true);
    expect(Buffer.from(sample!.raw).toString()).toBe(raw);

    const [[, got]] = await h.call([[`${T}/get`, { ids: [created.id] }, 'g']]);
    expect(got.list).toEqual([{ id: created.id, blobId: up.json.blobId, isSpam: true, accountId: null, expiresAt: created.expiresAt, deleteAfterUse: false, from: created.from, subject: created.subject }]);

    // Samples cannot be changed; destroying one forgets it in the store.
    const [[, upd]] = await h.call([[`${T}/set`, { update: { [created.id]: { isSpam: false } } }, 'u']]);
    expect(upd.notUpdated[created.id].type).toBe('forbidden');
    const [[, del]] = await h.call([[`${T}/set`, { destroy: [created.id] }, 'd']]);
    expect(del.destroyed).toEqual([created.id]);
    expect(await classifier.store.getMeta(sampleId)).toBeUndefined();
  });

  it('trains a model from samples created over JMAP, per account when asked', async () => {
    const create: Record<string, unknown> = {};
    for (let i = 0; i < 12; i++) {
      create[`s${i}`] = { blobId: (await upload(h, spamMessage(100 + i))).json.blobId, isSpam: true };
      create[`h${i}`] = { blobId: (await upload(h, hamMessage(100 + i))).json.blobId, isSpam: false, accountId: 7, expiresAt: '2030-01-01T00:00:00Z' };
    }
    const [[, res]] = await h.call([[`${T}/set`, { create }, 'c']]);
    expect(Object.keys(res.created ?? {})).toHaveLength(24);
    expect(res.created.h0).toMatchObject({ from: expect.any(String) });
    const [[, q]] = await h.call([[`${T}/query`, { filter: { class: 'ham' } }, 'q']]);
    expect(q.ids).toHaveLength(12);
    const report = await classifier.train({ seed: 1 });
    expect(report.spam).toBeGreaterThanOrEqual(12);
    expect(report.ham).toBeGreaterThanOrEqual(12);
    expect(report.generation).toBeGreaterThan(0);
    const { SpamEngine } = await import('../../src/engine/index.js');
    const engine = new SpamEngine({ classifier });
    const verdict = (await engine.classify(spamMessage(300))).classifier;
    expect(verdict?.confidence).toBeGreaterThan(0.5);
  });

  it('destroys samples past their expiresAt and forgets their messages', async () => {
    const { expireSamples } = await import('../../src/jmap/index.js');
    const blobId = (await upload(h, hamMessage(50))).json.blobId;
    const [[, res]] = await h.call([[`${T}/set`, { create: { old: { blobId, isSpam: false, expiresAt: '2020-01-01T00:00:00Z' }, keep: { blobId, isSpam: false } } }, 'c']]);
    const sampleId = await classifier.store.lastSampleId();
    expect(await classifier.store.getMeta(sampleId - 1)).toBeDefined();
    const n = await expireSamples(h.server.repo, { remove: (id) => classifier.store.removeSample(id) });
    expect(n).toBe(1);
    const [[, got]] = await h.call([[`${T}/get`, { ids: [res.created.old.id, res.created.keep.id] }, 'g']]);
    expect(got.notFound).toEqual([res.created.old.id]);
    expect(got.list.map((x: { id: string }) => x.id)).toEqual([res.created.keep.id]);
    expect(await classifier.store.getMeta(sampleId - 1)).toBeUndefined(); // the expired one's message
    expect(await classifier.store.getMeta(sampleId)).toBeDefined();
  });

  it('refuses unknown blobs, bad properties and server-set properties, one SetError each', async () => {
    const blobId = (await upload(h, hamMessage(1))).json.blobId;
    const before = await classifier.store.lastSampleId();
    const [[, res]] = await h.call([[`${T}/set`, {
      create: {
        nob: { blobId: 'Gnope', isSpam: true },
        noclass: { blobId },
        unknown: { blobId, isSpam: false, colour: 'red' },
        serverset: { blobId, isSpam: false, from: 'x@example.com' },
        baddate: { blobId, isSpam: false, expiresAt: 'tomorrow' },
        badaccount: { blobId, isSpam: false, accountId: -1 },
      },
    }, 'c']]);
    expect(res.created).toBeNull();
    expect(res.notCreated.nob).toMatchObject({ type: 'blobNotFound', notFound: ['Gnope'] });
    expect(res.notCreated.noclass).toMatchObject({ type: 'invalidProperties', properties: ['isSpam'] });
    expect(res.notCreated.unknown).toMatchObject({ type: 'invalidProperties', properties: ['colour'] });
    expect(res.notCreated.serverset).toMatchObject({ type: 'invalidProperties', properties: ['from'] });
    expect(res.notCreated.baddate).toMatchObject({ type: 'invalidProperties', properties: ['expiresAt'] });
    expect(res.notCreated.badaccount).toMatchObject({ type: 'invalidProperties', properties: ['accountId'] });
    expect(await classifier.store.lastSampleId()).toBe(before); // nothing stored
  });

  it('needs sysSpamTrainingSampleCreate, and an upload over maxSizeUpload is refused', async () => {
    const blobId = (await upload(h, hamMessage(2))).json.blobId;
    const reader = h.token(['sysSpamTrainingSampleGet', 'sysSpamTrainingSampleQuery']);
    const [[, res]] = await h.call([[`${T}/set`, { create: { x: { blobId, isSpam: false } } }, 'c']], reader);
    expect(res.notCreated.x).toMatchObject({ type: 'forbidden', description: 'missing permission sysSpamTrainingSampleCreate' });
    const big = await upload(h, Buffer.alloc(100_001, 65));
    expect(big.status).toBe(400);
    expect(big.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', limit: 'maxSizeUpload' });
    const anon = await fetch(`${h.server.url}/jmap/upload/a/`, { method: 'POST', body: 'x' });
    expect(anon.status).toBe(401);
    expect((await upload(h, 'x', 'text/plain')).status).toBe(201);
    // The same bytes with another type are another blob: the first still downloads as text/plain.
    const a = (await upload(h, 'same bytes', 'text/plain')).json;
    const b = (await upload(h, 'same bytes', 'application/octet-stream')).json;
    expect(b.blobId).not.toBe(a.blobId);
    expect((await upload(h, 'same bytes', 'text/plain')).json.blobId).toBe(a.blobId);
    const dl = await fetch(`${h.server.url}/jmap/download/a/${a.blobId}/x.txt`, { headers: { authorization: `Bearer ${h.admin}` } });
    expect(dl.headers.get('content-type')).toBe('text/plain');
    const other = await fetch(`${h.server.url}/jmap/upload/zz/`, { method: 'POST', headers: { authorization: `Bearer ${h.admin}` }, body: 'x' });
    expect(other.status).toBe(404);
  });
});

describe('x:SpamTrainingSample without a usable classifier store', () => {
  it('is forbidden on a server without a classifier', async () => {
    const h = await startHarness();
    try {
      const blobId = (await upload(h, hamMessage(3))).json.blobId;
      const [[, res]] = await h.call([[`${T}/set`, { create: { x: { blobId, isSpam: false } } }, 'c']]);
      expect(res.notCreated.x.type).toBe('forbidden');
      expect(res.notCreated.x.description).toMatch(/no classifier model/);
    } finally {
      await h.close();
    }
  });

  it('fails the call with serverFail and stores no object when the classifier store is down', async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const classifier = await openClassifier(sqliteModelConfig(join(mkdtempSync(join(tmpdir(), 'spamrule-samples-')), 'model.sqlite')), { refreshMs: 0 });
    const learner = debouncedLearner(classifier, 3_600_000);
    const h = await startHarness({ trainingSamples: { add: (raw, spam, o) => learner.learn(raw, spam, o), remove: (id) => learner.forget(id) } });
    try {
      const blobId = (await upload(h, hamMessage(4))).json.blobId;
      await classifier.store.store.close(); // the store goes away
      const [[name, err]] = await h.call([[`${T}/set`, { create: { x: { blobId, isSpam: false } } }, 'c']]);
      expect(name).toBe('error');
      expect(err.type).toBe('serverFail');
      const [[, got]] = await h.call([[`${T}/query`, {}, 'q']]);
      expect(got.ids).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
