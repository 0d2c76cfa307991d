/**
 * The `replyto` module: Stalwart's Reply-To analysis (docs/analysis.md "replyto"). Reads the last
 * Reply-To header (raw value and first mailbox), the From mailbox, the To/Cc/Bcc recipients, the
 * mailing-list headers, and the session's MAIL FROM and envelope recipients. No DNS.
 *
 * Tags: HAS_REPLYTO, REPLYTO_UNPARSABLE, REPLYTO_EQ_FROM, REPLYTO_DOM_EQ_FROM_DOM,
 * REPLYTO_EQ_TO_ADDR, REPLYTO_DOM_NEQ_FROM_DOM, SPOOF_REPLYTO, REPLYTO_DN_EQ_FROM_DN,
 * REPLYTO_ADDR_EQ_FROM, REPLYTO_EXCESS_QP, REPLYTO_EXCESS_BASE64.
 */
import { firstHeader, lastHeader } from '../message/header-facts.js';
import { emailAddress, emailKey } from '../message/hostname.js';
import { checkExcessEncoding, isAscii } from './encoding.js';
import { envelopeFacts } from './envelope.js';
import type { AnalysisContext } from './types.js';

/** Headers that mark list traffic (Stalwart's `is_from_list`), lower case. */
const LIST_HEADERS = ['list-unsubscribe', 'list-id', 'auto-submitted', 'x-to-get-off-this-list', 'x-list'];

const EMPTY_EMAIL = emailAddress('');

export function replyto(ctx: AnalysisContext): void {
  const msg = ctx.message;
  const raw = lastHeader(msg, 'reply-to');
  if (raw === undefined) return;
  const reply = msg.replyTo;
  if (reply === undefined) {
    ctx.tag('REPLYTO_UNPARSABLE');
    return;
  }
  ctx.tag('HAS_REPLYTO');
  const R = reply.email;
  const Rn = reply.name ?? '';
  const F = msg.from?.email ?? EMPTY_EMAIL;
  const fromName = msg.from?.name ?? '';
  const env = envelopeFacts(ctx.session);
  const isFromList = LIST_HEADERS.some((n) => firstHeader(msg, n) !== undefined);
  const rKey = emailKey(R);
  const fKey = emailKey(F);

  if (rKey === fKey) ctx.tag('REPLYTO_EQ_FROM');
  else {
    if (R.domain.sld === F.domain.sld) ctx.tag('REPLYTO_DOM_EQ_FROM_DOM');
    else {
      const toRecipient = !isFromList && [msg.to, msg.cc, msg.bcc].some((l) => l.some((r) => emailKey(r.email) === rKey));
      ctx.tag(toRecipient ? 'REPLYTO_EQ_TO_ADDR' : 'REPLYTO_DOM_NEQ_FROM_DOM');
      const excused =
        isFromList ||
        msg.to.some((r) => emailKey(r.email) === fKey) ||
        env.toOrigList.some((e) => e.domain.sld === F.domain.sld) ||
        (env.toOrigList.length === 1 && emailKey(env.toOrigList[0]!) === fKey);
      if (!excused) ctx.tag('SPOOF_REPLYTO');
    }
    if (Rn !== '' && Rn === fromName) ctx.tag('REPLYTO_DN_EQ_FROM_DN');
  }

  if (rKey === emailKey(env.from)) ctx.tag('REPLYTO_ADDR_EQ_FROM');

  checkExcessEncoding(ctx, raw, isAscii(R.address) && isAscii(Rn), 'REPLYTO_EXCESS_QP', 'REPLYTO_EXCESS_BASE64');
}
