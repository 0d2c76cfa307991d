/**
 * The SMTP session of a stored message, read back from the headers the receiving MTA wrote: for
 * classifying mail outside the mail path (a folder, an mbox, a mass-check), where no MTA passes the
 * session. Like SpamAssassin's trusted-relay logic and mailauth's `trustReceived`, it trusts the
 * topmost `Received` header (written by the last MTA, the one that delivered the message):
 *
 * - remote IP, HELO name, PTR name and TLS version from its `from` clause;
 * - the clock (`now`) from its date, so date checks judge the message as on arrival;
 * - MAIL FROM from `Return-Path` (RFC 5321 §4.4), RCPT TO from `Delivered-To`/`X-Original-To`,
 *   else from the `for` clause of that `Received` header.
 *
 * Only fields the caller did not give are taken; nothing here is verified.
 */
import { mailDateTimestamp, parseMailDate } from '../message/date.js';
import type { RawHeader } from '../message/headers.js';
import ipaddr from '../dns/ipaddr.js';
import { headerAddresses, isNamed, splitHeaders } from '../message/headers.js';
import { ipv4Value } from '../message/hostname.js';
import { parsedReceived } from '../message/received.js';
import type { SessionInput } from './types.js';

const utf8 = new TextDecoder('utf-8');

/** The top-level headers of a raw message (at most the first 256 KB are read). */
export function rawHeaders(raw: Uint8Array | string): RawHeader[] {
  const text = typeof raw === 'string' ? raw.slice(0, 262_144) : utf8.decode(raw.subarray(0, 262_144));
  const m = /\r?\n\r?\n/.exec(text);
  return splitHeaders(m === null ? text : text.slice(0, m.index + 1), []);
}

/** A lone `addr` or `<addr>` (the usual Return-Path/Delivered-To), which the address parser reads as just `addr`. */
const PLAIN_ADDRESS = /^[ \t]*<?([A-Za-z0-9._%+=-]+@[A-Za-z0-9.-]+)>?[ \t]*(?:\r?\n)?$/;

function firstAddress(h: RawHeader | undefined): string | undefined {
  if (h === undefined) return undefined;
  const plain = PLAIN_ADDRESS.exec(h.raw);
  if (plain !== null && (h.raw.includes('<') === h.raw.includes('>'))) return plain[1];
  const a = headerAddresses(h)[0]?.address;
  return a === undefined || a === '' ? undefined : a;
}

const INTERNAL = new Set(['private', 'loopback', 'linkLocal', 'unspecified', 'uniqueLocal', 'carrierGradeNat', 'broadcast', 'multicast']);

// Relays' addresses recur from message to message, and ipaddr.js parses with regexes and walks a
// range table: answers for IPv4 addresses are kept by their 32-bit value (not by the text, a slice
// that would keep its message's whole header block alive), bounded so hostile input cannot grow it.
const externalMemo = new Map<number, boolean>();

/** Is `ip` a public address (not private, loopback, link-local, unspecified, …)? */
function isExternal(ip: string | undefined): boolean {
  if (ip === undefined) return false;
  const v4 = ipv4Value(ip);
  if (v4 === undefined) return rangeIsExternal(ip);
  let r = externalMemo.get(v4);
  if (r === undefined) {
    r = rangeIsExternal(ip);
    if (externalMemo.size >= 4096) externalMemo.clear();
    externalMemo.set(v4, r);
  }
  return r;
}

function rangeIsExternal(ip: string): boolean {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(ip); // throws exactly when !ipaddr.isValid(ip)
  } catch {
    return false;
  }
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) a = (a as ipaddr.IPv6).toIPv4Address();
  return !INTERNAL.has(a.range());
}

/** Session fields recovered from a stored message's headers (empty when there is no Received header). */
export function sessionFromHeaders(headers: readonly RawHeader[]): SessionInput {
  const s: SessionInput = {};
  // One pass over the headers: the first of each name wanted, and the first 32 Received headers.
  let rp: RawHeader | undefined;
  let deliveredTo: RawHeader | undefined;
  let originalTo: RawHeader | undefined;
  let envelopeTo: RawHeader | undefined;
  const received: RawHeader[] = [];
  for (const h of headers) {
    const n = h.name;
    if (isNamed(n, 'received')) {
      if (received.length < 32) received.push(h);
    } else if (isNamed(n, 'return-path')) rp ??= h;
    else if (isNamed(n, 'delivered-to')) deliveredTo ??= h;
    else if (isNamed(n, 'x-original-to')) originalTo ??= h;
    else if (isNamed(n, 'envelope-to')) envelopeTo ??= h;
  }
  if (rp !== undefined) {
    const v = rp.raw.trim();
    s.mailFrom = v === '<>' ? '' : (firstAddress(rp) ?? v.replace(/^<|>$/g, ''));
  }
  const rcpt = firstAddress(deliveredTo) ?? firstAddress(originalTo) ?? firstAddress(envelopeTo);
  const top = received.find((h) => isExternal(parsedReceived(h).fromIp)) ?? received[0];
  if (top !== undefined) {
    const r = parsedReceived(top);
    if (r.fromIp !== undefined) s.remoteIp = r.fromIp;
    const helo = r.helo ?? r.from;
    if (helo !== undefined) s.heloDomain = helo.name ?? `[${helo.ip}]`;
    if (r.fromIprev !== undefined && r.fromIprev.toLowerCase() !== 'unknown') s.iprev = { result: 'pass', ptr: [r.fromIprev] };
    if (r.tlsVersion !== undefined) s.tls = r.tlsVersion;
    const semi = top.raw.lastIndexOf(';');
    if (semi >= 0) {
      const d = parseMailDate(top.raw.slice(semi + 1));
      if (d !== undefined) s.now = mailDateTimestamp(d) * 1000;
    }
    if (rcpt === undefined && r.for !== undefined) s.rcptTo = [r.for.replace(/^<|>$/g, '')];
  }
  if (rcpt !== undefined) s.rcptTo = [rcpt];
  return s;
}

/**
 * `given` completed from the message's headers: a field the caller gave always wins. Fields that
 * would not validate (an unparsable IP in a forged header) are dropped, so this never throws.
 */
export function completeFromHeaders(given: SessionInput, raw: Uint8Array | string): SessionInput {
  return completeFromParsedHeaders(given, rawHeaders(raw));
}

/**
 * {@link completeFromHeaders} for a message whose top-level headers are already split (the
 * engine's parse): the Received headers parsed here are the ones the `received` module reads.
 */
export function completeFromParsedHeaders(given: SessionInput, headers: readonly RawHeader[]): SessionInput {
  const stored = sessionFromHeaders(headers);
  const merged: SessionInput = { ...stored };
  // A field given as null (JSON callers) is absent: the headers may still give it.
  for (const [k, v] of Object.entries(given)) if (v !== null && v !== undefined) (merged as Record<string, unknown>)[k] = v;
  if (merged.remoteIp !== undefined && (given.remoteIp ?? undefined) === undefined && !/^[0-9a-f:.]+$/i.test(merged.remoteIp)) delete merged.remoteIp;
  return merged;
}
