/**
 * Resolve once, check, connect to what was checked. A host name is resolved here, every address is
 * checked against an {@link AddressPolicy}, and the connection is pinned to the first address that
 * passed through the `lookup` option of `http.request` (so the socket never resolves the name again:
 * a second answer, e.g. DNS rebinding to 127.0.0.1, cannot slip past the check). The URL keeps its host
 * name, so the Host header, TLS SNI and certificate check are those of the name.
 */
import { lookup as systemLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Resolver } from '../dns/types.js';
import { parseIpHost, type AddressPolicy } from './address-policy.js';

/** Resolves a host name to its addresses (text); rejects with an Error saying why when there is none. */
export type HostResolver = (host: string) => Promise<readonly string[]>;

/** The address a connection is pinned to. */
export interface PinnedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * No connection was made: `reason` `'policy'` when the address check refused every address of the host,
 * `'unresolved'` when the name gave no address at all. `code` is `ESPAMRULE_ADDRESS` either way.
 */
export class AddressRefusedError extends Error {
  readonly code = 'ESPAMRULE_ADDRESS';
  constructor(
    message: string,
    readonly reason: 'policy' | 'unresolved',
  ) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

/**
 * The address to connect to for `host` (a URL's `hostname`: IPv6 literals in brackets): an IP literal is
 * checked as it is; a name is resolved with `resolve` and its first address that `policy` allows is taken.
 *
 * @throws AddressRefusedError when the name does not resolve (`unresolved`), or no address of it is allowed
 *   (`policy`; the message names the host and each refused address with its range, e.g.
 *   `localhost resolves to 127.0.0.1 (loopback), not a public address`).
 */
export async function resolveAllowed(host: string, resolve: HostResolver, policy: AddressPolicy): Promise<PinnedAddress> {
  const literal = parseIpHost(host);
  if (literal !== undefined) {
    const why = policy.refusal(literal.toString());
    if (why !== undefined) throw new AddressRefusedError(`${why} is not a public address`, 'policy');
    return { address: literal.toString(), family: literal.kind() === 'ipv4' ? 4 : 6 };
  }
  let addresses: readonly string[];
  try {
    addresses = await resolve(host);
  } catch (e) {
    throw new AddressRefusedError(`${host}: ${(e as Error).message}`, 'unresolved');
  }
  if (addresses.length === 0) throw new AddressRefusedError(`${host}: no address`, 'unresolved');
  const refused: string[] = [];
  for (const a of addresses) {
    const why = policy.refusal(a);
    if (why === undefined) {
      const ip = parseIpHost(a)!;
      return { address: ip.toString(), family: ip.kind() === 'ipv4' ? 4 : 6 };
    }
    refused.push(why);
  }
  throw new AddressRefusedError(`${host} resolves to ${refused.join(', ')}, not a public address`, 'policy');
}

/**
 * A `lookup` for `http.request`/`net.connect` that answers `pinned` whatever the name, never resolving
 * (node asks for every address, `all: true`, when it tries address families in turn: it gets the one).
 */
export function pinnedLookup(pinned: PinnedAddress): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all === true) callback(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  }) as unknown as LookupFunction;
}

/**
 * The operating system's resolver (`getaddrinfo` through `dns.lookup`: /etc/hosts, then DNS), every
 * address in the order it gives. Used for remote list downloads, which run outside any message.
 */
export const systemHostResolver: HostResolver = (host) =>
  new Promise((resolve, reject) => {
    systemLookup(host, { all: true, verbatim: true }, (err, addresses) => {
      if (err) reject(new Error(`does not resolve (${err.code ?? err.message})`));
      else resolve(addresses.map((a) => a.address));
    });
  });

/**
 * Resolves through a spamrule {@link Resolver} (the engine's, with the message's DNS budget): A records,
 * or when there are none, AAAA records. Rejects when neither gives an address (DNS off, NXDOMAIN, an error).
 */
export function dnsHostResolver(dns: Resolver): HostResolver {
  return async (host) => {
    const a = await dns.query(host, 'A');
    if (a.status === 'ok' && a.records.length > 0) return a.records;
    const aaaa = await dns.query(host, 'AAAA');
    if (aaaa.status === 'ok' && aaaa.records.length > 0) return aaaa.records;
    const why = (x: typeof a): string => (x.status === 'error' ? x.error : 'no record');
    throw new Error(`does not resolve (A: ${why(a)}; AAAA: ${why(aaaa)})`);
  };
}
