/**
 * The SMTP session a milter connection reports: the connect, HELO and envelope stages
 * (src/server/milter.ts) and the few macros the session is built from.
 */
import type { SessionInput } from '../analysis/types.js';

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
