/**
 * DNSBL engine: zone and tag expressions of SpamDnsblServer definitions, the query name, answer → tag,
 * per-message limits, IPv6 reversal, DNS off, and the test-mode answer synthesiser (Stalwart's dnsbl module).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileDnsblServers, rpnItemCount } from '../../src/analysis/dnsbl.js';
import type { DnsblServerInput } from '../../src/analysis/types.js';
import { OffResolver, type DnsAnswer, type DnsType } from '../../src/dns/index.js';
import { parseExpression } from '../../src/expr/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { mail, runModules, server } from './dnsbl-harness.js';

const MSG = mail(['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: hello']);

/** Answers 127.0.0.N: N = 2 → LISTED, N = 9 → TCP_ONLY; a positive answer outside 127/8 → nothing. */
const IP_SERVER = server(
  'Ip',
  'TEST_IP',
  { else: "ip_reverse + '.bl.example'" },
  {
    match: [
      ['octets[0] != 127', 'false'],
      ['octets[3] == 2', "if_then(location == 'tcp', 'TEST_LISTED', 'TEST_LISTED_RECEIVED')"],
      ['octets[3] == 9', "'TEST_NINE'"],
    ],
    else: 'false',
  },
);
const TCP_ONLY = server('Ip', 'TEST_TCP', { match: [["location == 'tcp'", "ip_reverse + '.tcp.example'"]], else: 'false' }, { match: [['!is_empty(ip)', "'TEST_TCP'"]], else: 'false' });

describe('DNSBL server definitions', () => {
  it("compiles Stalwart's public servers, drops the disabled one and groups them by scope in order", () => {
    if (!hasSharedData) return;
    const json = JSON.parse(readFileSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), 'utf8')) as { SpamDnsblServer: DnsblServerInput[] };
    const set = compileDnsblServers(json.SpamDnsblServer);
    expect(set.errors).toEqual([]);
    expect(Object.fromEntries(Object.entries(set.byScope).map(([k, v]) => [k, v.length]))).toEqual({ Ip: 9, Domain: 6, Email: 1, Url: 1 });
    expect(set.byScope.Ip[0]!.name).toBe('STWT_RBL_SPAMHAUS_IP');
    // compiled once per definition list
    expect(compileDnsblServers(json.SpamDnsblServer)).toBe(set);
  });

  it('reports a server whose expression does not compile and keeps the others', () => {
    const bad = server('Ip', 'BAD', { else: 'ip_reverse +' }, { else: "'X'" });
    const set = compileDnsblServers([bad, IP_SERVER]);
    expect(set.errors).toHaveLength(1);
    expect(set.errors[0]).toMatch(/^BAD: zone\//);
    expect(set.byScope.Ip.map((s) => s.name)).toEqual(['TEST_IP']);
  });

  it("counts Stalwart's RPN items of a condition", () => {
    expect(rpnItemCount(parseExpression("ip == '127.0.0.2'"))).toBe(3);
    expect(rpnItemCount(parseExpression('!is_empty(ip)'))).toBe(3);
    expect(rpnItemCount(parseExpression('octets[0] != 127'))).toBe(5);
    expect(rpnItemCount(parseExpression("!is_empty(ip) && location == 'tcp'"))).toBe(8);
  });
});

describe('DNSBL evaluation (through the ip module)', () => {
  it('queries the reversed IPv4 name and turns the answer into a tag', async () => {
    const r = await runModules(['ip'], MSG, {
      session: { remoteIp: '192.0.2.1' },
      zone: { '1.2.0.192.bl.example': { A: ['127.0.0.2'] } },
      config: { dnsblServers: [IP_SERVER] },
    });
    expect(r.queries).toEqual(['A 1.2.0.192.bl.example']);
    expect(r.tags).toEqual(['TEST_LISTED']);
  });

  it('reverses IPv6 addresses nibble by nibble, lowercase', async () => {
    const name = `1.${'0.'.repeat(23)}8.b.d.0.1.0.0.2.bl.example`;
    const r = await runModules(['ip'], MSG, {
      session: { remoteIp: '2001:DB8::1' },
      zone: { [name]: { A: ['127.0.0.9'] } },
      config: { dnsblServers: [IP_SERVER] },
    });
    expect(r.queries).toEqual([`A ${name}`]);
    expect(r.tags).toEqual(['TEST_NINE']);
  });

  it('sets nothing for NXDOMAIN, an error, or an answer the tag expression rejects', async () => {
    const config = { dnsblServers: [IP_SERVER] };
    expect((await runModules(['ip'], MSG, { session: { remoteIp: '192.0.2.1' }, config })).tags).toEqual([]);
    const err = await runModules(['ip'], MSG, {
      session: { remoteIp: '192.0.2.1' },
      resolver: { query: async () => ({ status: 'error', error: 'SERVFAIL' }) },
      config,
    });
    expect(err.tags).toEqual([]);
    const outside = await runModules(['ip'], MSG, { session: { remoteIp: '192.0.2.1' }, zone: { '1.2.0.192.bl.example': { A: ['10.0.0.2'] } }, config });
    expect(outside.tags).toEqual([]);
  });

  it('skips a server whose zone is not a string (here: only the connecting IP is checked)', async () => {
    const msg = mail(['Received: from relay.example.net (relay.example.net [198.51.100.7]) by mx.example.org', 'Subject: x']);
    const r = await runModules(['ip'], msg, { session: { remoteIp: '192.0.2.1' }, config: { dnsblServers: [TCP_ONLY] } });
    expect(r.queries).toEqual(['A 1.2.0.192.tcp.example']);
  });

  it('passes the element location to the tag expression', async () => {
    const msg = mail(['Received: from relay.example.net (relay.example.net [198.51.100.7]) by mx.example.org', 'Subject: x']);
    const r = await runModules(['ip'], msg, {
      session: { remoteIp: '192.0.2.1' },
      zone: { '7.100.51.198.bl.example': { A: ['127.0.0.2'] } },
      config: { dnsblServers: [IP_SERVER] },
    });
    expect(r.tags).toEqual(['TEST_LISTED_RECEIVED']);
  });

  it('stops querying a scope at its per-message limit', async () => {
    const body = Array.from({ length: 20 }, (_, i) => `host 198.51.100.${i + 1} seen`).join('\r\n');
    const r = await runModules(['ip'], mail(['Subject: x'], body), {
      session: { remoteIp: '192.0.2.1' },
      config: { dnsblServers: [IP_SERVER], dnsblLimits: { ip: 5 } },
    });
    expect(r.queries).toHaveLength(5);
    const dflt = await runModules(['ip'], mail(['Subject: x'], Array.from({ length: 80 }, (_, i) => `a 198.51.${i}.1 b`).join('\r\n')), {
      session: { remoteIp: '192.0.2.1' },
      config: { dnsblServers: [IP_SERVER] },
    });
    expect(dflt.queries).toHaveLength(50);
  });

  it("fills the limit element by element, each against every server (Stalwart's order), not server by server", async () => {
    // Before, every element took the first server's place, then the second's…: the last servers (DNSWL
    // whitelists) were the first dropped, for every element, the connecting IP included.
    const servers = ['A', 'B', 'C'].map((z) => server('Ip', `S${z}`, { else: `ip_reverse + '.${z.toLowerCase()}.example'` }, { else: 'false' }));
    const body = Array.from({ length: 3 }, (_, i) => `host 198.51.100.${i + 1} seen`).join('\r\n');
    const r = await runModules(['ip'], mail(['Subject: x'], body), {
      session: { remoteIp: '192.0.2.1' },
      config: { dnsblServers: servers, dnsblLimits: { ip: 5 } },
    });
    expect(r.queries).toEqual(['A 1.2.0.192.a.example', 'A 1.2.0.192.b.example', 'A 1.2.0.192.c.example', 'A 1.100.51.198.a.example', 'A 1.100.51.198.b.example']);
    // Domains likewise: the DKIM-pass domain, first in the set, is checked against every server (the last
    // one standing for DNSWL's DWL) before the body's domains take what is left.
    const dom = ['A', 'B', 'C'].map((z) => server('Domain', `D${z}`, { else: `value + '.${z.toLowerCase()}.example'` }, { else: 'false' }));
    const headers = ['From: a@site0.example.net', 'Reply-To: b@site1.example.net', 'Message-ID: <x@site2.example.net>', 'Subject: x'];
    const d = await runModules(['domain'], mail(headers), {
      session: { dkim: [{ result: 'pass', domain: 'signer.example.com' }] },
      config: { dnsblServers: dom, dnsblLimits: { domain: 4 } },
    });
    expect(d.queries).toEqual(['A signer.example.com.a.example', 'A signer.example.com.b.example', 'A signer.example.com.c.example', 'A site2.example.net.a.example']); // then the set's next (Message-ID)
  });

  it('costs nothing with DNS off: no query, no expression evaluated', async () => {
    class CountingOff extends OffResolver {
      n = 0;
      override query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
        this.n++;
        return super.query(name, type);
      }
    }
    const off = new CountingOff();
    const zoneSpy = server('Ip', 'SPY', { else: "ip_reverse + '.bl.example'" }, { else: "'SPY'" });
    const r = await runModules(['ip', 'domain', 'url'], mail(['From: a@example.org', 'Subject: see https://example.com/x']), {
      session: { remoteIp: '192.0.2.1' },
      resolver: off,
      config: { dnsblServers: [zoneSpy, IP_SERVER] },
    });
    expect(off.n).toBe(0);
    expect(r.tags).toEqual([]);
  });

  it("synthesises test-mode answers for 20.11.x.y without DNS, with Stalwart's 3-item quirk", async () => {
    const any = server('Ip', 'ANY', { else: "ip_reverse + '.any.example'" }, { match: [['!is_empty(ip)', "'ANY_' + octets[3]"]], else: 'false' });
    const config = { dnsblServers: [IP_SERVER, any], testMode: { dnsbl: true } };
    const two = await runModules(['ip'], MSG, { session: { remoteIp: '20.11.0.2' }, config });
    expect(two.queries).toEqual([]);
    expect(two.tags).toEqual(['ANY_2', 'TEST_LISTED']);
    // 20.11.0.9: the 3-item condition `!is_empty(ip)` answers only ….2 zones
    const nine = await runModules(['ip'], MSG, { session: { remoteIp: '20.11.0.9' }, config });
    expect(nine.tags).toEqual(['TEST_NINE']);
    // other addresses still go to DNS
    const other = await runModules(['ip'], MSG, { session: { remoteIp: '20.12.0.2' }, config });
    expect(other.queries).toEqual(['A 2.0.12.20.bl.example', 'A 2.0.12.20.any.example']);
  });

  it('asks a zone once per message', async () => {
    const domainServer = server('Domain', 'D', { else: "value + '.dbl.example'" }, { match: [['!is_empty(ip)', "'D_HIT'"]], else: 'false' });
    const msg = mail(['From: a@example.org', 'Reply-To: b@example.org', 'Subject: see example.org/x'], 'mail c@example.org');
    const r = await runModules(['domain', 'url'], msg, { zone: { 'example.org.dbl.example': { A: ['127.0.0.2'] } }, config: { dnsblServers: [domainServer] } });
    expect(r.queries.filter((q) => q === 'A example.org.dbl.example')).toHaveLength(1);
    expect(r.tags).toEqual(['D_HIT']);
  });
});
