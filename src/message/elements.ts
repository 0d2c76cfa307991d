/**
 * The elements each scope iterates (docs/message-analysis.md) and their scope-item variables (§2.3).
 * Every element answers the generic variables first, then its own; unknown names give Integer 0,
 * except Domain, Body and Any, which give their string for any name (StringResolver).
 */
import ipaddr from '../dns/ipaddr.js';
import type { Value } from '../expr/value.js';
import type { MessageContext, Recipient } from './context.js';
import { mailboxesOf } from './addresses.js';
import {
  canonicalName, dateToRfc3339, decodeText, firstId, headerKind, isNamed, parseAddresses, parseContentType, parseIds,
  type RawHeader,
} from './headers.js';
import { parsedReceived } from './received.js';
import { parseUnstructured } from './rfc2047.js';
import {
  emailAddress, emailKey, hostname, isValidEmail, parseIp, sldOrDefault, type EmailAddress, type Hostname,
} from './hostname.js';
import type { Location, Scope, ScopeElement } from './types.js';
import { urlParts, type UrlParts } from './url.js';
import { MemoSlot, SmallMap } from '../util/index.js';

/** At most this many elements per scope (Email: per list); the rest are dropped with a warning. */
export const MAX_ELEMENTS = 5_000;

// Fields are `declare`d and assigned in constructors: with ES2022 class fields, initialisers and
// parameter properties are defined per instance, which showed up in profiles of the hot path.
abstract class Element implements ScopeElement {
  abstract readonly scope: Scope;
  declare protected readonly ctx: MessageContext;
  declare readonly location: Location;
  constructor(ctx: MessageContext, location: Location) {
    this.ctx = ctx;
    this.location = location;
  }
  abstract readonly label: string;
  /**
   * Generic variables, then `fallback` for names neither generic nor the scope item's own.
   * Subclasses answer their own names in a `switch` before calling this: no scope-item name is
   * also a generic name (docs/message-analysis.md), so asking them first changes no result and
   * spares the two hash lookups of `generic()` on the Header/Url hot paths.
   */
  protected common(name: string, fallback: Value): Value {
    if (name === 'location') return this.location;
    const g = this.ctx.generic(name);
    return g !== undefined ? g : fallback;
  }
  abstract variable(name: string): Value;
}

/** Domain, Body and Any: `StringResolver`, which answers its string for any name. */
class StringElement extends Element {
  declare readonly scope: Scope;
  declare private readonly value: string;
  declare readonly label: string;
  constructor(ctx: MessageContext, location: Location, scope: Scope, value: string, label: string) {
    super(ctx, location);
    this.scope = scope;
    this.value = value;
    this.label = label;
  }
  variable(name: string): Value {
    return this.common(name, this.value);
  }
}

export class UrlElement extends Element {
  get scope(): 'Url' {
    return 'Url';
  }
  declare readonly parts: UrlParts;
  constructor(ctx: MessageContext, location: Location, parts: UrlParts) {
    super(ctx, location);
    this.parts = parts;
  }
  get label(): string {
    return this.parts.url;
  }
  variable(name: string): Value {
    const p = this.parts;
    switch (name) {
      case 'url': case 'value': return p.url;
      case 'url_original': return p.original;
      case 'scheme': return p.scheme;
      case 'authority': return p.authority;
      case 'host': return p.host;
      case 'sld': return p.sld;
      case 'port': return p.port;
      case 'path': return p.path;
      case 'query': return p.query;
      case 'path_query': return p.pathQuery;
      default: return this.common(name, 0);
    }
  }
}

export class EmailElement extends Element {
  get scope(): 'Email' {
    return 'Email';
  }
  declare readonly email: EmailAddress;
  declare readonly name: string | undefined;
  constructor(ctx: MessageContext, location: Location, email: EmailAddress, name: string | undefined) {
    super(ctx, location);
    this.email = email;
    this.name = name;
  }
  get label(): string {
    return this.email.address;
  }
  variable(name: string): Value {
    const e = this.email;
    switch (name) {
      case 'email': case 'value': return e.address;
      case 'name': return this.name ?? '';
      case 'local': return e.local;
      case 'domain': return e.domain.fqdn;
      case 'sld': return sldOrDefault(e.domain);
      default: return this.common(name, 0);
    }
  }
}

export class IpElement extends Element {
  get scope(): 'Ip' {
    return 'Ip';
  }
  // Declared, not initialised: per-instance field definitions are measurable on the hot path.
  private declare bytes: number[] | undefined;
  declare readonly ip: string;
  constructor(ctx: MessageContext, location: Location, ip: string) {
    super(ctx, location);
    this.ip = ip;
    this.bytes = undefined; // one object shape from the start (see HeaderElement)
  }
  get label(): string {
    return this.ip;
  }
  private octets(): number[] {
    if (this.bytes === undefined) {
      try {
        this.bytes = ipaddr.parse(this.ip).toByteArray();
      } catch {
        this.bytes = []; // only a caller-supplied remote IP can be unparsable; variable() must not throw
      }
    }
    return this.bytes;
  }
  variable(name: string): Value {
    switch (name) {
      case 'ip': case 'value': return this.ip;
      case 'ip_reverse': {
        const b = this.octets();
        if (b.length === 0) return '';
        if (b.length === 4) return [...b].reverse().join('.');
        const nibbles: string[] = [];
        for (let i = b.length - 1; i >= 0; i--) nibbles.push((b[i]! & 15).toString(16), (b[i]! >> 4).toString(16));
        return nibbles.join('.');
      }
      case 'octets': return this.octets();
      case 'is_v4': return this.octets().length === 4 ? 1 : 0;
      case 'is_v6': return this.octets().length === 16 ? 1 : 0;
      default: return this.common(name, 0); // 0 includes reverse_ip, which Stalwart's IpResolver does not implement
    }
  }
}

class HeaderElement extends Element {
  get scope(): 'Header' {
    return 'Header';
  }
  private declare typed: { value: Value; valueLower: Value; attributes: Value } | undefined;
  // Memoized on first access: 12 public Header rules ask each of a message's ~27 headers for these.
  private declare nameLower: string | undefined;
  private declare canonical: string | undefined;
  private declare rawLower: string | undefined;
  declare readonly header: RawHeader;
  constructor(ctx: MessageContext, header: RawHeader) {
    super(ctx, 'body_text'); // Stalwart passes body_text for every header (quirk, docs/message-analysis.md)
    this.header = header;
    // Every field exists from the start: added later, in whichever order a message's rules ask for
    // them, they would give header objects of one message different hidden classes.
    this.typed = undefined;
    this.nameLower = undefined;
    this.canonical = undefined;
    this.rawLower = undefined;
  }
  get label(): string {
    return this.canonicalName();
  }
  private canonicalName(): string {
    return (this.canonical ??= canonicalName(this.header.name));
  }
  variable(name: string): Value {
    switch (name) {
      case 'name': return this.canonicalName();
      case 'name_lower': return (this.nameLower ??= this.header.name.toLowerCase());
      case 'raw': return this.header.raw;
      case 'raw_lower': return (this.rawLower ??= this.header.raw.toLowerCase());
      case 'value': return (this.typed ?? this.values()).value;
      case 'value_lower': return (this.typed ?? this.values()).valueLower;
      case 'attributes': return (this.typed ?? this.values()).attributes;
      default: return this.common(name, 0);
    }
  }
  /** Parses the header's value on first use; the time counts as extraction (`timings.extractMs`). */
  private values(): { value: Value; valueLower: Value; attributes: Value } {
    if (this.typed !== undefined) return this.typed;
    const t0 = performance.now();
    const t = this.parseValues();
    this.ctx.lazyMs += performance.now() - t0;
    return (this.typed = t);
  }

  private parseValues(): { value: Value; valueLower: Value; attributes: Value } {
    const raw = this.header.raw;
    let t: { value: Value; valueLower: Value; attributes: Value };
    switch (headerKind((this.nameLower ??= this.header.name.toLowerCase()))) {
      case 'address': {
        // As the generic variables read them (mail-parser's address parser).
        const list = mailboxesOf(this.header);
        const names: string[] = [];
        for (const m of list) if (m.name !== undefined && m.name.length > 0) names.push(m.name);
        t = { value: names, valueLower: list.map((m) => (m.address ?? '').toLowerCase()), attributes: names };
        break;
      }
      case 'date': {
        const d = dateToRfc3339(raw);
        t = { value: d, valueLower: d, attributes: d };
        break;
      }
      case 'contenttype': {
        const ct = parseContentType(raw);
        t = { value: ct.value, valueLower: ct.value, attributes: ct.attributes };
        break;
      }
      case 'id': {
        const ids = parseIds(raw);
        const v: Value = ids.length === 1 ? ids[0]! : ids.length === 0 ? '' : ids;
        const lower: Value = typeof v === 'string' ? v.toLowerCase() : ids.map((s) => s.toLowerCase());
        t = { value: v, valueLower: lower, attributes: v };
        break;
      }
      case 'textlist': {
        const items = decodeText(raw).split(',').map((s) => s.trim()).filter((s) => s.length > 0);
        t = { value: items, valueLower: items.map((s) => s.toLowerCase()), attributes: items };
        break;
      }
      case 'text': {
        // mail-parser's unstructured text, as the `subject` variable reads it.
        const s = parseUnstructured(raw);
        t = { value: s, valueLower: s.toLowerCase(), attributes: s };
        break;
      }
      default: {
        // Received and headers mail-parser does not know: raw text trimmed, neither decoded nor unfolded.
        const s = raw.trim();
        t = { value: s, valueLower: s.toLowerCase(), attributes: s };
      }
    }
    return t;
  }
}

/** Insertion-ordered set keyed by the element's equality key; the first insertion keeps its location. */
class ElementSet<E> {
  readonly items: E[] = [];
  private readonly keys = new Set<string>();
  dropped = 0;
  add(key: string, make: () => E): void {
    if (this.keys.has(key)) return;
    if (this.items.length >= MAX_ELEMENTS) {
      this.dropped++;
      return;
    }
    this.keys.add(key);
    this.items.push(make());
  }
}

/** Where tokens of a part's text go: `body_text` for a body part, else `attachment`. */
function textLocation(isBody: boolean): Location {
  return isBody ? 'body_text' : 'attachment';
}

/**
 * The per-message URL, email and IP sets, built once and shared by the Url/Email/Ip scopes and the
 * analysis modules that read them (url, domain, ip); the url module adds redirect targets to the URL set.
 */
const urlSets = new MemoSlot<MessageContext, ElementSet<UrlElement>>();
const emailSets = new MemoSlot<MessageContext, EmailElement[]>();
const ipSets = new MemoSlot<MessageContext, ElementSet<IpElement>>();
/** Domain sets per message, for the email list they were built from (the Domain scope, the domain module and the classifier share one). */
const domainSets = new MemoSlot<MessageContext, { emails: readonly EmailElement[]; items: ScopeElement[] }>();

/**
 * Adds a URL (e.g. a redirect target, Stalwart's url module) to the message's URL set with `location`;
 * an equal URL already in the set keeps its entry. Returns the element, or undefined when it was not added.
 */
export function addUrl(ctx: MessageContext, url: string, location: Location): ScopeElement | undefined {
  const set = urlSets.get(ctx);
  if (set === undefined) return undefined;
  const key = url.trim().toLowerCase();
  const n = set.items.length;
  set.add(key, () => new UrlElement(ctx, location, urlParts(url, false)));
  return set.items.length > n ? set.items[n] : undefined;
}

export function extractUrls(ctx: MessageContext, warn: (s: string) => void): ScopeElement[] {
  const memo = urlSets.get(ctx);
  if (memo !== undefined) return memo.items;
  const set = new ElementSet<UrlElement>();
  urlSets.set(ctx, set);
  // The equality key is the normalised `url` (as urlParts computes it), so duplicates are
  // dropped before paying for the parse.
  const add = (u: string, schemeless: boolean, loc: Location): void => {
    const key = schemeless ? 'https://' + u.trim().toLowerCase() : u.trim().toLowerCase();
    set.add(key, () => new UrlElement(ctx, loc, urlParts(u, schemeless)));
  };
  const addToken = (u: string, loc: Location): void => add(u, !u.includes('://'), loc);
  for (const u of ctx.subjectTokens().urls) addToken(u, 'subject');
  for (const part of ctx.body.parts) {
    if (part.isHtml) {
      const loc: Location = part.isBody ? 'body_html' : 'attachment';
      for (const href of part.links().links) add(href, false, loc);
    }
    for (const u of part.tokens().urls) addToken(u, textLocation(part.isBody));
  }
  if (set.dropped > 0) warn(`URL limit: ${set.dropped} URLs beyond ${MAX_ELEMENTS} ignored`);
  return set.items;
}

export function extractEmails(ctx: MessageContext, warn: (s: string) => void): EmailElement[] {
  const memo = emailSets.get(ctx);
  if (memo !== undefined) return memo;
  const set = new ElementSet<EmailElement>();
  emailSets.set(ctx, set.items);
  const add = (e: EmailAddress, loc: Location, name: string | undefined): void =>
    set.add(emailKey(e), () => new EmailElement(ctx, loc, e, name));
  for (const h of ctx.headers) {
    if (!isNamed(h.name, 'disposition-notification-to')) continue;
    for (const m of parseAddresses(h.raw)) add(emailAddress(m.address), 'dnt', undefined);
  }
  if (ctx.from !== undefined) add(ctx.from.email, 'from', ctx.from.name);
  else add(emailAddress(''), 'from', undefined); // Stalwart inserts From even when empty
  if (ctx.replyTo !== undefined) add(ctx.replyTo.email, 'reply_to', ctx.replyTo.name);
  add(ctx.envFrom, 'env_from', undefined);
  for (const part of ctx.body.parts) {
    if (part.isHtml) {
      const loc: Location = part.isBody ? 'body_html' : 'attachment';
      for (const href of part.links().mailtos) {
        let a = href.slice(7);
        const q = a.indexOf('?');
        if (q >= 0) a = a.slice(0, q);
        const e = emailAddress(safeDecodeURIComponent(a.trim()));
        if (isValidEmail(e)) add(e, loc, undefined);
      }
    }
    for (const t of part.tokens().emails) {
      const e = emailAddress(t);
      if (isValidEmail(e)) add(e, textLocation(part.isBody), undefined);
    }
  }
  if (set.dropped > 0) warn(`email limit: ${set.dropped} addresses beyond ${MAX_ELEMENTS} ignored`);
  return set.items;
}

/** Emails, then To, Cc and Bcc recipients (in order, not deduplicated). */
export function extractEmailScope(ctx: MessageContext, emails: readonly EmailElement[]): ScopeElement[] {
  const out: ScopeElement[] = [...emails];
  const lists: [Recipient[], Location][] = [[ctx.to, 'to'], [ctx.cc, 'cc'], [ctx.bcc, 'bcc']];
  for (const [list, loc] of lists) {
    for (let i = 0; i < list.length && i < MAX_ELEMENTS; i++) out.push(new EmailElement(ctx, loc, list[i]!.email, list[i]!.name));
  }
  return out;
}

export function extractDomains(ctx: MessageContext, emails: readonly EmailElement[]): ScopeElement[] {
  const memo = domainSets.get(ctx);
  if (memo !== undefined && memo.emails === emails) return memo.items;
  const items = buildDomains(ctx, emails);
  domainSets.set(ctx, { emails, items });
  return items;
}

function buildDomains(ctx: MessageContext, emails: readonly EmailElement[]): ScopeElement[] {
  const set = new ElementSet<StringElement>();
  const add = (d: string, loc: Location): void => set.add(d, () => new StringElement(ctx, loc, 'Domain', d, d));
  for (const d of ctx.envelope.dkimPassDomains ?? []) add(d.toLowerCase(), 'dkim_pass');
  for (const v of hostVisits(ctx)) add(v.label, v.location);
  const trusted = ctx.options.isTrustedDomain;
  for (const e of emails) {
    if (!isValidEmail(e.email)) continue;
    const fqdn = e.email.domain.fqdn;
    if (trusted !== undefined && trusted(fqdn)) continue;
    add(fqdn, e.location);
  }
  return set.items;
}

/**
 * The Domain set's host names in its order (Received, Message-ID, EHLO, PTR), possibly repeated, each with
 * its {@link hostname}: those with a registrable domain, and the PTR name whatever it is.
 */
function hostVisits(ctx: MessageContext): HostDomain[] {
  const out: HostDomain[] = [];
  // Received headers repeat their names (a hop's `by` is the next hop's `from`): each distinct name is
  // looked up once per message (the process-wide cache costs a few cache misses per lookup). A message
  // has a dozen names or so, which a SmallMap searches in order for less than a Map per message costs.
  const seen = new SmallMap<Hostname>();
  // Header order: Received hosts and the Message-ID right side interleave as the headers do. The
  // Received hosts are mail-parser's (the parse the received module reads, done once per header), so
  // the set holds what Stalwart's holds, quirks included (a host after a fold that several blanks
  // indent is a lone blank, a host after a tab fold keeps the tab).
  for (const h of ctx.headers) {
    if (isNamed(h.name, 'received')) {
      const r = parsedReceived(h);
      visitName(r.from?.name, 'received', seen, out);
      visitName(r.helo?.name, 'received', seen, out);
      visitName(r.by?.name, 'received', seen, out);
    } else if (h.name.length === 10 && h.name.toLowerCase() === 'message-id') {
      const id = firstId(h.raw) ?? '';
      const at = id.lastIndexOf('@');
      if (at >= 0) visitName(id.slice(at + 1), 'message_id', seen, out);
    }
  }
  visitName(ctx.envelope.heloDomain, 'ehlo', seen, out);
  const ptr = ctx.generic('remote_ip.ptr');
  if (typeof ptr === 'string' && ptr.length > 0) {
    const host = hostname(ptr);
    out.push({ label: host.fqdn, location: 'tcp', host });
  }
  return out;
}

/** One name of {@link hostVisits}: kept when it has a registrable domain. */
function visitName(name: string | undefined, location: Location, seen: SmallMap<Hostname>, out: HostDomain[]): void {
  if (name === undefined) return;
  let host = seen.get(name);
  if (host === undefined) seen.set(name, (host = hostname(name)));
  if (host.sld !== undefined) out.push({ label: host.fqdn, location, host });
}

/** A host entry of the Domain set. */
export interface HostDomain {
  readonly label: string;
  readonly location: Location;
  /** `hostname(label)` when at hand (its `fqdn` is `label`). */
  readonly host?: Hostname;
}

/**
 * The Domain set's host entries (locations received, message_id, ehlo and tcp), in its order and with
 * its locations, without building the set when no one has: the classifier reads only these, and with
 * DNS checks off nothing else may need the set (its e-mail part and elements cost more than the hosts).
 * DKIM-pass domains come first in the set, so a host that is one has no host entry; e-mail domains come
 * after the hosts, so they change none of them (nor which fit under {@link MAX_ELEMENTS}).
 */
export function extractHostDomains(ctx: MessageContext): HostDomain[] {
  const memo = domainSets.get(ctx);
  if (memo !== undefined) return memo.items.filter((d) => HOST_LOCATIONS.has(d.location));
  // The set's labels so far: the DKIM-pass domains, then the hosts kept.
  const seen = new SmallMap<true>();
  for (const d of ctx.envelope.dkimPassDomains ?? []) seen.set(d.toLowerCase(), true);
  const out: HostDomain[] = [];
  for (const v of hostVisits(ctx)) {
    if (seen.has(v.label)) continue;
    if (seen.size >= MAX_ELEMENTS) break;
    seen.set(v.label, true);
    out.push(v);
  }
  return out;
}

const HOST_LOCATIONS: ReadonlySet<Location> = new Set<Location>(['received', 'message_id', 'ehlo', 'tcp']);

export function extractIps(ctx: MessageContext): ScopeElement[] {
  const memo = ipSets.get(ctx);
  if (memo !== undefined) return memo.items;
  const set = new ElementSet<IpElement>();
  ipSets.set(ctx, set);
  const add = (ip: string, loc: Location): void => set.add(ip, () => new IpElement(ctx, loc, ip));
  add(ctx.remoteIp, 'tcp');
  for (const h of ctx.headers) {
    if (!isNamed(h.name, 'received')) continue;
    // mail-parser's from IP, then the from, helo and by hosts that it parsed as IP addresses.
    const r = parsedReceived(h);
    for (const s of [r.fromIp, r.from?.ip, r.helo?.ip, r.by?.ip]) {
      const ip = s === undefined ? undefined : parseIp(s);
      if (ip !== undefined && !isLoopback(ip)) add(ip, 'received');
    }
  }
  for (const part of ctx.body.parts) {
    for (const ip of part.tokens().ips) add(ip, textLocation(part.isBody));
  }
  return set.items;
}

/** 127.0.0.0/8 and ::1 (canonical strings from parseIp), the addresses Stalwart skips in Received. */
function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || ip.startsWith('::ffff:127.');
}

export function extractHeaders(ctx: MessageContext): ScopeElement[] {
  return ctx.headers.map((h) => new HeaderElement(ctx, h));
}

export function extractBodies(ctx: MessageContext): ScopeElement[] {
  return ctx.body.parts.map((p) => new StringElement(ctx, p.location, 'Body', p.text, `${p.isHtml ? 'html' : 'text'} part (${p.location})`));
}

export function anyElement(ctx: MessageContext): ScopeElement[] {
  return [new StringElement(ctx, 'body_text', 'Any', '', 'message')];
}

function safeDecodeURIComponent(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
