import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
let existing: string;
beforeAll(async () => {
  h = await startHarness();
  const r = await h.call([['x:SpamRule/set', { create: { a: rule('EXISTING') } }, 's']]);
  existing = r[0]![1].created.a.id;
});
afterAll(() => h.close());

describe('permissions (docs/jmap.md)', () => {
  it('get and query without permission give method-level forbidden (§7 case 2)', async () => {
    const tok = h.token(['sysSpamRuleQuery', 'sysStoreLookupGet']);
    const r = await h.call(
      [
        ['x:SpamRule/get', { ids: null }, 'a'],
        ['x:SpamRule/query', {}, 'b'],
        ['x:StoreLookup/get', { ids: null }, 'c'],
        ['x:StoreLookup/query', {}, 'd'],
      ],
      tok,
    );
    expect(r[0]).toEqual(['error', { type: 'forbidden', description: 'missing permission sysSpamRuleGet' }, 'a']);
    expect(r[1]![1].ids).toEqual([existing]);
    expect(r[2]![1].list).toEqual([]);
    expect(r[3]).toEqual(['error', { type: 'forbidden', description: 'missing permission sysStoreLookupQuery' }, 'd']);
  });

  it('set: each forbidden create/update/destroy gets its own forbidden SetError, the rest proceed', async () => {
    const tok = h.token(['sysSpamRuleCreate', 'sysSpamRuleGet']);
    const r = await h.call([['x:SpamRule/set', { create: { n: rule('PERMITTED') }, update: { [existing]: { priority: 1 } }, destroy: [existing] }, 's']], tok);
    const res = r[0]![1];
    expect(Object.keys(res.created)).toEqual(['n']);
    expect(res.notUpdated).toEqual({ [existing]: { type: 'forbidden', description: 'missing permission sysSpamRuleUpdate' } });
    expect(res.notDestroyed).toEqual({ [existing]: { type: 'forbidden', description: 'missing permission sysSpamRuleDestroy' } });
    const g = await h.call([['x:SpamRule/get', { ids: [existing], properties: ['priority'] }, 'g']]);
    expect(g[0]![1].list).toEqual([{ id: existing, priority: 500 }]);
  });

  it('a token with update only may update but not create or destroy', async () => {
    const tok = h.token(['sysSpamRuleUpdate']);
    const r = await h.call([['x:SpamRule/set', { create: { n: rule('NOPE') }, update: { [existing]: { priority: 2 } }, destroy: ['zz'] }, 's']], tok);
    const res = r[0]![1];
    expect(res.notCreated.n.type).toBe('forbidden');
    expect(res.updated).toEqual({ [existing]: null });
    expect(res.notDestroyed.zz.type).toBe('forbidden');
  });

  it('a token without any permission gets forbidden everywhere and an empty set is harmless', async () => {
    const tok = h.token([]);
    const r = await h.call(
      [
        ['x:SpamRule/set', {}, 'a'],
        ['x:StoreLookup/set', { create: { s: { store: { '@type': 'Redis' } } } }, 'b'],
      ],
      tok,
    );
    expect(r[0]![1]).toMatchObject({ created: null, updated: null, destroyed: null });
    expect(r[1]![1].notCreated.s.type).toBe('forbidden');
  });

  it('SpamRule permissions do not grant StoreLookup access', async () => {
    const tok = h.token(['sysSpamRuleGet', 'sysSpamRuleCreate', 'sysSpamRuleUpdate', 'sysSpamRuleDestroy', 'sysSpamRuleQuery']);
    const r = await h.call(
      [
        ['x:StoreLookup/get', {}, 'a'],
        ['x:StoreLookup/set', { create: { s: { store: { '@type': 'Redis' } } } }, 'b'],
      ],
      tok,
    );
    expect(r[0]![1].type).toBe('forbidden');
    expect(r[1]![1].notCreated.s.type).toBe('forbidden');
  });
});
