/**
 * The address check of spamrule's own HTTP requests (redirect hops, remote list downloads): public
 * unicast addresses pass; loopback, private, link-local (the cloud metadata address), unique-local,
 * multicast, reserved and documentation ranges, and the IPv4-mapped and embedding IPv6 forms of them, do
 * not; the operator's allowed networks do.
 */
import { describe, expect, it } from 'vitest';
import { AddressPolicy, resolveAllowed } from '../../src/net/index.js';

const policy = new AddressPolicy();

describe('AddressPolicy', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'], ['100.64.0.1', 'carrierGradeNat'], ['0.0.0.0', 'unspecified'], ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'], ['192.0.2.1', 'reserved'], ['198.51.100.7', 'reserved'], ['203.0.113.9', 'reserved'], ['240.0.0.1', 'reserved'],
    ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'linkLocal'], ['fc00::1', 'uniqueLocal'], ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'], ['2001:db8::1', 'reserved'],
    // IPv4-mapped: judged as the IPv4 address, shown dotted.
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:10.0.0.1', 'private'], ['::ffff:169.254.169.254', 'linkLocal'],
    // Forms that embed or relay to another address, and IPv6 outside the global unicast block.
    ['64:ff9b::7f00:1', 'rfc6052'], ['2002:7f00:1::1', '6to4'], ['2001::1', 'teredo'], ['::7f00:1', 'not global unicast'], ['100::1', 'discard'],
  ])('refuses %s (%s)', (ip, range) => {
    expect(policy.refusal(ip)).toMatch(new RegExp(`\\(${range}\\)$`));
  });

  it('shows the address as given, an IPv4-mapped one in dotted form', () => {
    expect(policy.refusal('::ffff:127.0.0.1')).toBe('::ffff:127.0.0.1 (loopback)');
    expect(policy.refusal('[::1]')).toBe('::1 (loopback)');
    expect(policy.refusal('localhost')).toBe('"localhost" (not an IP address)');
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '[2606:4700::1]'])('allows the public address %s', (ip) => {
    expect(policy.refusal(ip)).toBeUndefined();
  });

  it('allows the networks the operator names (and the IPv4-mapped form of an IPv4 one), nothing more', () => {
    const p = new AddressPolicy(['10.20.0.0/16', '127.0.0.1', 'fd00::/8']);
    expect(p.refusal('10.20.3.4')).toBeUndefined();
    expect(p.refusal('::ffff:10.20.3.4')).toBeUndefined();
    expect(p.refusal('127.0.0.1')).toBeUndefined();
    expect(p.refusal('fd00::5')).toBeUndefined();
    expect(p.refusal('10.21.0.1')).toBe('10.21.0.1 (private)');
    expect(p.refusal('127.0.0.2')).toBe('127.0.0.2 (loopback)');
    expect(p.refusal('169.254.169.254')).toBe('169.254.169.254 (linkLocal)');
    expect(p.refusal('8.8.8.8')).toBeUndefined();
  });

  it.each(['10.1', 'intranet', '10.0.0.0/33', 'fe80::/129', '', '10.0.0.0/x'])('refuses the allowed network %j', (net) => {
    expect(() => new AddressPolicy([net])).toThrow(`allowed network "${net}" is neither an IP address nor a CIDR range (such as 10.0.0.0/8)`);
  });
});

describe('resolveAllowed', () => {
  const answers: Record<string, string[]> = { 'mixed.example': ['127.0.0.1', '93.184.216.34'], 'inside.example': ['10.0.0.1', '::1'] };
  const resolve = async (host: string): Promise<string[]> => {
    const a = answers[host];
    if (a === undefined) throw new Error('does not resolve (NXDOMAIN)');
    return a;
  };

  it('takes the first allowed address of a name, and checks an IP literal as it is', async () => {
    expect(await resolveAllowed('mixed.example', resolve, policy)).toEqual({ address: '93.184.216.34', family: 4 });
    expect(await resolveAllowed('[2606:4700::1]', resolve, policy)).toEqual({ address: '2606:4700::1', family: 6 });
  });

  it('refuses a name whose every address is refused, naming them; a name that does not resolve is "unresolved"', async () => {
    await expect(resolveAllowed('inside.example', resolve, policy)).rejects.toMatchObject({
      reason: 'policy',
      message: 'inside.example resolves to 10.0.0.1 (private), ::1 (loopback), not a public address',
    });
    await expect(resolveAllowed('127.0.0.1', resolve, policy)).rejects.toMatchObject({ reason: 'policy', message: '127.0.0.1 (loopback) is not a public address' });
    await expect(resolveAllowed('gone.example', resolve, policy)).rejects.toMatchObject({ reason: 'unresolved', message: 'gone.example: does not resolve (NXDOMAIN)' });
  });
});
