/**
 * spamrule's DNS layer (docs/dns.md): one Resolver interface (A, AAAA, MX, PTR, TXT → records | nxdomain |
 * error), its implementations (system, static map, off), a per-message budget, the `--dns` spec parser and the
 * existence checks Stalwart's modules use.
 */
import { DnsConfigError } from './errors.js';
import { OffResolver } from './off.js';
import { StaticResolver, type StaticResolverOptions } from './static.js';
import { SystemResolver, type SystemResolverOptions } from './system.js';
import type { Resolver } from './types.js';

export type { DnsAnswer, DnsRecordMap, DnsType, MxRecord, Resolver } from './types.js';
export { DnsConfigError } from './errors.js';
export { DNS_TYPES, normalizeName, ptrQueryName, reverseName } from './names.js';
export { SystemResolver, type SystemResolverOptions, type SystemResolverStats } from './system.js';
export {
  StaticResolver,
  stalwartTestErrors,
  type StaticRecords,
  type StaticResolverOptions,
  type StaticZone,
} from './static.js';
export { OffResolver } from './off.js';
export { withBudget, type BudgetedResolver, type DnsBudget, type DnsBudgetStats } from './budget.js';

/** Options applied to the resolver a spec names (the spec's own parts, e.g. servers, win). */
export interface CreateResolverOptions {
  system?: SystemResolverOptions;
  static?: StaticResolverOptions;
}

/**
 * Builds a resolver from a `--dns` spec:
 * - `system`: the system's DNS servers; `system:SERVER[,SERVER…]` with `ip`, `ip:port` or `[ipv6]:port`
 *   (e.g. `system:127.0.0.1:5353`);
 * - `off`: no DNS (every query answers `error`);
 * - `static:PATH`: a JSON file holding a StaticZone map (`{ "name": { "A": ["192.0.2.1"], … } }`).
 *
 * @throws DnsConfigError for an unknown kind, a bad server address, or an unreadable/invalid static file.
 */
export function createResolver(spec: string, options: CreateResolverOptions = {}): Resolver {
  const colon = spec.indexOf(':');
  const kind = (colon < 0 ? spec : spec.slice(0, colon)).trim().toLowerCase();
  const arg = colon < 0 ? undefined : spec.slice(colon + 1).trim();
  switch (kind) {
    case 'system': {
      if (arg === undefined) return new SystemResolver(options.system);
      const servers = arg.split(',').map((s) => s.trim());
      if (servers.some((s) => s === '')) throw new DnsConfigError(`--dns ${spec}: empty server address`);
      return new SystemResolver({ ...options.system, servers });
    }
    case 'off':
      if (arg !== undefined) throw new DnsConfigError(`--dns ${spec}: "off" takes no argument`);
      return new OffResolver();
    case 'static':
      if (!arg) throw new DnsConfigError(`--dns ${spec}: "static" needs a file, as in static:zone.json`);
      return StaticResolver.fromFile(arg, options.static);
    default:
      throw new DnsConfigError(`--dns ${spec}: unknown resolver kind "${kind}" (system, system:SERVER, off, static:FILE)`);
  }
}

/**
 * Stalwart's "IP exists" check (its resolver's `exists_ip`): query A; if that fails for any reason, NXDOMAIN
 * included, query AAAA. `true` when either answers records, `false` when the AAAA answer is NXDOMAIN/NODATA,
 * `'error'` when it is an error (a caller sets no tag then).
 */
export async function ipExists(resolver: Resolver, name: string): Promise<boolean | 'error'> {
  const a = await resolver.query(name, 'A');
  if (a.status === 'ok') return a.records.length > 0;
  const aaaa = await resolver.query(name, 'AAAA');
  if (aaaa.status === 'ok') return aaaa.records.length > 0;
  return aaaa.status === 'nxdomain' ? false : 'error';
}

/**
 * Stalwart's "MX exists" check (`exists_mx`): `true` when any MX record has a non-empty exchange (a null MX,
 * RFC 7505 `0 .`, does not count), `false` on NXDOMAIN/NODATA or only null MX, `'error'` on an error.
 */
export async function mxExists(resolver: Resolver, name: string): Promise<boolean | 'error'> {
  const mx = await resolver.query(name, 'MX');
  if (mx.status === 'ok') return mx.records.some((r) => r.exchange !== '');
  return mx.status === 'nxdomain' ? false : 'error';
}
