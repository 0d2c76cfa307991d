/**
 * A rule's `dns_query` goes through the engine's resolver (src/engine/expr-dns.ts): the answers of
 * `dns` (a static zone here), nothing at all with DNS off (the engine's default: the rule reports an
 * error, and no query leaves the process), and the per-message DNS budget for a resolver that never
 * answers. Before, `dns_query` asked the system's servers whatever `--dns` said.
 */
import { describe, expect, it } from 'vitest';
import { StaticResolver } from '../../src/dns/index.js';
import type { DnsAnswer, DnsType, Resolver } from '../../src/dns/types.js';
import { SpamEngine } from '../../src/engine/engine.js';
import type { SpamRuleInput } from '../../src/engine/types.js';
import { setDnsResolver } from '../../src/expr/functions/index.js';

const MSG = 'From: a@example.org\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nhello\r\n';

const rule = (name: string, cond: string, tag: string): SpamRuleInput => ({
  '@type': 'Any', name, enable: true, priority: 1, condition: { match: [{ if: cond, then: `'${tag}'` }], else: 'false' },
});
const rules = [
  rule('TXT_PROBE', "dns_query('probe.example', 'txt') == 'v=spf1 -all'", 'TXT_SEEN'),
  rule('MX_PROBE', "dns_query('example.org', 'mx')[0] == 'mx1.example.org'", 'MX_SEEN'),
  rule('IP_PROBE', "count(dns_query('example.org', 'ip')) == 2", 'IP_SEEN'),
  rule('PTR_PROBE', "dns_query('192.0.2.1', 'ptr')[0] == 'host.example.org'", 'PTR_SEEN'),
];
const zone = new StaticResolver({
  'probe.example': { TXT: ['v=spf1 -all'] },
  'example.org': { MX: [{ preference: 20, exchange: 'mx2.example.org' }, { preference: 10, exchange: 'mx1.example.org' }], A: ['192.0.2.7'], AAAA: ['2001:db8::7'] },
  '192.0.2.1': { PTR: ['host.example.org'] },
} as never);

describe("a rule's dns_query", () => {
  it("answers from the engine's resolver, each type in node's shape", async () => {
    const r = await new SpamEngine({ rules, dns: zone }).classify(MSG);
    expect(r.errors).toEqual([]);
    expect(r.tags).toEqual(expect.arrayContaining(['TXT_SEEN', 'MX_SEEN', 'IP_SEEN', 'PTR_SEEN']));
  });

  it('with DNS off asks nobody: the rule reports that DNS is off, and the process-wide resolver is not used', async () => {
    let asked = 0;
    const spy = () => {
      asked++;
      return Promise.resolve([]);
    };
    setDnsResolver({ resolve4: spy, resolve6: spy, resolveMx: spy, resolveTxt: spy, reverse: spy });
    try {
      const r = await new SpamEngine({ rules: [rules[0]!] }).classify(MSG);
      expect(asked).toBe(0);
      expect(r.tags).not.toContain('TXT_SEEN');
      expect(r.errors).toEqual([expect.objectContaining({ source: 'TXT_PROBE', message: expect.stringMatching(/dns_query txt probe\.example failed: .*DNS is off/) })]);
    } finally {
      setDnsResolver(undefined);
    }
  });

  it('is bounded by the per-message DNS budget', async () => {
    const never: Resolver = { query: <T extends DnsType>() => new Promise<DnsAnswer<T>>(() => {}) };
    const t0 = performance.now();
    const r = await new SpamEngine({ rules: [rules[0]!], dns: never, dnsBudget: { deadlineMs: 300 } }).classify(MSG);
    expect(performance.now() - t0).toBeLessThan(3_000);
    expect(r.tags).not.toContain('TXT_SEEN');
    expect(r.errors).toHaveLength(1);
  });
});
