/**
 * What a milter connection keeps (src/server/milter.ts): the SMTP session it reports (the connect,
 * HELO and envelope stages and the few macros the session is built from), its bounds, and the
 * message under way.
 */
import type { SessionInput } from '../analysis/types.js';
import { cstrings } from './milter-wire.js';

/** The macros {@link sessionWithMacros} reads; the MTA may send many more, which are dropped. */
const KEPT_MACROS = new Set(['i', 'j', 'auth_authen', 'tls_version', 'daemon_addr', 'client_addr'].flatMap((n) => [n, `{${n}}`]));
/** Longer values of those are not kept: a host name has 255 bytes at most, an address 45. */
const MAX_MACRO_VALUE = 1024;

/** Whether macro `name` with `value` is kept (one the session reads, of at most 1 KiB). */
export function keptMacro(name: string, value: string): boolean {
  return KEPT_MACROS.has(name) && Buffer.byteLength(value) <= MAX_MACRO_VALUE;
}

/**
 * `session` with what the macros add: `{auth_authen}` (authenticatedAs), `{tls_version}` (tls), `j`
 * (hostname), `{daemon_addr}` (localIp), and `{client_addr}` when the connect info gave no address.
 * Macro names are taken with or without braces.
 */
export function sessionWithMacros(session: SessionInput, macros: ReadonlyMap<string, string>): SessionInput {
  const s: SessionInput = { ...session };
  const mac = (n: string): string | undefined => {
    const v = macros.get(n) ?? macros.get(`{${n}}`);
    return v === undefined || v === '' ? undefined : v;
  };
  const auth = mac('auth_authen');
  if (auth !== undefined) s.authenticatedAs = auth;
  const tls = mac('tls_version');
  if (tls !== undefined) s.tls = tls;
  const host = mac('j');
  if (host !== undefined) s.hostname = host;
  const local = mac('daemon_addr');
  if (local !== undefined) s.localIp = local;
  if (s.remoteIp === undefined) {
    const client = mac('client_addr');
    if (client !== undefined) s.remoteIp = client;
  }
  return s;
}

/**
 * The session of a connect packet (`C`: the client's host name, NUL, the family byte, the port (2
 * bytes), the address, NUL): `remoteIp` for an IPv4 or IPv6 client, and `iprev` passed with the name
 * when the MTA verified one (Postfix sends `unknown` and Sendmail `[ip]` when it did not).
 */
export function connectSession(data: Buffer): SessionInput {
  const nul = data.indexOf(0);
  const host = data.toString('utf8', 0, nul < 0 ? data.length : nul);
  const family = nul >= 0 ? String.fromCharCode(data[nul + 1] ?? 0) : 'U';
  const addr = family === '4' || family === '6' ? cstrings(data.subarray(nul + 4))[0] : undefined;
  const session: SessionInput = {};
  if (addr !== undefined && addr !== '') session.remoteIp = addr;
  if (host !== '' && host.toLowerCase() !== 'unknown' && !host.startsWith('[')) session.iprev = { result: 'pass', ptr: [host] };
  return session;
}

/** Recipients per message (Postfix's default smtpd_recipient_limit). */
export const MAX_RECIPIENTS = 1000;
/** Connect, HELO, MAIL FROM and RCPT TO strings kept per message: 1000 recipients of RFC 5321's 256 bytes fit twice. */
export const MAX_ENVELOPE_BYTES = 512 * 1024;

/** The header that says why a message was not scanned. */
export const NOTE_HEADER = 'X-Spam-Note';
/** Headers we write: an upstream copy of any is deleted, scanned or not (it could be forged). */
export const OUR_HEADERS = ['X-Spam-Result', 'X-Spam-LLM', 'X-Spam-Score', NOTE_HEADER];

/** The message under way, from MAIL to its end. */
export interface MessageState {
  /** The message as received so far: header lines (CRLF), the blank line, body chunks. */
  parts: Buffer[];
  /** Bytes of the message received (all of them, also those not kept). */
  size: number;
  /** Bytes kept in `parts` (held in the buffer budget). */
  held: number;
  /** Over maxSize: the rest is counted, not kept, and the message is not scanned. */
  tooLarge: boolean;
  /** Refused because its bytes did not fit in the buffer budget: answered with tempfail. */
  refused: boolean;
  /** The end of headers has come. */
  inBody: boolean;
  /** How many copies of each of our header names the message already has (to delete them). */
  forged: Map<string, number>;
}

/** An empty message. */
export function newMessage(): MessageState {
  return { parts: [], size: 0, held: 0, tooLarge: false, refused: false, inBody: false, forged: new Map() };
}
