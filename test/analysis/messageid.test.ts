/**
 * messageid module: the first Message-ID header (RFC 5322 §3.6.4) as mail-parser reads it, its
 * right-hand side and what it reveals about sender and recipients (Stalwart's message_id analysis).
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { messageIdText, parseMessageIds } from '../../src/message/msgid.js';
import { mail, runOne } from './module-harness.js';

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('messageid', mail(headers), session)).tags;
}

const MID = (v: string): string => `Message-ID: ${v}`;

describe('messageid module', () => {
  it('tags MISSING_MID without a header or without an id in it', async () => {
    expect(await tags(['From: a@example.org', 'X-Message-ID: <1@example.org>'])).toEqual(['MISSING_MID']);
    expect(await tags(['From: a@example.org', 'Message-ID:'])).toEqual(['MISSING_MID']);
    expect(await tags(['From: a@example.org', 'Message-ID: <>'])).toEqual(['MISSING_MID']);
  });

  it('says nothing about a well-formed id on an unrelated host', async () => {
    expect(await tags(['From: a@example.org', MID('<20261123.1@mailer.example.net>')])).toEqual([]);
  });

  it('judges the host after the last @', async () => {
    expect(await tags([MID('<a@[192.0.2.1]>')])).toEqual(['MID_RHS_IP_LITERAL']);
    expect(await tags([MID('<a@192.0.2.1>')])).toEqual(['MID_BARE_IP']);
    expect(await tags([MID('<a@localhost>')])).toEqual(['MID_RHS_NOT_FQDN']);
    expect(await tags([MID('<a@WWW.example.com>')])).toEqual(['MID_RHS_WWW']);
    expect(await tags([MID('<a@b@mailer.example.net>')])).toEqual([]);
    expect(await tags([MID(`<a@${'x'.repeat(250)}.example.net>`)])).toEqual(['MID_RHS_TOO_LONG']);
  });

  it('tags INVALID_MSGID for no @, a non-ASCII or commented raw value, or an empty left side', async () => {
    expect(await tags([MID('<20261123.1>')])).toEqual(['INVALID_MSGID']);
    expect(await tags([MID('<caf\u00e9@mailer.example.net>')])).toEqual(['INVALID_MSGID']);
    expect(await tags([MID('<1@mailer.example.net> (generated)')])).toEqual(['INVALID_MSGID']);
    expect(await tags([MID('<@mailer.example.net>')])).toEqual(['INVALID_MSGID']);
  });

  it('tags MID_MISSING_BRACKETS', async () => {
    expect(await tags([MID('1@mailer.example.net')])).toEqual(['MID_MISSING_BRACKETS']);
    expect(await tags([MID('1@mailer.example.net>')])).toEqual(['MID_MISSING_BRACKETS']);
    // An unclosed `<` swallows the id: mail-parser finds none.
    expect(await tags([MID('<1@mailer.example.net')])).toEqual(['MISSING_MID']);
    expect(await tags([MID('nobrackets')])).toEqual(['INVALID_MSGID', 'MID_MISSING_BRACKETS']);
  });

  it('reads only the first Message-ID header', async () => {
    expect(await tags([MID('<1@mailer.example.net>'), MID('<2@localhost>')])).toEqual([]);
  });

  it('compares with the From address, then the envelope sender (first match of each)', async () => {
    expect(await tags(['From: <Alice@Example.org>', MID('<alice@example.org>')])).toEqual(['MID_CONTAINS_FROM']);
    expect(await tags(['From: <alice@example.org>', MID('<123@EXAMPLE.org>')])).toEqual(['MID_RHS_MATCH_FROM']);
    expect(await tags(['From: <alice@example.org>', MID('<123@mail.example.org>')])).toEqual(['MID_RHS_MATCH_FROMTLD']);
    expect(await tags([MID('<x.1@example.co.uk>')], { mailFrom: 'bounce@example.co.uk' })).toEqual(['MID_RHS_MATCH_ENV_FROM']);
    expect(await tags([MID('<1@out.example.co.uk>')], { mailFrom: 'bounce@example.co.uk' })).toEqual(['MID_RHS_MATCH_ENV_FROMTLD']);
    expect(await tags(['From: <alice@example.org>', MID('<1.alice@example.org.x@example.org>')], { mailFrom: 'alice@example.org' }))
      .toEqual(['MID_CONTAINS_ENV_FROM', 'MID_CONTAINS_FROM']);
    // Registrable domains must exist on both sides: two unlisted suffixes are not "the same".
    expect(await tags(['From: <alice@mail.invalidtld>', MID('<1@other.invalidtld>')])).toEqual([]);
  });

  it('compares with To, Cc and Bcc recipients', async () => {
    expect(await tags(['To: Bob <bob@example.net>', MID('<bob@example.net>')])).toEqual(['MID_CONTAINS_TO']);
    expect(await tags(['To: Bob <bob@example.net>', 'Cc: carol@example.com', MID('<1@example.com>')])).toEqual(['MID_RHS_MATCH_TO']);
    expect(await tags(['To: bob@example.net', 'Bcc: dave@example.com', MID('<bob@example.net.1@example.com>')]))
      .toEqual(['MID_CONTAINS_TO', 'MID_RHS_MATCH_TO']);
    // A recipient without an address is contained in every id (Stalwart's substring test).
    expect(await tags(['To: undisclosed', MID('<1@mailer.example.net>')])).toEqual(['MID_CONTAINS_TO']);
  });
});

describe('messageid module on hostile input', () => {
  it('reads a 2 MB Message-ID within seconds', async () => {
    const t0 = performance.now();
    const r = await runOne('messageid', mail([MID('<' + 'a'.repeat(2_000_000) + '@example.org>')]));
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.errors).toEqual([]);
    expect(r.warnings.some((w) => w.includes('only its start was read'))).toBe(true);
  });
});

describe('parseMessageIds (mail-parser reading)', () => {
  it('collects <…> contents and falls back to the bare text', () => {
    expect(parseMessageIds(' <a@b> <c@d>\r\n')).toEqual(['a@b', 'c@d']);
    expect(parseMessageIds(' < a@b >\r\n')).toEqual(['a@b']);
    expect(parseMessageIds(' <a b@c>\r\n')).toEqual(['a b@c']);
    expect(parseMessageIds('\r\n\t<a@b>\r\n')).toEqual(['a@b']);
    expect(parseMessageIds(' hello@domain.com  \r\n')).toEqual(['hello@domain.com']);
    expect(parseMessageIds(' \r\n')).toEqual([]);
    expect(messageIdText(' <a@b> <c@d>\r\n')).toBe('c@d');
    expect(messageIdText(' <a@b> trailing (comment)\r\n')).toBe('a@b');
  });
});
