/**
 * `/queryChanges` (RFC 8620 §5.6): a client that applies `removed` and `added` to the results it
 * cached at `sinceQueryState` (remove the removed ids, then insert each added id at its index, lowest
 * first) has the current results, for every filter and sort, from every earlier state; `maxChanges`
 * gives `tooManyChanges`; unknown states `cannotCalculateChanges`; the permission of `/query`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

const call1 = async (name: string, args: Record<string, unknown>, token?: string) => (await h.call([[name, args, 'c']], token))[0]!;

/** The client side of §5.6. */
function apply(cached: string[], removed: string[], added: { id: string; index: number }[]): string[] {
  const gone = new Set(removed);
  const out = cached.filter((id) => !gone.has(id));
  for (const a of [...added].sort((x, y) => x.index - y.index)) out.splice(a.index, 0, a.id);
  return out;
}

/** A small deterministic generator, so that a failure can be replayed. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

describe('x:*/queryChanges', () => {
  it('brings a cached result list up to date, for filters and sorts on changing properties, from every earlier state', async () => {
    const queries: Record<string, unknown>[] = [
      {},
      { sort: [{ property: 'name' }] },
      { sort: [{ property: 'priority', isAscending: false }, { property: 'name' }] },
      { filter: { name: 'QC_A' } },
      { filter: { operator: 'OR', conditions: [{ name: 'QC_B' }, { name: 'QC_C' }] }, sort: [{ property: 'name', isAscending: false }] },
    ];
    const rnd = lcg(42);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const live: string[] = [];
    let n = 0;
    // The results of every query at every state, as a client would have cached them.
    const history: { state: string; results: string[][] }[] = [];
    const snapshot = async (): Promise<void> => {
      const results: string[][] = [];
      let state = '';
      for (const q of queries) {
        const r = await call1('x:SpamRule/query', q);
        expect(r[1].canCalculateChanges).toBe(true);
        results.push(r[1].ids as string[]);
        state = r[1].queryState as string;
      }
      history.push({ state, results });
    };
    await snapshot();
    for (let step = 0; step < 25; step++) {
      const create: Record<string, unknown> = {};
      const update: Record<string, unknown> = {};
      const destroy: string[] = [];
      // One to three operations a step, on distinct objects.
      const touched = new Set<string>();
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        const op = live.length === 0 ? 0 : Math.floor(rnd() * 3);
        // Names are unique: a letter, then a serial number.
        const name = `QC_${pick(['A', 'B', 'C', 'D'])}${++n}`;
        if (op === 0) create[`n${k}`] = rule(name, { priority: Math.floor(rnd() * 5) });
        else {
          const id = pick(live);
          if (touched.has(id)) continue;
          touched.add(id);
          if (op === 1) update[id] = rnd() < 0.5 ? { name } : { priority: Math.floor(rnd() * 5) };
          else destroy.push(id);
        }
      }
      const r = await call1('x:SpamRule/set', { create, update, destroy });
      expect(r[0]).toBe('x:SpamRule/set');
      for (const c of Object.values((r[1].created ?? {}) as Record<string, { id: string }>)) live.push(c.id);
      for (const d of (r[1].destroyed ?? []) as string[]) live.splice(live.indexOf(d), 1);
      await snapshot();
    }
    // `name` filters match a substring: renames move rules in and out of the filtered results.
    const now = history.at(-1)!;
    for (const past of history) {
      for (let qi = 0; qi < queries.length; qi++) {
        const r = await call1('x:SpamRule/queryChanges', { ...queries[qi], sinceQueryState: past.state, calculateTotal: true });
        expect(r[0]).toBe('x:SpamRule/queryChanges');
        expect(r[1]).toMatchObject({ oldQueryState: past.state, newQueryState: now.state, total: now.results[qi]!.length });
        expect(apply(past.results[qi]!, r[1].removed, r[1].added)).toEqual(now.results[qi]);
      }
    }
  });

  it('nothing changed: empty lists; maxChanges exceeded: tooManyChanges', async () => {
    const q = await call1('x:SpamRule/query', {});
    const since = q[1].queryState as string;
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since }))[1]).toMatchObject({ oldQueryState: since, newQueryState: since, removed: [], added: [] });
    await call1('x:SpamRule/set', { create: { a: rule('QC_MAX_1'), b: rule('QC_MAX_2') } });
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since, maxChanges: 1 }))[1].type).toBe('tooManyChanges');
    const ok = (await call1('x:SpamRule/queryChanges', { sinceQueryState: since, maxChanges: 2 }))[1];
    expect(ok.added).toHaveLength(2);
  });

  it('refuses unknown or future states, bad arguments, and a token without the /query permission', async () => {
    for (const sinceQueryState of ['s999999', 'bogus', '']) {
      expect((await call1('x:SpamRule/queryChanges', { sinceQueryState }))[1].type).toBe('cannotCalculateChanges');
    }
    for (const sinceQueryState of [null, 5, undefined]) {
      expect((await call1('x:SpamRule/queryChanges', { sinceQueryState }))[1].type).toBe('invalidArguments');
    }
    const since = (await call1('x:SpamRule/query', {}))[1].queryState as string;
    for (const bad of [{ maxChanges: 0 }, { maxChanges: 'x' }, { upToId: 5 }, { calculateTotal: 'yes' }, { sort: 'name' }]) {
      expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since, ...bad }))[1].type).toBe('invalidArguments');
    }
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since, filter: { nope: 'x' } }))[1].type).toBe('unsupportedFilter');
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since, sort: [{ property: 'condition' }] }))[1].type).toBe('unsupportedSort');
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since }, h.token(['sysSpamRuleGet'])))[1].type).toBe('forbidden');
    expect((await call1('x:SpamRule/queryChanges', { sinceQueryState: since }, h.token(['sysSpamRuleQuery'])))[0]).toBe('x:SpamRule/queryChanges');
    // Other types too (here StoreLookup, sorted by namespace).
    const s = await call1('x:StoreLookup/query', { sort: [{ property: 'namespace' }] });
    expect((await call1('x:StoreLookup/queryChanges', { sinceQueryState: s[1].queryState, sort: [{ property: 'namespace' }] }))[1]).toMatchObject({ removed: [], added: [] });
  });
});
