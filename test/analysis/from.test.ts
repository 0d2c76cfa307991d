/**
 * from module: the From header (RFC 5322 §3.6.2) against the envelope sender (RFC 5321 MAIL FROM),
 * the HELO name and the recipients, as Stalwart's from analysis judges them; DNS for the sender domain.
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import type { StaticZone } from '../../src/dns/index.js';
import { mail, runOne } from './module-harness.js';

const ZONE: StaticZone = {
  'example.org': { MX: ['10 mx.example.org'] },
  'example.net': { A: ['192.0.2.10'] },
};

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('from', mail(headers), session, { zone: ZONE })).tags;
}

const alice = { mailFrom: 'alice@example.org' };

describe('from module', () => {
  it('counts From headers', async () => {
    expect(await tags(['To: bob@example.net'])).toEqual(['MISSING_FROM']);
    expect(await tags(['From: alice@example.org', 'From: alice@example.org'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_NO_DN', 'MULTIPLE_FROM']);
  });

  it('matches From with MAIL FROM', async () => {
    expect(await tags(['From: Alice <Alice@Example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN']);
    expect(await tags(['From: Alice <alice@example.org>'], { mailFrom: 'bounces@example.net' })).toEqual([
      'FORGED_SENDER',
      'FROM_HAS_DN',
      'FROM_NEQ_ENV_FROM',
    ]);
  });

  it('compares with the HELO name when MAIL FROM is empty (FROMTLD_EQ_ENV_FROMTLD) and marks bounces', async () => {
    expect(await tags(['From: alice@example.org'], { heloDomain: 'mx1.example.org', mailFrom: '' })).toEqual([
      'FROMTLD_EQ_ENV_FROMTLD',
      'FROM_BOUNCE',
      'FROM_NO_DN',
    ]);
    expect(await tags(['From: alice@example.org'], { heloDomain: 'mx1.example.net', mailFrom: '' })).toEqual(['FROM_BOUNCE', 'FROM_NO_DN']);
    expect(await tags(['From: alice@example.org'], { mailFrom: 'MAILER-DAEMON@example.net' })).toEqual(['FROM_BOUNCE', 'FROM_NO_DN']);
  });

  it('judges the display name', async () => {
    expect(await tags(['From: alice@example.org'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_NO_DN']);
    expect(await tags(['From: "  " <alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_NO_DN']);
    expect(await tags(['From: "Alice@Example.org" <alice@example.org>'], alice)).toEqual(['FROM_DN_EQ_ADDR', 'FROM_EQ_ENV_FROM']);
    expect(await tags(['From: "support@bank.example.com" <alice@example.org>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_HAS_DN',
      'SPOOF_DISPLAY_NAME',
    ]);
    expect(await tags(['From: "alice@mail.example.org" <alice@example.org>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_HAS_DN',
      'FROM_NEQ_DISPLAY_NAME',
    ]);
    // A comment used as the name counts too.
    expect(await tags(['From: Alice (ceo@other.example.com) <alice@example.org>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_HAS_DN',
      'SPOOF_DISPLAY_NAME',
    ]);
  });

  it('tags FROM_INVALID and ENV_FROM_INVALID', async () => {
    expect(await tags(['From: alice'], { mailFrom: 'alice' })).toEqual(['ENV_FROM_INVALID', 'FROM_INVALID']);
    expect(await tags(['From: Alice <alice@localhost>'], alice)).toEqual(['FROM_INVALID']);
  });

  it('relates From to a single To/Cc recipient', async () => {
    expect(await tags(['From: alice@example.org', 'To: alice@example.org'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_NO_DN', 'TO_EQ_FROM']);
    expect(await tags(['From: alice@example.org', 'Cc: bob@example.org'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_NO_DN', 'TO_DOM_EQ_FROM_DOM']);
    expect(await tags(['From: alice@example.org', 'To: bob@example.org', 'Cc: carol@example.org'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_NO_DN',
    ]);
  });

  it('checks the raw From header for 8-bit text and needless encoding', async () => {
    expect(await tags(['From: Andr\u00e9 <alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN', 'FROM_NEEDS_ENCODING']);
    expect(await tags(['From: Andr\u00e9 <alice@example.org>'], { ...alice, smtputf8: true })).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN']);
    const latin1 = Buffer.concat([Buffer.from('From: Andr'), Buffer.from([0xe9]), Buffer.from(' <alice@example.org>\r\n\r\nHello.\r\n')]);
    expect((await runOne('from', new Uint8Array(latin1), alice, { zone: ZONE })).tags).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_HAS_DN',
      'FROM_NEEDS_ENCODING',
      'INVALID_FROM_8BIT',
      'NO_SPACE_IN_FROM', // invalid UTF-8 reads as empty text: no "<" found
    ]);
    expect(await tags(['From: =?utf-8?Q?Alice?= <alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_EXCESS_QP', 'FROM_HAS_DN']);
    expect(await tags(['From: "=?utf-8?B?QWxpY2U=?=" <alice@example.org>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_EXCESS_BASE64',
      'FROM_HAS_DN',
    ]);
    expect(await tags(['From: =?utf-8?Q?Andr=C3=A9?= <alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN']);
  });

  it('tags NO_SPACE_IN_FROM when the name is not followed by a blank before "<"', async () => {
    expect(await tags(['From: "Alice"<alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN', 'NO_SPACE_IN_FROM']);
    expect(await tags(['From: alice@example.org (Alice)'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN', 'NO_SPACE_IN_FROM']);
    expect(await tags(['From: "Alice"', '\t<alice@example.org>'], alice)).toEqual(['FROM_EQ_ENV_FROM', 'FROM_HAS_DN']);
  });

  it('compares X-Confirm-Reading-To with From and Disposition-Notification-To with MAIL FROM', async () => {
    expect(await tags(['From: alice@example.org', 'X-Confirm-Reading-To: <receipts@example.net>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_NO_DN',
      'HEADER_RCONFIRM_MISMATCH',
    ]);
    expect(await tags(['From: alice@example.org', 'x-confirm-reading-to: Alice <alice@example.org>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_NO_DN',
    ]);
    expect(await tags(['From: alice@example.org', 'Disposition-Notification-To: <receipts@example.net>'], alice)).toEqual([
      'FROM_EQ_ENV_FROM',
      'FROM_NO_DN',
      'HEADER_FORGED_MDN',
    ]);
    // Without MAIL FROM there is nothing to compare with.
    expect(await tags(['From: alice@example.org', 'Disposition-Notification-To: <receipts@example.net>'], {})).toEqual([
      'FROM_BOUNCE',
      'FROM_NO_DN',
    ]);
  });

  it('asks DNS about the MAIL FROM domain: A/AAAA first, MX only when there is none', async () => {
    const run = (mailFrom: string) => runOne('from', mail(['From: x@example.org']), { mailFrom }, { zone: ZONE });
    const nomx = await run('alice@nomx.example.com');
    expect(nomx.tags).toContain('FROMHOST_NORES_A_OR_MX');
    expect(nomx.queries).toEqual(['A nomx.example.com', 'AAAA nomx.example.com', 'MX nomx.example.com']);
    const withA = await run('bob@example.net');
    expect(withA.tags).not.toContain('FROMHOST_NORES_A_OR_MX');
    expect(withA.queries).toEqual(['A example.net']);
    expect((await run('alice@example.org')).tags).not.toContain('FROMHOST_NORES_A_OR_MX');
    // A DNS error is not a "no": no tag.
    const err = await runOne('from', mail(['From: x@example.org']), { mailFrom: 'a@x._dns_error.example.com' }, {
      resolver: { query: async () => ({ status: 'error', message: 'SERVFAIL' }) as never },
    });
    expect(err.tags).not.toContain('FROMHOST_NORES_A_OR_MX');
    // Invalid or empty MAIL FROM: no query.
    expect((await run('')).queries).toEqual([]);
    expect((await run('alice@localhost')).queries).toEqual([]);
  });
});
