/**
 * The `domain` module: Stalwart's domain analysis (`spam_filter_analyze_domain`; docs/analysis.md
 * "domain"). Tags a recipient address quoted in the body (RCPT_IN_BODY) and runs the Email DNSBLs over
 * the message's e-mail set and the Domain DNSBLs over its domain set (the Email/Domain scopes' elements).
 * Domains and e-mail domains of `trusted-domains` (exact fqdn) are not checked. Training mode skips all.
 */
import type { Value } from '../expr/value.js';
import { extractDomains, extractEmails, type EmailElement } from '../message/elements.js';
import { emailAddress, emailKey, isValidEmail } from '../message/hostname.js';
import type { Location } from '../message/types.js';
import { checkDnsbl, dnsblDisabled } from './dnsbl.js';
import { trustedDomain } from './lists.js';
import type { AnalysisContext } from './types.js';

const EMAIL_VARIABLES = new Set(['email', 'value', 'name', 'local', 'domain', 'sld']);

export async function domain(ctx: AnalysisContext): Promise<void> {
  if (ctx.session.train) return;
  const m = ctx.message;

  // RCPT_IN_BODY: an e-mail token of a body part equal to a To/Cc/Bcc address (local part + decoded domain).
  const rcpts = new Set<string>();
  for (const list of [m.to, m.cc, m.bcc]) for (const r of list) rcpts.add(emailKey(r.email));
  if (rcpts.size > 0) {
    search: for (const part of m.body.parts) {
      if (part.location === 'attachment') continue;
      for (const t of part.tokens().emails) {
        if (rcpts.has(emailKey(emailAddress(t)))) {
          ctx.tag('RCPT_IN_BODY');
          break search;
        }
      }
    }
  }

  const emailOn = !dnsblDisabled(ctx, 'Email');
  const domainOn = !dnsblDisabled(ctx, 'Domain');
  if (!emailOn && !domainOn) return;
  const emails = extractEmails(m, (w) => ctx.warn(w)) as EmailElement[];
  const checks: Promise<void>[] = [];
  if (emailOn) {
    for (const e of emails) {
      if (!isValidEmail(e.email)) continue;
      checks.push(
        trustedDomain(ctx, e.email.domain.fqdn).then((trusted) => {
          if (trusted) return;
          const own = (name: string): Value | undefined => (EMAIL_VARIABLES.has(name) ? e.variable(name) : undefined);
          return checkDnsbl(ctx, 'Email', own, e.location);
        }),
      );
    }
  }
  if (domainOn) {
    // The Domain set already holds the e-mail domains that are valid and not trusted (element extraction).
    // DKIM-pass domains come first (location dkim_pass); the session has them even when the envelope
    // given to the message analysis does not.
    const domains: { value: string; location: Location }[] = [];
    const seen = new Set<string>();
    for (const k of ctx.session.dkim) {
      const d = k.domain.toLowerCase();
      if (k.result === 'pass' && d !== '' && !seen.has(d)) {
        seen.add(d);
        domains.push({ value: d, location: 'dkim_pass' });
      }
    }
    for (const d of extractDomains(m, emails)) {
      if (seen.has(d.label)) continue;
      seen.add(d.label);
      domains.push({ value: d.label, location: d.location });
    }
    for (const { value, location } of domains) {
      checks.push(
        trustedDomain(ctx, value).then((trusted) => (trusted ? undefined : checkDnsbl(ctx, 'Domain', () => value, location))),
      );
    }
  }
  await Promise.all(checks);
}
