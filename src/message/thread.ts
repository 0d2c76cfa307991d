/**
 * A subject's thread name as mail-parser's `thread_name()` computes it (the Rust MIME parser Stalwart
 * uses; `subject.thread`, SUBJ_ALL_CAPS): reply/forward prefixes in many languages (`Re:`, `AW:`,
 * `Fwd[3]:`, `回复:`) and `[list]` tags before them are removed, `[Fwd: …]` wrappers are unwrapped, and
 * trailing `(fwd)` markers and white space are trimmed.
 */

const RE_PREFIXES = new Set([
  're', 'res', 'sv', 'antw', 'ref', 'aw', 'απ', 'השב', 'vá', 'r', 'rif', 'bls', 'odp', 'ynt', 'atb', 'رد', '回复', '转发',
]);

const FWD_PREFIXES = new Set([
  'fwd', 'fw', 'rv', 'enc', 'vs', 'doorst', 'vl', 'tr', 'wg', 'πρθ', 'הועבר', 'továbbítás', 'i', 'fs', 'trs', 'vb', 'pd',
  'i̇lt', 'yml', 'إعادة توجيه', '回覆', '轉寄',
]);

const WHITE_SPACE_RE = /^\p{White_Space}$/u;

/** Is UTF-16 code unit `c` (never part of a surrogate pair) Unicode White_Space? */
function isWhiteSpaceCode(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return WHITE_SPACE_RE.test(String.fromCharCode(c));
}

/** A high surrogate followed by a low one at `i` (one character of two code units)? */
function isPair(text: string, i: number, c: number): boolean {
  if (c < 0xd800 || c > 0xdbff) return false;
  const d = text.charCodeAt(i + 1);
  return d >= 0xdc00 && d <= 0xdfff;
}

/** Subjects are scanned on at most this many UTF-16 code units. */
const MAX_THREAD_CHARS = 4096;

/** mail-parser's `thread_name`: the subject without reply/forward prefixes, list tags and `(fwd)` trailers. */
export function threadName(subject: string): string {
  const text = subject.length > MAX_THREAD_CHARS ? subject.slice(0, MAX_THREAD_CHARS) : subject;
  // Positions are UTF-16 indices (for slicing); the prefix length limit is in UTF-8 bytes, as in Rust.
  // The prefix before a `[` or `:` (mail-parser's token, ended at its first blank) is cut inline:
  // a closure here would be created on every call.
  let tokenStart = 0;
  let tokenStartByte = 0;
  let tokenEnd = -1; // -1: not set (Rust's 0 sentinel)
  let threadNameStart = 0;
  let fwdStart = 0;
  let fwdEnd = 0;
  let lastBlobEnd = 0;
  let inBlob = false;
  let inBlobIgnore = false;
  let seenHeader = false;
  let seenBlobHeader = false;
  let tokenFound = false;

  // Code units, not a string iterator: a character is one unit, or two for a surrogate pair (4
  // UTF-8 bytes; a lone surrogate counts 3, as its code point would). Most subjects are ASCII.
  let pos = 0;
  let bpos = 0;
  const n = text.length;
  scan: while (pos < n) {
    const here = pos;
    const hereByte = bpos;
    const c = text.charCodeAt(pos);
    if (isPair(text, pos, c)) {
      pos += 2;
      bpos += 4;
    } else {
      pos++;
      bpos += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    }
    switch (c) {
      case 91: // [
        if (inBlob) break scan;
        if (tokenFound) {
          if (tokenEnd < 0) tokenEnd = here;
          const p = text.slice(tokenStart, tokenEnd).toLowerCase();
          if (RE_PREFIXES.has(p) || FWD_PREFIXES.has(p)) seenHeader = true;
          else break scan;
        }
        tokenFound = false;
        inBlob = true;
        continue;
      case 93: // ]
        if (!inBlob) break;
        if (seenBlobHeader && tokenFound) {
          fwdStart = tokenStart;
          fwdEnd = here;
        }
        if (!seenHeader) lastBlobEnd = here + 1;
        inBlob = false;
        tokenFound = false;
        seenBlobHeader = false;
        inBlobIgnore = false;
        continue;
      case 58: // :
        if (!inBlob) {
          if ((seenHeader && tokenFound) || (!seenHeader && !tokenFound)) break scan;
          if (!seenHeader) {
            if (tokenEnd < 0) tokenEnd = here;
            const p = text.slice(tokenStart, tokenEnd).toLowerCase();
            if (!RE_PREFIXES.has(p) && !FWD_PREFIXES.has(p)) break scan;
          } else {
            seenHeader = false;
          }
          threadNameStart = here + 1;
          tokenFound = false;
          continue;
        }
        if (!inBlobIgnore) {
          if (tokenEnd < 0) tokenEnd = here;
          const p = text.slice(tokenStart, tokenEnd).toLowerCase();
          if (FWD_PREFIXES.has(p)) {
            tokenFound = false;
            seenBlobHeader = true;
          } else if (seenBlobHeader && RE_PREFIXES.has(p)) {
            tokenFound = false;
          } else {
            inBlobIgnore = true;
          }
          continue;
        }
        break;
    }
    if (pos - here === 1 && isWhiteSpaceCode(c)) {
      if (tokenEnd < 0) tokenEnd = here;
    } else if (!tokenFound) {
      tokenStart = here;
      tokenStartByte = hereByte;
      tokenEnd = -1;
      tokenFound = true;
    } else if (!inBlob && hereByte - tokenStartByte > 21) {
      break;
    }
  }

  if (lastBlobEnd > threadNameStart || (fwdStart > 0 && lastBlobEnd > fwdStart && fwdStart > threadNameStart)) {
    const r = trimTrailingFwd(text.slice(lastBlobEnd));
    if (r !== '') return r;
  }
  if (fwdStart > 0 && threadNameStart < fwdStart) {
    const r = trimTrailingFwd(text.slice(fwdStart, fwdEnd));
    if (r !== '') return r;
  }
  return trimTrailingFwd(text.slice(threadNameStart));
}

/** mail-parser's `trim_trailing_fwd`: trailing `(fwd)`-style markers and surrounding white space removed. */
export function trimTrailingFwd(text: string): string {
  let inParens = false;
  let trimEnd = true;
  let endFound = false;
  let textStart = 0;
  let textEnd = text.length;
  let fwdEnd = 0;
  // Backwards over code units: the two units of a surrogate pair are both "other" characters,
  // and handling one after the other leaves the state one character would (textStart at the pair).
  for (let pos = text.length - 1; pos >= 0; pos--) {
    const c = text.charCodeAt(pos);
    if (c === 40 /* ( */ && !endFound) {
      if (inParens) {
        inParens = false;
        if (fwdEnd - pos > 2 && FWD_PREFIXES.has(text.slice(pos + 1, fwdEnd).toLowerCase())) {
          textEnd = pos;
          trimEnd = true;
          continue;
        }
      }
      endFound = true;
    } else if (c === 41 /* ) */ && !endFound) {
      if (!inParens) {
        inParens = true;
        fwdEnd = pos;
      } else {
        endFound = true;
      }
    } else if (isWhiteSpaceCode(c)) {
      if (trimEnd) textEnd = pos;
      continue;
    } else if (!inParens && !endFound) {
      endFound = true;
    }
    if (trimEnd) trimEnd = false;
    textStart = pos;
  }
  return textEnd >= textStart ? text.slice(textStart, textEnd) : '';
}
