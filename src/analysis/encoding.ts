/**
 * The raw-header encoding checks Stalwart's subject, from, replyto and recipient modules share
 * (docs/analysis.md "Encoding checks"): 8-bit bytes in a header the MAIL FROM did not declare
 * 8-bit clean, invalid UTF-8, and RFC 2047 encoded words around text that is plain ASCII anyway.
 * Not a module: a helper the four modules call with their own tag names.
 */
import type { RawHeader } from '../message/headers.js';
import { rawValueInfo, rawValueNonAscii, rawValueText } from '../message/header-facts.js';
import type { AnalysisContext, Session } from './types.js';

/** MAIL FROM carried SMTPUTF8 (RFC 6531), BODY=8BITMIME (RFC 6152) or BODY=BINARYMIME (RFC 3030). */
export function eightBitAllowed(session: Session): boolean {
  const f = session.mailFromFlags;
  return f.smtputf8 || f.eightBitMime || f.binaryMime;
}

/** Is every character of `s` ASCII? */
export function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * 8-bit checks on header `h`'s raw value: `needsTag` when it holds a byte ≥ 0x80 and 8-bit was not
 * declared on MAIL FROM; `invalidTag` when it is not valid UTF-8 (whatever MAIL FROM declared).
 */
export function checkEightBit(ctx: AnalysisContext, h: RawHeader, needsTag: string, invalidTag: string): void {
  // Most values are ASCII: the memoized byte facts are only needed for the others.
  if (!rawValueNonAscii(h)) return;
  const info = rawValueInfo(ctx.message, h);
  if (!eightBitAllowed(ctx.session)) ctx.tag(needsTag);
  if (!info.validUtf8) ctx.tag(invalidTag);
}

/**
 * Excess encoding: when the decoded text is plain ASCII (`asciiDecoded`, the caller's condition) and
 * the raw value (as UTF-8; invalid UTF-8 counts as empty) contains `=?` and `?=`, `qpTag` if it
 * contains `?q?`/`?Q?`, else `base64Tag` if it contains `?b?`/`?B?`. A plain substring test over
 * the whole value, as Stalwart's: the encoded words themselves are not parsed.
 */
export function checkExcessEncoding(
  ctx: AnalysisContext,
  h: RawHeader,
  asciiDecoded: boolean,
  qpTag: string,
  base64Tag: string,
): void {
  if (!asciiDecoded) return;
  const text = rawValueText(ctx.message, h);
  if (!text.includes('=?') || !text.includes('?=')) return;
  if (text.includes('?q?') || text.includes('?Q?')) ctx.tag(qpTag);
  else if (text.includes('?b?') || text.includes('?B?')) ctx.tag(base64Tag);
}
