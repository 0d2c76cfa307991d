/**
 * The `recipient` module: Stalwart's To/Cc/Bcc analysis (docs/analysis.md "recipient"). Reads the
 * last To, Cc and Bcc headers' raw values, the recipients of all To/Cc/Bcc headers, List-Id /
 * List-Unsubscribe presence, the decoded Subject, and the session's MAIL FROM (address and 8-bit
 * parameters) and envelope recipients. No DNS.
 *
 * Tags: MISSING_TO, TO_NEEDS_ENCODING, INVALID_TO_8BIT, TO_EXCESS_QP, TO_EXCESS_BASE64,
 * TO_WRAPPED_IN_SPACES, RCPT_COUNT_ZERO/ONE/TWO/THREE/FIVE/SEVEN/TWELVE/GT_50, RCPT_IN_SUBJECT,
 * RCPT_LOCAL_IN_SUBJECT, TO_DN_NONE, TO_DN_ALL, TO_DN_SOME, TO_DN_EQ_ADDR_ALL, TO_DN_EQ_ADDR_SOME,
 * TO_MATCH_ENVRCPT_ALL, TO_MATCH_ENVRCPT_SOME, FORGED_RECIPIENTS, RCPT_BOUNCEMOREONE,
 * SORTED_RECIPS, SUSPICIOUS_RECIPS.
 */
import type { Recipient } from '../message/context.js';
import { firstHeader, lastHeader, rawValueText } from '../message/header-facts.js';
import type { RawHeader } from '../message/headers.js';
import { emailKey } from '../message/hostname.js';
import { checkEightBit, checkExcessEncoding, isAscii } from './encoding.js';
import { envelopeFacts } from './envelope.js';
import type { AnalysisContext } from './types.js';

/**
 * SUSPICIOUS_RECIPS compares every pair of To/Cc entries; only the first this many entries are
 * compared (Stalwart has no cap), keeping hostile recipient lists to ~31,000 pairs.
 */
export const MAX_SUSPICIOUS_RECIPS = 250;
/** Local parts and domains are compared on at most this many characters. */
const MAX_COMPARE_CHARS = 256;

/** `RCPT_COUNT_*` by number of distinct recipients (Stalwart's buckets; ≥13 is `GT_50`, sic). */
function countTag(n: number): string {
  if (n === 1) return 'RCPT_COUNT_ONE';
  if (n === 2) return 'RCPT_COUNT_TWO';
  if (n === 3) return 'RCPT_COUNT_THREE';
  if (n <= 5) return 'RCPT_COUNT_FIVE';
  if (n <= 7) return 'RCPT_COUNT_SEVEN';
  if (n <= 12) return 'RCPT_COUNT_TWELVE';
  return 'RCPT_COUNT_GT_50';
}

/**
 * Is the Levenshtein distance (over Unicode characters) of `a` and `b` below `k`? Banded
 * (Ukkonen): only cells within `k` of the diagonal are computed, so the cost is O(len × k).
 */
export function levenshteinBelow(a: readonly string[], b: readonly string[], k: number): boolean {
  const n = a.length;
  const m = b.length;
  if (Math.abs(n - m) >= k) return false;
  if (n === m) {
    // Same length: k or fewer substitutions decide it without the table (Stalwart's shortcut).
    let mismatches = 0;
    for (let i = 0; i < n && mismatches < k; i++) if (a[i] !== b[i]) mismatches++;
    if (mismatches < k) return true;
  }
  if (rowA.length <= m) {
    rowA = new Int32Array(m + 1);
    rowB = new Int32Array(m + 1);
  }
  let prev = rowA;
  let cur = rowB;
  const big = k; // any value ≥ k means "not below k"
  for (let j = 0; j <= m; j++) prev[j] = j < big ? j : big;
  for (let i = 1; i <= n; i++) {
    const lo = Math.max(1, i - k);
    const hi = Math.min(m, i + k);
    cur.fill(big, 0, m + 1);
    cur[0] = i < big ? i : big;
    let rowMin = cur[0]!;
    for (let j = lo; j <= hi; j++) {
      const sub = prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      const del = prev[j]! + 1;
      const ins = cur[j - 1]! + 1;
      let v = sub < del ? sub : del;
      if (ins < v) v = ins;
      if (v > big) v = big;
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin >= k) return false;
    const t = prev;
    prev = cur;
    cur = t;
  }
  return prev[m]! < k;
}

/** Rows reused across calls (grown on demand): the pair loop would otherwise allocate two per pair. */
let rowA = new Int32Array(64);
let rowB = new Int32Array(64);

function chars(s: string): string[] {
  const c = Array.from(s.length > MAX_COMPARE_CHARS * 2 ? s.slice(0, MAX_COMPARE_CHARS * 2) : s);
  return c.length > MAX_COMPARE_CHARS ? c.slice(0, MAX_COMPARE_CHARS) : c;
}

/** `TO_WRAPPED_IN_SPACES`: an address written `< a@b >` or `<a@b >` in the raw value. Linear in `text`. */
export function wrappedInSpaces(text: string): boolean {
  // Every piece after a "<" (and the text before the first one) up to its first ">". The next ">"
  // is searched again only once the pieces have passed it, so that a value of many "<" and no ">"
  // (a hostile header) costs one pass, not one pass per "<".
  let start = 0;
  let gt = text.indexOf('>');
  for (;;) {
    if (gt < 0) return false;
    if (gt < start) {
      gt = text.indexOf('>', start);
      if (gt < 0) return false;
    }
    const lt = text.indexOf('<', start);
    const end = lt < 0 ? text.length : lt;
    if (gt < end && gt > start && (text.charCodeAt(start) === 32 || text.charCodeAt(gt - 1) === 32)) return true;
    if (lt < 0) return false;
    start = lt + 1;
  }
}

function checkRaw(ctx: AnalysisContext, raw: RawHeader | undefined, list: readonly Recipient[]): void {
  if (raw === undefined || raw.raw.length === 0) return;
  checkEightBit(ctx, raw, 'TO_NEEDS_ENCODING', 'INVALID_TO_8BIT');
  const ascii = list.every((r) => (r.name === undefined || isAscii(r.name)) && isAscii(r.email.address));
  checkExcessEncoding(ctx, raw, ascii, 'TO_EXCESS_QP', 'TO_EXCESS_BASE64');
  if (wrappedInSpaces(rawValueText(ctx.message, raw))) ctx.tag('TO_WRAPPED_IN_SPACES');
}

export function recipient(ctx: AnalysisContext): void {
  const msg = ctx.message;
  const lastTo = lastHeader(msg, 'to');
  if (lastTo === undefined) ctx.tag('MISSING_TO');

  checkRaw(ctx, lastTo, msg.to);
  checkRaw(ctx, lastHeader(msg, 'cc'), msg.cc);
  checkRaw(ctx, lastHeader(msg, 'bcc'), msg.bcc);

  // Distinct recipients with an address, first occurrence kept.
  const unique = new Map<string, Recipient>();
  for (const list of [msg.to, msg.cc, msg.bcc]) {
    for (const r of list) {
      if (r.email.address === '') continue;
      const k = emailKey(r.email);
      if (!unique.has(k)) unique.set(k, r);
    }
  }
  const n = unique.size;
  if (n === 0) {
    ctx.tag('RCPT_COUNT_ZERO');
    return;
  }
  ctx.tag(countTag(n));

  const env = envelopeFacts(ctx.session);
  // The generic variable `subject` is this very text, computed once for the rules as well.
  const subjectLc = msg.generic('subject') as string;
  let dn = 0;
  let eqAddr = 0;
  let match = 0;
  for (const [k, r] of unique) {
    if (r.name !== undefined) {
      if (r.name === r.email.address) eqAddr++;
      else dn++;
    }
    if (env.toOrig.has(k)) match++;
    const local = r.email.local;
    if (local !== '' && subjectLc !== '') {
      if (subjectLc.includes(r.email.address)) ctx.tag('RCPT_IN_SUBJECT');
      // More than 3 UTF-8 bytes: any 4 UTF-16 units are; only shorter ones need counting.
      else if ((local.length > 3 || Buffer.byteLength(local, 'utf8') > 3) && subjectLc.includes(local)) ctx.tag('RCPT_LOCAL_IN_SUBJECT');
    }
  }

  if (dn === 0 && eqAddr === 0) ctx.tag('TO_DN_NONE');
  else if (dn === n) ctx.tag('TO_DN_ALL');
  else if (dn > 0) ctx.tag('TO_DN_SOME');
  if (eqAddr === n) ctx.tag('TO_DN_EQ_ADDR_ALL');
  else if (eqAddr > 0) ctx.tag('TO_DN_EQ_ADDR_SOME');

  if (match === n) ctx.tag('TO_MATCH_ENVRCPT_ALL');
  else {
    if (match > 0) ctx.tag('TO_MATCH_ENVRCPT_SOME');
    if (firstHeader(msg, 'list-id') === undefined && firstHeader(msg, 'list-unsubscribe') === undefined) {
      const fromKey = emailKey(env.from);
      for (const k of env.toOrig) {
        if (!unique.has(k) && k !== fromKey) {
          ctx.tag('FORGED_RECIPIENTS');
          break;
        }
      }
    }
  }

  if (n > 1 && env.fromPostmaster) ctx.tag('RCPT_BOUNCEMOREONE');

  const L = [...msg.to, ...msg.cc];
  let sorted = false;
  if (L.length >= 6) {
    sorted = true;
    for (let i = 1; i < L.length; i++) {
      if (compareBytes(L[i - 1]!.email.address, L[i]!.email.address) > 0) {
        sorted = false;
        break;
      }
    }
    if (sorted) ctx.tag('SORTED_RECIPS');
  }
  if (!sorted && n >= 5) {
    let list = L;
    if (list.length > MAX_SUSPICIOUS_RECIPS) {
      ctx.warn(`SUSPICIOUS_RECIPS compared the first ${MAX_SUSPICIOUS_RECIPS} of ${list.length} To/Cc entries`);
      list = list.slice(0, MAX_SUSPICIOUS_RECIPS);
    }
    const locals = list.map((r) => chars(r.email.local));
    const domains = list.map((r) => chars(r.email.domain.fqdn));
    const fqdns = list.map((r) => r.email.domain.fqdn);
    const pairs = (list.length * (list.length - 1)) / 2;
    const suspicious = (h: number): boolean => h / pairs > 0.65;
    let hits = 0;
    let remaining = pairs;
    // Stops as soon as the outcome is decided either way (the ratio is reached, or can no longer be).
    outer: for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        if (levenshteinBelow(locals[i]!, locals[j]!, 3) || (fqdns[i] !== fqdns[j] && levenshteinBelow(domains[i]!, domains[j]!, 4))) {
          hits++;
        }
        remaining--;
        if (suspicious(hits) || !suspicious(hits + remaining)) break outer;
      }
    }
    if (pairs > 0 && suspicious(hits)) ctx.tag('SUSPICIOUS_RECIPS');
  }
}

/**
 * Byte-order comparison of two strings' UTF-8 forms (Rust's `str` ordering). UTF-8 orders as code
 * points do, and so do UTF-16 code units below the surrogates: up to the first difference below
 * U+D800 the strings are compared in place, without encoding both.
 */
function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x < 0xd800 && y < 0xd800) return x < y ? -1 : 1;
    break;
  }
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
