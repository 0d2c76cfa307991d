/**
 * E-mail address functions (docs/expression-language.md; Stalwart `functions/email.rs`).
 */
import { toStr } from '../value.js';
import type { SyncFunctionDef } from './types.js';
import { int, transform, trim } from './util.js';

function sync(arity: number, fn: SyncFunctionDef['fn']): SyncFunctionDef {
  return { arity, async: false, fn };
}

/**
 * Stalwart's `is_email_valid` byte state machine (§4.1 "is_email details"): exactly one `@`
 * outside quotes, a non-empty local part, a non-empty domain with at least one dot, no empty
 * dot-separated labels, and only atext / non-ASCII bytes outside quotes.
 */
export function isEmailValid(email: string): boolean {
  const bytes = Buffer.from(email, 'utf8');
  let lastCh = 0;
  let inQuote = false;
  let atCount = 0;
  let dotCount = 0;
  let lpLen = 0;
  let value = 0;
  for (const ch of bytes) {
    if (
      (ch >= 0x30 && ch <= 0x39) || (ch >= 0x41 && ch <= 0x5a) || (ch >= 0x61 && ch <= 0x7a) ||
      ch >= 0x7f || ATEXT.has(ch)
    ) {
      value++;
    } else if (ch === 0x2e /* . */ && !inQuote) {
      if (lastCh === 0x2e || lastCh === 0x40 || value === 0) return false;
      value++;
      if (atCount === 1) dotCount++;
    } else if (ch === 0x40 /* @ */ && !inQuote) {
      atCount++;
      lpLen = value;
      value = 0;
    } else if (inQuote && (ch === 0x3e || ch === 0x3a || ch === 0x2c || ch === 0x20)) {
      value++; // `> : , space` count as characters only inside quotes
    } else if (ch === 0x22 /* " */ && (!inQuote || lastCh !== 0x5c)) {
      inQuote = !inQuote;
    } else if (ch === 0x5c /* \ */ && inQuote) {
      // escape: skipped
    } else if (!inQuote) {
      return false;
    }
    lastCh = ch;
  }
  return atCount === 1 && dotCount > 0 && lpLen > 0 && value > 0;
}

/** `! # $ % & ' * + - / = ? ^ _ \` { | } ~` (RFC 5322 atext punctuation). */
const ATEXT = new Set([...`!#$%&'*+-/=?^_\`{|}~`].map((c) => c.charCodeAt(0)));

export const EMAIL_FUNCTIONS: Record<string, SyncFunctionDef> = {
  is_email: sync(1, ([v]) => int(isEmailValid(toStr(v!)))),
  /**
   * Element-wise: split at the last `@`; `'local'` → left side trimmed, `'domain'` → right side
   * trimmed; other parts or no `@` → `""`. Case is preserved.
   */
  email_part: sync(2, ([v, part]) => {
    const p = toStr(part!);
    const local = p === 'local';
    if (!local && p !== 'domain') return transform(v!, () => '');
    return transform(v!, (s) => {
      const at = s.lastIndexOf('@');
      if (at < 0) return '';
      return trim(local ? s.slice(0, at) : s.slice(at + 1));
    });
  }),
};
