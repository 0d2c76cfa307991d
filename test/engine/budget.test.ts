import { describe, expect, it } from 'vitest';
import type { EngineClassifier } from '../../src/classifier/index.js';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { OffResolver, type Resolver } from '../../src/dns/index.js';
import { LookupMap, type LookupStore } from '../../src/lookup/index.js';
import { DEFAULT_REGEX_CACHE_BYTES, regexCacheStats, setRegexCacheBudget } from '../../src/expr/index.js';

const MESSAGE = ['From: a@sender.example', 'To: b@receiver.example', `Subject: ${'a'.repeat(100_000)}`, '', 'body', ''].join('\r\n');

/** A store whose lookups never answer (a server that accepted the connection and went silent). */
const silentStore: LookupStore = {
  type: 'Silent',
  keyGet: () => new Promise(() => {}),
  keyExists: () => new Promise(() => {}),
  keySet: () => new Promise(() => {}),
  counterGet: () => new Promise(() => {}),
  counterIncr: () => new Promise(() => {}),
  close: async () => {},
};

const rule = (name: string, cond: string, priority = 500): SpamRuleInput => ({
  '@type': 'Any', name, priority, condition: { match: [{ if: cond, then: `'${name.toUpperCase()}'` }], else: 'false' },
});

describe('classify time budget', () => {
  it('a rule stuck on a store fails once the wait budget is spent; the rules that need no store still run', async () => {
    const lookups = new LookupMap();
    lookups.set('silent', silentStore);
    const engine = new SpamEngine({
      analysis: false, lookups, timeBudgetMs: 300, ruleWaitMs: 400,
      rules: [
        rule('first', 'true', 1),
        rule('stuck', "key_exists('silent', 'someone@example.org')", 2),
        rule('middle', 'true', 3),
        rule('stuck_again', "key_exists('silent', 'other@example.org')", 4),
        rule('after', 'true', 5),
      ],
    });
    const started = performance.now();
    const r = await engine.classify(MESSAGE);
    // The first stuck rule waits the whole wait budget; the second finds it spent and fails at once.
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(r.tags).toEqual(expect.arrayContaining(['FIRST', 'MIDDLE', 'AFTER']));
    expect(r.errors.map((e) => e.source)).toEqual(['stuck', 'stuck_again']);
    for (const e of r.errors) expect(e.message).toBe("no answer within the message's wait budget for stores and DNS (400 ms in all); the rule was not applied");
  });

  it("does not count the classifier's wait for its first model: the rules after it still run", async () => {
    // A long-running classifier makes its first messages wait for the model load (up to 5 s).
    const loading: EngineClassifier = {
      classify: () => new Promise((resolve) => setTimeout(() => resolve({ confidence: 0.99, tag: 'PROB_SPAM_HIGH', generation: 1 }), 400)),
    };
    const engine = new SpamEngine({ analysis: {}, timeBudgetMs: 200, rules: [rule('after', 'true')], classifier: loading });
    const r = await engine.classify(MESSAGE);
    expect(r.errors).toEqual([]);
    expect(r.tags).toEqual(expect.arrayContaining(['PROB_SPAM_HIGH', 'AFTER']));
  });

  it('skips the remaining rules once hostile regex work has used up the budget', async () => {
    const rules = Array.from({ length: 400 }, (_, i) => rule(`r${i}`, "matches('(?:a|b)+c?[0-9]', subject) || matches('(a|aa)+[xy]', subject)", i));
    const engine = new SpamEngine({ analysis: false, timeBudgetMs: 100, rules });
    const started = performance.now();
    const r = await engine.classify(MESSAGE);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors.every((e) => e.message.startsWith('skipped: the classify time budget'))).toBe(true);
  });

  it('skips the analysis modules and the classifier not yet run once the budget is spent', async () => {
    // 1 ms is spent before the first module: parsing a 1 MB message takes longer.
    const big = MESSAGE.replace('body', 'word '.repeat(200_000));
    const classifier: EngineClassifier = { classify: () => ({ confidence: 0.99, tag: 'PROB_SPAM_HIGH', generation: 1 }) };
    const engine = new SpamEngine({ analysis: {}, timeBudgetMs: 1, rules: [rule('late', 'true')], classifier });
    const r = await engine.classify(big, { session: { remoteIp: '203.0.113.7', heloDomain: 'mail.example.com' } });
    const skippedModules = r.errors.filter((e) => e.source.startsWith('module:')).map((e) => e.source);
    expect(skippedModules.length).toBeGreaterThan(0);
    expect(r.errors.map((e) => e.source)).toEqual(expect.arrayContaining(['classifier', 'late']));
    expect(r.errors.every((e) => e.message === 'skipped: the classify time budget of 1 ms was exceeded')).toBe(true);
    expect(r.tags).not.toContain('PROB_SPAM_HIGH');
    expect(r.tags).not.toContain('LATE');
    // The same message with time to spare runs everything.
    const full = await new SpamEngine({ analysis: {}, timeBudgetMs: 0, rules: [rule('late', 'true')], classifier }).classify(big, { session: { remoteIp: '203.0.113.7', heloDomain: 'mail.example.com' } });
    expect(full.errors).toEqual([]);
    expect(full.tags).toEqual(expect.arrayContaining(['PROB_SPAM_HIGH', 'LATE']));
  }, 60_000);

  it('does not count the wait for DNS: a sender whose DNS is slow or silent cannot get the rules skipped', async () => {
    // Every answer takes 400 ms; the sender's names never answer at all (a black-holed zone).
    const slow: Resolver = {
      query: (name, type) =>
        name.endsWith('blackhole-dns.com') ? new Promise(() => {}) : new Promise((resolve) => setTimeout(() => resolve(new OffResolver().query(name, type)), 400)),
    };
    const classifier: EngineClassifier = { classify: () => ({ confidence: 0.99, tag: 'PROB_SPAM_HIGH', generation: 1 }) };
    const engine = new SpamEngine({ analysis: {}, timeBudgetMs: 200, dnsBudget: { deadlineMs: 2_000 }, rules: [rule('late', 'true')], classifier });
    const started = performance.now();
    const r = await engine.classify(MESSAGE, { dns: slow, session: { remoteIp: '203.0.113.7', heloDomain: 'mx.blackhole-dns.com', mailFrom: 'a@blackhole-dns.com' } });
    // Bounded by the DNS deadline (plus the message's own work), not by the time budget.
    expect(performance.now() - started).toBeLessThan(6_000);
    expect(r.errors.filter((e) => e.message.startsWith('skipped:'))).toEqual([]);
    expect(r.tags).toEqual(expect.arrayContaining(['PROB_SPAM_HIGH', 'LATE']));
    // The silent zone leaves a trace: the queries that got no answer are counted in a warning.
    expect(r.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/^dns: \d+ quer(y|ies) got no answer \(timeout or server failure, \d+ of them refused or cut short by the message's DNS budget\); the checks that needed (it|them) set no tag$/)]));
    // DNS off is not a failure: no such warning.
    const off = await new SpamEngine({ analysis: {}, rules: [rule('late', 'true')] }).classify(MESSAGE, { session: { remoteIp: '203.0.113.7', heloDomain: 'mx.blackhole-dns.com' } });
    expect(off.warnings.filter((w) => w.startsWith('dns:'))).toEqual([]);
  }, 60_000);

  it('has no budget with timeBudgetMs 0', async () => {
    const engine = new SpamEngine({ analysis: false, timeBudgetMs: 0, rules: [rule('one', 'true')] });
    const r = await engine.classify(MESSAGE);
    expect(r.tags.filter((t) => !t.startsWith('X_HDR_'))).toEqual(['ONE']); // rules alone still get header-presence tags
    expect(r.errors).toEqual([]);
  });
});

describe('regex limits in classify', () => {
  const bodyRule = (name: string, cond: string, priority = 500): SpamRuleInput => ({
    '@type': 'Body', name, priority, condition: { match: [{ if: cond, then: `'${name.toUpperCase()}'` }], else: 'false' },
  });
  /** A message whose text part is `text`, in lines of 998 characters (RFC 5322's limit). */
  const withBody = (text: string): string => ['From: a@sender.example', 'To: b@receiver.example', 'Subject: hi', '', ...(text.match(/.{1,998}/g) ?? []), ''].join('\r\n');

  it('reports a rule whose search could take seconds as failed, before it runs, and runs the others', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [bodyRule('before', "matches('a{3}', value)", 1), bodyRule('hostile', `matches('${'(?:a*)'.repeat(499)}', value)`, 2), bodyRule('after', 'len(value) > 1000', 3)],
    });
    const r = await engine.classify(withBody('a'.repeat(1024 * 1024)));
    // (Before the limit, this search alone took 18 s.) The outcome, not the time, is what is checked.
    expect(r.errors).toEqual([{
      source: 'hostile', scope: 'Body', element: expect.any(String), kind: 'regex_work',
      message: expect.stringMatching(/^regular expression "\(\?:a\*\).*" not run: a search of 10\d{5} characters at cost 998 could take \d+ steps, over the limit of 67108864 \(regexWorkLimit\)$/),
    }]);
    expect(r.tags).toEqual(expect.arrayContaining(['BEFORE', 'AFTER']));
    expect(r.tags).not.toContain('HOSTILE');
  });

  it('takes its limit from regexWorkLimit (0: none)', async () => {
    const rules = [bodyRule('money', "matches('\\\\$\\\\s?[0-9]{1,3}(,[0-9]{3}){2,}', value)")];
    const message = withBody(`${'win '.repeat(50)}$1,000,000`);
    const low = await new SpamEngine({ analysis: false, rules, regexWorkLimit: 100 }).classify(message);
    expect(low.errors.map((e) => [e.source, /over the limit of 100 \(regexWorkLimit\)$/.test(e.message)])).toEqual([['money', true]]);
    expect(low.tags).not.toContain('MONEY');
    for (const regexWorkLimit of [0, undefined]) {
      const r = await new SpamEngine({ analysis: false, rules, ...(regexWorkLimit === undefined ? {} : { regexWorkLimit }) }).classify(message);
      expect(r.errors).toEqual([]);
      expect(r.tags).toContain('MONEY');
    }
  });

  it('regexCacheBytes sets the budget of the thread\'s regex caches', () => {
    try {
      new SpamEngine({ analysis: false, regexCacheBytes: 8 * 1024 * 1024 });
      expect(regexCacheStats().budgetBytes).toBe(8 * 1024 * 1024);
      new SpamEngine({ analysis: false }); // an engine without the option leaves it
      expect(regexCacheStats().budgetBytes).toBe(8 * 1024 * 1024);
    } finally {
      setRegexCacheBudget(DEFAULT_REGEX_CACHE_BYTES);
    }
  });
});
