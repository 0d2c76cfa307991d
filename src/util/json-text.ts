/**
 * JSON files that operators write (rule bundles, scores, the serve config, DNS zones, suites, batches):
 * parsed as `JSON.parse` does, with two differences that matter to a person reading the error.
 *
 * - A leading byte order mark (U+FEFF, which Windows editors write) is skipped, as RFC 8259 §8.1 lets
 *   a parser do; `JSON.parse` refuses it with `Unexpected token '﻿'`.
 * - A syntax error says where, on one line: `line 3, column 9: unexpected token 'x'`. V8 says
 *   `… in JSON at position 812` for some errors and, for an unexpected token, quotes the text around it
 *   instead (`Unexpected token 'T', "T1 = 2\n" is not valid JSON`), line breaks and all, so that the
 *   CLI's one-line error became several lines that did not say where.
 */

const BOM = '\ufeff';

/**
 * `JSON.parse(text)` after a leading byte order mark.
 * @throws SyntaxError whose message is {@link jsonErrorWhere}'s one-line description.
 */
export function parseJsonText(text: string): unknown {
  const body = text.startsWith(BOM) ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw new SyntaxError(jsonErrorWhere(e.message, body));
  }
}

/**
 * `JSON.parse`'s message `message` for `text` as `line L, column C: reason` (1-based; columns count
 * UTF-16 code units), without the quoted text and never over one line.
 */
export function jsonErrorWhere(message: string, text: string): string {
  const offset = errorOffset(message, text);
  let reason = message
    .replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '')
    .replace(/(?: in JSON)? at position \d+.*$/s, '')
    .replace(/^Unexpected end of JSON input$/, 'unexpected end of input')
    .replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase());
  // A token V8 names as it is (a control character, a lone surrogate) is shown as its code point.
  reason = reason.replace(/[^\x20-\x7e\u00a0-\ud7ff\ue000-\ufefe\uff00-\ufffc]/gu, (c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - (before.lastIndexOf('\n') + 1) + 1;
  return `line ${line}, column ${column}: ${reason}`;
}

/** Where in `text` the error `message` is: V8's position when it gives one, else found by parsing prefixes. */
function errorOffset(message: string, text: string): number {
  const at = / at position (\d+)/.exec(message);
  if (at) return Math.min(Number(at[1]), text.length);
  if (/^Unexpected end of JSON input/.test(message)) return text.length;
  // The shortest prefix that fails for a reason other than ending early ends just after the bad
  // character: a binary search over prefixes (log2(n) parses, on the error path only).
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (failsBeforeItsEnd(text.slice(0, mid + 1))) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** True when `prefix` does not parse, and not only because it stops early (a complete text would go on). */
function failsBeforeItsEnd(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return false;
  } catch (e) {
    const m = (e as Error).message;
    if (/^Unexpected end of JSON input/.test(m)) return false;
    const at = / at position (\d+)/.exec(m);
    return at === null || Number(at[1]) < prefix.length;
  }
}
