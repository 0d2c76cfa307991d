/**
 * The engine's resolver in the shape `dns_query` reads (`DnsResolver`, node's `dns/promises`
 * methods), so that a rule's lookups go where the built-in analysis's go: through `--dns`
 * (`off` makes no network request at all), the answer cache and the per-message DNS budget
 * (docs/dns.md), not to the system's servers behind the engine's back.
 */
import type { DnsAnswer, DnsType, Resolver } from '../dns/types.js';
import type { DnsResolver } from '../expr/types.js';

/** A failed answer as node's resolver reports one: an Error with its `code` (ENOTFOUND: no such name or record). */
function failure(type: DnsType, name: string, a: Exclude<DnsAnswer, { status: 'ok' }>): Error {
  const code = a.status === 'nxdomain' ? 'ENOTFOUND' : 'ESERVFAIL';
  const why = a.status === 'nxdomain' ? 'no such name or record' : a.error;
  return Object.assign(new Error(`${type} ${name}: ${why}`), { code });
}

/** `resolver` as a `DnsResolver` (each method rejects as node's does when there is no answer). */
export function exprDnsResolver(resolver: Resolver): DnsResolver {
  const records = async <T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T> & { status: 'ok' }> => {
    const a = await resolver.query(name, type);
    if (a.status !== 'ok') throw failure(type, name, a);
    return a;
  };
  return {
    resolve4: async (name) => (await records(name, 'A')).records,
    resolve6: async (name) => (await records(name, 'AAAA')).records,
    resolveMx: async (name) => (await records(name, 'MX')).records.map((m) => ({ exchange: m.exchange, priority: m.preference })),
    // Our TXT records are already one string each (their character-strings joined).
    resolveTxt: async (name) => (await records(name, 'TXT')).records.map((t) => [t]),
    reverse: async (ip) => (await records(ip, 'PTR')).records,
  };
}
