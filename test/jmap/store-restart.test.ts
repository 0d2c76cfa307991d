/**
 * A StoreLookup changed over JMAP whose new configuration cannot start (docs/jmap.md, "Secrets and the store
 * policy"; src/jmap/store-sync.ts): the old store stops at once (its server gets no more commands, no
 * connection stays open) and the namespace answers as a store that is down, each lookup an error in the
 * classify result naming the namespace and why, the other rules still running; a name that gave no address is
 * tried again and the store starts once it resolves; a destroy removes the namespace. Real Redis servers on
 * 127.0.0.1 (A: the old configuration, B: the new one); the store policy's resolver is a zone the test controls.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ClassifyResult } from '../../src/engine/index.js';
import { redisCli, startRedis, waitFor, type RedisServer } from '../servers/index.js';
import { startHarness, type Harness } from './harness.js';
import { clientsConnected, commandsRun, expectStoreDown, failures, mail, NAMESPACE, policy, rules, storeAt, zone } from './store-restart-cases.js';

let a: RedisServer;
let b: RedisServer;
beforeAll(async () => {
  [a, b] = await Promise.all([startRedis(), startRedis()]);
  redisCli(a.port, 'SET', 'listed.example', 'TRUSTED_A');
  redisCli(b.port, 'SET', 'listed.example', 'TRUSTED_B');
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

/** A JMAP server whose engine has the rules and the store "trusted" at A, working. */
async function withWorkingStore(z: ReturnType<typeof zone>, logs: string[]): Promise<{ h: Harness; id: string; classify(): Promise<ClassifyResult> }> {
  z.names.set('old.restart.test', ['127.0.0.1']);
  const h = await startHarness({ resolveStoreHost: (host) => z.resolve(host), storePolicy: policy, storeRetryMs: 200, log: (l) => logs.push(l) });
  harnesses.push(h);
  const r = await h.call([
    ['x:SpamRule/set', { create: rules }, 'r'],
    ['x:StoreLookup/set', { create: { k: { namespace: NAMESPACE, store: storeAt('old.restart.test', a.port) } } }, 's'],
  ]);
  const id = r[1]![1].created?.k?.id as string;
  expect(id, JSON.stringify(r)).toBeTypeOf('string');
  await h.server.settled();
  const engine = h.server.engine as unknown as { classify(raw: string): Promise<ClassifyResult> };
  return { h, id, classify: () => engine.classify(mail) };
}

describe('a store changed to a configuration that cannot start (the JMAP server\'s own engine)', () => {
  it.each(failures(0, zone()).map(([what]) => [what]))('%s: the old store stops, lookups fail as from a store that is down', async (what) => {
    const z = zone();
    const [, change, error] = failures(b.port, z).find(([w]) => w === what)!;
    const logs: string[] = [];
    const { h, id, classify } = await withWorkingStore(z, logs);
    expect((await classify()).tags).toEqual(expect.arrayContaining(['TRUSTED_A', 'SUBJECT_SEEN']));
    expect(clientsConnected(a.port)).toBeGreaterThan(0);

    const [[, res]] = await h.call([['x:StoreLookup/set', { update: { [id]: { store: change() } } }, 'u']]);
    expect(res!.updated, JSON.stringify(res)).toHaveProperty(id);
    await h.server.settled();
    expect(logs.join('\n')).toMatch(/lookup store "trusted" not started: /);

    const before = commandsRun(a.port);
    for (let i = 0; i < 3; i++) {
      // The rule using the store failed, with the reason; the other rule ran.
      expectStoreDown(await classify(), error);
    }
    // The old configuration is gone: A got no command and holds no connection of the store.
    expect(commandsRun(a.port)).toBe(before);
    await waitFor('the old connections closed', () => clientsConnected(a.port) === 0, 5_000, 50);
  });

  it('a name that gave no address is tried again: once it resolves, the new configuration starts; a destroy removes the namespace', async () => {
    const z = zone();
    const [, change] = failures(b.port, z)[0]!;
    const { h, id, classify } = await withWorkingStore(z, []);
    await h.call([['x:StoreLookup/set', { update: { [id]: { store: change() } } }, 'u']]);
    await h.server.settled();
    // Retries that find the name still unresolved keep it not started.
    await new Promise((r) => setTimeout(r, 500));
    expect((await classify()).errors.map((e) => e.store)).toEqual([NAMESPACE]);

    z.names.set('new.restart.test', ['127.0.0.1']);
    let v = await classify();
    await waitFor('the store started on a retry', async () => (v = await classify()).tags.includes('TRUSTED_B'), 10_000, 50);
    expect(v.errors).toEqual([]);
    expect(v.tags).toContain('SUBJECT_SEEN');

    await h.call([['x:StoreLookup/set', { destroy: [id] }, 'd']]);
    await h.server.settled();
    // An unknown namespace again: lookups answer "" (no tag), no error.
    v = await classify();
    expect(v.errors).toEqual([]);
    expect(v.tags).not.toContain('TRUSTED_B');
    expect(v.tags).toContain('SUBJECT_SEEN');
  });
});
