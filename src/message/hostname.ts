/**
 * Stalwart's normalisation primitives `Hostname::new` and `Email::new`
 * (`stalwart:crates/spam-filter/src/modules/sanitize.rs`, docs/message-analysis.md).
 */
import { domainToUnicode } from 'node:url';
import ipaddr from '../dns/ipaddr.js';
import { LRUCache } from 'lru-cache';
import { createRequire } from 'node:module';
import type * as Tldts from 'tldts';
import { detach } from '../util/index.js';
// tldts is CommonJS without `exports`: `import` would first scan its 200 KB for export names (tens of ms
// at start-up); `require` does not.
const { parse: parseDomain } = createRequire(import.meta.url)('tldts') as typeof Tldts;

/** A normalised host name: lower-cased fqdn with `xn--` labels decoded, its IP form and registrable domain. */
export interface Hostname {
  /** Lower-cased, trailing dots removed, punycode decoded (when it round-trips). */
  readonly fqdn: string;
  /** Canonical IP string when the host is an IP literal (brackets allowed), else undefined. */
  readonly ip: string | undefined;
  /** eTLD+1 (ICANN or private PSL entry); undefined for IPs and unknown suffixes. */
  readonly sld: string | undefined;
}

// Host names repeat heavily across a corpus (relays, senders, link hosts): normalising one costs a
// PSL walk, so results are shared process-wide. Bounded so hostile input cannot grow it.
const cache = new LRUCache<string, Hostname>({ max: 20_000 });

const IPV6_CHARS_RE = /^[0-9a-fA-F:.]+$/;

/**
 * The 32-bit value of `s` when it is a dotted-quad IPv4 address as Rust's `Ipv4Addr::from_str` reads
 * one (four decimal octets up to 255, no leading zeros: the canonical text, which ipaddr.js parses
 * to the same address and prints back unchanged), else undefined. No regex, split or allocation.
 */
export function ipv4Value(s: string): number | undefined {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46 && digits > 0 && dots < 3) {
      value = value * 256 + octet;
      dots++;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && !(digits === 1 && octet === 0) && digits < 3) {
      octet = octet * 10 + (c - 48);
      digits++;
      if (octet > 255) return undefined;
    } else {
      return undefined;
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : undefined;
}

/** Parses an IP literal (IPv4, IPv6, optionally `[...]`-bracketed); the canonical string or undefined. */
export function parseIp(s: string): string | undefined {
  let t = s;
  if (t.length < 2 || t.length > 52) return undefined;
  let c0 = t.charCodeAt(0);
  if (c0 === 91 /* [ */ && t.charCodeAt(t.length - 1) === 93) {
    t = t.slice(1, -1);
    c0 = t.charCodeAt(0);
  }
  if ((c0 === 73 || c0 === 105) /* I/i */ && t.length > 6 && t.slice(0, 5).toLowerCase() === 'ipv6:') t = t.slice(5);
  // Only hex digits, ':' and '.' can make an IP: most host names fail on their first letter.
  else if (!((c0 >= 48 && c0 <= 58) || (c0 >= 97 && c0 <= 102) || (c0 >= 65 && c0 <= 70))) return undefined;
  if (t.length < 2 || t.length > 45) return undefined;
  // Cheap character screens first: ipaddr.js validates by throwing, which is slow on the hot path,
  // and it accepts shorthand IPv4 ("1", "0x7f.1") that Rust's IpAddr::from_str rejects.
  // Canonical dotted-quad IPv4 is its own canonical text; other IPv4 spellings (leading zeros, octets
  // over 255) are not IPs here, and without a ':' they are not IPv6 either.
  if (ipv4Value(t) !== undefined) return t;
  if (t.includes(':') && IPV6_CHARS_RE.test(t) && ipaddr.IPv6.isValid(t)) {
    try {
      return ipaddr.IPv6.parse(t).toString();
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * `Hostname::new(s)`: trims trailing dots, lower-cases, decodes `xn--` labels (kept as written when
 * they do not decode), detects IP literals and computes the PSL registrable domain (tldts with
 * private domains, counted only when the suffix is a real ICANN/private entry, as the `psl` crate).
 */
export function hostname(input: string): Hostname {
  const hit = cache.get(input);
  if (hit !== undefined) return hit;
  // Kept process-wide: copies, not views into the message the input was cut from (util/strings.ts).
  let s = detach(input.toLowerCase());
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 46) end--;
  if (end !== s.length) s = s.slice(0, end);
  let result: Hostname;
  const ip = parseIp(s);
  if (ip !== undefined) {
    result = { fqdn: s, ip, sld: undefined };
  } else {
    if (s.includes('xn--')) {
      const labels = s.split('.');
      for (let i = 0; i < labels.length; i++) {
        const l = labels[i]!;
        if (l.startsWith('xn--')) {
          const u = domainToUnicode(l);
          // A label that does not round-trip stays as written, as Stalwart's IDNA check.
          if (u !== '' && u !== l) labels[i] = u;
        }
      }
      s = labels.join('.');
    }
    result = { fqdn: s, ip: undefined, sld: registrableDomain(s) };
  }
  cache.set(detach(input), result);
  return result;
}

/** eTLD+1 of an fqdn when its suffix is a known PSL entry (ICANN or private), else undefined. */
export function registrableDomain(fqdn: string): string | undefined {
  if (fqdn.length === 0 || fqdn.length > 253 || !fqdn.includes('.')) return undefined;
  const hit = sldCache.get(fqdn);
  if (hit !== undefined) return hit === '' ? undefined : hit;
  const r = parseDomain(fqdn, { allowPrivateDomains: true, extractHostname: false });
  // tldts cuts the domain out of `fqdn`: the copy is what the cache keeps and what the caller gets, so a
  // caller that keeps it (hostname's cache) holds no view into the message either.
  const sld = detach(r.isIp === true || r.domain === null || (r.isIcann !== true && r.isPrivate !== true) ? '' : r.domain);
  sldCache.set(detach(fqdn), sld);
  return sld === '' ? undefined : sld;
}

/** registrableDomain results ('' = none); the tokenizer asks about the same candidates repeatedly. */
const sldCache = new LRUCache<string, string>({ max: 20_000 });

/** Is the last label of `host` a known public suffix (the tokenizer's scheme-less URL test)? */
export function hasPublicSuffix(host: string): boolean {
  return registrableDomain(host) !== undefined;
}

/** `Email::new(s)`: the lower-cased address split at the last `@`. */
export interface EmailAddress {
  /** The lower-cased input (punycode not decoded). */
  readonly address: string;
  readonly local: string;
  readonly domain: Hostname;
}

const EMPTY_HOST: Hostname = { fqdn: '', ip: undefined, sld: undefined };

export function emailAddress(input: string): EmailAddress {
  const address = input.toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 0) return { address, local: address, domain: EMPTY_HOST };
  return { address, local: address.slice(0, at), domain: hostname(address.slice(at + 1)) };
}

/** `Email::is_valid`: non-empty local part and a domain with an sld. */
export function isValidEmail(e: EmailAddress): boolean {
  return e.local.length > 0 && e.domain.sld !== undefined;
}

/** Equality key of an Email (local part plus decoded fqdn, as Stalwart's Hash impl). */
export function emailKey(e: EmailAddress): string {
  const a = e.address;
  const f = e.domain.fqdn;
  // The address is the local part, '@' and the domain as written (emailAddress). Most domains are
  // written as their fqdn (ASCII, no trailing dot): the key is then the address itself, whose hash
  // the modules' Sets and Maps have already computed, instead of a new string per call.
  if (a.length === e.local.length + 1 + f.length && a.endsWith(f) && a.charCodeAt(e.local.length) === 64) return a;
  return e.local + '@' + f;
}

/** `sld_or_default()`: the sld, or the fqdn when there is none. */
export function sldOrDefault(h: Hostname): string {
  return h.sld ?? h.fqdn;
}
