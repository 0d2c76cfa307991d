/**
 * The `messageid` module (Stalwart's message_id analysis, docs/analysis.md): the sanity of the first
 * `Message-ID` header and whether its right-hand side reveals the sender or a recipient.
 */
import { firstHeader } from '../message/header-facts.js';
import { hostname, type EmailAddress, type Hostname } from '../message/hostname.js';
import { MAX_ID_CHARS, messageIdText } from '../message/msgid.js';
import type { AnalysisContext } from './types.js';

/** Any character outside US-ASCII. */
const NON_ASCII_RE = /[^\x00-\x7f]/;
const utf8 = new TextEncoder();

/** The tags of one sender (contains, same host, same registrable domain), spelled out once. */
const FROM_TAGS = ['MID_CONTAINS_FROM', 'MID_RHS_MATCH_FROM', 'MID_RHS_MATCH_FROMTLD'] as const;
const ENV_FROM_TAGS = ['MID_CONTAINS_ENV_FROM', 'MID_RHS_MATCH_ENV_FROM', 'MID_RHS_MATCH_ENV_FROMTLD'] as const;

/** The first of: the id contains the sender's address, the same host, the same registrable domain. */
function senderMatch(ctx: AnalysisContext, mid: string, host: Hostname, sender: EmailAddress | undefined, tags: typeof FROM_TAGS | typeof ENV_FROM_TAGS): void {
  if (sender === undefined || sender.address === '') return;
  if (mid.includes(sender.address)) ctx.tag(tags[0]);
  else if (host.fqdn === sender.domain.fqdn) ctx.tag(tags[1]);
  else if (host.sld !== undefined && host.sld === sender.domain.sld) ctx.tag(tags[2]);
}

/**
 * Reads the first Message-ID header (its id as mail-parser parses it, lower-cased, and its raw
 * value trimmed). Tags:
 * - `MISSING_MID`: no header or no id in it (nothing else then).
 * - With an `@` (host = the text after the last one): host shape, first match of `MID_RHS_IP_LITERAL`
 *   (`[1.2.3.4]`), `MID_BARE_IP`, `MID_RHS_NOT_FQDN` (no dot), `MID_RHS_WWW`; `INVALID_MSGID` when the
 *   raw value is not ASCII, holds `(`, or the id starts with `@`; `MID_RHS_TOO_LONG` (host over 255
 *   bytes); for the From address, then the envelope sender, first match of `MID_CONTAINS_<X>` (the id
 *   contains the address), `MID_RHS_MATCH_<X>` (same host), `MID_RHS_MATCH_<X>TLD` (same registrable
 *   domain), X = `FROM` / `ENV_FROM`; `MID_CONTAINS_TO` / `MID_RHS_MATCH_TO` for To/Cc/Bcc recipients.
 * - Without an `@`: `INVALID_MSGID`.
 * - Either way, `MID_MISSING_BRACKETS` when the raw value does not start with `<` or has no `>`.
 */
export function messageid(ctx: AnalysisContext): void {
  const m = ctx.message;
  const h = firstHeader(m, 'message-id');
  if (h !== undefined && h.raw.length > MAX_ID_CHARS) ctx.warn(`Message-ID longer than ${MAX_ID_CHARS} characters: only its start was read`);
  const id = h === undefined ? '' : messageIdText(h.raw);
  if (id === '') {
    ctx.tag('MISSING_MID');
    return;
  }
  // Raw bytes that are not valid UTF-8 read as "" (they show as U+FFFD in our decoded headers).
  const raw = h!.raw.includes('\ufffd') ? '' : h!.raw.trim();
  const mid = id.toLowerCase();
  const at = mid.lastIndexOf('@');
  if (at >= 0) {
    const host = hostname(mid.slice(at + 1));
    if (host.ip !== undefined) ctx.tag(host.fqdn.startsWith('[') ? 'MID_RHS_IP_LITERAL' : 'MID_BARE_IP');
    else if (!host.fqdn.includes('.')) ctx.tag('MID_RHS_NOT_FQDN');
    else if (host.fqdn.startsWith('www.')) ctx.tag('MID_RHS_WWW');

    if (NON_ASCII_RE.test(raw) || raw.includes('(') || mid.startsWith('@')) ctx.tag('INVALID_MSGID');
    if (host.fqdn.length > 255 && utf8.encode(host.fqdn).length > 255) ctx.tag('MID_RHS_TOO_LONG');

    senderMatch(ctx, mid, host, m.from?.email, FROM_TAGS);
    senderMatch(ctx, mid, host, m.envFrom, ENV_FROM_TAGS);

    let contains = false;
    let rhsMatch = false;
    for (const list of [m.to, m.cc, m.bcc]) {
      for (const r of list) {
        if (mid.includes(r.email.address)) contains = true;
        else if (host.fqdn === r.email.domain.fqdn) rhsMatch = true;
        if (contains && rhsMatch) break;
      }
    }
    if (contains) ctx.tag('MID_CONTAINS_TO');
    if (rhsMatch) ctx.tag('MID_RHS_MATCH_TO');
  } else {
    ctx.tag('INVALID_MSGID');
  }
  if (!raw.startsWith('<') || !raw.includes('>')) ctx.tag('MID_MISSING_BRACKETS');
}
