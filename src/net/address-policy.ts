/**
 * Which addresses spamrule's own HTTP requests (redirect hops, remote list downloads) may connect to:
 * public unicast addresses only, unless the operator allows a network. A message decides where a
 * redirector URL points, and a re-registered shortener domain can resolve to 127.0.0.1, 10.0.0.0/8 or
 * the cloud metadata address 169.254.169.254, so the check runs on the address actually connected to.
 */
import ipaddr from '../dns/ipaddr.js';
import { parseIpStrict } from '../dns/names.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** IANA's global unicast block (RFC 4291 §2.4): every other IPv6 prefix is reserved, local or special. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Parses an IP address as a URL host or a resolver gives it: dotted-quad IPv4, or IPv6 with or without
 * the URL's brackets (a zone id such as `%eth0` is dropped). `undefined` for anything else (a host name).
 */
export function parseIpHost(host: string): Address | undefined {
  return parseIpStrict(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
}

/**
 * An address or CIDR range as operators write them in lists (`10.1.2.3`, `10.0.0.0/8`, `fd00::/8`), as
 * `[network, prefix bits]`; four-part IPv4 only (ipaddr.js would read `10.1` as 10.0.0.1, which nobody
 * means in such a list). `undefined` for anything else.
 */
export function parseNetwork(text: string): [Address, number] | undefined {
  const t = text.trim();
  const slash = t.indexOf('/');
  const ip = parseIpStrict(slash < 0 ? t : t.slice(0, slash));
  if (ip === undefined) return undefined;
  if (slash < 0) return [ip, ip.kind() === 'ipv4' ? 32 : 128];
  return ipaddr.isValidCIDR(t) ? ipaddr.parseCIDR(t) : undefined;
}

/**
 * Why `addr` is not a public unicast address: the ipaddr.js range name (`loopback`, `private`,
 * `linkLocal`, `uniqueLocal`, `multicast`, `reserved` (which holds the documentation ranges), `carrierGradeNat`,
 * `unspecified`, `broadcast`, `6to4`, `teredo`, `rfc6052`, …; `ipv4Mapped` forms are judged by their IPv4
 * address), `not global unicast` for IPv6 outside 2000::/3 (e.g. the deprecated IPv4-compatible
 * `::7f00:1`), or `undefined` when it is public (`unicast`).
 *
 * Anything that embeds or relays to another address (6to4, Teredo, NAT64) is refused too: where it ends up is
 * not the address checked.
 */
export function nonPublicRange(addr: Address): string | undefined {
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return nonPublicRange((addr as ipaddr.IPv6).toIPv4Address());
  const range = addr.range();
  if (range !== 'unicast') return range;
  return addr.kind() === 'ipv6' && !(addr as ipaddr.IPv6).match(GLOBAL_UNICAST_V6) ? 'not global unicast' : undefined;
}

/**
 * The address check of one kind of request: public unicast addresses pass, and so does any address in
 * `allowedNetworks` (the operator's exceptions, e.g. an internal list server; tests allow 127.0.0.1).
 */
export class AddressPolicy {
  private readonly allowed: [Address, number][];

  /**
   * `allowedNetworks`: addresses or CIDR ranges (`10.1.2.3`, `10.0.0.0/8`, `fd00::/8`, `127.0.0.1/32`).
   * An IPv4 network also allows the IPv4-mapped IPv6 form of its addresses.
   *
   * @throws TypeError naming the first entry that is neither an address nor a CIDR range.
   */
  constructor(readonly allowedNetworks: readonly string[] = []) {
    this.allowed = allowedNetworks.map((n) => {
      if (typeof n !== 'string') throw new TypeError(`allowed network ${JSON.stringify(n)} is not a string`);
      const net = parseNetwork(n);
      if (net === undefined) throw new TypeError(`allowed network "${n}" is neither an IP address nor a CIDR range (such as 10.0.0.0/8)`);
      return net;
    });
  }

  /**
   * `undefined` when a connection to `ip` is allowed, else the address and why not, for a message:
   * `127.0.0.1 (loopback)`, `::ffff:10.0.0.1 (private)`. A text that is no IP address is refused too.
   */
  refusal(ip: string): string | undefined {
    const addr = parseIpHost(ip);
    if (addr === undefined) return `${JSON.stringify(ip)} (not an IP address)`;
    if (this.isAllowed(addr)) return undefined;
    const range = nonPublicRange(addr);
    if (range === undefined) return undefined;
    // ipaddr.js writes an IPv4-mapped address in hex (::ffff:7f00:1); the dotted form says what it is.
    const v6 = addr.kind() === 'ipv6' ? (addr as ipaddr.IPv6) : undefined;
    const shown = v6?.isIPv4MappedAddress() === true ? `::ffff:${v6.toIPv4Address().toString()}` : addr.toString();
    return `${shown} (${range})`;
  }

  private isAllowed(addr: Address): boolean {
    const forms: Address[] = [addr];
    if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) forms.push((addr as ipaddr.IPv6).toIPv4Address());
    return this.allowed.some(([net, bits]) => forms.some((a) => a.kind() === net.kind() && a.match(net, bits)));
  }
}
