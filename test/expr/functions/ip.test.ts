import { describe, expect, it } from 'vitest';
import { Float } from '../../../src/expr/value.js';
import { call } from './helpers.js';

describe('is_ip_addr family (Rust IpAddr parsing)', () => {
  it('accepts strict dotted quads and IPv6 forms', () => {
    for (const ip of ['1.2.3.4', '0.0.0.0', '255.255.255.255']) expect(call('is_ipv4_addr', ip)).toBe(1);
    for (const ip of ['::', '::1', '1::', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7::', '::ffff:1.2.3.4', 'A:B:C::D:E', '1:2:3:4:5:6:1.2.3.4']) {
      expect(call('is_ipv6_addr', ip)).toBe(1);
      expect(call('is_ip_addr', ip)).toBe(1);
    }
  });
  it('rejects leading zeros, short forms, brackets, zones and whitespace', () => {
    for (const ip of ['01.2.3.4', '1.2.3', '1.2.3.256', ' 1.2.3.4', '1.2.3.4 ', '1.2.3.4.5', '0x1.2.3.4', '']) {
      expect(call('is_ip_addr', ip)).toBe(0);
    }
    for (const ip of ['[::1]', 'fe80::1%eth0', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '::1:2:3:4:5:6:7:8', '12345::', '1.2.3.4::', ':1::2', '1:2:3:4:5:6:7:8::']) {
      expect(call('is_ip_addr', ip)).toBe(0);
    }
    expect(call('is_ipv4_addr', '::ffff:1.2.3.4')).toBe(0);
    expect(call('is_ipv6_addr', '1.2.3.4')).toBe(0);
    expect(call('is_ip_addr', new Float(1.5))).toBe(0);
  });
});

describe('is_ip_in_cidr', () => {
  const cases: [string, string, number][] = [
    ['10.1.2.3', '10.0.0.0/8', 1],
    ['10.1.2.3', '10.0.0.0/7', 0],
    ['10.1.2.3', '10.0.0.0/33', 0],
    ['10.1.2.3', ' 10.0.0.0 / 8 ', 1],
    ['10.1.2.3', '10.1.2.3', 1],
    ['10.1.2.4', '10.1.2.3', 0],
    ['::ffff:10.1.2.3', '10.0.0.0/8', 1],
    ['::1', '0.0.0.0/8', 1], // the deprecated compatible form converts for a prefix
    ['::a01:203', '10.1.2.3', 0], // …but not for an exact address
    ['::ffff:10.1.2.3', '10.1.2.3', 1],
    ['10.1.2.3', '::ffff:10.0.0.0/104', 1],
    ['1.2.3.4', '::ffff:1.2.3.4', 1],
    ['2001:db8::1', '2001:db8::/32', 1],
    ['2001:db9::1', '2001:db8::/32', 0],
    ['2001:db8::1', '2001:db8::/7', 0],
    ['2001:db8::1', '2001:db8::/129', 0],
    ['1.2.3.4', 'garbage', 0],
    ['x', '10.0.0.0/8', 0],
    ['10.1.2.3', '10.0.0.0/x', 0],
    ['2001:db8::1', '10.0.0.0/8', 0],
  ];
  it.each(cases)('%s in %s → %i', (ip, cidr, want) => {
    expect(call('is_ip_in_cidr', ip, cidr)).toBe(want);
  });
});

describe('ip_reverse_name', () => {
  it('reverses IPv4 octets and IPv6 nibbles', () => {
    expect(call('ip_reverse_name', '1.2.3.4')).toBe('4.3.2.1');
    expect(call('ip_reverse_name', '2001:db8::1')).toBe('1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2');
    expect(call('ip_reverse_name', 'not an ip')).toBe('');
  });
});
