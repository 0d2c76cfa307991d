/**
 * `/changes` (RFC 8620 §5.2): what changed since a state, merged per id, in whole steps up to
 * `maxChanges`, with `cannotCalculateChanges` for states the log does not reach; the permission of
 * `/get`; the log is kept for the last CHANGES_KEPT states.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGES_KEPT } from '../../src/jmap/changes.js';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

const changes = async (args: Record<string, unknown>, type = 'SpamRule', token?: string) => (await h.call([[`x:${type}/changes`, args, 'c']], token))[0]!;

describe('x:*/changes', () => {
  it('merges the steps since a state per id, and cuts at whole steps for maxChanges', async () => {
    const s0 = (await h.call([['x:SpamRule/get', { ids: [] }, 'g']]))[0]![1].state as string;
    const r1 = await h.call([['x:SpamRule/set', { create: { a: rule('CH_A'), b: rule('CH_B') } }, 's']]);
    const { a, b } = { a: r1[0]![1].created.a.id as string, b: r1[0]![1].created.b.id as string };
    const s1 = r1[0]![1].newState as string;
    await h.call([['x:SpamRule/set', { update: { [a]: { priority: 7 } } }, 's']]);
    await h.call([['x:SpamRule/set', { destroy: [b] }, 's']]);
    const r4 = await h.call([['x:SpamRule/set', { create: { c: rule('CH_C') } }, 's']]);
    const c = r4[0]![1].created.c.id as string;
    const s4 = r4[0]![1].newState as string;

    // Created then updated is created; created then destroyed is left out.
    expect(await changes({ sinceState: s0 })).toEqual(['x:SpamRule/changes', {
      accountId: expect.any(String), oldState: s0, newState: s4, hasMoreChanges: false, created: [a, c], updated: [], destroyed: [],
    }, 'c']);
    const since1 = (await changes({ sinceState: s1 }))[1];
    expect(since1).toMatchObject({ oldState: s1, newState: s4, hasMoreChanges: false, created: [c], updated: [a], destroyed: [b] });
    // One id a step: the first step after s1 only, then the rest from there.
    const part = (await changes({ sinceState: s1, maxChanges: 1 }))[1];
    expect(part).toMatchObject({ oldState: s1, hasMoreChanges: true, created: [], updated: [a], destroyed: [] });
    const rest = (await changes({ sinceState: part.newState, maxChanges: 2 }))[1];
    expect(rest).toMatchObject({ newState: s4, hasMoreChanges: false, created: [c], updated: [], destroyed: [b] });
    expect(await changes({ sinceState: s4 })).toMatchObject(['x:SpamRule/changes', { oldState: s4, newState: s4, hasMoreChanges: false, created: [], updated: [], destroyed: [] }, 'c']);
    // A step larger than maxChanges cannot be split.
    expect((await changes({ sinceState: s0, maxChanges: 1 }))[1].type).toBe('cannotCalculateChanges');
  });

  it('answers cannotCalculateChanges for a state it does not know, invalidArguments for a missing one or a bad maxChanges', async () => {
    for (const sinceState of ['s999999', 'bogus', '']) {
      const r = await changes({ sinceState });
      expect(r[0]).toBe('error');
      expect(r[1].type).toBe('cannotCalculateChanges');
    }
    // Not a state string at all (missing, null, a number): a malformed call (RFC 8620 §3.6.2).
    for (const sinceState of [undefined, null, 5]) expect((await changes({ sinceState }))[1].type).toBe('invalidArguments');
    for (const maxChanges of [0, -1, 1.5, 'x']) expect((await changes({ sinceState: 's0', maxChanges }))[1].type).toBe('invalidArguments');
  });

  it('needs the permission of /get', async () => {
    const tok = h.token(['sysSpamRuleQuery']);
    expect((await changes({ sinceState: 's0' }, 'SpamRule', tok))[1].type).toBe('forbidden');
    const reader = h.token(['sysSpamRuleGet']);
    expect((await changes({ sinceState: 's0' }, 'SpamRule', reader))[0]).toBe('x:SpamRule/changes');
  });

  it(`keeps the changes of the last ${CHANGES_KEPT} states of a type`, async () => {
    const s0 = (await h.call([['x:SpamTag/get', { ids: [] }, 'g']]))[0]![1].state as string;
    const created = await h.call([['x:SpamTag/set', { create: { t: { '@type': 'Score', tag: 'CH_TAG', score: 0 } } }, 's']]);
    const id = created[0]![1].created.t.id as string;
    // Enough single-update steps to pass the limit, sent in requests of 16 calls (maxCallsInRequest).
    for (let i = 0; i < CHANGES_KEPT + 100; i += 16) {
      const calls = Array.from({ length: 16 }, (_, k) => ['x:SpamTag/set', { update: { [id]: { score: (i + k) % 7 === 0 ? 1 : (i + k) / 1000 } } }, `u${k}`] as [string, Record<string, unknown>, string]);
      await h.call(calls);
    }
    expect((await changes({ sinceState: s0 }, 'SpamTag'))[1].type).toBe('cannotCalculateChanges');
    const now = (await h.call([['x:SpamTag/get', { ids: [] }, 'g']]))[0]![1].state as string;
    const recent = `s${Number(now.slice(1)) - 10}`;
    expect((await changes({ sinceState: recent }, 'SpamTag'))[1]).toMatchObject({ newState: now, updated: [id], created: [], destroyed: [] });
  }, 120_000);
});
