/**
 * What may be a tag. Stalwart takes any string a rule returns; spamrule refuses the strings that would
 * break the verdict's header lines, because tags end up in `X-Spam-Result` (and spamd's `X-Spam-Status`,
 * rspamd's symbols, milter header changes): a CR or LF in a tag would start a header of the sender's
 * choosing, or end the header block, whenever a rule builds a tag from message text
 * (`'ORDER_' + subject`). A difference from Stalwart: README, "Compatibility", A21.
 */

/** Longest tag accepted (characters). Stalwart's longest published tag has 30. */
export const MAX_TAG_LENGTH = 256;

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
const UNSAFE = /[\p{Cc}\u2028\u2029]/u;

/**
 * Why `tag` cannot be a tag, or `undefined` when it can: more than {@link MAX_TAG_LENGTH} characters, or a
 * control character (CR, LF, TAB, NUL, …) or line separator. The empty string is left to the caller (a rule
 * that returns `''` sets nothing, without an error). Never throws.
 */
export function tagNameProblem(tag: string): string | undefined {
  if (tag.length > MAX_TAG_LENGTH) return `it has ${tag.length} characters (at most ${MAX_TAG_LENGTH})`;
  const m = UNSAFE.exec(tag);
  if (m !== null) return `it holds the control character U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at ${m.index}`;
  return undefined;
}

/** `tag` shortened for a message: at most 40 characters, JSON-quoted (so control characters show as escapes). */
export function quoteTag(tag: string): string {
  return JSON.stringify(tag.length > 40 ? tag.slice(0, 40) + '…' : tag);
}
