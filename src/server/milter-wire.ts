/**
 * The milter wire format (Sendmail's libmilter, version 6): packets of a 4-byte big-endian length
 * (the command byte and the data), a command byte and its data; NUL-terminated strings inside. The
 * replies the milter listener sends are built here; src/server/milter.ts holds the protocol state.
 */

export const MILTER_VERSION = 6;
/** Largest packet accepted, in bytes (libmilter's own limit with `SMFIP_MDS_1M` is 1 MiB of data). */
export const MAX_PACKET = 1024 * 1024 + 64;

// Actions the filter asks for (SMFIF_*).
export const SMFIF_ADDHDRS = 0x01;
export const SMFIF_CHGHDRS = 0x10;
// Protocol flags (SMFIP_*).
export const SMFIP_NOUNKNOWN = 0x100;
export const SMFIP_HDR_LEADSPC = 0x100000;

/**
 * Splits NUL-terminated strings. `latin1` keeps every byte as one character (header lines, whose
 * 8-bit bytes the analysis must see as they are); the default reads UTF-8 (names, addresses).
 */
export function cstrings(data: Buffer, encoding: 'utf8' | 'latin1' = 'utf8'): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < data.length; i++) {
    if (data[i] === 0) {
      out.push(data.toString(encoding, start, i));
      start = i + 1;
    }
  }
  if (start < data.length) out.push(data.toString(encoding, start));
  return out;
}

/** One packet: `cmd` (one character) and its data (a string is sent as UTF-8). */
export function packet(cmd: string, data: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1, 0);
  head.write(cmd, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/**
 * The answer to the MTA's option negotiation (`O`: version, actions, protocol flags, each a 32-bit
 * number): ours, the version no higher than {@link MILTER_VERSION}, the actions we use (add and change
 * headers) and the protocol flags we understand, of those the MTA offered; `leadingSpace` and
 * `canChange` say what it granted. A string for a negotiation too short or of a version before 2 (a
 * protocol error).
 */
export function negotiate(data: Buffer): { reply: Buffer; leadingSpace: boolean; canChange: boolean } | string {
  if (data.length < 12) return 'short option negotiation';
  const version = data.readUInt32BE(0);
  if (version < 2) return `milter protocol version ${version} is too old`;
  const actions = data.readUInt32BE(4);
  const protocol = data.readUInt32BE(8);
  const reply = Buffer.alloc(12);
  reply.writeUInt32BE(Math.min(version, MILTER_VERSION), 0);
  reply.writeUInt32BE(actions & (SMFIF_ADDHDRS | SMFIF_CHGHDRS), 4);
  reply.writeUInt32BE(protocol & (SMFIP_HDR_LEADSPC | SMFIP_NOUNKNOWN), 8);
  return { reply: packet('O', reply), leadingSpace: (protocol & SMFIP_HDR_LEADSPC) !== 0, canChange: (actions & SMFIF_CHGHDRS) !== 0 };
}

/** `SMFIR_CONTINUE`. */
export const CONTINUE = packet('c');
/** `SMFIR_TEMPFAIL`: the MTA answers the SMTP command (or the message) with a 4xx reply. */
export const TEMPFAIL = packet('t');

/** NUL-terminated UTF-8 strings, one after the other. */
export function cstr(...parts: string[]): Buffer {
  return Buffer.from(parts.map((p) => p + '\0').join(''), 'utf8');
}

/**
 * milter `h` (add header): libmilter folds with a bare LF. With `SMFIP_HDR_LEADSPC` negotiated
 * the MTA copies the value verbatim after the colon, so the space is ours to send.
 */
export function addHeader(name: string, value: string, leadingSpace: boolean): Buffer {
  return packet('h', cstr(name, (leadingSpace ? ' ' : '') + value.replace(/\r\n/g, '\n')));
}

/** milter `m` (change header) with an empty value deletes occurrence `index` (1-based) of `name`. */
export function deleteHeader(name: string, index: number): Buffer {
  const i = Buffer.alloc(4);
  i.writeUInt32BE(index, 0);
  return packet('m', Buffer.concat([i, cstr(name, '')]));
}

/**
 * Where the connection is in the protocol, after the last packet: `init` before the option
 * negotiation; `negotiated` after it (or after `K`), when the connect info comes; `session` between
 * messages; `envelope` after MAIL (and RCPT, DATA); `headers`; `body` after end of headers.
 */
export type Stage = 'init' | 'negotiated' | 'session' | 'envelope' | 'headers' | 'body';

/**
 * The stages each command may come in (those not listed: any but `init`). libmilter's own order;
 * C (connect) and H (HELO) may be left out, as an MTA does for a client that skips HELO.
 */
export const ALLOWED: Record<string, readonly Stage[]> = {
  O: ['init'],
  C: ['negotiated'],
  // A HELO inside a transaction (EHLO again, as RFC 5321 allows) ends it, as libmilter takes it.
  H: ['negotiated', 'session', 'envelope', 'headers', 'body'],
  M: ['negotiated', 'session'],
  R: ['envelope'],
  T: ['envelope'],
  L: ['envelope', 'headers'],
  N: ['envelope', 'headers'],
  B: ['body'],
  E: ['envelope', 'headers', 'body'],
  Q: ['init', 'negotiated', 'session', 'envelope', 'headers', 'body'],
};
