/**
 * The iprev check (RFC 8601 §3): the remote IP's PTR names, confirmed by a forward lookup that gives
 * the IP back. Stalwart's SMTP server runs it on every connection (its `mail-auth` crate,
 * `verify_iprev`); spamrule runs it when classify is asked to verify (`verify: true`, `--verify`) and
 * the session has no iprev result, with the same outcomes:
 * - `pass` as soon as the A (IPv4) or AAAA (IPv6) records of one of the first two PTR names hold the IP;
 * - `fail` when those lookups answered but none holds the IP;
 * - `permerror` when the IP has no PTR record, or no name matched and a forward lookup found no record;
 * - `temperror` when a lookup failed (timeout, SERVFAIL, the per-message DNS budget), unless a name
 *   matched or a later lookup decided otherwise (the last failed lookup decides, as in Stalwart).
 * The PTR names are kept (lower-cased, no trailing dot) whenever the PTR lookup answered.
 */
import { parseIpStrict } from '../dns/names.js';
import type { Resolver } from '../dns/types.js';
import type { IprevResult } from './types.js';

/** PTR names confirmed at most (Stalwart's `take(2)`): a crafted PTR set cannot multiply the lookups. */
export const IPREV_MAX_NAMES = 2;

/** Runs the iprev check of `ip` over `resolver`; never rejects. `undefined` when `ip` is not an IP address. */
export async function verifyIprev(ip: string, resolver: Resolver): Promise<{ result: IprevResult; ptr: string[] } | undefined> {
  const addr = parseIpStrict(ip);
  if (addr === undefined) return undefined;
  const ptrAnswer = await resolver.query(ip, 'PTR');
  if (ptrAnswer.status === 'nxdomain') return { result: 'permerror', ptr: [] };
  if (ptrAnswer.status === 'error') return { result: 'temperror', ptr: [] };
  const ptr = ptrAnswer.records.map((n) => n.toLowerCase().replace(/\.+$/, ''));
  const type = addr.kind() === 'ipv4' ? 'A' : 'AAAA';
  const want = addr.toNormalizedString();
  let lastError: IprevResult | undefined;
  for (const name of ptr.slice(0, IPREV_MAX_NAMES)) {
    const a = await resolver.query(name, type);
    if (a.status === 'ok') {
      if (a.records.some((r) => parseIpStrict(r)?.toNormalizedString() === want)) return { result: 'pass', ptr };
    } else lastError = a.status === 'nxdomain' ? 'permerror' : 'temperror';
  }
  return { result: lastError ?? 'fail', ptr };
}
