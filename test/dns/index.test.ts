/**
 * The DNS layer's public face: `createResolver` spec parsing, Stalwart's existence checks, reverse names.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createResolver,
  DnsConfigError,
  ipExists,
  mxExists,
  OffResolver,
  ptrQueryName,
  reverseName,
  StaticResolver,
  stalwartTestErrors,
  SystemResolver,
} from '../../src/dns/index.js';
import { TestDnsServer } from './server.js';

const server = new TestDnsServer({ 'spec.test': { A: ['192.0.2.7'] } });
let addr = '';
beforeAll(async () => {
  addr = await server.start();
});
afterAll(() => server.stop());

describe('createResolver', () => {
  it('system, system:SERVER (queries go to that server), off, static:FILE', async () => {
    expect(createResolver('system')).toBeInstanceOf(SystemResolver);
    const sys = createResolver(`system:${addr}`, { system: { timeoutMs: 1000 } });
    expect(sys).toBeInstanceOf(SystemResolver);
    expect(await sys.query('spec.test', 'A')).toMatchObject({ status: 'ok', records: ['192.0.2.7'] });
    expect(server.count('spec.test', 'A')).toBe(1);
    expect(createResolver(`system:${addr}, 127.0.0.2`)).toBeInstanceOf(SystemResolver);
    expect(createResolver('system:[::1]:5353')).toBeInstanceOf(SystemResolver);
    expect(createResolver('off')).toBeInstanceOf(OffResolver);
    expect(createResolver('OFF')).toBeInstanceOf(OffResolver);

    const dir = mkdtempSync(join(tmpdir(), 'spamrule-dns-'));
    const file = join(dir, 'zone.json');
    writeFileSync(file, JSON.stringify({ 'a.test': { A: ['192.0.2.1'] }, 'x._dns_error.test': { A: ['192.0.2.2'] } }));
    const st = createResolver(`static:${file}`, { static: { errorWhen: stalwartTestErrors } });
    expect(st).toBeInstanceOf(StaticResolver);
    expect(await st.query('a.test', 'A')).toEqual({ status: 'ok', records: ['192.0.2.1'] });
    expect(await st.query('x._dns_error.test', 'A')).toMatchObject({ status: 'error' });
  });

  it.each([
    ['dns'],
    [''],
    ['system:'],
    ['system:not-an-ip'],
    ['system:127.0.0.1,,127.0.0.2'],
    ['off:now'],
    ['static'],
    ['static:'],
    ['static:/nonexistent/zone.json'],
  ])('%j → DnsConfigError', (spec) => {
    expect(() => createResolver(spec)).toThrow(DnsConfigError);
  });
});

describe('ipExists / mxExists (Stalwart exists_ip / exists_mx)', () => {
  const zone = new StaticResolver(
    {
      'v4.test': { A: ['192.0.2.1'] },
      'v6.test': { AAAA: ['2001:db8::1'] },
      'mx.test': { MX: ['10 mail.mx.test'] },
      'nullmx.test': { MX: ['0 .'] },
      'mixedmx.test': { MX: ['0 .', '10 mail.mixedmx.test'] },
      // A fails with an error, AAAA answers: still "exists".
      'aerr._dns_error.test': { AAAA: ['2001:db8::2'] },
    },
    { errorWhen: (name, type) => name.startsWith('aerr.') ? type === 'A' : stalwartTestErrors(name) },
  );

  it('ipExists: A, else AAAA; nxdomain → false; error → "error"', async () => {
    expect(await ipExists(zone, 'v4.test')).toBe(true);
    expect(await ipExists(zone, 'v6.test')).toBe(true);
    expect(await ipExists(zone, 'aerr._dns_error.test')).toBe(true);
    expect(await ipExists(zone, 'none.test')).toBe(false);
    expect(await ipExists(zone, 'x._dns_error.test')).toBe('error');
    expect(await ipExists(new OffResolver(), 'v4.test')).toBe('error');
  });

  it('mxExists: any non-empty exchange; null MX and nxdomain → false; error → "error"', async () => {
    expect(await mxExists(zone, 'mx.test')).toBe(true);
    expect(await mxExists(zone, 'mixedmx.test')).toBe(true);
    expect(await mxExists(zone, 'nullmx.test')).toBe(false);
    expect(await mxExists(zone, 'v4.test')).toBe(false);
    expect(await mxExists(zone, 'x._parse_error.test')).toBe('error');
  });

  it('over the system resolver: a name without A queries AAAA next', async () => {
    const sys = new SystemResolver({ servers: [addr] });
    expect(await ipExists(sys, 'missing.test')).toBe(false);
    expect(server.count('missing.test', 'A')).toBe(1);
    expect(server.count('missing.test', 'AAAA')).toBe(1);
    expect(await ipExists(sys, 'spec.test')).toBe(true);
    expect(server.count('spec.test', 'AAAA')).toBe(0);
  });
});

describe('reverseName', () => {
  it('IPv4: octets reversed', () => {
    expect(reverseName('192.0.2.1')).toBe('1.2.0.192');
    expect(ptrQueryName('192.0.2.1')).toBe('1.2.0.192.in-addr.arpa');
  });

  it('IPv6: 32 lowercase nibbles of the full address, least significant first', () => {
    expect(reverseName('2001:DB8::1')).toBe('1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2');
    expect(reverseName('::ffff:192.0.2.1')).toBe('1.0.2.0.0.0.0.c.f.f.f.f.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0');
    expect(ptrQueryName('::1')).toBe(`1${'.0'.repeat(31)}.ip6.arpa`);
  });

  it('not an IP (or a non-standard IPv4 form) → undefined', () => {
    for (const s of ['', 'example.com', '127.1', '0x7f.0.0.1', '1.2.3.256', '1.2.3.4.5']) {
      expect(reverseName(s)).toBeUndefined();
    }
  });
});
