/**
 * Stalwart's published rule JSON (index-keyed `match` objects) goes through x:SpamRule/set unchanged
 * and reads back identical apart from the list form (docs/jmap.md).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { startHarness, type Harness } from './harness.js';

describe.skipIf(!hasSharedData)('importing spam-filter-rules.json over JMAP', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('accepts all 66 published SpamRules and returns them with array lists', async () => {
    const bundle = JSON.parse(readFileSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), 'utf8')) as { SpamRule: any[] };
    const create = Object.fromEntries(bundle.SpamRule.map((r, i) => [`r${i}`, r]));
    const r = await h.call([
      ['x:SpamRule/set', { create }, 's'],
      ['x:SpamRule/get', { '#ids': { resultOf: 's', name: 'x:SpamRule/set', path: '/created/*/id' } }, 'g'],
    ]);
    expect(r[0]![1].notCreated).toBeNull();
    expect(Object.keys(r[0]![1].created)).toHaveLength(66);
    const byName = new Map(r[1]![1].list.map((x: any) => [x.name, x]));
    for (const src of bundle.SpamRule) {
      const got = byName.get(src.name) as any;
      const match = Object.keys(src.condition.match ?? {})
        .sort((a, b) => Number(a) - Number(b))
        .map((k) => src.condition.match[k]);
      expect(got).toEqual({ id: got.id, '@type': src['@type'], name: src.name, description: null, enable: src.enable, priority: src.priority, condition: { match, else: src.condition.else } });
    }
  });
});
