/**
 * Envelope facts Stalwart's init step derives from the SMTP session and the header modules share
 * (docs/analysis.md): the envelope sender as an address, whether it is a bounce sender, and the set
 * of original envelope recipients. Computed once per session.
 */
import { emailAddress, emailKey, type EmailAddress } from '../message/hostname.js';
import type { Session } from './types.js';

export interface EnvelopeFacts {
  /** `Email::new(MAIL FROM)`; empty address for the null sender. */
  readonly from: EmailAddress;
  /** MAIL FROM is empty, or its local part is `postmaster`, `mailer-daemon` or `root`. */
  readonly fromPostmaster: boolean;
  /** Equality keys (local part + decoded domain) of the envelope recipients, `rfc822;` ORCPT prefix removed. */
  readonly toOrig: ReadonlySet<string>;
  /** The same recipients as addresses, deduplicated, in RCPT order. */
  readonly toOrigList: readonly EmailAddress[];
}

// The modules of one message run one after the other and ask about the same session: the last
// session's facts are kept (one entry), instead of a WeakMap entry per message. Messages classified
// concurrently only recompute.
let lastSession: Session | undefined;
let lastFacts: EnvelopeFacts | undefined;

const BOUNCE_LOCALS = new Set(['postmaster', 'mailer-daemon', 'root']);

/** {@link EnvelopeFacts} of a session, computed once. */
export function envelopeFacts(session: Session): EnvelopeFacts {
  let f = session === lastSession ? lastFacts : undefined;
  if (f === undefined) {
    const from = emailAddress(session.mailFrom);
    const toOrig = new Set<string>();
    const toOrigList: EmailAddress[] = [];
    for (const r of session.rcptTo) {
      const e = emailAddress(r.startsWith('rfc822;') ? r.slice(7) : r);
      const k = emailKey(e);
      if (!toOrig.has(k)) {
        toOrig.add(k);
        toOrigList.push(e);
      }
    }
    f = {
      from,
      fromPostmaster: session.mailFrom === '' || BOUNCE_LOCALS.has(from.local),
      toOrig,
      toOrigList,
    };
    lastSession = session;
    lastFacts = f;
  }
  return f;
}
