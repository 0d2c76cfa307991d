/**
 * The regex bounds under the scanning server: the pool's rule set carries `regexWorkLimit` and
 * `regexCacheBytes` to every worker thread, a rule whose `matches` search is over the limit is counted in
 * `spamrule_rule_errors_total{reason="regex_work"}` while the other rules still tag, and `/metrics`
 * reports the threads' DFA caches (`spamrule_regex_cache_*`, summed over the worker threads, each of
 * which reports its caches with every message it classifies).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http, startAll, type Started } from './harness.js';

const rule = (name: string, cond: string) => ({ '@type': 'Any' as const, name, condition: { match: [{ if: cond, then: `'${name}'` }], else: 'false' } });
const MSG = (i: number): string => `From: a@example.org\r\nSubject: hello ${i}\r\n\r\n${'filler text line\r\n'.repeat(1100)}a cheap offer\r\n`;

let s: Started;
beforeAll(async () => {
  s = await startAll({
    workers: 2,
    spec: {
      rules: [rule('RX_SUBJECT', "matches('(?i)^hello\\s+\\d+', subject)"), rule('RX_BODY', "matches('(?i)cheap\\s+offer', body.raw)"), rule('PLAIN', "contains(subject, 'hello')")],
      engine: { regexWorkLimit: 5000, regexCacheBytes: 2 * 1024 * 1024 },
    },
  });
}, 60_000);
afterAll(async () => s?.close());

/** The value of a series in the `/metrics` text (the rspamd listener's), or undefined when it is absent. */
function series(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('regex bounds under serve', () => {
  it('/metrics counts the rules failed by the work limit and shows the worker threads\' DFA caches', async () => {
    const before = await http(`${s.server.addresses.rspamd}/metrics`);
    // Before any scan: no thread has reported; the budget is the configured one for each thread.
    expect(series(before.body, 'spamrule_regex_cache_bytes')).toBe(0);
    expect(series(before.body, 'spamrule_regex_cache_budget_bytes')).toBe(2 * 2 * 1024 * 1024);

    for (let i = 0; i < 4; i++) {
      const r = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body: MSG(i) });
      expect(r.status).toBe(200);
      const symbols = Object.keys((JSON.parse(r.body) as { symbols: Record<string, unknown> }).symbols);
      expect(symbols).toEqual(expect.arrayContaining(['RX_SUBJECT', 'PLAIN']));
      expect(symbols).not.toContain('RX_BODY');
    }
    const text = (await http(`${s.server.addresses.rspamd}/metrics`)).body;
    expect(text).toContain('spamrule_rule_errors_total{reason="regex_work"} 4');
    expect(text).not.toMatch(/spamrule_rule_errors_total\{reason="other"\}/);
    // RX_SUBJECT's search ran in a worker thread and left a DFA cache there.
    expect(series(text, 'spamrule_regex_cache_bytes')).toBeGreaterThan(0);
    expect(series(text, 'spamrule_regex_cache_programs')).toBeGreaterThanOrEqual(1);
    expect(series(text, 'spamrule_regex_cache_budget_bytes')).toBe(2 * 2 * 1024 * 1024);
    expect(series(text, 'spamrule_regex_cache_evictions_total')).toBe(0);
    expect(series(text, 'spamrule_regex_cache_untracked_programs')).toBe(0);
    expect(text).toMatch(/# TYPE spamrule_regex_cache_evictions_total counter/);
    // The pool's sum is what the gauges show.
    expect(s.pool.regexCacheStats()).toMatchObject({ bytes: series(text, 'spamrule_regex_cache_bytes'), budgetBytes: 4 * 1024 * 1024, evictions: 0 });
  }, 60_000);
});

describe('regex cache evictions under serve', () => {
  it('are counted in spamrule_regex_cache_evictions_total when the threads\' caches outgrow the budget', async () => {
    // Patterns whose DFAs outgrow any cap on random a/b text (as test/expr/regex-cache.test.ts), under the
    // smallest budget (1 MiB a thread): the least recently used caches are dropped at almost every search.
    const explosive = Array.from({ length: 8 }, (_, i) => rule(`AB_${i}`, `matches('[ab]*a[ab]{${14 + i}}c', body.raw)`));
    const t = await startAll({ workers: 1, spec: { rules: explosive, engine: { regexCacheBytes: 1024 * 1024 } } });
    try {
      let seed = 7;
      const ab = Array.from({ length: 20_000 }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) < 2 ** 30 ? 'a' : 'b')).join('');
      const r = await http(`${t.server.addresses.rspamd}/checkv2`, { method: 'POST', body: `From: a@example.org\r\nSubject: ab\r\n\r\nc${ab}\r\n` });
      expect(r.status).toBe(200);
      const text = (await http(`${t.server.addresses.rspamd}/metrics`)).body;
      expect(series(text, 'spamrule_regex_cache_evictions_total')).toBeGreaterThan(0);
      expect(series(text, 'spamrule_regex_cache_budget_bytes')).toBe(1024 * 1024);
      expect(series(text, 'spamrule_regex_cache_bytes')).toBeLessThanOrEqual(1024 * 1024);
    } finally {
      await t.close();
    }
  }, 60_000);
});
