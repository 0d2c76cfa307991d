/**
 * Name helpers shared by the resolvers: case folding, reverse names for PTR and DNSBL queries.
 */
import ipaddr from './ipaddr.js';
import type { DnsType } from './types.js';

/** The record types a resolver answers, for validating input that does not come from TypeScript. */
export const DNS_TYPES: readonly DnsType[] = ['A', 'AAAA', 'MX', 'PTR', 'TXT'];

/** Lowercases `name` (DNS names compare ASCII case-insensitively, RFC 4343) and drops one trailing dot. */
export function normalizeName(name: string): string {
  const n = name.endsWith('.') ? name.slice(0, -1) : name;
  return n.toLowerCase();
}

/**
 * Parses an IP address in its usual text forms only: dotted-quad IPv4 (not `127.1` or hex octets, which
 * ipaddr.js's `parse` would accept) or IPv6 (a zone id such as `%eth0` is dropped). `undefined` when invalid.
 */
export function parseIpStrict(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  return undefined;
}

/**
 * The reversed form of an IP address used by DNSBL zones and PTR queries, without the `in-addr.arpa` /
 * `ip6.arpa` suffix: IPv4 `a.b.c.d` → `d.c.b.a`; IPv6 → the 32 hex nibbles of the fully expanded address,
 * lowercase, least significant first, dot-separated (`2001:db8::1` → `1.0.0.0.….8.b.d.0.1.0.0.2`), as
 * Stalwart's `ip_reverse` (docs/dns.md; RFC 1035 §3.5, RFC 3596 §2.5). `undefined` for text that is not an IP.
 */
export function reverseName(ip: string): string | undefined {
  const addr = parseIpStrict(ip);
  if (!addr) return undefined;
  if (addr.kind() === 'ipv4') return addr.toByteArray().reverse().join('.');
  const nibbles: string[] = [];
  for (const byte of addr.toByteArray()) nibbles.push((byte >> 4).toString(16), (byte & 0x0f).toString(16));
  return nibbles.reverse().join('.');
}

/** The PTR query name of an IP address (`d.c.b.a.in-addr.arpa`, `….ip6.arpa`); `undefined` when not an IP. */
export function ptrQueryName(ip: string): string | undefined {
  const rev = reverseName(ip);
  if (rev === undefined) return undefined;
  return rev + (ip.includes(':') ? '.ip6.arpa' : '.in-addr.arpa');
}
