/**
 * ehlo module: the HELO/EHLO name (RFC 5321 §4.1.1.1) as an IP literal, a registrable domain
 * checked against iprev and DNS, or a name that is not a FQDN (Stalwart's ehlo analysis).
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { StaticResolver, stalwartTestErrors, type StaticZone } from '../../src/dns/index.js';
import { mail, runOne } from './module-harness.js';

const MSG = mail(['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: hi']);

async function tags(session: SessionInput, zone: StaticZone = {}): Promise<string[]> {
  return (await runOne('ehlo', MSG, session, { resolver: new StaticResolver(zone, { errorWhen: stalwartTestErrors }) })).tags;
}

describe('ehlo module', () => {
  it('tags a bare IP, and HELO_IP_A when it is not the connecting address', async () => {
    expect(await tags({ heloDomain: '192.0.2.7', remoteIp: '192.0.2.7' })).toEqual(['HELO_BAREIP']);
    expect(await tags({ heloDomain: '[192.0.2.7]', remoteIp: '192.0.2.7' })).toEqual(['HELO_BAREIP']);
    expect(await tags({ heloDomain: '192.0.2.7', remoteIp: '192.0.2.8' })).toEqual(['HELO_BAREIP', 'HELO_IP_A']);
    expect(await tags({ heloDomain: '[IPv6:2001:DB8::1]', remoteIp: '2001:db8:0::1' })).toEqual(['HELO_BAREIP']);
  });

  it('treats an IPv4 address and its IPv4-mapped IPv6 form as different addresses', async () => {
    expect(await tags({ heloDomain: '[IPv6:::ffff:192.0.2.7]', remoteIp: '192.0.2.7' })).toEqual(['HELO_BAREIP', 'HELO_IP_A']);
    // The session's remoteIp is that IPv4 address already (a dual-stack listener's IPv4 client, src/analysis/session.ts).
    expect(await tags({ heloDomain: '192.0.2.7', remoteIp: '::ffff:192.0.2.7' })).toEqual(['HELO_BAREIP']);
  });

  it('tags names without a registrable domain as HELO_NOT_FQDN, with RCVD_HELO_USER for "user" in them', async () => {
    expect(await tags({ heloDomain: 'localhost' })).toEqual(['HELO_NOT_FQDN']);
    expect(await tags({ heloDomain: '' })).toEqual(['HELO_NOT_FQDN']);
    expect(await tags({})).toEqual(['HELO_NOT_FQDN']); // unknown HELO reads as "unknown"
    expect(await tags({ heloDomain: 'mail.invalidtld' })).toEqual(['HELO_NOT_FQDN']);
    expect(await tags({ heloDomain: 'PowerUser-PC' })).toEqual(['HELO_NOT_FQDN', 'RCVD_HELO_USER']);
  });

  it('tags a domain whose name has neither an address nor an MX record', async () => {
    expect(await tags({ heloDomain: 'mail.nowhere.example.com' })).toEqual(['HELO_NORES_A_OR_MX']);
    expect(await tags({ heloDomain: 'mail.example.com' }, { 'mail.example.com': { A: ['192.0.2.1'] } })).toEqual([]);
    expect(await tags({ heloDomain: 'mail.example.com' }, { 'mail.example.com': { AAAA: ['2001:db8::25'] } })).toEqual([]);
    expect(await tags({ heloDomain: 'Example.COM.' }, { 'example.com': { MX: ['10 mx.example.com'] } })).toEqual([]);
  });

  it('sets nothing when DNS answers an error', async () => {
    expect(await tags({ heloDomain: 'host._dns_error.example.com' })).toEqual([]);
  });

  it('asks for MX only after the address lookup said no', async () => {
    const found = await runOne('ehlo', MSG, { heloDomain: 'mail.example.com' }, { zone: { 'mail.example.com': { A: ['192.0.2.1'] } } });
    expect(found.queries).toEqual(['A mail.example.com']);
    const missing = await runOne('ehlo', MSG, { heloDomain: 'mail.example.com' });
    expect(missing.queries).toEqual(['A mail.example.com', 'AAAA mail.example.com', 'MX mail.example.com']);
  });

  it('compares the HELO name with the first iprev PTR name, whatever the iprev result', async () => {
    const zone = { 'mail.example.com': { A: ['192.0.2.1'] } };
    expect(await tags({ heloDomain: 'mail.example.com', iprev: { result: 'pass', ptr: ['mail.example.com.'] } }, zone)).toEqual([]);
    expect(await tags({ heloDomain: 'MAIL.example.com', iprev: { result: 'none', ptr: ['other.example.net', 'mail.example.com'] } }, zone))
      .toEqual(['HELO_IPREV_MISMATCH']);
    expect(await tags({ heloDomain: 'mail.example.com', iprev: { result: 'fail' } }, zone)).toEqual([]);
  });
});
