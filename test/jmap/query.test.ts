import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
const ids: Record<string, string> = {};
let storeIds: Record<string, string> = {};
beforeAll(async () => {
  h = await startHarness({ queryMaxResults: 5 });
  const rules: [string, number][] = [
    ['SPF_FAIL', 10],
    ['DKIM_FAIL', 30],
    ['spf_soft', 20],
    ['HAS_URL', 20],
    ['BODY_X', -5],
  ];
  const r = await h.call([['x:SpamRule/set', { create: Object.fromEntries(rules.map(([n, p]) => [n, rule(n, { priority: p })])) }, 's']]);
  for (const [n] of rules) ids[n] = r[0]![1].created[n].id;
  const s = await h.call([
    [
      'x:StoreLookup/set',
      {
        create: {
          sql: { namespace: 'sql', store: { '@type': 'Sqlite', path: 'a.db' } },
          pg: { namespace: 'pg-main', store: { '@type': 'PostgreSql', host: 'db' } },
          redis: { namespace: 'cache', store: { '@type': 'Redis' } },
        },
      },
      's',
    ],
  ]);
  storeIds = Object.fromEntries(Object.entries(s[0]![1].created).map(([k, v]: [string, any]) => [k, v.id]));
});
afterAll(() => h.close());

async function q(args: Record<string, unknown>, type = 'SpamRule'): Promise<any> {
  return (await h.call([[`x:${type}/query`, args, 'q']]))[0]![1];
}

describe('x:SpamRule/query', () => {
  it('returns every id in creation order by default, with state and canCalculateChanges', async () => {
    const r = await q({ limit: 10 });
    expect(r).toEqual({
      accountId: 'a',
      queryState: r.queryState,
      canCalculateChanges: true,
      position: 0,
      ids: [ids.SPF_FAIL, ids.DKIM_FAIL, ids.spf_soft, ids.HAS_URL, ids.BODY_X],
    });
    const g = await h.call([['x:SpamRule/get', { ids: [] }, 'g']]);
    expect(r.queryState).toBe(g[0]![1].state);
  });

  it("filters name by case-insensitive substring (docs/jmap.md, not Stalwart's exact match)", async () => {
    expect((await q({ filter: { name: 'spf' } })).ids).toEqual([ids.SPF_FAIL, ids.spf_soft]);
    expect((await q({ filter: { name: '_fail' } })).ids).toEqual([ids.SPF_FAIL, ids.DKIM_FAIL]);
    expect((await q({ filter: { name: 'nothing' } })).ids).toEqual([]);
  });

  it('combines AND / OR / NOT and the seed names AllOf / AnyOf / Not, nested', async () => {
    const or = { operator: 'OR', conditions: [{ name: 'spf' }, { name: 'dkim' }] };
    expect((await q({ filter: or })).ids).toEqual([ids.SPF_FAIL, ids.DKIM_FAIL, ids.spf_soft]);
    const nested = { operator: 'AND', conditions: [or, { operator: 'NOT', conditions: [{ name: 'soft' }] }] };
    expect((await q({ filter: nested })).ids).toEqual([ids.SPF_FAIL, ids.DKIM_FAIL]);
    const seed = { operator: 'AllOf', conditions: [{ operator: 'AnyOf', conditions: [{ name: 'url' }, { name: 'body' }] }, { operator: 'Not', conditions: [{ name: 'body' }] }] };
    expect((await q({ filter: seed })).ids).toEqual([ids.HAS_URL]);
  });

  it('sorts by priority, name and id, ascending or descending, ties in creation order', async () => {
    expect((await q({ sort: [{ property: 'priority' }] })).ids).toEqual([ids.BODY_X, ids.SPF_FAIL, ids.spf_soft, ids.HAS_URL, ids.DKIM_FAIL]);
    expect((await q({ sort: [{ property: 'priority', isAscending: false }, { property: 'name' }], limit: 3 })).ids).toEqual([
      ids.DKIM_FAIL,
      ids.HAS_URL,
      ids.spf_soft,
    ]);
    expect((await q({ sort: [{ property: 'name' }], limit: 2 })).ids).toEqual([ids.BODY_X, ids.DKIM_FAIL]);
    expect((await q({ sort: [{ property: 'id', isAscending: false }], limit: 1 })).ids).toEqual([ids.BODY_X]);
  });

  it('windows with position (negative from the end), anchor + anchorOffset, limit and calculateTotal', async () => {
    expect(await q({ position: 1, limit: 2, calculateTotal: true })).toMatchObject({ position: 1, ids: [ids.DKIM_FAIL, ids.spf_soft], total: 5 });
    expect(await q({ position: -2 })).toMatchObject({ position: 3, ids: [ids.HAS_URL, ids.BODY_X] });
    expect(await q({ position: 99 })).toMatchObject({ position: 5, ids: [] });
    expect(await q({ anchor: ids.spf_soft, anchorOffset: -1, limit: 2 })).toMatchObject({ position: 1, ids: [ids.DKIM_FAIL, ids.spf_soft] });
    expect(await q({ anchor: ids.SPF_FAIL, anchorOffset: -3, limit: 1 })).toMatchObject({ position: 0, ids: [ids.SPF_FAIL] });
    expect((await q({ limit: 0 })).ids).toEqual([]);
    expect((await q({})).total).toBeUndefined();
  });

  it('caps results at queryMaxResults and says so with limit', async () => {
    await h.call([['x:SpamRule/set', { create: { extra: rule('EXTRA') } }, 's']]);
    const r = await q({});
    expect(r.ids).toHaveLength(5);
    expect(r.limit).toBe(5);
    expect((await q({ limit: 2 })).limit).toBeUndefined();
  });

  it('gives anchorNotFound, unsupportedFilter, unsupportedSort, invalidArguments', async () => {
    expect((await q({ anchor: 'zzz' })).type).toBe('anchorNotFound');
    expect((await q({ filter: { priority: 5 } })).type).toBe('unsupportedFilter');
    expect((await q({ filter: { name: 5 } })).type).toBe('invalidArguments'); // a known filter, the wrong type
    expect((await q({ sort: [{ property: 'enable' }] })).type).toBe('unsupportedSort');
    expect((await q({ sort: [{}] })).type).toBe('invalidArguments');
    expect((await q({ position: 'x' })).type).toBe('invalidArguments');
  });
});

describe('x:StoreLookup/query', () => {
  it('filters by namespace substring and by store type, sorts by namespace', async () => {
    expect((await q({ filter: { namespace: 'PG' } }, 'StoreLookup')).ids).toEqual([storeIds.pg]);
    expect((await q({ filter: { type: 'Redis' } }, 'StoreLookup')).ids).toEqual([storeIds.redis]);
    expect((await q({ filter: { operator: 'NOT', conditions: [{ type: 'Redis' }] } }, 'StoreLookup')).ids).toEqual([storeIds.sql, storeIds.pg]);
    expect((await q({ sort: [{ property: 'namespace' }] }, 'StoreLookup')).ids).toEqual([storeIds.redis, storeIds.pg, storeIds.sql]);
    expect((await q({ filter: { host: 'db' } }, 'StoreLookup')).type).toBe('unsupportedFilter');
    expect((await q({ sort: [{ property: 'priority' }] }, 'StoreLookup')).type).toBe('unsupportedSort');
  });
});

describe('sort collations (RFC 8620 §5.5)', () => {
  it('orders by the advertised collations, and refuses one it does not know', async () => {
    const x = await startHarness();
    try {
      const tags = ['B_LOW', 'b_up', 'a_low', 'B_mid', '10_x', '9_x'];
      const made = (await x.call([['x:SpamTag/set', { create: Object.fromEntries(tags.map((t, i) => [`t${i}`, { '@type': 'Score', tag: t, score: 1 }])) }, 'a']]))[0]![1].created;
      const idOf = Object.fromEntries(tags.map((t, i) => [made[`t${i}`].id as string, t]));
      const order = async (collation?: string): Promise<string[]> => {
        const r = (await x.call([['x:SpamTag/query', { sort: [{ property: 'tag', ...(collation !== undefined ? { collation } : {}) }] }, 'q']]))[0]![1];
        return (r.ids as string[]).map((id) => idOf[id]!);
      };
      expect(await order()).toEqual(['10_x', '9_x', 'B_LOW', 'B_mid', 'a_low', 'b_up']); // binary
      expect(await order('i;ascii-casemap')).toEqual(['10_x', '9_x', 'a_low', 'B_LOW', 'B_mid', 'b_up']);
      expect(await order('i;unicode-casemap')).toEqual(['10_x', '9_x', 'a_low', 'B_LOW', 'B_mid', 'b_up']);
      expect((await order('i;ascii-numeric')).slice(0, 2)).toEqual(['9_x', '10_x']);
      const bad = (await x.call([['x:SpamTag/query', { sort: [{ property: 'tag', collation: 'i;bogus' }] }, 'q']]))[0]!;
      expect(bad).toMatchObject(['error', { type: 'unsupportedSort' }, 'q']);
    } finally {
      await x.close();
    }
  });
});
