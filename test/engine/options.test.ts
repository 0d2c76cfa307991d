/**
 * `SpamEngine` refuses options it cannot use, naming them (from JavaScript the types do not reach, and
 * an ignored setting gives wrong verdicts without a word).
 */
import { describe, expect, it } from 'vitest';
import { SpamEngine } from '../../src/engine/index.js';

describe('SpamEngine options', () => {
  it.each([
    [{ threshold: { scoreSpam: 3 } }, 'SpamEngine: unknown option "threshold" (did you mean "thresholds"?)'],
    [{ timeBudget: 100 }, 'SpamEngine: unknown option "timeBudget" (did you mean "timeBudgetMs"?)'],
    [{ timeBudgetMs: -5 }, 'SpamEngine: "timeBudgetMs": expected milliseconds (a number ≥ 0; 0 = none), got -5'],
    [{ ruleWaitMs: '2s' }, 'SpamEngine: "ruleWaitMs": expected milliseconds (a number ≥ 0; 0 = none), got "2s"'],
    [{ thresholds: { scoreSpam: 'five' } }, 'SpamEngine: "thresholds.scoreSpam" must be a number, got "five"'],
    [{ thresholds: { spam: 5 } }, 'SpamEngine: thresholds: unknown option "spam"'],
    [{ rules: 'x' }, 'SpamEngine: "rules" must be an array'],
    [{ analysis: { modules: { htlm: false } } }, 'SpamEngine: analysis.modules: unknown module "htlm" (did you mean "html"?)'],
    [{ analysis: { followRedirect: true } }, 'SpamEngine: analysis: unknown option "followRedirect" (did you mean "followRedirects"?)'],
  ])('refuses %j', (opts, message) => {
    // Before, each was ignored: the engine ran with its defaults.
    expect(() => new SpamEngine(opts as never)).toThrow(new TypeError(message).message);
  });

  it('takes what it knows, undefined values included (as a spread of optional settings gives them)', () => {
    const e = new SpamEngine({ thresholds: { scoreSpam: 3 }, timeBudgetMs: 0, ruleWaitMs: Infinity, analysis: { modules: { html: false } }, dns: undefined });
    expect(e.getThresholds().scoreSpam).toBe(3);
    expect(() => new SpamEngine({ analysis: false })).not.toThrow();
  });
});
