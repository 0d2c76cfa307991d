/**
 * The `date` module (Stalwart's date analysis, docs/analysis.md): the last `Date` header, read with
 * mail-parser's lenient date parser (src/message/date.ts), against the session clock.
 */
import { lastHeader } from '../message/header-facts.js';
import { MAX_DATE_CHARS, mailDateTimestamp, parseMailDate } from '../message/date.js';
import type { AnalysisContext } from './types.js';

/** A Date more than this many seconds old is `DATE_IN_PAST` (one day). */
const PAST_S = 86_400;
/** A Date more than this many seconds ahead is `DATE_IN_FUTURE` (two hours). */
const FUTURE_S = 7_200;

/**
 * Tags: `MISSING_DATE` (no Date header); `INVALID_DATE` (the last one does not parse, or its
 * timestamp is exactly 0); `DATE_IN_PAST` (more than 86,400 s before `session.now`); else
 * `DATE_IN_FUTURE` (more than 7,200 s after it). `session.now` is in milliseconds; the comparison
 * is in whole seconds, as Stalwart's.
 */
export function date(ctx: AnalysisContext): void {
  const raw = lastHeader(ctx.message, 'date')?.raw;
  if (raw === undefined) {
    ctx.tag('MISSING_DATE');
    return;
  }
  if (raw.length > MAX_DATE_CHARS) ctx.warn(`Date longer than ${MAX_DATE_CHARS} characters: only its start was read`);
  const d = parseMailDate(raw);
  const ts = d === undefined ? 0 : mailDateTimestamp(d);
  if (ts === 0) {
    ctx.tag('INVALID_DATE');
    return;
  }
  const diff = Math.floor(ctx.session.now / 1000) - ts;
  if (diff > PAST_S) ctx.tag('DATE_IN_PAST');
  else if (-diff > FUTURE_S) ctx.tag('DATE_IN_FUTURE');
}
