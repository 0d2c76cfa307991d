/**
 * The `ip` module: Stalwart's ip analysis (`spam_filter_analyze_ip`; docs/analysis.md "ip"). Checks the
 * message's IP set (the connecting address, Received IPs, IPs written in text parts; the Ip scope's
 * elements) against the Ip DNSBLs, and tags reverse-DNS failures and the source ASN.
 *
 * Tags: IP_BLOCKED, RDNS_DNSFAIL, RDNS_NONE, SOURCE_ASN_<n>, and the Ip DNSBL servers' tags.
 * Runs in training mode too (Stalwart does not gate this module).
 */
import ipaddr from '../dns/ipaddr.js';
import { parseNetwork } from '../net/address-policy.js';
import { extractIps, type IpElement } from '../message/elements.js';
import { checkDnsbl, dnsblDisabled, ipBytes, ipVariable } from './dnsbl.js';
import type { AnalysisContext } from './types.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

// Parsed once per list object, not per message.
const rangeCache = new WeakMap<readonly string[], Range[]>();

/** Addresses and CIDR ranges of an allow/block list; invalid entries (which `new SpamEngine` refuses) are ignored. */
function rangesOf(list: readonly string[] | undefined): Range[] {
  if (list === undefined || list.length === 0) return [];
  let r = rangeCache.get(list);
  if (r === undefined) {
    r = [];
    for (const e of list) {
      // The strict reading `new SpamEngine` checks the lists with (src/net parseNetwork): four-part IPv4.
      const n = typeof e === 'string' ? parseNetwork(e) : undefined;
      if (n !== undefined) r.push(n);
    }
    rangeCache.set(list, r);
  }
  return r;
}

function inRanges(addr: ipaddr.IPv4 | ipaddr.IPv6, ranges: Range[]): boolean {
  for (const [net, bits] of ranges) {
    if (net.kind() === addr.kind() && addr.match([net, bits] as never)) return true;
    // an IPv4-mapped IPv6 address matches IPv4 ranges
    if (addr.kind() === 'ipv6' && net.kind() === 'ipv4' && (addr as ipaddr.IPv6).isIPv4MappedAddress() &&
      (addr as ipaddr.IPv6).toIPv4Address().match([net as ipaddr.IPv4, bits])) return true;
  }
  return false;
}

/** Loopback, multicast and unspecified addresses are never DNSBL-checked (private ranges are). */
function isSkipped(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const a = addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr;
  const range = a.range();
  return range === 'loopback' || range === 'multicast' || range === 'unspecified';
}

export async function ip(ctx: AnalysisContext): Promise<void> {
  const allowed = rangesOf(ctx.config.allowedIps);
  const blocked = rangesOf(ctx.config.blockedIps);
  const dnsbl = !dnsblDisabled(ctx, 'Ip');
  const checks: Promise<void>[] = [];
  if (dnsbl || blocked.length > 0) {
    for (const el of extractIps(ctx.message) as IpElement[]) {
      let addr: ipaddr.IPv4 | ipaddr.IPv6;
      try {
        addr = ipaddr.parse(el.ip);
      } catch {
        continue; // only a caller-supplied remote IP can be unparsable
      }
      if (isSkipped(addr) || inRanges(addr, allowed)) continue;
      if (inRanges(addr, blocked)) {
        ctx.tag('IP_BLOCKED');
        continue;
      }
      if (!dnsbl) continue;
      const bytes = ipBytes(el.ip);
      checks.push(checkDnsbl(ctx, 'Ip', (name) => ipVariable(el.ip, bytes, name), el.location));
    }
  }
  await Promise.all(checks);

  const iprev = ctx.session.iprev;
  if (iprev !== null) {
    if (iprev.result === 'temperror') ctx.tag('RDNS_DNSFAIL');
    else if (iprev.result === 'fail' || iprev.result === 'permerror') ctx.tag('RDNS_NONE');
  }
  if (ctx.session.asn !== null) ctx.tag(`SOURCE_ASN_${ctx.session.asn}`);
}
