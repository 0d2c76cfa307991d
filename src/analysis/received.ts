/**
 * The `received` module (Stalwart's received analysis, docs/analysis.md): counts the `Received:`
 * hops, checks TLS coverage and suspicious HELO/PTR pairs, using mail-parser's reading of each
 * header (src/message/received.ts).
 */
import { emailAddress, emailKey, hostname } from '../message/hostname.js';
import { isNamed } from '../message/headers.js';
import { MAX_RECEIVED_CHARS, parsedReceived } from '../message/received.js';
import type { AnalysisContext } from './types.js';

const COUNT_TAGS = ['RCVD_COUNT_ZERO', 'RCVD_COUNT_ONE', 'RCVD_COUNT_TWO', 'RCVD_COUNT_THREE', 'RCVD_COUNT_FIVE',
  'RCVD_COUNT_FIVE', 'RCVD_COUNT_SEVEN', 'RCVD_COUNT_SEVEN'];

/** Any character outside US-ASCII (the raw header holds non-ASCII bytes). */
const NON_ASCII_RE = /[^\x00-\x7f]/;

/**
 * Per `Received:` header, in order: `RCVD_ILLEGAL_CHARS` when it holds non-ASCII bytes and MAIL FROM
 * had no SMTPUTF8; if it parses, `RCVD_HELO_USER` when the from (else greeting) host is the name
 * `user`, else `FORGED_RCVD_TRAIL` when that name differs from the PTR name in the from clause's
 * comment (case-insensitively), and `PREVIOUSLY_DELIVERED` when its `for` address is a To/Cc/Bcc
 * recipient; if it does not parse, `RCVD_UNPARSABLE`.
 *
 * After the loop: `RCVD_DOUBLE_IP_SPAM` (two or more hops received from a bare IP, or one while the
 * session HELO is an IP), `RCVD_VIA_SMTP_AUTH` (`session.authenticatedAs` set), one of
 * `RCVD_TLS_ALL` (every hop has a TLS version and this session is TLS) / `RCVD_TLS_LAST` (this
 * session is TLS) / `RCVD_NO_TLS_LAST`, and `RCVD_COUNT_ZERO/ONE/TWO/THREE/FIVE/SEVEN/TWELVE`
 * (0, 1, 2, 3, 4–5, 6–7, 8–12 headers; none beyond 12).
 */
export function received(ctx: AnalysisContext): void {
  const s = ctx.session;
  const m = ctx.message;
  let count = 0;
  let fromIp = 0;
  let tls = 0;
  let recipients: Set<string> | undefined;
  for (const h of m.headers) {
    if (!isNamed(h.name, 'received')) continue;
    count++;
    if (!s.mailFromFlags.smtputf8 && NON_ASCII_RE.test(h.raw)) ctx.tag('RCVD_ILLEGAL_CHARS');
    if (h.raw.length > MAX_RECEIVED_CHARS) ctx.warn(`a Received header longer than ${MAX_RECEIVED_CHARS} characters was read in part`);
    const r = parsedReceived(h);
    if (!r.parsed) {
      ctx.tag('RCVD_UNPARSABLE');
      continue;
    }
    const heloHost = r.from ?? r.helo;
    const heloName = heloHost?.name;
    if (heloName !== undefined && heloName.length === 4 && heloName.toLowerCase() === 'user') {
      ctx.tag('RCVD_HELO_USER');
    } else if (heloName !== undefined && r.fromIprev !== undefined && heloName.toLowerCase() !== r.fromIprev.toLowerCase()) {
      ctx.tag('FORGED_RCVD_TRAIL');
    }
    if (r.for !== undefined) {
      recipients ??= new Set([...m.to, ...m.cc, ...m.bcc].map((x) => emailKey(x.email)));
      if (recipients.size > 0 && recipients.has(emailKey(emailAddress(r.for)))) ctx.tag('PREVIOUSLY_DELIVERED');
    }
    if (r.from?.ip !== undefined) fromIp++;
    if (r.tlsVersion !== undefined) tls++;
  }

  if (fromIp >= 2 || (fromIp === 1 && hostname(s.heloDomain ?? 'unknown').ip !== undefined)) ctx.tag('RCVD_DOUBLE_IP_SPAM');
  if (s.authenticatedAs !== null) ctx.tag('RCVD_VIA_SMTP_AUTH');
  const isTls = s.tls !== false;
  if (count > 0 && count === tls && isTls) ctx.tag('RCVD_TLS_ALL');
  else if (isTls) ctx.tag('RCVD_TLS_LAST');
  else ctx.tag('RCVD_NO_TLS_LAST');
  if (count < COUNT_TAGS.length) ctx.tag(COUNT_TAGS[count]!);
  else if (count <= 12) ctx.tag('RCVD_COUNT_TWELVE');
}
