/**
 * Session input: validation, defaults and the mapping to the message's envelope variables.
 * Bad input is a typed {@link SessionError} raised before any message is read.
 */
import { closestName } from '../util/suggest.js';
import ipaddr from '../dns/ipaddr.js';
import { ipv4Value } from '../message/hostname.js';
import type { Envelope } from '../message/types.js';
import type {
  DkimResult, DmarcPolicy, DmarcResult, IprevResult, Session, SessionInput, SpfResult,
} from './types.js';

/** Thrown for session input that cannot be used (an unparsable IP, an unknown SPF result, …). `field` names it. */
export class SessionError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`session.${field}: ${message}`);
    this.name = 'SessionError';
  }
}

export const SPF_RESULTS: readonly SpfResult[] = ['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror'];
export const DKIM_RESULTS: readonly DkimResult[] = ['pass', 'fail', 'permerror', 'temperror', 'neutral', 'none'];
export const DMARC_RESULTS: readonly DmarcResult[] = ['pass', 'fail', 'temperror', 'permerror', 'none'];
export const DMARC_POLICIES: readonly DmarcPolicy[] = ['none', 'quarantine', 'reject', 'unspecified'];
export const IPREV_RESULTS: readonly IprevResult[] = ['pass', 'fail', 'temperror', 'permerror', 'none'];

function oneOf<T extends string>(field: string, v: unknown, allowed: readonly T[]): T {
  const s = typeof v === 'string' ? v.trim().toLowerCase() : v;
  if (typeof s !== 'string' || !(allowed as readonly string[]).includes(s)) {
    throw new SessionError(field, `${JSON.stringify(v)} is not one of ${allowed.join(', ')}`);
  }
  return s as T;
}

/** Parses an IPv4/IPv6 address (brackets allowed) to its canonical text. Throws SessionError. */
function ipField(field: string, v: unknown): string {
  if (typeof v !== 'string') throw new SessionError(field, 'must be an IP address string');
  let s = v.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  if (/^ipv6:/i.test(s)) s = s.slice(5);
  // The usual case (an address read from a Received header) is canonical IPv4 text already.
  if (ipv4Value(s) !== undefined) return s;
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(s); // throws exactly when !ipaddr.isValid(s); one parse instead of two
  } catch {
    throw new SessionError(field, `${JSON.stringify(v)} is not an IP address`);
  }
  if (a.kind() === 'ipv4') return a.toString();
  const v6 = a as ipaddr.IPv6;
  // A dual-stack listener reports an IPv4 client as ::ffff:a.b.c.d (RFC 4291 §2.5.5.2): it is that IPv4 client,
  // which the IPv4 DNSBLs and the private-range checks must see as such. Stalwart's listener converts it
  // the same way before any session starts.
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toRFC5952String();
}

/** The fields of {@link SessionInput}, and of its objects. */
const FIELDS: readonly string[] = [
  'remoteIp', 'localIp', 'hostname', 'heloDomain', 'mailFrom', 'smtputf8', 'eightBitMime', 'binaryMime', 'rcptTo',
  'authenticatedAs', 'tls', 'iprev', 'spf', 'dkim', 'arc', 'dmarc', 'asn', 'country', 'now',
];
const OBJECT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  iprev: ['result', 'ptr'], spf: ['mailFrom', 'ehlo'], arc: ['result'], dmarc: ['result', 'policy'],
};
const DKIM_FIELDS: readonly string[] = ['result', 'domain'];
/** What other software calls a field (smtp-server's session, Stalwart's and rspamd's names), lowercased. */
const ALIASES: Readonly<Record<string, string>> = {
  helo: 'heloDomain', ehlo: 'heloDomain', hostnameappearsas: 'heloDomain', heloname: 'heloDomain',
  ip: 'remoteIp', remoteaddress: 'remoteIp', clientip: 'remoteIp', localaddress: 'localIp',
  from: 'mailFrom', sender: 'mailFrom', envfrom: 'mailFrom', to: 'rcptTo', rcpt: 'rcptTo', recipients: 'rcptTo',
  envelope: 'mailFrom and rcptTo', user: 'authenticatedAs', authuser: 'authenticatedAs', secure: 'tls',
  ehlospf: 'spf.ehlo', mailfromspf: 'spf.mailFrom', '8bitmime': 'eightBitMime',
};

/** The field a caller most likely meant by an unknown key, if any is close. */
function suggest(key: string, known: readonly string[]): string | undefined {
  const alias = ALIASES[key.toLowerCase()];
  if (alias !== undefined && known === FIELDS) return alias;
  return closestName(key, known);
}

/**
 * A copy of an object of the session without its `null`/`undefined` values (absent, for JSON callers).
 * Throws SessionError for a key that is not one of `known`, suggesting the field meant.
 */
function present(v: unknown, known: readonly string[], path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SessionError(path, 'must be an object');
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!known.includes(k)) {
      const field = path === '' ? k : `${path}${path.startsWith('dkim/') ? '/' : '.'}${k}`;
      const s = suggest(k, known);
      throw new SessionError(field, s === undefined ? `unknown field (the fields are ${known.join(', ')})` : `unknown field (did you mean ${s}?)`);
    }
    if (x !== null && x !== undefined) out[k] = x;
  }
  return out;
}

/** The session input with unknown keys refused and `null` taken as absent, at every level. */
function normalizeInput(input: unknown): SessionInput {
  const i = present(input, FIELDS, '');
  for (const [f, known] of Object.entries(OBJECT_FIELDS)) if (i[f] !== undefined) i[f] = present(i[f], known, f);
  if (Array.isArray(i.dkim)) i.dkim = i.dkim.map((d: unknown, n) => (d === null || typeof d !== 'object' ? d : present(d, DKIM_FIELDS, `dkim/${n}`)));
  return i as SessionInput;
}

function str(field: string, v: unknown): string {
  if (typeof v !== 'string') throw new SessionError(field, 'must be a string');
  return v;
}


/** An ISO 3166-1 alpha-2 code (`DE`, `us`): what rules compare `country` with (Stalwart's GeoIP answer). */
function countryCode(v: unknown): string {
  const c = str('country', v);
  if (!/^[A-Za-z]{2}$/.test(c)) throw new SessionError('country', `${JSON.stringify(c)} is not a two-letter ISO 3166 country code (e.g. DE)`);
  return c.toUpperCase();
}
function bool(field: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new SessionError(field, 'must be true or false');
  return v;
}

function clock(v: unknown): number {
  if (v === undefined) return Date.now();
  if (v instanceof Date && !Number.isNaN(v.getTime())) return v.getTime();
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return t;
  }
  throw new SessionError('now', `${JSON.stringify(v)} is not a date`);
}

/**
 * Validates a {@link SessionInput} and fills Stalwart's defaults (remote and local IP
 * `127.0.0.1`, host name `localhost`, no authentication results). Addresses are lowercased as
 * Stalwart does before the spam filter; an IPv4-mapped IPv6 address (`::ffff:203.0.113.7`) becomes
 * its IPv4 address. `null` is taken as absent. Throws {@link SessionError} naming the bad field: a
 * wrong type or value, or a key that is no field (with the field meant, when one is close).
 */
export function resolveSession(input: SessionInput = {}, opts: { train?: boolean } = {}): Session {
  const i = normalizeInput(input);
  const dkim = i.dkim ?? [];
  if (!Array.isArray(dkim)) throw new SessionError('dkim', 'must be an array of {result, domain}');
  const rcpt = i.rcptTo ?? [];
  if (!Array.isArray(rcpt)) throw new SessionError('rcptTo', 'must be an array of addresses');
  if (i.asn !== undefined && (!Number.isInteger(i.asn) || i.asn < 0 || i.asn > 0xffffffff)) {
    throw new SessionError('asn', `${JSON.stringify(i.asn)} is not an AS number`);
  }
  if (i.tls !== undefined && i.tls !== false && typeof i.tls !== 'string') throw new SessionError('tls', 'must be a TLS version string or false');
  const ptr = i.iprev?.ptr ?? [];
  if (!Array.isArray(ptr)) throw new SessionError('iprev.ptr', 'must be an array of host names');
  return {
    remoteIp: i.remoteIp === undefined ? '127.0.0.1' : ipField('remoteIp', i.remoteIp),
    localIp: i.localIp === undefined ? '127.0.0.1' : ipField('localIp', i.localIp),
    hostname: i.hostname === undefined ? 'localhost' : str('hostname', i.hostname),
    heloDomain: i.heloDomain === undefined ? null : str('heloDomain', i.heloDomain),
    mailFrom: i.mailFrom === undefined ? '' : str('mailFrom', i.mailFrom).trim().replace(/^<(.*)>$/, '$1').toLowerCase(),
    mailFromFlags: {
      smtputf8: i.smtputf8 === undefined ? false : bool('smtputf8', i.smtputf8),
      eightBitMime: i.eightBitMime === undefined ? false : bool('eightBitMime', i.eightBitMime),
      binaryMime: i.binaryMime === undefined ? false : bool('binaryMime', i.binaryMime),
    },
    rcptTo: rcpt.map((r, n) => str(`rcptTo/${n}`, r).trim().replace(/^<(.*)>$/, '$1').toLowerCase()),
    authenticatedAs: i.authenticatedAs === undefined || i.authenticatedAs === '' ? null : str('authenticatedAs', i.authenticatedAs),
    tls: i.tls === undefined || i.tls === false ? false : i.tls,
    iprev: i.iprev === undefined ? null : {
      result: oneOf('iprev.result', i.iprev.result ?? 'none', IPREV_RESULTS),
      ptr: ptr.map((p, n) => str(`iprev.ptr/${n}`, p).toLowerCase().replace(/\.$/, '')),
    },
    spf: {
      mailFrom: i.spf?.mailFrom === undefined ? null : oneOf('spf.mailFrom', i.spf.mailFrom, SPF_RESULTS),
      ehlo: i.spf?.ehlo === undefined ? null : oneOf('spf.ehlo', i.spf.ehlo, SPF_RESULTS),
    },
    dkim: dkim.map((d, n) => {
      if (d === null || typeof d !== 'object') throw new SessionError(`dkim/${n}`, 'must be {result, domain}');
      const domain = str(`dkim/${n}/domain`, d.domain).trim().toLowerCase();
      if (domain === '') throw new SessionError(`dkim/${n}/domain`, 'must be the signature\'s d= domain');
      return { result: oneOf(`dkim/${n}/result`, d.result, DKIM_RESULTS), domain };
    }),
    arc: i.arc === undefined ? null : oneOf('arc.result', i.arc.result, DKIM_RESULTS),
    dmarc: {
      result: i.dmarc?.result === undefined ? null : oneOf('dmarc.result', i.dmarc.result, DMARC_RESULTS),
      policy: i.dmarc?.policy === undefined ? null : oneOf('dmarc.policy', i.dmarc.policy, DMARC_POLICIES),
    },
    asn: i.asn ?? null,
    country: i.country === undefined ? null : countryCode(i.country),
    now: clock(i.now),
    train: opts.train ?? false,
  };
}

/**
 * The session of the older `envelope` option (`remoteIp`, `heloDomain`, `mailFrom`, `rcptTo`,
 * `authenticatedAs`, `isTls`, `asn`, `country`, `iprevPtr`), which keeps working.
 */
export function sessionFromEnvelope(e: Envelope): SessionInput {
  const s: SessionInput = {};
  if (e.remoteIp !== undefined) s.remoteIp = e.remoteIp;
  if (e.heloDomain !== undefined) s.heloDomain = e.heloDomain;
  if (e.mailFrom !== undefined) s.mailFrom = e.mailFrom;
  if (e.rcptTo !== undefined) s.rcptTo = e.rcptTo;
  if (e.authenticatedAs !== undefined) s.authenticatedAs = e.authenticatedAs;
  // The envelope's TLS flag defaults to on (Stalwart's `from_message` default).
  s.tls = e.isTls === false ? false : 'TLS';
  if (e.asn !== undefined) s.asn = e.asn;
  if (e.country !== undefined) s.country = e.country;
  if (e.iprevPtr !== undefined) s.iprev = { result: 'none', ptr: [e.iprevPtr] };
  return s;
}

/** The envelope variables the rules read (`remote_ip`, `helo_domain`, `env_from`, …) for a session. */
export function envelopeOf(s: Session): Envelope {
  const e: Envelope = {
    remoteIp: s.remoteIp,
    mailFrom: s.mailFrom,
    rcptTo: s.rcptTo,
    isTls: s.tls !== false,
  };
  if (s.heloDomain !== null) e.heloDomain = s.heloDomain;
  if (s.authenticatedAs !== null) e.authenticatedAs = s.authenticatedAs;
  if (s.asn !== null) e.asn = s.asn;
  if (s.country !== null) e.country = s.country;
  const ptr = s.iprev?.ptr[0];
  if (ptr !== undefined) e.iprevPtr = ptr;
  // Domains of passing DKIM signatures are Domain-scope elements (location dkim_pass).
  const dkimPass = s.dkim.filter((d) => d.result === 'pass' && d.domain !== '').map((d) => d.domain);
  if (dkimPass.length > 0) e.dkimPassDomains = dkimPass;
  return e;
}
