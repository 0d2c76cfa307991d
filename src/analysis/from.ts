/**
 * The `from` module: Stalwart's From header and envelope sender analysis (docs/analysis.md "from").
 * Reads every From header (count; the last one's raw value and first mailbox), the last
 * X-Confirm-Reading-To and Disposition-Notification-To, To/Cc, the session's MAIL FROM (address
 * and 8-bit parameters) and HELO name, and asks DNS whether the MAIL FROM domain has an A/AAAA or
 * MX record.
 *
 * Tags: MISSING_FROM, MULTIPLE_FROM, FROM_INVALID, FROM_NO_DN, FROM_DN_EQ_ADDR, FROM_HAS_DN,
 * SPOOF_DISPLAY_NAME, FROM_NEQ_DISPLAY_NAME, FROM_BOUNCE, FROM_EQ_ENV_FROM, FROMTLD_EQ_ENV_FROMTLD,
 * FORGED_SENDER, FROM_NEQ_ENV_FROM, TO_EQ_FROM, TO_DOM_EQ_FROM_DOM, FROM_NEEDS_ENCODING,
 * INVALID_FROM_8BIT, FROM_EXCESS_QP, FROM_EXCESS_BASE64, NO_SPACE_IN_FROM,
 * HEADER_RCONFIRM_MISMATCH, FROMHOST_NORES_A_OR_MX, ENV_FROM_INVALID, HEADER_FORGED_MDN.
 */
import { ipExists, mxExists } from '../dns/index.js';
import { OffResolver } from '../dns/off.js';
import { mailboxesOf } from '../message/addresses.js';
import { headersNamed, lastHeader, rawValueText } from '../message/header-facts.js';
import type { RawHeader } from '../message/headers.js';
import { emailAddress, emailKey, hostname, isValidEmail, type EmailAddress } from '../message/hostname.js';
import { tokenize } from '../message/tokenizer.js';
import { checkEightBit, checkExcessEncoding, isAscii } from './encoding.js';
import { envelopeFacts } from './envelope.js';
import type { AnalysisContext } from './types.js';

const EMPTY_EMAIL = emailAddress('');

/** Stalwart's `header_as_address`: the address of the first mailbox of a header, if any. */
function firstAddress(h: RawHeader | undefined): EmailAddress | undefined {
  if (h === undefined) return undefined;
  const m = mailboxesOf(h)[0];
  return m?.address === undefined ? undefined : emailAddress(m.address);
}

/** The first valid email address written in a display name (SPOOF_DISPLAY_NAME), if any. */
function emailInName(name: string): EmailAddress | undefined {
  for (const t of tokenize(name).emails) {
    const e = emailAddress(t);
    if (isValidEmail(e)) return e;
  }
  return undefined;
}

function isAsciiSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

export function from(ctx: AnalysisContext): void | Promise<void> {
  const msg = ctx.message;
  const env = envelopeFacts(ctx.session);
  const E = env.from;
  const E0 = E.address === '';
  const froms = headersNamed(msg, 'from');

  if (froms.length === 0) ctx.tag('MISSING_FROM');
  else if (froms.length > 1) ctx.tag('MULTIPLE_FROM');

  if (froms.length > 0) {
    const F = msg.from?.email ?? EMPTY_EMAIL;
    const N = msg.from?.name ?? '';
    const Nt = N.trim();
    const Fv = isValidEmail(F);
    const ehlo = hostname(ctx.session.heloDomain ?? 'unknown');

    if (!Fv) ctx.tag('FROM_INVALID');

    if (Nt === '') ctx.tag('FROM_NO_DN');
    else if (Nt === F.address) ctx.tag('FROM_DN_EQ_ADDR');
    else {
      if (Fv) ctx.tag('FROM_HAS_DN');
      const D = Nt.includes('@') ? emailInName(Nt) : undefined;
      if (D !== undefined) {
        const dSld = D.domain.sld;
        const spoof = (Fv && dSld !== F.domain.sld) || (!E0 && E.domain.sld !== dSld) || (E0 && ehlo.sld !== dSld);
        ctx.tag(spoof ? 'SPOOF_DISPLAY_NAME' : 'FROM_NEQ_DISPLAY_NAME');
      }
    }

    if (env.fromPostmaster) ctx.tag('FROM_BOUNCE');

    if (!E0 && emailKey(E) === emailKey(F)) ctx.tag('FROM_EQ_ENV_FROM');
    else if (Fv) {
      // Stalwart compares with the HELO name here, despite the tag's name.
      if (F.domain.sld === ehlo.sld) ctx.tag('FROMTLD_EQ_ENV_FROMTLD');
      else if (!env.fromPostmaster) {
        ctx.tag('FORGED_SENDER');
        ctx.tag('FROM_NEQ_ENV_FROM');
      }
    }

    if (msg.to.length + msg.cc.length === 1) {
      const r = (msg.to[0] ?? msg.cc[0])!.email;
      if (emailKey(r) === emailKey(F)) ctx.tag('TO_EQ_FROM');
      else if (r.domain.fqdn === F.domain.fqdn) ctx.tag('TO_DOM_EQ_FROM_DOM');
    }

    const raw = froms[froms.length - 1]!;
    checkEightBit(ctx, raw, 'FROM_NEEDS_ENCODING', 'INVALID_FROM_8BIT');
    checkExcessEncoding(ctx, raw, isAscii(N) && isAscii(F.address), 'FROM_EXCESS_QP', 'FROM_EXCESS_BASE64');

    if (N !== '' && F.address !== '') {
      const text = rawValueText(msg, raw);
      const lt = text.indexOf('<');
      if (lt <= 0 || !isAsciiSpace(text.charCodeAt(lt - 1))) ctx.tag('NO_SPACE_IN_FROM');
    }

    const confirm = firstAddress(lastHeader(msg, 'x-confirm-reading-to'));
    if (confirm !== undefined && emailKey(confirm) !== emailKey(F)) ctx.tag('HEADER_RCONFIRM_MISMATCH');
  }

  if (E0) return;
  if (isValidEmail(E)) {
    // DNS off answers every query with an error, which sets no tag: the module then stays
    // synchronous (a promise per message costs the runner).
    if (!(ctx.dns instanceof OffResolver)) return hostChecks(ctx, E);
  } else {
    ctx.tag('ENV_FROM_INVALID');
  }
  forgedMdn(ctx, E);
}

/** FROMHOST_NORES_A_OR_MX for a valid MAIL FROM domain, then the MDN check (in Stalwart's order). */
async function hostChecks(ctx: AnalysisContext, E: EmailAddress): Promise<void> {
  // In Stalwart's order: the MX query is only made when the A/AAAA answer is a definite "no".
  const name = E.domain.fqdn;
  if ((await ipExists(ctx.dns, name)) === false && (await mxExists(ctx.dns, name)) === false) {
    ctx.tag('FROMHOST_NORES_A_OR_MX');
  }
  forgedMdn(ctx, E);
}

/** HEADER_FORGED_MDN: the last Disposition-Notification-To is not the MAIL FROM address. */
function forgedMdn(ctx: AnalysisContext, E: EmailAddress): void {
  const mdn = firstAddress(lastHeader(ctx.message, 'disposition-notification-to'));
  if (mdn !== undefined && emailKey(mdn) !== emailKey(E)) ctx.tag('HEADER_FORGED_MDN');
}
