/**
 * `SpamEnginePool`: the same verdicts as `SpamEngine.classify`, rule-set updates that apply to the
 * next message on every thread (also a thread restarted after a time-out), and its documented
 * failures (`ScanError` reasons).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { BroadcastChannel } from 'node:worker_threads';
import { DnsConfigError } from '../../src/dns/index.js';
import { LookupConfigError } from '../../src/lookup/index.js';
import { ScanError, SpamEnginePool } from '../../src/server/index.js';
import { defaultSpec } from './harness.js';

const pools: SpamEnginePool[] = [];
afterAll(async () => {
  for (const p of pools) await p.close();
});

const rule = (tag: string): SpamRuleInput => ({ '@type': 'Any', name: `R_${tag}`, condition: { match: [{ if: "contains(subject, 'marker')", then: `'${tag}'` }], else: 'false' } });
const marked = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: a marker here\r\n\r\nhello\r\n';

/** Classifies until a thread that is still starting (or restarting) answers. */
async function eventually(pool: SpamEnginePool, raw: string): Promise<string[]> {
  for (let i = 0; ; i++) {
    try {
      return (await pool.classify(raw)).tags;
    } catch (e) {
      if (!(e instanceof ScanError && e.reason === 'timeout') || i > 20) throw e;
    }
  }
}

describe('SpamEnginePool', () => {
  it('gives the verdict SpamEngine gives, and takes rule-set updates on every thread', async () => {
    const spec = defaultSpec();
    const pool = new SpamEnginePool({ ...spec, workers: 2 });
    pools.push(pool);
    const engine = new SpamEngine({ rules: spec.rules, tags: spec.tags, lookups: undefined, analysis: spec.engine?.analysis });
    const inProcess = await engine.classify(marked, { session: { remoteIp: '192.0.2.7', heloDomain: 'mx.example.org' } });
    const pooled = await pool.classify(marked, { session: { remoteIp: '192.0.2.7', heloDomain: 'mx.example.org' } });
    expect(pooled.tags).toEqual(inProcess.tags);
    expect(pooled.score).toBe(inProcess.score);
    expect(pooled.action).toBe(inProcess.action);

    pool.update({ rules: [rule('ONE')] });
    const r1 = await Promise.all([1, 2, 3, 4].map(() => pool.classify(marked)));
    for (const r of r1) expect(r.tags).toContain('ONE');
    pool.loadRules([rule('TWO')]);
    const r2 = await Promise.all([1, 2, 3, 4].map(() => pool.classify(marked, { tags: new Set(['UPSTREAM']) })));
    for (const r of r2) {
      expect(r.tags).toContain('TWO');
      expect(r.tags).not.toContain('ONE');
      expect(r.tags).toContain('UPSTREAM');
    }
  }, 60_000);

  it('refuses a bad DNS spec or store configuration where it is given, and reports refused rules', async () => {
    // Before, both reached the threads, which only warned: every scan then failed ("worker failed: --dns
    // sytem: …"), or the store's lookups answered "" (a blocklist that never matched).
    expect(() => new SpamEnginePool({ rules: [], dns: 'sytem', workers: 1 })).toThrow(DnsConfigError);
    const badStore = { namespace: 'blocked', config: { '@type': 'Redis', urll: 'redis://127.0.0.1:6379' } };
    expect(() => new SpamEnginePool({ rules: [], stores: [badStore], workers: 1 })).toThrow(LookupConfigError);
    const broken: SpamRuleInput = { '@type': 'Any', name: 'R_BROKEN', condition: { match: [{ if: 'contains(subject', then: "'X'" }], else: 'false' } };
    const pool = new SpamEnginePool({ rules: [rule('GOOD'), broken], workers: 1, engine: { analysis: false } });
    pools.push(pool);
    expect(pool.loadReport).toMatchObject({ loaded: 1, errors: [{ rule: 'R_BROKEN', path: 'condition/match/0/if' }] });
    expect(pool.loadRules([rule('GOOD')])).toMatchObject({ loaded: 1, errors: [] });
    expect(() => pool.update({ rules: [rule('OTHER')], stores: [badStore] })).toThrow(LookupConfigError);
    // The rule set in force stays.
    expect(pool.ruleSet.rules.map((r) => r.name)).toEqual(['R_GOOD']);
    expect(await eventually(pool, marked)).toContain('GOOD');
  }, 60_000);

  it('a rule set a thread cannot build leaves the previous one in use there, and the next good one is taken', async () => {
    const pool = new SpamEnginePool({ rules: [rule('FIRST')], workers: 2, engine: { analysis: false } });
    pools.push(pool);
    expect(await eventually(pool, marked)).toContain('FIRST');
    // A rule set that fails in the threads only (say, a static DNS file removed after the pool checked
    // it): posted to them directly, past the pool's own check.
    const internals = pool as unknown as { channel: BroadcastChannel; gen: number; spec: object };
    internals.channel.postMessage({ gen: ++internals.gen, spec: { ...internals.spec, rules: [rule('BROKEN')], dns: 'bogus:1' } });
    for (let i = 0; i < 4; i++) {
      const tags = (await pool.classify(marked)).tags;
      expect(tags).toContain('FIRST');
      expect(tags).not.toContain('BROKEN');
    }
    pool.update({ rules: [rule('SECOND')], dns: 'off' });
    for (let i = 0; i < 4; i++) expect((await pool.classify(marked)).tags).toContain('SECOND');
  }, 60_000);

  it('rejects unusable session input with ScanError "session"', async () => {
    const pool = pools[0]!;
    const e = await pool.classify(marked, { session: { remoteIp: 'not an ip' } }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ScanError);
    expect((e as ScanError).reason).toBe('session');
    expect((e as ScanError).message).toMatch(/remoteIp/);
  });

  it('abandons a scan over the time limit; the restarted thread uses the current rule set', async () => {
    // The slow part must not depend on how fast this machine is: 40 rules that each scan the whole
    // 16 MB message for a run of letters it does not contain (~35 ms per rule per 4 MB here) keep a
    // thread busy for seconds, until the engine's 5 s rule budget, far past the 1.5 s scan limit.
    const slow: SpamRuleInput[] = Array.from({ length: 40 }, (_, i) => ({
      '@type': 'Any',
      name: `SLOW_${i}`,
      condition: { match: [{ if: `matches('[a-z]{${8 + i}}', body.raw)`, then: `'SLOW_${i}'` }], else: 'false' },
    }));
    // regexWorkLimit 0: the regex work limit would refuse these searches (cost × 16 MB) before they start.
    const pool = new SpamEnginePool({ rules: [rule('BEFORE'), ...slow], engine: { regexWorkLimit: 0 }, workers: 1, timeoutMs: 1500 });
    pools.push(pool);
    expect(await eventually(pool, marked)).toContain('BEFORE');
    const lines: string[] = [];
    for (let i = 0; i < 400_000; i++) lines.push(`line ${i} http://h${i % 3000}.example.com/p?${i}\r\n`);
    const big = `From: a@example.org\r\nSubject: big\r\n\r\n${lines.join('')}`;
    const e = await pool.classify(big).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ScanError);
    expect((e as ScanError).reason).toBe('timeout');
    // The thread that was ended is replaced; it starts from the pool's first rule set and must
    // pick up the newer one before classifying.
    pool.update({ rules: [rule('AFTER')] });
    const tags = await eventually(pool, marked);
    expect(tags).toContain('AFTER');
    expect(tags).not.toContain('BEFORE');
  }, 90_000);

  it('close() right after the constructor stops no thread before its module has loaded (Node 20 can abort the process then)', async () => {
    const pool = new SpamEnginePool({ rules: [rule('X')], workers: 2 });
    expect(pool.threadsLoaded).toBe(0);
    await pool.close();
    expect(pool.threadsLoaded).toBe(2);
  }, 60_000);

  it('close() lets the scans in flight finish, then refuses with ScanError "closed"', async () => {
    const pool = new SpamEnginePool({ rules: [rule('X')], workers: 1 });
    const inFlight = pool.classify(marked);
    await pool.close();
    expect((await inFlight).tags).toContain('X');
    const e = await pool.classify(marked).catch((x: unknown) => x);
    expect((e as ScanError).reason).toBe('closed');
  }, 60_000);
});
