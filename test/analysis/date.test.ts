/**
 * date module: the last Date header (RFC 5322 §3.3), read by mail-parser's lenient parser, against
 * the session clock (Stalwart's date analysis).
 */
import { describe, expect, it } from 'vitest';
import { mailDateTimestamp, parseMailDate } from '../../src/message/date.js';
import { mail, runOne } from './module-harness.js';

const NOW = Date.parse('2026-11-23T12:00:00Z');

async function tags(headers: string[], now: number = NOW): Promise<string[]> {
  return (await runOne('date', mail(['From: a@example.org', ...headers]), { now })).tags;
}

function ts(value: string): number | undefined {
  const d = parseMailDate(value);
  return d === undefined ? undefined : mailDateTimestamp(d);
}

describe('date module', () => {
  it('tags MISSING_DATE and INVALID_DATE', async () => {
    expect(await tags([])).toEqual(['MISSING_DATE']);
    expect(await tags(['X-Date: Mon, 23 Nov 2026 12:00:00 +0000'])).toEqual(['MISSING_DATE']);
    expect(await tags(['Date: sometime last week'])).toEqual(['INVALID_DATE']);
    expect(await tags(['Date:'])).toEqual(['INVALID_DATE']);
    expect(await tags(['Date: Thu, 1 Jan 1970 00:00:00 +0000'])).toEqual(['INVALID_DATE']); // timestamp 0
  });

  it('accepts dates within a day before and two hours after the clock', async () => {
    expect(await tags(['Date: Mon, 23 Nov 2026 12:00:00 +0000'])).toEqual([]);
    expect(await tags(['Date: Sun, 22 Nov 2026 12:00:00 +0000'])).toEqual([]); // exactly one day old
    expect(await tags(['Date: Mon, 23 Nov 2026 14:00:00 +0000'])).toEqual([]); // exactly two hours ahead
  });

  it('tags DATE_IN_PAST and DATE_IN_FUTURE, zone offsets applied', async () => {
    expect(await tags(['Date: Sun, 22 Nov 2026 11:59:59 +0000'])).toEqual(['DATE_IN_PAST']);
    expect(await tags(['Date: Mon, 23 Nov 2026 14:00:01 +0000'])).toEqual(['DATE_IN_FUTURE']);
    expect(await tags(['Date: Mon, 23 Nov 2026 15:00:00 +0200'])).toEqual([]); // 13:00 UTC
    expect(await tags(['Date: Mon, 23 Nov 2026 09:30:00 -0500'])).toEqual(['DATE_IN_FUTURE']); // 14:30 UTC
    expect(await tags(['Date: Tue, 1 Jul 2003 10:52:37 +0200'])).toEqual(['DATE_IN_PAST']);
  });

  it('reads the last Date header', async () => {
    expect(await tags(['Date: Tue, 1 Jul 2003 10:52:37 +0200', 'Date: Mon, 23 Nov 2026 12:00:00 +0000'])).toEqual([]);
  });

  it('takes its clock from the session, in milliseconds', async () => {
    expect(await tags(['Date: Tue, 1 Jul 2003 10:52:37 +0200'], Date.parse('2003-07-01T09:00:00Z'))).toEqual([]);
  });
});

describe('parseMailDate (mail-parser reading)', () => {
  it('reads common forms', () => {
    expect(ts('Mon, 23 Nov 2026 12:00:00 +0000\r\n')).toBe(NOW / 1000);
    expect(ts(' 23 Nov 2026 12:00:00 +0000\r\n')).toBe(NOW / 1000); // no weekday
    expect(ts(' Mon, 23 Nov 26 14:00:00 +0200\r\n')).toBe(NOW / 1000); // two-digit year: 00-49 → 20xx
    expect(ts(' 23 Nov 2026 12:00:00 GMT\r\n')).toBe(NOW / 1000);
    expect(ts(' Mon, 23 Nov 2026 (a comment) 06:30:00 -0530\r\n')).toBe(NOW / 1000);
    expect(ts(' Mon,\r\n 23 Nov\r\n 2026 12:00:00 +0000\r\n')).toBe(NOW / 1000); // folded
    expect(ts(' Wed, 27 Jun 99 04:11 +0900 \r\n')).toBe(Date.parse('1999-06-26T19:11:00Z') / 1000); // no seconds
  });

  it('needs six fields and something after the seconds', () => {
    expect(parseMailDate(' blah blah blah\r\n')).toBeUndefined();
    expect(parseMailDate(' 23 Nov 2026\r\n')).toBeUndefined();
    expect(parseMailDate(' Mon, 23 Nov 2026 12:00:00\r\n')).toBeUndefined();
  });

  it('keeps unknown month names as month 0, as mail-parser does', () => {
    expect(parseMailDate(' 13 Zzz 2021 09:55:06 +0200\r\n')?.month).toBe(0);
    expect(parseMailDate(' 13 July 2021 09:55:06 +0200\r\n')?.month).toBe(0);
    expect(parseMailDate(' 13 jul 2021 09:55:06 +0200\r\n')?.month).toBe(7);
  });

  it('reads huge values in bounded time', () => {
    const t0 = performance.now();
    parseMailDate(' ' + '((((1 2 3 '.repeat(200_000) + '\r\n');
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
