/**
 * `buildEngineFromSpec` with the engine it replaces (a worker's rule-set change): the classifier (its
 * model loaded once) and the DNS resolver (its cache) carry over when their configuration is the same,
 * and stay open when the old engine is closed keeping its shared parts (as the worker threads close a
 * replaced engine); anything changed is built anew. And the
 * spec's `ruleWaitMs` reaches the stores' circuit breakers.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openClassifier, sqliteModelConfig } from '../../src/classifier/index.js';
import { buildEngineFromSpec, sharedParts, type RuleSetSpec } from '../../src/server/ruleset.js';
import type { SpamRuleInput } from '../../src/engine/types.js';
import { hamMessage, spamMessage } from '../classifier/helpers.js';
import { startRedis } from '../servers/index.js';

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
    // The old engine retires: closing it, keeping what the new one shares, leaves the classifier's store open.
    expect(sharedParts(one, [one, two]).sort()).toEqual(['classifier', 'dns']);
    await one.close({ keep: sharedParts(one, [two]) });
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
    expect(sharedParts(two, [three])).toEqual([]);
    await two.close();
    await three.close();
  }, 60_000);
});

describe('the stores of an engine built from a spec', () => {
  it('count a lookup as failed once no rule waits for it (ruleWaitMs): a frozen store is down within a few messages', async () => {
    const redis = await startRedis();
    const engine = buildEngineFromSpec({
      rules: [{ '@type': 'Any', name: 'READS', priority: 1, condition: { match: [{ if: "key_exists('frozen', from.domain)", then: "'LISTED'" }], else: 'false' } }, rule('RAN')],
      // The store's own timeout is 10 s.
      stores: [{ namespace: 'frozen', config: { '@type': 'Redis', url: redis.url, timeout: 10_000 } }],
      engine: { analysis: false, ruleWaitMs: 300 },
    });
    try {
      const classify = (i: number) => engine.classify(`From: a@d${i}.example\r\nSubject: ${i}\r\n\r\nhello\r\n`);
      expect((await classify(0)).errors).toEqual([]);
      redis.pause();
      const errors: string[] = [];
      const started = performance.now();
      // One sender domain per message: each message asks the store (a lookup of a key already under
      // way would join it rather than ask again).
      for (let i = 1; i <= 6; i++) {
        const r = await classify(i);
        expect(r.tags).toContain('RAN');
        errors.push(r.errors.map((e) => e.message).join('; '));
      }
      // Three waits of 300 ms, then the lookups fail at once. The rule's wait and the breaker's slow-call
      // timer both end 300 ms into a lookup, so on a loaded machine the third failure may be counted just
      // after the next message has asked the store: messages 3 and 4 may still wait; from 5 on, none does.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(errors.slice(0, 2).every((e) => /wait budget .*300 ms/.test(e))).toBe(true);
      for (const e of errors.slice(2, 4)) expect(e).toMatch(/wait budget .*300 ms|store is down .*no answer within 300 ms/);
      expect(errors.slice(4).every((e) => /store is down .*no answer within 300 ms/.test(e))).toBe(true);
    } finally {
      redis.resume();
      await engine.close();
      await redis.stop();
    }
  }, 60_000);
});
