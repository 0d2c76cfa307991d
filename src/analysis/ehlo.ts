/**
 * The `ehlo` module (Stalwart's ehlo analysis, docs/analysis.md): judges the HELO/EHLO name the
 * client gave. Exactly one of three branches runs: the name is an IP literal, the name has a
 * registrable domain (PSL), or neither.
 */
import ipaddr from '../dns/ipaddr.js';
import { ipExists, mxExists } from '../dns/index.js';
import { OffResolver } from '../dns/off.js';
import { hostname } from '../message/hostname.js';
import type { AnalysisContext } from './types.js';

/**
 * Tags:
 * - HELO is an IP (`1.2.3.4`, `[1.2.3.4]`, IPv6): `HELO_BAREIP`, plus `HELO_IP_A` when it is not the
 *   connecting IP (an IPv4 address and its IPv4-mapped IPv6 form count as different).
 * - HELO has a registrable domain: `HELO_IPREV_MISMATCH` when the first iprev PTR name (whatever the
 *   iprev result) differs from the HELO name; `HELO_NORES_A_OR_MX` when the name has neither an
 *   A/AAAA nor an MX record (both answers a definite "no"; a DNS error sets nothing).
 * - Otherwise (`localhost`, an unknown TLD, an empty or missing HELO): `RCVD_HELO_USER` when the
 *   name contains `user`, and always `HELO_NOT_FQDN`.
 *
 * Inputs: `session.heloDomain` (`unknown` when absent), `session.remoteIp`, `session.iprev.ptr`; DNS.
 */
export function ehlo(ctx: AnalysisContext): void | Promise<void> {
  const s = ctx.session;
  const helo = hostname(s.heloDomain ?? 'unknown');
  if (helo.ip !== undefined) {
    ctx.tag('HELO_BAREIP');
    if (!sameIp(helo.ip, s.remoteIp)) ctx.tag('HELO_IP_A');
  } else if (helo.sld !== undefined) {
    const ptr = s.iprev?.ptr[0];
    if (ptr !== undefined && ptr !== helo.fqdn) ctx.tag('HELO_IPREV_MISMATCH');
    // DNS off answers with errors, which set no tag: the module then stays synchronous.
    if (!(ctx.dns instanceof OffResolver)) return noAddressOrMx(ctx, helo.fqdn);
  } else {
    if (helo.fqdn.includes('user')) ctx.tag('RCVD_HELO_USER');
    ctx.tag('HELO_NOT_FQDN');
  }
}

/** HELO_NORES_A_OR_MX: the MX lookup only matters when the address lookup said a definite "no". */
async function noAddressOrMx(ctx: AnalysisContext, name: string): Promise<void> {
  if ((await ipExists(ctx.dns, name)) === false && (await mxExists(ctx.dns, name)) === false) ctx.tag('HELO_NORES_A_OR_MX');
}

/** IP equality on the address bytes (Rust's `IpAddr` equality: V4 and V4-mapped V6 differ). */
function sameIp(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    const x = ipaddr.parse(a);
    const y = ipaddr.parse(b);
    if (x.kind() !== y.kind()) return false;
    const xb = x.toByteArray();
    const yb = y.toByteArray();
    return xb.length === yb.length && xb.every((v, i) => v === yb[i]);
  } catch {
    return false;
  }
}
