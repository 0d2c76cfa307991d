/**
 * Which hosts a lookup store written by a remote manager (a JMAP token holder) may connect to: the
 * store policy's `allowedHosts` (src/lookup/store-policy.ts; docs/jmap.md "Secrets and the store
 * policy"). A StoreLookup names the host the server then connects to from inside its own network, so
 * whoever may write one could point it at an internal service or at a cloud metadata endpoint
 * (169.254.169.254, fd00:ec2::254), which answer plain requests with credentials.
 *
 * Entries: `*` (any host, the default), an IP address or CIDR range (`10.0.0.0/8`, `2001:db8::/32`), a host
 * name (`redis.internal`, exact, case-insensitive), `*.example.net` (its subdomains, not itself), or an
 * absolute path (a unix socket: a PostgreSQL socket directory, a Redis socket file). A host name is
 * allowed only when listed by name (or by `*`): a range does not admit names, since whoever writes the
 * store may choose a name whose DNS they control.
 *
 * Always refused, whatever `*` or a wider range says, unless an entry inside it names it: the
 * link-local ranges 169.254.0.0/16 and fe80::/10 (where cloud metadata services answer) and AWS's IPv6
 * metadata address fd00:ec2::254, also as a NAT64 or SIIT translator reaches them (64:ff9b::169.254.169.254).
 * A host name's addresses are checked against those too, when they are known ({@link HostPolicy.addressProblem}).
 * A host that is neither an address, a socket path nor a host name is refused, whatever the entries.
 */
import ipaddr from '../dns/ipaddr.js';
import { parseIpHost, parseNetwork } from '../net/index.js';
import type { LookupStoreConfig } from './config.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Network = [Address, number];

/** Refused unless an entry inside one of them allows the address (see the module docs). */
const METADATA_RANGES: readonly Network[] = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'].map((n) => ipaddr.parseCIDR(n));

/** A host name as the resolver takes it (letters, digits, `-`, `_`, dots), or `*.` and such a name. */
const NAME = /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;
/**
 * A host name a store may connect to (lowercased, without a trailing dot): {@link NAME} without the `*.`.
 * Anything else is refused, whatever the policy: Node hands a name to `getaddrinfo` as a C string, so
 * `10.0.0.5\u0000.example.net` connects to 10.0.0.5 while it would pass for a subdomain of `*.example.net`.
 */
const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/**
 * The address a host string means, as the system resolver reads it: a strict IPv4 or IPv6 literal (in
 * brackets or not), or one of the other IPv4 forms `getaddrinfo` accepts (`2852039166`, `0xa9fea9fe`,
 * `0251.0376.0251.0376`, `127.1`), which would otherwise pass for host names. A trailing dot is ignored.
 */
export function hostAddress(host: string): Address | undefined {
  const h = host.endsWith('.') ? host.slice(0, -1) : host;
  const strict = parseIpHost(h);
  if (strict !== undefined) return strict;
  return /^[0-9a-fx.]+$/i.test(h) && ipaddr.IPv4.isValid(h) ? ipaddr.IPv4.parse(h) : undefined;
}

/** `addr` as IPv4 when it is an IPv4-mapped IPv6 address, else itself. */
function unmapped(addr: Address): Address {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr;
}

/** The IPv4-translated prefixes a NAT64 or SIIT translator carries to the IPv4 address in their last 32 bits. */
const TRANSLATED: readonly Network[] = ['64:ff9b::/96', '::ffff:0:0:0/96'].map((n) => ipaddr.parseCIDR(n));

/**
 * The IPv4 address an IPv6 one reaches through a translator: 64:ff9b::/96 (NAT64's well-known prefix, RFC 6052
 * §2.1) or ::ffff:0:0:0/96 (IPv4-translated, RFC 2765 §2.1), else `undefined`.
 */
function translated(addr: Address): ipaddr.IPv4 | undefined {
  if (addr.kind() !== 'ipv6' || !TRANSLATED.some((n) => within(addr, n))) return undefined;
  const p = (addr as ipaddr.IPv6).parts;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

/** The metadata range `a` lies in, as itself or through a translator ({@link translated}), with the address in that range's family. */
function metadataOf(a: Address): [Address, Network] | undefined {
  for (const v of [a, translated(a)]) {
    const range = v === undefined ? undefined : METADATA_RANGES.find((r) => within(v, r));
    if (range !== undefined) return [v!, range];
  }
  return undefined;
}

function within(addr: Address, [net, bits]: Network): boolean {
  return addr.kind() === net.kind() && addr.match(net, bits);
}

/** Why `entry` is no `allowedHosts` entry (see the module docs), or `undefined` when it is one. */
export function allowedHostProblem(entry: string): string | undefined {
  if (entry === '*' || entry.startsWith('/') || parseNetwork(entry) !== undefined) return undefined;
  const name = entry.toLowerCase().replace(/\.$/, '');
  if (NAME.test(name) && hostAddress(name) === undefined) return undefined;
  return `allowed host "${entry}" is neither *, an IP address or CIDR range (10.0.0.0/8), a host name (redis.internal, *.example.net) nor an absolute socket path`;
}

/** A parsed `allowedHosts` list. */
export class HostPolicy {
  private readonly any: boolean;
  private readonly networks: Network[] = [];
  private readonly names = new Set<string>();
  private readonly suffixes: string[] = [];
  private readonly paths = new Set<string>();

  /**
   * `entries`: see the module docs; default `['*']`.
   * @throws TypeError naming the first entry that is none of those.
   */
  constructor(readonly entries: readonly string[] = ['*']) {
    this.any = entries.includes('*');
    for (const e of entries) {
      if (typeof e !== 'string') throw new TypeError(`allowed host ${JSON.stringify(e)} is not a string`);
      if (e === '*') continue;
      if (e.startsWith('/')) {
        this.paths.add(e);
        continue;
      }
      const net = parseNetwork(e);
      if (net !== undefined) {
        // An IPv4-mapped range (::ffff:10.0.0.0/104) is its IPv4 range, as addresses are compared unmapped.
        const [a, bits] = net;
        const v4 = unmapped(a);
        this.networks.push(v4 !== a && bits >= 96 ? [v4, bits - 96] : net);
        continue;
      }
      const problem = allowedHostProblem(e);
      if (problem !== undefined) throw new TypeError(problem);
      const name = e.toLowerCase().replace(/\.$/, '');
      if (name.startsWith('*.')) this.suffixes.push(name.slice(1));
      else this.names.add(name);
    }
  }

  /** Whether `addr` may be connected to (see the module docs). */
  private addressAllowed(addr: Address, wildcard: boolean): boolean {
    const a = unmapped(addr);
    const metadata = metadataOf(a);
    // Inside a metadata range, only an entry that lies inside that range itself opens it (not `*`, not 0.0.0.0/0).
    if (metadata !== undefined) {
      const [v, range] = metadata;
      return this.networks.some((n) => within(v, n) && n[1] >= range[1] && within(n[0], range));
    }
    return wildcard || this.networks.some((n) => within(a, n));
  }

  /**
   * Why a store may not connect to `host` as written (a host name, an IP literal in any form the resolver
   * takes, an absolute socket path), or `undefined` when it may. Names are not resolved here; a host that is
   * none of the three (a NUL, a space, a comma, a percent-encoded or non-ASCII name) is refused.
   */
  hostProblem(host: string): string | undefined {
    const h = host.trim();
    if (h.startsWith('/')) return this.any || this.paths.has(h) ? undefined : `the socket "${h}" is not among the hosts the server allows for managed stores (${this.shown()})`;
    const addr = hostAddress(h);
    if (addr !== undefined) {
      if (this.addressAllowed(addr, this.any)) return undefined;
      return this.isMetadata(addr)
        ? `${unmapped(addr).toString()} is a link-local or cloud metadata address, refused for managed stores unless the server lists it in allowedHosts`
        : `${unmapped(addr).toString()} is not among the hosts the server allows for managed stores (${this.shown()})`;
    }
    const name = h.toLowerCase().replace(/\.$/, '');
    if (!HOST_NAME.test(name)) return `host ${JSON.stringify(h)} is neither an IP address, a socket path nor a host name (letters, digits, "-", "_" and dots)`;
    if (this.any || this.names.has(name) || this.suffixes.some((s) => name.endsWith(s) && name.length > s.length)) return undefined;
    return `host "${h}" is not among the hosts the server allows for managed stores (${this.shown()}); a host name must be listed by name`;
  }

  /**
   * Why a store may not connect to the host name `host` now that it resolves to `addresses` (text), or
   * `undefined`: an address in a link-local or metadata range that no entry opens refuses the host.
   */
  addressProblem(host: string, addresses: readonly string[]): string | undefined {
    for (const text of addresses) {
      const addr = parseIpHost(text);
      if (addr !== undefined && this.isMetadata(addr) && !this.addressAllowed(addr, true))
        return `host "${host}" resolves to ${unmapped(addr).toString()}, a link-local or cloud metadata address, refused for managed stores unless the server lists it in allowedHosts`;
    }
    return undefined;
  }

  private isMetadata(addr: Address): boolean {
    return metadataOf(unmapped(addr)) !== undefined;
  }

  private shown(): string {
    return this.entries.length === 0 ? 'none' : this.entries.map((e) => JSON.stringify(e)).join(', ');
  }
}

/** The host part of a Redis URL (`redis://[user:pass@]host:port`, `rediss://`, a bare `host:port`), or a socket path. */
export function redisHost(url: string): string | undefined {
  if (url.startsWith('/')) return url;
  try {
    const u = new URL(url.includes('://') ? url : `redis://${url}`);
    return u.hostname === '' ? '127.0.0.1' : u.hostname;
  } catch {
    return undefined;
  }
}

/**
 * Every host a store configuration connects to, with the JSON pointer (relative to the store) of the
 * property that names it: `host`, `readReplicas/0/host`, `url`, `urls/1`, `stores/0/urls/0`. A URL whose
 * host cannot be read comes with `host` undefined. The masters a Redis Sentinel names and the nodes a
 * Redis Cluster announces are not in the configuration, so not here (src/lookup/store-pins.ts checks them
 * when the store connects to them).
 */
export function storeHosts(config: LookupStoreConfig, prefix = ''): { path: string; host: string | undefined }[] {
  switch (config['@type']) {
    case 'PostgreSql':
    case 'MySql':
      return [{ path: `${prefix}host`, host: config.host }, ...config.readReplicas.map((r, i) => ({ path: `${prefix}readReplicas/${i}/host`, host: r.host }))];
    case 'Redis':
      return [{ path: `${prefix}url`, host: redisHost(config.url) }];
    case 'RedisCluster':
    case 'RedisSentinel':
      return config.urls.map((u, i) => ({ path: `${prefix}urls/${i}`, host: redisHost(u) }));
    case 'Sharded':
      return config.stores.flatMap((s, i) => storeHosts(s, `${prefix}stores/${i}/`));
    default:
      return [];
  }
}
