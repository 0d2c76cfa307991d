/**
 * subject module: the Subject header (RFC 5322 §3.6.5, RFC 2047 encoded words) as Stalwart's subject
 * analysis judges it: presence, shape, recipients named in it, and its raw encoding.
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { mail, runOne } from './module-harness.js';

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('subject', mail(headers), session)).tags;
}

const FROM = 'From: Alice <alice@example.org>';

describe('subject module', () => {
  it('tags MISSING_SUBJECT and nothing else without a Subject header', async () => {
    expect(await tags([FROM, 'X-Subject: hello'])).toEqual(['MISSING_SUBJECT']);
  });

  it('says nothing about an ordinary subject', async () => {
    expect(await tags([FROM, 'Subject: Minutes of the Tuesday meeting'])).toEqual([]);
  });

  it('tags EMPTY_SUBJECT, SUBJECT_ENDS_SPACES and GTUBE_TEST (first match)', async () => {
    expect(await tags([FROM, 'Subject: '])).toEqual(['EMPTY_SUBJECT']);
    expect(await tags([FROM, 'Subject:    '])).toEqual(['EMPTY_SUBJECT']);
    // Plain trailing blanks are trimmed by the parser; a blank from an encoded word stays.
    expect(await tags([FROM, 'Subject: hello   '])).toEqual([]);
    expect(await tags([FROM, 'Subject: =?utf-8?Q?Gr=C3=BC=C3=9Fe_?='])).toEqual(['SUBJECT_ENDS_SPACES']);
    expect(await tags([FROM, 'Subject: XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X'])).toEqual(['GTUBE_TEST']);
  });

  it('tags SUBJ_ALL_CAPS for two or more words of capitals only, ignoring a reply prefix', async () => {
    expect(await tags([FROM, 'Subject: HELLO WORLD'])).toEqual(['SUBJ_ALL_CAPS']);
    expect(await tags([FROM, 'Subject: Re: BIG NEWS 2026'])).toEqual(['SUBJ_ALL_CAPS']);
    expect(await tags([FROM, 'Subject: HELLOWORLD'])).toEqual([]); // one word
    expect(await tags([FROM, 'Subject: HI YO'])).toEqual([]); // shorter than 10 bytes
    expect(await tags([FROM, 'Subject: HELLO World'])).toEqual([]);
    expect(await tags([FROM, 'Subject: =?utf-8?Q?GR=C3=9CSSE_AUS_K=C3=96LN?='])).toEqual(['SUBJ_ALL_CAPS']);
    // Caseless letters count as lower case.
    expect(await tags([FROM, 'Subject: =?utf-8?B?SEVMTE8g5pel5pys6Kqe?='])).toEqual([]);
  });

  it('tags SUBJECT_HAS_CURRENCY for $ € £ ¥ ₹ ₽ ₿', async () => {
    expect(await tags([FROM, 'Subject: Win $1000 today'])).toEqual(['SUBJECT_HAS_CURRENCY']);
    expect(await tags([FROM, 'Subject: =?utf-8?Q?Only_9=E2=82=AC?='])).toEqual(['SUBJECT_HAS_CURRENCY']);
  });

  it('reads encoded words with the body charset table: € in a windows-1252 or iso-8859-1 word makes SUBJECT_HAS_CURRENCY', async () => {
    expect(await tags([FROM, 'Subject: =?windows-1252?Q?=93Only=94_9=80?='])).toEqual(['SUBJECT_HAS_CURRENCY']);
    // mail-parser 0.11.5+ reads iso-8859-1 as windows-1252, so 0x80 is € there too.
    expect(await tags([FROM, 'Subject: =?iso-8859-1?B?NYAgb2Zm?='])).toEqual(['SUBJECT_HAS_CURRENCY']);
    expect(await tags([FROM, 'Subject: =?iso-8859-15?Q?5=A4_off?='])).toEqual(['SUBJECT_HAS_CURRENCY']);
    expect(await tags([FROM, 'Subject: =?iso-8859-7?Q?5=A4_off?='])).toEqual([]); // the 1987 table has no €
  });

  it('tags URL_IN_SUBJECT for a URL with a scheme, and RCPT_DOMAIN_IN_SUBJECT for a recipient domain', async () => {
    expect(await tags([FROM, 'Subject: see https://example.net/offer'])).toEqual(['URL_IN_SUBJECT']);
    expect(await tags([FROM, 'To: bob@example.net', 'Subject: see https://www.example.net/offer'])).toEqual([
      'RCPT_DOMAIN_IN_SUBJECT',
      'URL_IN_SUBJECT',
    ]);
    // A host without a scheme only counts when it is a recipient's domain.
    expect(await tags([FROM, 'To: bob@example.net', 'Subject: news for example.net'])).toEqual(['RCPT_DOMAIN_IN_SUBJECT']);
    expect(await tags([FROM, 'To: bob@example.net', 'Subject: news for example.com'])).toEqual([]);
  });

  it('tags RCPT_IN_SUBJECT for a header or envelope recipient, else RCPT_DOMAIN_IN_SUBJECT for its domain', async () => {
    expect(await tags([FROM, 'To: bob@example.net', 'Subject: offers for BOB@example.net'])).toEqual(['RCPT_IN_SUBJECT']);
    expect(await tags([FROM, 'Subject: offers for carol@example.net'], { rcptTo: ['carol@example.net'] })).toEqual(['RCPT_IN_SUBJECT']);
    expect(await tags([FROM, 'Cc: bob@example.net', 'Subject: ask dave@mail.example.net'])).toEqual(['RCPT_DOMAIN_IN_SUBJECT']);
  });

  it('checks the raw bytes of the first Subject header for 8-bit text', async () => {
    expect(await tags([FROM, 'Subject: caf\u00e9 ouvert'])).toEqual(['SUBJECT_NEEDS_ENCODING']);
    expect(await tags([FROM, 'Subject: caf\u00e9 ouvert'], { eightBitMime: true })).toEqual([]);
    expect(await tags([FROM, 'Subject: caf\u00e9 ouvert'], { smtputf8: true })).toEqual([]);
    expect(await tags([FROM, 'Subject: plain', 'Subject: caf\u00e9'])).toEqual([]);
    const latin1 = Buffer.concat([Buffer.from(`${FROM}\r\nSubject: caf`), Buffer.from([0xe9]), Buffer.from('\r\n\r\nHello.\r\n')]);
    expect((await runOne('subject', new Uint8Array(latin1))).tags).toEqual(['INVALID_SUBJECT_8BIT', 'SUBJECT_NEEDS_ENCODING']);
    expect((await runOne('subject', new Uint8Array(latin1), { binaryMime: true })).tags).toEqual(['INVALID_SUBJECT_8BIT']);
  });

  it('tags SUBJ_EXCESS_QP / SUBJ_EXCESS_BASE64 when the encoded words hold plain ASCII only', async () => {
    expect(await tags([FROM, 'Subject: =?us-ascii?Q?Hello_there?='])).toEqual(['SUBJ_EXCESS_QP']);
    expect(await tags([FROM, 'Subject: =?utf-8?B?SGVsbG8gdGhlcmU=?='])).toEqual(['SUBJ_EXCESS_BASE64']);
    expect(await tags([FROM, 'Subject: =?utf-8?Q?Gr=C3=BC=C3=9Fe?='])).toEqual([]);
  });

  it('never throws on hostile input', async () => {
    const out = await runOne('subject', mail([FROM, 'Subject: ' + 'A@b.co '.repeat(20_000) + '=?x'.repeat(5000)]));
    expect(out.errors).toEqual([]);
  });
});
