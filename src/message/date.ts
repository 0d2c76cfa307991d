/**
 * mail-parser's lenient RFC 5322 date parser (its `parse_date` behaviour), which Stalwart's date
 * analysis relies on: it accepts what most mailers write (no weekday, two-digit years, comments,
 * folding) and reads numbers by position rather than validating the grammar, so its quirks decide
 * which dates count as "invalid". The Header scope's `value` of a Date header is this parse too
 * (`dateToRfc3339`, headers.ts), as mail-parser's header value is.
 */

/** A parsed date-time as mail-parser holds it (fields unvalidated: month 0 or day 99 can occur). */
export interface MailDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  tzHour: number;
  tzMinute: number;
  /** The zone is west of Greenwich (a `-` was seen). */
  tzBeforeGmt: boolean;
}

/** Letter weights for the month-name hash (second and third letters), indexed by `code - 97`. */
const MONTH_HASH: readonly number[] = [
  0, 14, 4, 31, 10, 31, 14, 31, 31, 31, 31, 4, 31, 10, 15, 15, 31, 5, 31, 0, 5, 15, 31, 31, 0, 31,
];
/** Month number per hash value (0 = not a month name). */
const MONTH_MAP: readonly number[] = [
  5, 0, 0, 0, 10, 3, 0, 0, 0, 7, 1, 0, 0, 0, 12, 6, 0, 0, 0, 8, 4, 0, 0, 0, 2, 9, 0, 0, 0, 0, 11,
];
/** Digits each field takes: day, month, year, hour, minute, second, zone. */
const PART_SIZES: readonly number[] = [2, 2, 4, 2, 2, 2, 4];

/** At most this many characters of a Date value are read (real dates are ~40). */
export const MAX_DATE_CHARS = 4096;

/**
 * Parses a Date header value (the text after the colon, folding included). Returns undefined when
 * fewer than six fields (through the seconds, plus a following separator or zone) were read, e.g.
 * `blah blah blah` or a date with no zone and nothing after the seconds. Never throws.
 */
export function parseMailDate(raw: string): MailDateTime | undefined {
  const n = Math.min(raw.length, MAX_DATE_CHARS);
  let pos = 0;
  let parts = [0, 0, 0, 0, 0, 0, 0];
  let sizes = PART_SIZES.slice();
  let monthHash = 0;
  let monthPos = 0;
  let isPlus = true;
  let isNewToken = true;
  let ignore = true;
  let comments = 0;

  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i);
    let nextPart = false;
    if (c === 10 /* \n */) {
      const nx = raw.charCodeAt(i + 1);
      if (nx !== 32 && nx !== 9) break; // end of the header
      i++; // the folding blank is consumed with the line break
      if (isNewToken || ignore || comments > 0) continue;
      nextPart = true;
    } else if (comments > 0) {
      if (c === 41 /* ) */) comments--;
      else if (c === 40 /* ( */) comments++;
      else if (c === 92 /* \ */ && raw.charCodeAt(i + 1) === 41) i++;
      continue;
    } else if (c >= 48 && c <= 57) {
      if (pos < 7 && sizes[pos]! > 0) {
        sizes[pos]!--;
        parts[pos]! += (c - 48) * 10 ** sizes[pos]!;
        ignore = false;
      }
      isNewToken = false;
    } else if (c === 58 /* : */) {
      if (!isNewToken && !ignore && (pos === 3 || pos === 4)) nextPart = true;
    } else if (c === 43 /* + */) {
      pos = 6;
    } else if (c === 45 /* - */) {
      isPlus = false;
      pos = 6;
    } else if (c === 32 || c === 9) {
      if (!isNewToken && !ignore) nextPart = true;
    } else if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) {
      if (pos === 1) {
        if (monthPos === 1 || monthPos === 2) monthHash += MONTH_HASH[(c | 32) - 97]!;
        monthPos++;
      }
      isNewToken = false;
    } else if (c === 40 /* ( */) {
      comments++;
      isNewToken = true;
      continue;
    } else if (c === 59 /* ; */) {
      // A Received header's date follows its `;`: start over.
      pos = 0;
      parts = [0, 0, 0, 0, 0, 0, 0];
      sizes = PART_SIZES.slice();
      monthHash = 0;
      monthPos = 0;
      isPlus = true;
      isNewToken = true;
      ignore = true;
      continue;
    }
    if (nextPart) {
      if (pos < 7 && sizes[pos]! > 0) parts[pos] = Math.trunc(parts[pos]! / 10 ** sizes[pos]!);
      pos++;
      isNewToken = true;
    }
  }
  if (pos < 6) return undefined;
  const y = parts[2]!;
  return {
    year: y <= 49 ? y + 2000 : y <= 99 ? y + 1900 : y,
    month: monthPos === 3 && monthHash <= 30 ? MONTH_MAP[monthHash]! : parts[1]!,
    day: parts[0]!,
    hour: parts[3]!,
    minute: parts[4]!,
    second: parts[5]!,
    tzHour: Math.trunc(parts[6]! / 100),
    tzMinute: parts[6]! % 100,
    tzBeforeGmt: !isPlus,
  };
}

/**
 * Seconds since the Unix epoch, the zone offset applied, computed as mail-parser does for any field
 * values (out-of-range months and days roll over instead of failing).
 */
export function mailDateTimestamp(d: MailDateTime): number {
  // Days from civil, March-based months (as mail-parser's `to_timestamp_local`).
  const month = d.month;
  const carry = month < 3 ? 1 : 0;
  const mAdj = carry === 1 ? month + 9 : month - 3;
  const yAdj = d.year + 4800 - carry;
  const monthDays = Math.trunc((mAdj * 62719 + 769) / 2048);
  const leapDays = Math.trunc(yAdj / 4) - Math.trunc(yAdj / 100) + Math.trunc(yAdj / 400);
  const local = (yAdj * 365 + leapDays + monthDays + (d.day - 1) - 2472632) * 86400 + d.hour * 3600 + d.minute * 60 + d.second;
  return local + (d.tzHour * 3600 + d.tzMinute * 60) * (d.tzBeforeGmt ? 1 : -1);
}
