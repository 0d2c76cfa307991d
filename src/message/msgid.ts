/**
 * mail-parser's message-id parser (its `parse_id` behaviour) for `Message-ID`, `References` and
 * `In-Reply-To`: the contents of every `<…>` pair, or, with no pair, the text outside brackets.
 */

/** Characters of one id header that are read (References of long threads stay far below). */
export const MAX_ID_CHARS = 65_536;

/**
 * The ids of a header value (the text after the colon, folding included), in order: the contents
 * of each `<…>` pair without the blanks at its edges. With no pair, the text from the first to the
 * last non-blank character (a bare `hello@domain.com`) is the one id. `[]` for an empty value, and
 * for a value that does not end with a line break (mail-parser stops only at the end of the line).
 */
export function parseMessageIds(raw: string): string[] {
  const n = Math.min(raw.length, MAX_ID_CHARS);
  const ids: string[] = [];
  let start = -1;
  let end = -1;
  let badStart = -1;
  let badEnd = -1;
  let inId = false;
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i);
    if (c === 10) {
      const nx = raw.charCodeAt(i + 1);
      if (nx === 32 || nx === 9) {
        i++;
        continue;
      }
      return result(raw, ids, badStart, badEnd);
    }
    if (c === 60 /* < */) {
      inId = true;
      continue;
    }
    if (c === 62 /* > */) {
      inId = false;
      if (start < 0) continue;
      ids.push(raw.slice(start, end + 1));
      start = -1;
      // mail-parser then counts the `>` as text outside brackets (only used when no id was found).
    } else if (c === 32 || c === 9 || c === 13) {
      continue;
    }
    if (inId) {
      if (start < 0) start = i;
      end = i;
    } else {
      if (badStart < 0) badStart = i;
      badEnd = i;
    }
  }
  // A value cut at the cap ends there as if its line ended.
  return n < raw.length ? result(raw, ids, badStart, badEnd) : [];
}

function result(raw: string, ids: string[], badStart: number, badEnd: number): string[] {
  if (ids.length > 0) return ids;
  return badStart >= 0 ? [raw.slice(badStart, badEnd + 1)] : [];
}

/** The header's value as text, as mail-parser's `as_text`: the id when there is one, else the last id; "" for none. */
export function messageIdText(raw: string): string {
  const ids = parseMessageIds(raw);
  return ids.length === 0 ? '' : ids[ids.length - 1]!;
}
