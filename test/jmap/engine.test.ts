/**
 * The facade feeds the running engine: a rule created, changed or destroyed over JMAP decides the
 * next `classify` (docs/jmap.md: changes take effect in the running engine at once), and `classify --db`
 * reads the same rules through `loadManagedRuleSet`.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManagedRuleSet } from '../../src/jmap/index.js';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const MESSAGE = 'From: a@example.com\r\nTo: b@example.org\r\nSubject: quarterly jmap-marker report\r\n\r\nHello.\r\n';

async function classify(): Promise<string[]> {
  const engine = h.server.engine as unknown as { classify(raw: string): Promise<{ tags: string[] }> };
  return (await engine.classify(MESSAGE)).tags;
}

describe('engine reload after JMAP changes', () => {
  it('a rule created over the API tags the next message; disabling and destroying remove it', async () => {
    expect(h.server.engine).toBeDefined();
    expect(await classify()).not.toContain('JMAP_MARK');
    const r = await h.call([
      [
        'x:SpamRule/set',
        { create: { n: { '@type': 'Any', name: 'JMAP_SUBJ', condition: { match: [{ if: "contains(subject, 'jmap-marker')", then: "'JMAP_MARK'" }], else: 'false' } } } },
        's',
      ],
    ]);
    const id = r[0]![1].created.n.id;
    expect(await classify()).toContain('JMAP_MARK');

    await h.call([['x:SpamRule/set', { update: { [id]: { 'condition/match/0/then': "'JMAP_MARK2'" } } }, 'u']]);
    let tags = await classify();
    expect(tags).toContain('JMAP_MARK2');
    expect(tags).not.toContain('JMAP_MARK');

    await h.call([['x:SpamRule/set', { update: { [id]: { enable: false } } }, 'u']]);
    expect(await classify()).not.toContain('JMAP_MARK2');

    await h.call([['x:SpamRule/set', { update: { [id]: { enable: true } } }, 'u']]);
    expect(await classify()).toContain('JMAP_MARK2');
    await h.call([['x:SpamRule/set', { destroy: [id] }, 'd']]);
    tags = await classify();
    expect(tags).not.toContain('JMAP_MARK2');
  });

  it('loadManagedRuleSet reads rules (creation order) and stores from the server database', async () => {
    const r = await h.call([
      ['x:SpamRule/set', { create: { a: { '@type': 'Header', name: 'MANAGED_A', priority: 9, condition: { else: "'X'" } }, b: { '@type': 'Any', name: 'MANAGED_B', condition: { else: 'false' } } } }, 's'],
      ['x:StoreLookup/set', { create: { s: { namespace: 'lists', store: { '@type': 'Sqlite', path: join(h.dir, 'lists.db') } } } }, 't'],
    ]);
    const set = loadManagedRuleSet(h.db);
    expect(set.rules).toEqual([
      { id: r[0]![1].created.a.id, '@type': 'Header', name: 'MANAGED_A', description: null, enable: true, priority: 9, condition: { match: [], else: "'X'" } },
      { id: r[0]![1].created.b.id, '@type': 'Any', name: 'MANAGED_B', description: null, enable: true, priority: 500, condition: { match: [], else: 'false' } },
    ]);
    expect(set.stores).toEqual([{ namespace: 'lists', config: { path: join(h.dir, 'lists.db'), poolWorkers: null, poolMaxConnections: 10, '@type': 'Sqlite' } }]);
  });
});

describe('reload hooks with an injected engine, validator and store factory', () => {
  it('reloads rules after every committed change (creation order), never after a refused one', async () => {
    const loads: string[][] = [];
    const engine = { loadRules: (rules: Record<string, unknown>[]) => loads.push(rules.map((r) => `${r.name}:${r.priority}`)) };
    const x = await startHarness({ engine });
    try {
      expect(loads).toEqual([[]]);
      const r = await x.call([['x:SpamRule/set', { create: { a: rule('ONE'), b: rule('TWO', { priority: 1 }) } }, 's']]);
      await x.call([['x:SpamRule/set', { update: { [r[0]![1].created.a.id]: { priority: 7 } } }, 'u']]);
      await x.call([['x:SpamRule/set', { create: { c: rule('ONE') } }, 'refused']]);
      await x.call([['x:SpamRule/set', { destroy: [r[0]![1].created.b.id] }, 'd']]);
      expect(loads).toEqual([[], ['ONE:500', 'TWO:1'], ['ONE:7', 'TWO:1'], ['ONE:7']]);
    } finally {
      await x.close();
    }
  });

  it('reports compile errors from the validator as invalidProperties with their paths', async () => {
    const x = await startHarness({
      validateCondition: (scope, c) => (c.match.some((m) => m.if.includes('(')) ? [{ path: 'condition/match/0/if', message: `unclosed "(" at 1:4 (${scope})` }] : []),
    });
    try {
      const r = await x.call([['x:SpamRule/set', { create: { a: { '@type': 'Ip', name: 'N', priority: 1e6, condition: { else: 'false', match: [{ if: 'len(', then: "'X'" }] } } } }, 's']]);
      expect(r[0]![1].notCreated.a).toEqual({
        type: 'invalidProperties',
        description: 'priority: must be in -99999..99999; condition/match/0/if: unclosed "(" at 1:4 (Ip)',
        properties: ['priority', 'condition/match/0/if'],
      });
    } finally {
      await x.close();
    }
  });

  it('builds, replaces and closes lookup stores in the engine as StoreLookups change', async () => {
    const events: string[] = [];
    const lookups = new Map<string, unknown>();
    const engine = {
      loadRules: () => undefined,
      lookups: { set: (ns: string, s: unknown) => lookups.set(ns, s), delete: (ns: string) => lookups.delete(ns) },
    };
    const x = await startHarness({
      engine,
      // A store starts once its host names resolve (its connections go to the addresses checked then).
      resolveStoreHost: async () => ['192.0.2.1'],
      createLookupStore: (ns, config: any) => {
        events.push(`open ${ns} ${config['@type']} ${config.url ?? config.path}`);
        return { close: async () => void events.push(`close ${ns} ${config.url ?? config.path}`) };
      },
    });
    try {
      const r = await x.call([['x:StoreLookup/set', { create: { s: { namespace: 'cache', store: { '@type': 'Redis', url: 'redis://one' } } } }, 's']]);
      const id = r[0]![1].created.s.id;
      await x.server.settled();
      expect([...lookups.keys()]).toEqual(['cache']);
      await x.call([['x:StoreLookup/set', { update: { [id]: { 'store/url': 'redis://two' } } }, 'u']]);
      await x.call([['x:StoreLookup/set', { destroy: [id] }, 'd']]);
      await x.server.settled();
      expect(events).toEqual(['open cache Redis redis://one', 'open cache Redis redis://two', 'close cache redis://one', 'close cache redis://two']);
      expect(lookups.size).toBe(0);
    } finally {
      await x.close();
    }
  });
});
