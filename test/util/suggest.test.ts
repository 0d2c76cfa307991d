import { describe, expect, it } from 'vitest';
import { closestName, editDistance } from '../../src/util/index.js';

describe('closestName / editDistance', () => {
  it('counts a swap of neighbours as one edit, and suggests only close names', () => {
    expect(editDistance('htlm', 'html')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(closestName('htlm', ['ip', 'html', 'mime'])).toBe('html');
    expect(closestName('TimeBudgetMS', ['timeBudgetMs', 'ruleWaitMs'])).toBe('timeBudgetMs');
    expect(closestName('foo', ['html', 'mime'])).toBeUndefined();
  });
});
