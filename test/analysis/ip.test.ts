/**
 * ip module: reverse-DNS results, the source ASN, the server's block/allow lists, and which addresses of
 * the message's IP set reach the Ip DNSBLs (Stalwart's ip analysis).
 */
import { describe, expect, it } from 'vitest';
import { mail, runModules, server } from './dnsbl-harness.js';

const MSG = mail(['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: hello']);
const ANY = server('Ip', 'ANY', { else: "ip_reverse + '.bl.example'" }, { match: [['!is_empty(ip)', "'LISTED_' + location"]], else: 'false' });

describe('ip module', () => {
  it('tags iprev failures: TempError → RDNS_DNSFAIL, Fail/PermError → RDNS_NONE, Pass/None → nothing', async () => {
    const t = async (result: 'pass' | 'fail' | 'temperror' | 'permerror' | 'none'): Promise<string[]> =>
      (await runModules(['ip'], MSG, { session: { remoteIp: '192.0.2.1', iprev: { result } } })).tags;
    expect(await t('temperror')).toEqual(['RDNS_DNSFAIL']);
    expect(await t('fail')).toEqual(['RDNS_NONE']);
    expect(await t('permerror')).toEqual(['RDNS_NONE']);
    expect(await t('pass')).toEqual([]);
    expect(await t('none')).toEqual([]);
    expect((await runModules(['ip'], MSG, { session: { remoteIp: '192.0.2.1' } })).tags).toEqual([]);
  });

  it('tags the source ASN', async () => {
    expect((await runModules(['ip'], MSG, { session: { asn: 15169 } })).tags).toEqual(['SOURCE_ASN_15169']);
  });

  it('checks the connecting IP, Received IPs and body IPs with their locations, but not loopback/multicast/unspecified', async () => {
    const msg = mail(
      ['Received: from relay.example.net (relay.example.net [198.51.100.7]) by mx.example.org', 'Subject: x'],
      'Servers 203.0.113.9 and 10.1.2.3, not 127.0.0.1, 224.0.0.1 or 0.0.0.0.',
    );
    const r = await runModules(['ip'], msg, {
      session: { remoteIp: '192.0.2.1' },
      zone: {
        '1.2.0.192.bl.example': { A: ['127.0.0.2'] },
        '7.100.51.198.bl.example': { A: ['127.0.0.2'] },
        '9.113.0.203.bl.example': { A: ['127.0.0.2'] },
      },
      config: { dnsblServers: [ANY] },
    });
    expect(r.tags).toEqual(['LISTED_body_text', 'LISTED_received', 'LISTED_tcp']);
    expect(r.queries.sort()).toEqual(['A 1.2.0.192.bl.example', 'A 3.2.1.10.bl.example', 'A 7.100.51.198.bl.example', 'A 9.113.0.203.bl.example']);
  });

  it('does not check a loopback connecting address (the default)', async () => {
    const r = await runModules(['ip'], MSG, { config: { dnsblServers: [ANY] } });
    expect(r.queries).toEqual([]);
  });

  it('tags IP_BLOCKED for an address on the block list instead of checking it, and skips allowed addresses', async () => {
    const msg = mail(['Subject: x'], 'seen at 198.51.100.20');
    const r = await runModules(['ip'], msg, {
      session: { remoteIp: '192.0.2.1' },
      config: { dnsblServers: [ANY], blockedIps: ['192.0.2.0/24'], allowedIps: ['198.51.100.20'] },
    });
    expect(r.tags).toEqual(['IP_BLOCKED']);
    expect(r.queries).toEqual([]);
    const ipv6 = await runModules(['ip'], MSG, { session: { remoteIp: '2001:db8::5' }, config: { blockedIps: ['2001:db8::/32'] } });
    expect(ipv6.tags).toEqual(['IP_BLOCKED']);
  });
});
