/**
 * The fault scenario end to end: a Redis store used by a rule goes down in the middle of a run;
 * `classify` reports the error, sets no tag for that rule, runs the others, and recovers once the server
 * is back (docs/lookup-stores.md).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { createLookupStore, LookupMap, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
import { startRedis, waitFor } from '../servers/index.js';

const stores: LookupStore[] = [];
const open = (ns: string, config: Record<string, unknown>) => {
  const s = createLookupStore(ns, config, { cache: { enabled: false } });
  stores.push(s);
  return s;
};
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

describe('faults', () => {
  const rule = (name: string, cond: string, tag: string): SpamRuleInput => ({
    '@type': 'Any',
    name,
    priority: 1,
    enable: true,
    condition: { match: [{ if: cond, then: `'${tag}'` }], else: 'false' },
  });
  const MESSAGE = 'From: Spammer <a@spam.example>\r\nTo: b@example.org\r\nSubject: hello\r\nMessage-ID: <1@spam.example>\r\n\r\nbody\r\n';

  it('server stopped mid-run: classify reports the error and carries on; reconnects by itself', async () => {
    const server = await startRedis();
    try {
      const blocked = open('blocked', { '@type': 'Redis', url: server.url, timeout: 500 });
      const engine = new SpamEngine({
        lookups: new LookupMap().set('blocked', blocked),
        rules: [rule('BLOCKED_SENDER', "key_exists('blocked', from.domain)", 'BLOCKED'), rule('ALWAYS', 'true', 'SEEN')],
      });
      await blocked.keySet('spam.example', '1');
      let res = await engine.classify(MESSAGE);
      expect(res.tags).toContain('BLOCKED');
      expect(res.errors).toEqual([]);

      await server.kill();
      res = await engine.classify(MESSAGE);
      expect(res.tags).not.toContain('BLOCKED');
      expect(res.tags).toContain('SEEN');
      expect(res.errors).toHaveLength(1);
      expect(res.errors[0]!.source).toBe('BLOCKED_SENDER');
      expect(res.errors[0]!.message).toMatch(/lookup store "blocked"/);
      const direct = await blocked.keyGet('x').catch((e: unknown) => e);
      expect(direct).toBeInstanceOf(LookupStoreError);

      await server.start(); // empty again: no persistence
      await waitFor('reconnect', async () => (await blocked.keySet('spam.example', '1').then(() => true, () => false)), 20_000, 200);
      res = await engine.classify(MESSAGE);
      expect(res.tags).toContain('BLOCKED');
      expect(res.errors).toEqual([]);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
