/**
 * Connections of a lookup store written by a remote manager (a JMAP token holder) go to the addresses the
 * store policy checked, not to whatever a host name resolves to when the driver connects (docs/jmap.md
 * "Secrets and the store policy"). The policy resolves each host name once when it starts the store
 * (src/lookup/store-policy.ts `resolveStorePins`) and checks those addresses; the drivers then connect to
 * the first of them, so a second DNS answer (DNS rebinding: a public address for the check, 169.254.169.254
 * or an internal one for the connection) is never asked for. TLS keeps the name: node-postgres gets it as
 * `ssl.servername`, mysql2 keeps it as its `host` (the socket is opened to the address through its `stream`
 * option), ioredis gets it as `tls.servername`; Node's TLS checks the certificate against `servername`.
 *
 * Servers a store does not name but its servers announce are checked before each connection too: the nodes
 * of a Redis Cluster (CLUSTER SLOTS, MOVED and ASK redirections; every node connection goes through
 * `pinnedConnector` of redis-pins.ts) and the master a Redis Sentinel names (its `natMap` hook, `sentinelNatCheck`).
 * An announced address is allowed when one of the store's own names resolved to it, or when the store policy
 * allows it as an address (`allowedHosts`; with the default `*`, any address but the link-local and metadata
 * ones); an announced host name is refused, since connecting to it would resolve it unchecked. A refused
 * node fails its connection with an error naming the address and why: the store answers errors (its circuit
 * breaker reports it down), nothing throws out of the driver.
 *
 * {@link PinnedHosts} is plain data, so that it can travel with the store's configuration to the worker
 * threads that open the connections (`RuleSetSpec.stores`).
 */
import type ipaddr from '../dns/ipaddr.js';
import { LookupConfigError, type LookupStoreConfig } from './config.js';
import { HostPolicy, hostAddress, storeHosts } from './store-hosts.js';

/** Where a store's connections go: the outcome of the store policy's resolution when the store started. */
export interface PinnedHosts {
  /** Each host name the store names (lowercased, no trailing dot) → the checked address (text) its connections go to. */
  readonly addresses: Readonly<Record<string, string>>;
  /** The store policy's `allowedHosts` entries (src/lookup/store-hosts.ts), against which announced addresses are checked. */
  readonly allowedHosts: readonly string[];
}

/** Where to open a connection for a host: `host` is an address (or a socket path); `servername` the name for TLS, when there is one. */
export type PinnedRoute = { host: string; servername?: string } | { problem: string };

const nameKey = (host: string): string => host.trim().toLowerCase().replace(/\.$/, '');

/** {@link PinnedHosts} ready for use: the policy parsed, the checked addresses normalised. */
export class HostPins {
  private readonly policy: HostPolicy;
  /** The pinned addresses (normalised text): announced nodes at these are the store's own servers. */
  private readonly checked = new Set<string>();

  /** @throws TypeError naming an `allowedHosts` entry that is none of its forms (HostPolicy). */
  constructor(readonly pinned: PinnedHosts) {
    this.policy = new HostPolicy(pinned.allowedHosts);
    for (const a of Object.values(pinned.addresses)) {
      const addr = hostAddress(a);
      if (addr !== undefined) this.checked.add(normal(a));
    }
  }

  /**
   * Where a connection for `host` goes: a host name to its pinned address (TLS `servername` the name); an IP
   * address or a socket path as it is, when the store's own checks or the policy allow it. A name without a
   * pinned address, and an address or path the policy refuses, give `problem` (no connection is to be made).
   */
  route(host: string): PinnedRoute {
    const h = host.trim();
    if (h.startsWith('/')) {
      const problem = this.policy.hostProblem(h);
      return problem === undefined ? { host: h } : { problem };
    }
    const addr = hostAddress(h);
    if (addr !== undefined) {
      if (this.checked.has(normal(h))) return { host: addr.toString() };
      const problem = this.policy.hostProblem(h);
      return problem === undefined ? { host: addr.toString() } : { problem };
    }
    const pinned = this.pinned.addresses[nameKey(h)];
    if (pinned === undefined || hostAddress(pinned) === undefined)
      return { problem: `host "${h}" has no address checked by the store policy (a name is connected to only at the address it had when the store started)` };
    return { host: hostAddress(pinned)!.toString(), servername: nameKey(h) };
  }

  /** The host names of `config` that have no pinned address (the store cannot connect to them). */
  missing(config: LookupStoreConfig): string[] {
    const out: string[] = [];
    for (const { host } of storeHosts(config)) {
      if (host === undefined || host.trim().startsWith('/') || hostAddress(host.trim()) !== undefined) continue;
      if (this.pinned.addresses[nameKey(host)] === undefined) out.push(host.trim());
    }
    return [...new Set(out)];
  }
}

/** An address as text, IPv4-mapped IPv6 unmapped, so that two spellings of one address compare equal. */
function normal(text: string): string {
  const a = hostAddress(text)!;
  if (a.kind() === 'ipv4') return a.toString();
  const v6 = a as ipaddr.IPv6;
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toNormalizedString();
}

/**
 * The pins of a store, checked against its configuration.
 * @throws LookupConfigError naming a host name of `config` that has no pinned address, or an `allowedHosts`
 *   entry that is none of its forms.
 */
export function storePins(namespace: string, config: LookupStoreConfig, pinned: PinnedHosts | undefined): HostPins | undefined {
  if (pinned === undefined) return undefined;
  let pins: HostPins;
  try {
    pins = new HostPins(pinned);
  } catch (e) {
    throw new LookupConfigError(namespace, `pinned hosts: ${(e as Error).message}`);
  }
  const missing = pins.missing(config);
  if (missing.length > 0) throw new LookupConfigError(namespace, `no checked address for ${missing.map((h) => `"${h}"`).join(', ')}: the store connects to names only at the address the store policy checked`);
  return pins;
}

/** A route's refusal as the connection error a store reports. */
export function refusedError(host: string, problem: string): Error {
  const e = new Error(`connection to ${host} refused by the store policy: ${problem}`);
  (e as Error & { code: string }).code = 'ESPAMRULE_ADDRESS';
  return e;
}
