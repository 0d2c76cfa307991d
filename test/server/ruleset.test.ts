/**
 * `buildEngineFromSpec` with the engine it replaces (a worker's rule-set change): the classifier (its
 * model loaded once) and the DNS resolver (its cache) carry over when their configuration is the same,
 * and stay open when the old engine's stores are closed; anything changed is built anew.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openClassifier, sqliteModelConfig } from '../../src/classifier/index.js';
import { buildEngineFromSpec, type RuleSetSpec } from '../../src/server/ruleset.js';
import type { SpamRuleInput } from '../../src/engine/types.js';
import { hamMessage, spamMessage } from '../classifier/helpers.js';

const rule = (name: string): SpamRuleInput => ({ '@type': 'Any', name, priority: 1, condition: { match: [{ if: 'true', then: `'${name}'` }], else: 'false' } });

describe('an engine rebuilt for a new rule set', () => {
  it('keeps the classifier and the DNS resolver it can, and the kept classifier stays open', async () => {
    const model = join(mkdtempSync(join(tmpdir(), 'spamrule-ruleset-')), 'model.sqlite');
    const setup = await openClassifier(sqliteModelConfig(model), { settings: { minHamSamples: 3, minSpamSamples: 3 }, refreshMs: 0 });
    for (let i = 0; i < 3; i++) await setup.learn(spamMessage(i), true);
    for (let i = 0; i < 3; i++) await setup.learn(hamMessage(i), false);
    expect((await setup.train({ seed: 1 })).ready).toBe(true);
    await setup.store.store.close();

    const spec1: RuleSetSpec = { rules: [rule('ONE')], classifier: sqliteModelConfig(model), dns: 'system:127.0.0.1:53' };
    const one = buildEngineFromSpec(spec1);
    const spec2: RuleSetSpec = { ...spec1, rules: [rule('TWO')] };
    const two = buildEngineFromSpec(spec2, () => {}, { spec: spec1, engine: one });
    expect(two.classifier).toBe(one.classifier);
    expect(two.dns).toBe(one.dns);
    // The old engine retires: closing its stores leaves the classifier's store open for the new one.
    await one.lookups.close();
    const r = await two.classify(spamMessage(9));
    expect(r.tags).toContain('TWO');
    expect(r.errors).toEqual([]);
    expect(r.classifier?.generation).toBe(1);

    // A different classifier store, or a static DNS zone (its file may have been edited): built anew.
    const other = join(mkdtempSync(join(tmpdir(), 'spamrule-ruleset-')), 'other.sqlite');
    const spec3: RuleSetSpec = { ...spec2, classifier: sqliteModelConfig(other), dns: 'off' };
    const three = buildEngineFromSpec(spec3, () => {}, { spec: spec2, engine: two });
    expect(three.classifier).not.toBe(two.classifier);
    expect(three.dns).not.toBe(two.dns);
    await two.lookups.close();
    await three.lookups.close();
  }, 60_000);
});
