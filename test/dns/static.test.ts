/**
 * StaticResolver (a map, also loaded from JSON for `--dns static:FILE`) and OffResolver.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DnsConfigError,
  OffResolver,
  StaticResolver,
  stalwartTestErrors,
  type StaticZone,
} from '../../src/dns/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

const ZONE: StaticZone = {
  'Example.COM.': {
    A: ['192.0.2.1'],
    AAAA: ['2001:db8::1'],
    MX: ['10 MX1.example.com.', { preference: 20, exchange: 'mx2.example.com' }],
    TXT: ['v=spf1 -all'],
  },
  'nullmx.test': { MX: ['0 .'] },
  '192.0.2.1': { PTR: ['Host.Example.com.'] },
  '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa': { PTR: ['v6.example.com'] },
  'bl.test': { DNSBL: ['127.0.0.2'] },
};

describe('StaticResolver', () => {
  const r = new StaticResolver(ZONE);

  it('answers every type from the map', async () => {
    expect(await r.query('example.com', 'A')).toEqual({ status: 'ok', records: ['192.0.2.1'] });
    expect(await r.query('example.com', 'AAAA')).toEqual({ status: 'ok', records: ['2001:db8::1'] });
    expect(await r.query('example.com', 'MX')).toEqual({
      status: 'ok',
      records: [
        { preference: 10, exchange: 'mx1.example.com' },
        { preference: 20, exchange: 'mx2.example.com' },
      ],
    });
    expect(await r.query('example.com', 'TXT')).toEqual({ status: 'ok', records: ['v=spf1 -all'] });
  });

  it('names are case-insensitive and a trailing dot is ignored', async () => {
    expect(await r.query('EXAMPLE.com.', 'A')).toMatchObject({ status: 'ok' });
  });

  it('unknown names and missing types → nxdomain', async () => {
    expect(await r.query('other.com', 'A')).toEqual({ status: 'nxdomain' });
    expect(await r.query('nullmx.test', 'A')).toEqual({ status: 'nxdomain' });
  });

  it('PTR by IP address (any text form) or by arpa name in the map', async () => {
    expect(await r.query('192.0.2.1', 'PTR')).toEqual({ status: 'ok', records: ['host.example.com'] });
    expect(await r.query('2001:DB8:0::1', 'PTR')).toEqual({ status: 'ok', records: ['v6.example.com'] });
    expect(await r.query('192.0.2.9', 'PTR')).toEqual({ status: 'nxdomain' });
    expect(await r.query('host', 'PTR')).toMatchObject({ status: 'error' });
  });

  it('a null MX (RFC 7505) is an MX with an empty exchange', async () => {
    expect(await r.query('nullmx.test', 'MX')).toEqual({ status: 'ok', records: [{ preference: 0, exchange: '' }] });
  });

  it('DNSBL entries (the suite mocks) answer A queries', async () => {
    expect(await r.query('bl.test', 'A')).toEqual({ status: 'ok', records: ['127.0.0.2'] });
  });

  it('errorWhen makes matching names answer error (Stalwart test build names)', async () => {
    const t = new StaticResolver(ZONE, { errorWhen: stalwartTestErrors, ttlMs: 100_000 });
    for (const n of ['x._dns_error.example', 'a._parse_error.org', 'b._invalid_record.net']) {
      expect(await t.query(n, 'MX')).toMatchObject({ status: 'error' });
    }
    expect(await t.query('example.com', 'A')).toEqual({ status: 'ok', records: ['192.0.2.1'], ttlMs: 100_000 });
    expect(await t.query('nothing.example', 'A')).toEqual({ status: 'nxdomain' });
  });

  it('input outside the types (from JavaScript callers) answers error, never throws', async () => {
    expect(await r.query(undefined as unknown as string, 'A')).toMatchObject({ status: 'error' });
    expect(await r.query('example.com', 'CNAME' as 'A')).toMatchObject({ status: 'error' });
  });

  it('answers are copies: changing one does not change the map', async () => {
    const a = await r.query('example.com', 'A');
    if (a.status === 'ok') a.records.push('203.0.113.1');
    expect(await r.query('example.com', 'A')).toEqual({ status: 'ok', records: ['192.0.2.1'] });
  });

  it('rejects a malformed map with DnsConfigError', () => {
    expect(() => new StaticResolver({ 'a.test': { A: ['not-ip'] } })).toThrow(DnsConfigError);
    expect(() => new StaticResolver({ 'a.test': { AAAA: ['192.0.2.1'] } })).toThrow(DnsConfigError);
    expect(() => new StaticResolver({ 'a.test': { MX: ['mx.a.test'] } })).toThrow(DnsConfigError);
    expect(() => new StaticResolver({ 'a.test': { CNAME: ['b.test'] } } as unknown as StaticZone)).toThrow(
      DnsConfigError,
    );
  });

  it('loads from a JSON file; unreadable or invalid files throw DnsConfigError', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-dns-'));
    const good = join(dir, 'zone.json');
    writeFileSync(good, JSON.stringify({ 'mx.test': { MX: ['10 mail.mx.test'] } }));
    const f = StaticResolver.fromFile(good);
    expect(await f.query('mx.test', 'MX')).toEqual({ status: 'ok', records: [{ preference: 10, exchange: 'mail.mx.test' }] });

    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{ not json');
    expect(() => StaticResolver.fromFile(bad)).toThrow(DnsConfigError);
    expect(() => StaticResolver.fromFile(join(dir, 'missing.json'))).toThrow(DnsConfigError);
    writeFileSync(bad, '["a"]');
    expect(() => StaticResolver.fromFile(bad)).toThrow(DnsConfigError);
  });

  it.skipIf(!hasSharedData)("loads the `dns` map of Stalwart's suite as it is", async () => {
    const { readFileSync } = await import('node:fs');
    const suite = JSON.parse(readFileSync(sharedPath('stalwart-antispam-suite', 'cases.json'), 'utf8')) as {
      dns: StaticZone;
    };
    const s = new StaticResolver(suite.dns, { errorWhen: stalwartTestErrors });
    expect(await s.query('twitter.com', 'A')).toEqual({ status: 'ok', records: ['127.0.0.3'] });
    expect(await s.query('gmail.com', 'MX')).toEqual({ status: 'ok', records: [{ preference: 10, exchange: '127.0.0.1' }] });
    expect(await s.query('otherdomain.org', 'A')).toEqual({ status: 'nxdomain' });
  });
});

describe('OffResolver', () => {
  it('answers error "DNS is off" for every query', async () => {
    const off = new OffResolver();
    for (const t of ['A', 'AAAA', 'MX', 'PTR', 'TXT'] as const) {
      expect(await off.query('example.com', t)).toEqual({ status: 'error', error: 'DNS is off' });
    }
  });
});
