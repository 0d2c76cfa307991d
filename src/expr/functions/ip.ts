/**
 * IP address functions (docs/expression-language.md): strict Rust `IpAddr` parsing, CIDR
 * membership per Stalwart's `IpAddrMask` (`crates/registry/src/types/ipmask.rs`) and reverse-DNS
 * names. Parsing is ours because Rust's grammar is stricter than ipaddr.js (no leading zeros, no
 * short IPv4 forms, no zone ids); the prefix match uses ipaddr.js.
 */
import ipaddr from '../../dns/ipaddr.js';
import { toStr } from '../value.js';
import type { SyncFunctionDef } from './types.js';
import { int, trim } from './util.js';

/** A parsed address: 4 octets (IPv4) or 8 16-bit groups (IPv6). */
export type ParsedIp = { v: 4; octets: number[] } | { v: 6; parts: number[] };

const V4_RE = /^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$/;

/** Rust `Ipv4Addr::from_str`: four decimal octets, no leading zeros, each ≤ 255. */
export function parseIpv4(s: string): number[] | undefined {
  const m = V4_RE.exec(s);
  if (m === null) return undefined;
  const o = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])];
  return o.every((x) => x <= 255) ? o : undefined;
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** Reads `:`-separated groups; the last one may be a dotted quad (two groups) when room allows. */
function readGroups(s: string, limit: number): number[] | undefined {
  if (s === '') return [];
  const fields = s.split(':');
  const out: number[] = [];
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (i === fields.length - 1 && f.includes('.')) {
      const v4 = parseIpv4(f);
      if (v4 === undefined) return undefined;
      out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else {
      if (!HEX_GROUP.test(f)) return undefined;
      out.push(parseInt(f, 16));
    }
  }
  return out.length <= limit ? out : undefined;
}

/** Longest IPv6 address text Rust accepts: `0000:0000:0000:0000:0000:0000:255.255.255.255`. */
const MAX_IPV6_LENGTH = 45;

/**
 * Rust `Ipv6Addr::from_str`: 1–4 hex digits per group, at most one `::` standing for at least
 * one zero group, an optional trailing dotted quad; no brackets, zone ids or whitespace.
 */
export function parseIpv6(s: string): number[] | undefined {
  // No address is longer (6 groups of 4 digits, 6 colons, a dotted quad of 15): refusing longer text
  // first keeps `split(':')` from building an array of a huge `a:a:a:…` (32 Mi characters of it
  // ran out of a 200 MB heap).
  if (s.length > MAX_IPV6_LENGTH) return undefined;
  const dbl = s.indexOf('::');
  if (dbl < 0) {
    const g = readGroups(s, 8);
    return g !== undefined && g.length === 8 ? g : undefined;
  }
  if (s.indexOf('::', dbl + 1) >= 0) return undefined;
  const head = readGroups(s.slice(0, dbl), 7);
  if (head === undefined) return undefined;
  const tailSrc = s.slice(dbl + 2);
  // A dotted quad may only end the address, so it cannot sit in the head.
  if (s.slice(0, dbl).includes('.')) return undefined;
  const tail = readGroups(tailSrc, 7 - head.length);
  if (tail === undefined) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** Rust `IpAddr::from_str`. */
export function parseIp(s: string): ParsedIp | undefined {
  const v4 = parseIpv4(s);
  if (v4 !== undefined) return { v: 4, octets: v4 };
  const v6 = parseIpv6(s);
  return v6 !== undefined ? { v: 6, parts: v6 } : undefined;
}

/** Rust `Ipv6Addr::to_ipv4`: IPv4-mapped (`::ffff:a.b.c.d`) or the deprecated compatible form (`::a.b.c.d`). */
function toIpv4(parts: number[]): number[] | undefined {
  if (parts.slice(0, 5).some((p) => p !== 0)) return undefined;
  if (parts[5] !== 0 && parts[5] !== 0xffff) return undefined;
  return [parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff];
}
/** Rust `Ipv6Addr::to_ipv4_mapped`: only `::ffff:a.b.c.d`. */
function toIpv4Mapped(parts: number[]): number[] | undefined {
  if (parts.slice(0, 5).some((p) => p !== 0) || parts[5] !== 0xffff) return undefined;
  return [parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff];
}
function mapV4(o: number[]): number[] {
  return [0, 0, 0, 0, 0, 0xffff, (o[0]! << 8) | o[1]!, (o[2]! << 8) | o[3]!];
}

/**
 * `is_ip_in_cidr(ip, cidr)`: `cidr` is `addr/len` (split at the last `/`, both sides trimmed; len
 * 8–32 for IPv4, 8–128 for IPv6) or a bare address (exact match). An IPv6 ip against an IPv4
 * network is converted with `to_ipv4` (mapped or compatible form) for a prefix, `to_ipv4_mapped`
 * for a bare address; an IPv4 ip against an IPv6 network is IPv4-mapped first.
 */
export function ipInCidr(ipSrc: string, cidrSrc: string): boolean {
  const ip = parseIp(ipSrc);
  if (ip === undefined) return false;
  const slash = cidrSrc.lastIndexOf('/');
  let net: ParsedIp | undefined;
  let bits: number;
  if (slash >= 0) {
    net = parseIp(trim(cidrSrc.slice(0, slash)));
    const lenSrc = trim(cidrSrc.slice(slash + 1));
    if (net === undefined || !/^\+?[0-9]+$/.test(lenSrc)) return false;
    bits = Number(lenSrc);
    if (bits < 8 || bits > (net.v === 4 ? 32 : 128)) return false;
  } else {
    net = parseIp(trim(cidrSrc));
    if (net === undefined) return false;
    bits = net.v === 4 ? 32 : 128;
  }
  if (net.v === 4) {
    const o = ip.v === 4 ? ip.octets : slash >= 0 ? toIpv4(ip.parts) : toIpv4Mapped(ip.parts);
    if (o === undefined) return false;
    return new ipaddr.IPv4(o).match(new ipaddr.IPv4(net.octets), bits);
  }
  const parts = ip.v === 6 ? ip.parts : mapV4(ip.octets);
  return new ipaddr.IPv6(parts).match(new ipaddr.IPv6(net.parts), bits);
}

/** `1.2.3.4` → `4.3.2.1`; IPv6 → 32 lowercase nibbles, reversed, dot-separated; invalid → `""`. */
export function ipReverseName(s: string): string {
  const ip = parseIp(s);
  if (ip === undefined) return '';
  if (ip.v === 4) return ip.octets.slice().reverse().join('.');
  const hex = ip.parts.map((p) => p.toString(16).padStart(4, '0')).join('');
  return [...hex].reverse().join('.');
}

function sync(arity: number, fn: SyncFunctionDef['fn']): SyncFunctionDef {
  return { arity, async: false, fn };
}

export const IP_FUNCTIONS: Record<string, SyncFunctionDef> = {
  is_ip_addr: sync(1, ([v]) => int(parseIp(toStr(v!)) !== undefined)),
  is_ipv4_addr: sync(1, ([v]) => int(parseIpv4(toStr(v!)) !== undefined)),
  is_ipv6_addr: sync(1, ([v]) => int(parseIpv6(toStr(v!)) !== undefined)),
  is_ip_in_cidr: sync(2, ([ip, cidr]) => int(ipInCidr(toStr(ip!), toStr(cidr!)))),
  ip_reverse_name: sync(1, ([v]) => ipReverseName(toStr(v!))),
};
