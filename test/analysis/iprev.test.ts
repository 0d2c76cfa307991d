/**
 * The iprev check that `verify: true` runs when the session has none (src/analysis/iprev.ts; RFC 8601
 * §3, with the outcomes of Stalwart's mail-auth `verify_iprev`), and what it feeds: the ip module's
 * `RDNS_*` tags, the rules' `remote_ip.ptr`, and the ehlo module. Also: results filled in after the
 * message was read (verified, or from a trusted Authentication-Results header) reach the rules'
 * envelope variables (`remote_ip.ptr`, the Domain set's `dkim_pass` domains).
 */
import { describe, expect, it } from 'vitest';
import { IPREV_MAX_NAMES, verifyIprev } from '../../src/analysis/iprev.js';
import { StaticResolver } from '../../src/dns/index.js';
import type { DnsAnswer, DnsType, Resolver } from '../../src/dns/types.js';
import { SpamEngine } from '../../src/engine/engine.js';
import type { SpamRuleInput } from '../../src/engine/types.js';

const zone = new StaticResolver({
  '192.0.2.1': { PTR: ['MX.Example.ORG.'] },
  'mx.example.org': { A: ['192.0.2.1'] },
  '192.0.2.2': { PTR: ['other.example.org'] },
  'other.example.org': { A: ['192.0.2.99'] },
  '192.0.2.3': { PTR: ['gone.example.org'] },
  '192.0.2.5': { PTR: ['a.example.org', 'b.example.org', 'c.example.org'] },
  'a.example.org': { A: ['192.0.2.50'] },
  'b.example.org': { A: ['192.0.2.51'] },
  'c.example.org': { A: ['192.0.2.5'] },
  '2001:db8::1': { PTR: ['v6.example.org'] },
  'v6.example.org': { AAAA: ['2001:0db8:0000:0000:0000:0000:0000:0001'] },
} as never);

/** A resolver that fails every query of `failing` types (SERVFAIL, a timeout) and asks `inner` for the rest. */
function failingFor(failing: DnsType[], inner: Resolver): Resolver {
  return {
    query: <T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> =>
      failing.includes(type) ? Promise.resolve({ status: 'error', error: 'SERVFAIL' }) : inner.query(name, type),
  };
}

describe('verifyIprev', () => {
  it('passes when a PTR name resolves back to the IP, and keeps the names lower-cased', async () => {
    expect(await verifyIprev('192.0.2.1', zone)).toEqual({ result: 'pass', ptr: ['mx.example.org'] });
    expect(await verifyIprev('2001:db8::1', zone)).toEqual({ result: 'pass', ptr: ['v6.example.org'] });
  });

  it('fails when the names resolve elsewhere; permerror without a PTR record or with a name that has none', async () => {
    expect(await verifyIprev('192.0.2.2', zone)).toEqual({ result: 'fail', ptr: ['other.example.org'] });
    expect(await verifyIprev('192.0.2.4', zone)).toEqual({ result: 'permerror', ptr: [] });
    expect(await verifyIprev('192.0.2.3', zone)).toEqual({ result: 'permerror', ptr: ['gone.example.org'] });
  });

  it(`confirms only the first ${IPREV_MAX_NAMES} names, as Stalwart does`, async () => {
    const r = await verifyIprev('192.0.2.5', zone);
    expect(r).toEqual({ result: 'fail', ptr: ['a.example.org', 'b.example.org', 'c.example.org'] });
  });

  it('temperror when a lookup fails; not an IP address: no result', async () => {
    expect(await verifyIprev('192.0.2.1', failingFor(['PTR'], zone))).toEqual({ result: 'temperror', ptr: [] });
    expect(await verifyIprev('192.0.2.1', failingFor(['A'], zone))).toEqual({ result: 'temperror', ptr: ['mx.example.org'] });
    expect(await verifyIprev('mx.example.org', zone)).toBeUndefined();
  });
});

const MSG = ['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: lunch', 'Message-ID: <1@example.org>', '', 'See you at noon.', ''].join('\r\n');

const rule = (scope: SpamRuleInput['@type'], name: string, cond: string, tag: string): SpamRuleInput => ({
  '@type': scope, name, enable: true, priority: 1, condition: { match: [{ if: cond, then: `'${tag}'` }], else: 'false' },
});

describe('verify: true and the session the rules see', () => {
  const rules = [
    rule('Any', 'PTR_SEEN', "remote_ip.ptr == 'mx.example.org'", 'PTR_SEEN'),
    rule('Domain', 'DKIM_DOMAIN_SEEN', "location == 'dkim_pass' && value == 'signer.example'", 'DKIM_DOMAIN_SEEN'),
  ];

  it('runs the iprev check when the session has none: RDNS_NONE and the rules see no name, or the name and no RDNS tag', async () => {
    const engine = new SpamEngine({ rules, dns: zone, authResults: { verify: true } });
    const bad = await engine.classify(MSG, { session: { remoteIp: '192.0.2.4', heloDomain: 'mx.example.org' } });
    expect(bad.tags).toContain('RDNS_NONE');
    expect(bad.tags).not.toContain('PTR_SEEN');
    const good = await engine.classify(MSG, { session: { remoteIp: '192.0.2.1', heloDomain: 'mx.example.org' } });
    expect(good.tags).toContain('PTR_SEEN');
    expect(good.tags).not.toContain('RDNS_NONE');
    expect(good.tags).not.toContain('RDNS_DNSFAIL');
    // A session's own iprev result wins: no check is run.
    const given = await engine.classify(MSG, { session: { remoteIp: '192.0.2.4', iprev: { result: 'pass', ptr: ['mx.example.org'] } } });
    expect(given.tags).toContain('PTR_SEEN');
    expect(given.tags).not.toContain('RDNS_NONE');
    // Without verify, nothing is looked up: no iprev result, no tag.
    const off = await new SpamEngine({ rules, dns: zone }).classify(MSG, { session: { remoteIp: '192.0.2.4' } });
    expect(off.tags).not.toContain('RDNS_NONE');
  });

  it('a DNS failure gives RDNS_DNSFAIL', async () => {
    const engine = new SpamEngine({ rules, dns: failingFor(['PTR'], zone), authResults: { verify: true } });
    const r = await engine.classify(MSG, { session: { remoteIp: '192.0.2.1' } });
    expect(r.tags).toContain('RDNS_DNSFAIL');
  });

  it("a trusted Authentication-Results header's DKIM domains and iprev name reach the rules", async () => {
    const header = 'Authentication-Results: mx.example.net; dkim=pass header.d=signer.example; iprev=pass policy.iprev=192.0.2.7 (mx.example.org)\r\n';
    const engine = new SpamEngine({ rules, authResults: { trustedAuthservIds: ['mx.example.net'] } });
    const r = await engine.classify(header + MSG, { session: { remoteIp: '192.0.2.7' } });
    expect(r.tags).toContain('DKIM_DOMAIN_SEEN');
    expect(r.tags).toContain('DKIM_ALLOW');
  });
});
