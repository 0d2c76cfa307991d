/**
 * domain module: RCPT_IN_BODY, and the Email and Domain DNSBLs over the message's e-mail and domain sets
 * with their locations and the trusted-domains exemption (Stalwart's domain analysis).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mail, runModules, server } from './dnsbl-harness.js';

const DOMAIN = server('Domain', 'DOM', { else: "value + '.dbl.example'" }, { match: [['!is_empty(ip)', "'DOM_' + location"]], else: 'false' });
const DKIM_ONLY = server('Domain', 'DWL', { match: [["location == 'dkim_pass'", "value + '.dwl.example'"]], else: 'false' }, { match: [['octets[3] == 3', "'DWL_HI'"]], else: 'false' });
const EMAIL = server('Email', 'EBL', { else: "hash(email, 'sha1') + '.ebl.example'" }, { match: [['octets[2] == 0', "'EBL'"], ['octets[2] == 1', "'EBL_GREY'"]], else: 'false' });

const sha1 = (s: string): string => createHash('sha1').update(s).digest('hex');

describe('domain module', () => {
  it('tags RCPT_IN_BODY when a body part quotes a To/Cc/Bcc address (case-insensitively)', async () => {
    const msg = mail(['From: shop@example.org', 'To: Bob <bob@example.net>', 'Cc: carol@example.com', 'Subject: offer'], 'Dear Carol@Example.COM, act now.');
    expect((await runModules(['domain'], msg)).tags).toEqual(['RCPT_IN_BODY']);
    const other = mail(['From: shop@example.org', 'To: bob@example.net', 'Subject: offer'], 'Write to help@example.net.');
    expect((await runModules(['domain'], other)).tags).toEqual([]);
  });

  it('does not look at attachments for RCPT_IN_BODY', async () => {
    const msg = [
      'From: shop@example.org', 'To: bob@example.net', 'Subject: offer', 'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/plain', '', 'Hello.',
      '--b', 'Content-Type: text/plain', 'Content-Disposition: attachment; filename="list.txt"', '', 'bob@example.net', '--b--', '',
    ].join('\r\n');
    expect((await runModules(['domain'], msg)).tags).toEqual([]);
  });

  it('runs the Email DNSBL over From, Reply-To, the envelope sender and body addresses', async () => {
    const msg = mail(['From: Spammer <Spammer@Example.org>', 'Subject: x'], 'Also grey@example.com here.');
    const r = await runModules(['domain'], msg, {
      session: { mailFrom: 'bounce@example.net' },
      zone: {
        [`${sha1('spammer@example.org')}.ebl.example`]: { A: ['127.0.0.2'] },
        [`${sha1('grey@example.com')}.ebl.example`]: { A: ['127.0.1.2'] },
      },
      config: { dnsblServers: [EMAIL] },
    });
    expect(r.tags).toEqual(['EBL', 'EBL_GREY']);
    expect(r.queries).toContain(`A ${sha1('bounce@example.net')}.ebl.example`);
  });

  it('runs the Domain DNSBL over e-mail domains with their locations and skips trusted domains', async () => {
    const msg = mail(['From: a@listed.example.org', 'Subject: x'], 'Contact b@trusted.example.com.');
    const zone = { 'listed.example.org.dbl.example': { A: ['127.0.0.2'] }, 'trusted.example.com.dbl.example': { A: ['127.0.0.2'] } };
    const r = await runModules(['domain'], msg, { zone, config: { dnsblServers: [DOMAIN] }, lists: { 'trusted-domains': ['trusted.example.com'] } });
    expect(r.tags).toEqual(['DOM_from']);
    expect(r.queries.some((q) => q.includes('trusted.example.com'))).toBe(false);
  });

  it('checks DKIM-pass domains with location dkim_pass', async () => {
    const msg = mail(['From: a@signer.example.org', 'Subject: x']);
    const r = await runModules(['domain'], msg, {
      session: { dkim: [{ result: 'pass', domain: 'Signer.Example.org' }, { result: 'fail', domain: 'other.example' }] },
      zone: { 'signer.example.org.dwl.example': { A: ['127.0.0.3'] } },
      config: { dnsblServers: [DKIM_ONLY] },
    });
    expect(r.tags).toEqual(['DWL_HI']);
    expect(r.queries).toEqual(['A signer.example.org.dwl.example']);
  });

  it('does nothing in training mode', async () => {
    const msg = mail(['From: a@listed.example.org', 'To: b@example.net', 'Subject: x'], 'b@example.net');
    const r = await runModules(['domain'], msg, { train: true, config: { dnsblServers: [DOMAIN] } });
    expect(r.tags).toEqual([]);
    expect(r.queries).toEqual([]);
  });
});
