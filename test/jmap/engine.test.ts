/**
 * The facade feeds the running engine: a rule created, changed or destroyed over JMAP decides the
 * next `classify` (DECISIONS.md §1 "take effect in the running engine at once"), and `classify --db`
 * reads the same rules through `loadManagedRuleSet`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManagedRuleSet } from '../../src/jmap/index.js';
import { startHarness, type Harness } from './harness.js';

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
      ['x:StoreLookup/set', { create: { s: { namespace: 'lists', store: { '@type': 'Sqlite', path: '/tmp/lists.db' } } } }, 't'],
    ]);
    const set = loadManagedRuleSet(h.db);
    expect(set.rules).toEqual([
      { id: r[0]![1].created.a.id, '@type': 'Header', name: 'MANAGED_A', description: null, enable: true, priority: 9, condition: { match: [], else: "'X'" } },
      { id: r[0]![1].created.b.id, '@type': 'Any', name: 'MANAGED_B', description: null, enable: true, priority: 500, condition: { match: [], else: 'false' } },
    ]);
    expect(set.stores).toEqual([{ namespace: 'lists', config: { path: '/tmp/lists.db', poolWorkers: null, poolMaxConnections: 10, '@type': 'Sqlite' } }]);
  });
});
