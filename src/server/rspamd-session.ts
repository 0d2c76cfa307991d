/**
 * What both rspamd dialects share (the HTTP protocol and the legacy `RSPAMC` text protocol): the
 * SMTP session carried in request headers, and rspamd's action names for ours.
 */
import type { SessionInput } from '../analysis/types.js';
import { unbracket } from './scan.js';

export { RSPAMD_ACTIONS } from './rspamd-reply.js';

/**
 * The SMTP session from rspamd request headers (`get` takes a lowercased name and returns every
 * value of it): `IP`, `Helo`, `From`, `Rcpt` (repeated or comma-separated), `User`, `Hostname`
 * (rspamd's convention: `unknown` when the MTA could not verify the client's name), `MTA-Name`,
 * `TLS-Version`/`TLS-Cipher`.
 */
export function sessionFromHeaderMap(get: (name: string) => readonly string[] | undefined): SessionInput {
  const one = (name: string): string | undefined => {
    const v = get(name)?.[0]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const s: SessionInput = {};
  const ip = clientIp(one('ip'));
  if (ip !== undefined) s.remoteIp = ip;
  const helo = one('helo');
  if (helo !== undefined) s.heloDomain = helo;
  const from = get('from')?.[0];
  if (from !== undefined) s.mailFrom = unbracket(from);
  const rcpt = get('rcpt');
  if (rcpt !== undefined) s.rcptTo = rcpt.flatMap((r) => r.split(',')).map(unbracket).filter((r) => r !== '');
  const user = one('user');
  if (user !== undefined) s.authenticatedAs = user;
  const host = one('hostname');
  if (host !== undefined && host.toLowerCase() !== 'unknown') s.iprev = { result: 'pass', ptr: [host] };
  const mta = one('mta-name');
  if (mta !== undefined) s.hostname = mta;
  const tls = one('tls-version') ?? (one('tls-cipher') !== undefined ? 'TLS' : undefined);
  if (tls !== undefined) s.tls = tls;
  return s;
}

/**
 * The `IP` header's address: `unknown` (an MTA that has none, like rspamd's `Hostname: unknown`) is no
 * address, and an IPv4 address with a port (`203.0.113.7:25`, or `[2001:db8::1]:25`) is taken without it,
 * as rspamd scans such requests rather than refusing them. Anything else goes on to the session check,
 * which refuses what is not an address (400).
 */
function clientIp(v: string | undefined): string | undefined {
  if (v === undefined || v.toLowerCase() === 'unknown') return undefined;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(v);
  if (v4 !== null) return v4[1];
  const v6 = /^\[([0-9A-Fa-f:.]+)\]:\d{1,5}$/.exec(v);
  return v6 !== null ? v6[1] : v;
}

/** The request header each session field comes from (see {@link sessionFromHeaderMap}). */
const HEADER_OF_FIELD: Readonly<Record<string, string>> = {
  remoteIp: 'IP', heloDomain: 'Helo', mailFrom: 'From', rcptTo: 'Rcpt', authenticatedAs: 'User',
  'iprev.ptr': 'Hostname', hostname: 'MTA-Name', tls: 'TLS-Version',
};

/**
 * A session error (`session.remoteIp: "nope" is not an IP address`) as the client wrote it: under
 * the request header it came from (`IP header: "nope" is not an IP address`). Other messages are
 * returned as they are.
 */
export function sessionErrorForHeaders(message: string): string {
  const m = /^session\.([A-Za-z.]+)(?:\/\d+)?: (.*)$/s.exec(message);
  const header = m !== null && Object.hasOwn(HEADER_OF_FIELD, m[1]!) ? HEADER_OF_FIELD[m[1]!] : undefined;
  return header !== undefined ? `${header} header: ${m![2]}` : message;
}
