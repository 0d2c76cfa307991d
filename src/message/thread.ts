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

function isWhiteSpace(ch: string): boolean {
  const c = ch.charCodeAt(0);
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return WHITE_SPACE_RE.test(ch);
}

function utf8Len(ch: string): number {
  const c = ch.codePointAt(0)!;
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

/** Subjects are scanned on at most this many UTF-16 code units. */
const MAX_THREAD_CHARS = 4096;

/** mail-parser's `thread_name`: the subject without reply/forward prefixes, list tags and `(fwd)` trailers. */
export function threadName(subject: string): string {
  const text = subject.length > MAX_THREAD_CHARS ? subject.slice(0, MAX_THREAD_CHARS) : subject;
  // Positions are UTF-16 indices (for slicing); the prefix length limit is in UTF-8 bytes, as in Rust.
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
  const prefix = (pos: number): string => {
    if (tokenEnd < 0) tokenEnd = pos;
    return text.slice(tokenStart, tokenEnd).toLowerCase();
  };

  let pos = 0;
  let bpos = 0;
  scan: for (const ch of text) {
    const here = pos;
    const hereByte = bpos;
    pos += ch.length;
    bpos += utf8Len(ch);
    switch (ch) {
      case '[':
        if (inBlob) break scan;
        if (tokenFound) {
          const p = prefix(here);
          if (RE_PREFIXES.has(p) || FWD_PREFIXES.has(p)) seenHeader = true;
          else break scan;
        }
        tokenFound = false;
        inBlob = true;
        continue;
      case ']':
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
      case ':':
        if (!inBlob) {
          if ((seenHeader && tokenFound) || (!seenHeader && !tokenFound)) break scan;
          if (!seenHeader) {
            const p = prefix(here);
            if (!RE_PREFIXES.has(p) && !FWD_PREFIXES.has(p)) break scan;
          } else {
            seenHeader = false;
          }
          threadNameStart = here + 1;
          tokenFound = false;
          continue;
        }
        if (!inBlobIgnore) {
          const p = prefix(here);
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
    if (isWhiteSpace(ch)) {
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
  const chars = Array.from(text);
  let pos = text.length;
  for (let k = chars.length - 1; k >= 0; k--) {
    const ch = chars[k]!;
    pos -= ch.length;
    if (ch === '(' && !endFound) {
      if (inParens) {
        inParens = false;
        if (fwdEnd - pos > 2 && FWD_PREFIXES.has(text.slice(pos + 1, fwdEnd).toLowerCase())) {
          textEnd = pos;
          trimEnd = true;
          continue;
        }
      }
      endFound = true;
    } else if (ch === ')' && !endFound) {
      if (!inParens) {
        inParens = true;
        fwdEnd = pos;
      } else {
        endFound = true;
      }
    } else if (isWhiteSpace(ch)) {
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
