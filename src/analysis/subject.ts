/**
 * The `subject` module: Stalwart's subject analysis (docs/analysis.md "subject"). Reads the first
 * Subject header's raw value (encoding checks) and the decoded last Subject (everything else), the
 * To/Cc/Bcc recipients and the envelope recipients. No DNS.
 *
 * Tags: MISSING_SUBJECT, EMPTY_SUBJECT, SUBJECT_ENDS_SPACES, GTUBE_TEST, SUBJECT_HAS_CURRENCY,
 * SUBJ_ALL_CAPS, URL_IN_SUBJECT, RCPT_DOMAIN_IN_SUBJECT, RCPT_IN_SUBJECT, SUBJECT_NEEDS_ENCODING,
 * INVALID_SUBJECT_8BIT, SUBJ_EXCESS_QP, SUBJ_EXCESS_BASE64.
 */
import { firstHeader } from '../message/header-facts.js';
import { emailAddress, emailKey, sldOrDefault } from '../message/hostname.js';
import { urlParts } from '../message/url.js';
import { checkEightBit, checkExcessEncoding } from './encoding.js';
import { envelopeFacts } from './envelope.js';
import type { AnalysisContext } from './types.js';

/** The GTUBE test string (Generic Test for Unsolicited Bulk Email). */
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

const WHITE_SPACE_RE = /^\p{White_Space}$/u;
const ALPHABETIC_RE = /^\p{Alphabetic}$/u;
const UPPERCASE_RE = /^\p{Uppercase}$/u;
const CURRENCY = new Set(['$', '€', '£', '¥', '₹', '₽', '₿']);

function isWhiteSpace(ch: string): boolean {
  const c = ch.charCodeAt(0);
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return WHITE_SPACE_RE.test(ch);
}

/** Shape of the thread subject: word count, letter case counts, currency signs, ASCII-only. */
function scan(thread: string): { words: number; upper: number; lower: number; currency: boolean; ascii: boolean } {
  let words = 0;
  let upper = 0;
  let lower = 0;
  let currency = false;
  let ascii = true;
  let prevWs = true;
  for (const ch of thread) {
    const ws = isWhiteSpace(ch);
    if (!ws) {
      if (prevWs) words++;
      if (CURRENCY.has(ch)) currency = true;
      else {
        const c = ch.charCodeAt(0);
        if (c < 0x80) {
          if (c >= 65 && c <= 90) upper++;
          else if (c >= 97 && c <= 122) lower++;
        } else if (ALPHABETIC_RE.test(ch)) {
          // Caseless letters (CJK, …) count as lower case, as Stalwart's `is_uppercase` test does.
          if (UPPERCASE_RE.test(ch)) upper++;
          else lower++;
        }
      }
    }
    if (ch.charCodeAt(0) > 0x7f) ascii = false;
    prevWs = ws;
  }
  return { words, upper, lower, currency, ascii };
}

export function subject(ctx: AnalysisContext): void {
  const msg = ctx.message;
  const first = firstHeader(msg, 'subject');
  if (first === undefined) {
    ctx.tag('MISSING_SUBJECT');
    return;
  }
  const text = msg.subjectText;
  const thread = msg.subjectThread;
  const shape = scan(thread);
  if (shape.currency) ctx.tag('SUBJECT_HAS_CURRENCY');

  if (text.trim().length === 0) ctx.tag('EMPTY_SUBJECT');
  else if (text.endsWith(' ')) ctx.tag('SUBJECT_ENDS_SPACES');
  else if (text === GTUBE) ctx.tag('GTUBE_TEST');

  if (Buffer.byteLength(thread, 'utf8') >= 10 && shape.words > 1 && shape.upper > 2 && shape.lower === 0) {
    ctx.tag('SUBJ_ALL_CAPS');
  }

  const tokens = msg.subjectTokens();
  if (tokens.urls.length > 0 || tokens.emails.length > 0) {
    const recipients = [...msg.to, ...msg.cc, ...msg.bcc];
    const rcptSlds = new Set<string>();
    const rcptKeys = new Set<string>();
    for (const r of recipients) {
      rcptSlds.add(sldOrDefault(r.email.domain));
      rcptKeys.add(emailKey(r.email));
    }
    for (const u of tokens.urls) {
      const withScheme = u.includes('://');
      if (withScheme) ctx.tag('URL_IN_SUBJECT');
      const parts = urlParts(u, !withScheme);
      if (parts.host !== '' && rcptSlds.has(parts.sld)) ctx.tag('RCPT_DOMAIN_IN_SUBJECT');
    }
    const envTo = envelopeFacts(ctx.session).toOrig;
    for (const t of tokens.emails) {
      const e = emailAddress(t);
      const k = emailKey(e);
      if (envTo.has(k) || rcptKeys.has(k)) ctx.tag('RCPT_IN_SUBJECT');
      else if (rcptSlds.has(sldOrDefault(e.domain))) ctx.tag('RCPT_DOMAIN_IN_SUBJECT');
    }
  }

  checkEightBit(ctx, first, 'SUBJECT_NEEDS_ENCODING', 'INVALID_SUBJECT_8BIT');
  checkExcessEncoding(ctx, first, shape.ascii, 'SUBJ_EXCESS_QP', 'SUBJ_EXCESS_BASE64');
}
