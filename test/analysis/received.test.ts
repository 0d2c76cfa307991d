/**
 * received module: the RFC 5321 §4.4 trace headers as mail-parser reads them (hop count, TLS,
 * HELO/PTR pairs, bare-IP hops, non-ASCII bytes), per Stalwart's received analysis.
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { parseReceivedValue } from '../../src/message/received.js';
import { mail, runOne } from './module-harness.js';

const BASE = ['From: Alice <alice@example.org>', 'To: Bob <bob@example.net>', 'Subject: hi'];

const HOP_TLS = 'Received: from mail.example.org (mail.example.org [192.0.2.10])\r\n\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits))\r\n\tby mx.example.net (Postfix) with ESMTPS id 4F1A2; Mon, 23 Nov 2026 10:00:01 +0000';
const HOP_PLAIN = 'Received: from mail.example.org (mail.example.org [192.0.2.10])\r\n\tby mx.example.net (Postfix) with ESMTP id 4F1A2; Mon, 23 Nov 2026 10:00:01 +0000';

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('received', mail(headers), session)).tags;
}

describe('received module', () => {
  it('counts hops', async () => {
    expect(await tags(BASE)).toEqual(['RCVD_COUNT_ZERO', 'RCVD_NO_TLS_LAST']);
    const counts: [number, string | undefined][] = [[1, 'RCVD_COUNT_ONE'], [2, 'RCVD_COUNT_TWO'], [3, 'RCVD_COUNT_THREE'],
      [4, 'RCVD_COUNT_FIVE'], [5, 'RCVD_COUNT_FIVE'], [6, 'RCVD_COUNT_SEVEN'], [7, 'RCVD_COUNT_SEVEN'], [8, 'RCVD_COUNT_TWELVE'],
      [12, 'RCVD_COUNT_TWELVE'], [13, undefined]];
    for (const [n, tag] of counts) {
      const t = await tags([...Array<string>(n).fill(HOP_PLAIN), ...BASE]);
      expect(t.filter((x) => x.startsWith('RCVD_COUNT'))).toEqual(tag === undefined ? [] : [tag]);
    }
  });

  it('grades TLS: every hop and this session, only this session, or none', async () => {
    expect(await tags([HOP_TLS, HOP_TLS, ...BASE], { tls: 'TLSv1.3' })).toEqual(['RCVD_COUNT_TWO', 'RCVD_TLS_ALL']);
    expect(await tags([HOP_TLS, HOP_PLAIN, ...BASE], { tls: 'TLSv1.3' })).toEqual(['RCVD_COUNT_TWO', 'RCVD_TLS_LAST']);
    expect(await tags([HOP_TLS, ...BASE])).toEqual(['RCVD_COUNT_ONE', 'RCVD_NO_TLS_LAST']);
    expect(await tags(BASE, { tls: 'TLSv1.2' })).toEqual(['RCVD_COUNT_ZERO', 'RCVD_TLS_LAST']);
  });

  it('reads TLS versions written the ways MTAs write them, inside comments only', async () => {
    for (const v of ['(version=TLS1_2 cipher=ECDHE-RSA-AES128-GCM-SHA256)', '(TLS: TLSv1/SSLv3, 128bits)', '(using TLSv1.3)', '(version=TLSv1.2)']) {
      expect(parseReceivedValue(` from a.example.org (a.example.org [192.0.2.1]) ${v} by b.example.net; Mon, 23 Nov 2026 10:00:01 +0000\r\n`).tlsVersion).toBeDefined();
    }
    expect(parseReceivedValue(' from a.example.org by b.example.net with TLSv1.3; Mon, 23 Nov 2026 10:00:01 +0000\r\n').tlsVersion).toBeUndefined();
  });

  it('tags RCVD_VIA_SMTP_AUTH for an authenticated session', async () => {
    expect(await tags(BASE, { authenticatedAs: 'alice' })).toContain('RCVD_VIA_SMTP_AUTH');
  });

  it('tags non-ASCII bytes unless MAIL FROM had SMTPUTF8 (8BITMIME does not excuse them)', async () => {
    const hop = 'Received: from mail.exämple.org (mail.exämple.org [192.0.2.10]) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000';
    expect(await tags([hop, ...BASE])).toEqual(['RCVD_COUNT_ONE', 'RCVD_ILLEGAL_CHARS', 'RCVD_NO_TLS_LAST']);
    expect(await tags([hop, ...BASE], { eightBitMime: true })).toContain('RCVD_ILLEGAL_CHARS');
    expect(await tags([hop, ...BASE], { smtputf8: true })).toEqual(['RCVD_COUNT_ONE', 'RCVD_NO_TLS_LAST']);
  });

  it('tags a HELO of "user", else a HELO name that differs from the PTR name in the comment', async () => {
    expect(await tags(['Received: from User (unknown [192.0.2.5]) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000', ...BASE]))
      .toContain('RCVD_HELO_USER');
    expect(await tags(['Received: from unknown (HELO user) (192.0.2.5) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000', ...BASE]))
      .not.toContain('RCVD_HELO_USER'); // the from host wins over the greeting
    expect(await tags(['Received: from [192.0.2.5] (helo=user) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000', ...BASE]))
      .not.toContain('RCVD_HELO_USER'); // an IP host is not a name
    const forged = await tags(['Received: from mail.example.org (dsl-5.isp.example [192.0.2.5]) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000', ...BASE]);
    expect(forged).toContain('FORGED_RCVD_TRAIL');
    const same = await tags(['Received: from Mail.Example.ORG (mail.example.org [192.0.2.5]) by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000', ...BASE]);
    expect(same).not.toContain('FORGED_RCVD_TRAIL');
  });

  it('tags PREVIOUSLY_DELIVERED when the for address is a header recipient', async () => {
    const hop = (rcpt: string): string => `Received: from a.example.org (a.example.org [192.0.2.1]) by mx.example.net with ESMTP id 1 for <${rcpt}>; Mon, 23 Nov 2026 10:00:01 +0000`;
    expect(await tags([hop('BOB@example.net'), ...BASE])).toContain('PREVIOUSLY_DELIVERED');
    expect(await tags([hop('carol@example.net'), ...BASE])).not.toContain('PREVIOUSLY_DELIVERED');
    expect(await tags([hop('bob@example.net'), 'From: a@example.org', 'Subject: x'])).not.toContain('PREVIOUSLY_DELIVERED');
  });

  it('tags RCVD_DOUBLE_IP_SPAM for two bare-IP hops, or one with an IP HELO', async () => {
    const ipHop = 'Received: from 192.0.2.44 by mx.example.net; Mon, 23 Nov 2026 10:00:01 +0000';
    const bracketHop = 'Received: from [192.0.2.45] by relay.example.net; Mon, 23 Nov 2026 10:00:00 +0000';
    expect(await tags([ipHop, bracketHop, ...BASE])).toContain('RCVD_DOUBLE_IP_SPAM');
    expect(await tags([ipHop, HOP_PLAIN, ...BASE])).not.toContain('RCVD_DOUBLE_IP_SPAM');
    expect(await tags([ipHop, HOP_PLAIN, ...BASE], { heloDomain: '[192.0.2.44]' })).toContain('RCVD_DOUBLE_IP_SPAM');
  });

  it('tags RCVD_UNPARSABLE when nothing in the header is recognised, and still counts it', async () => {
    expect(await tags(['Received: garbage text here', ...BASE])).toEqual(['RCVD_COUNT_ONE', 'RCVD_NO_TLS_LAST', 'RCVD_UNPARSABLE']);
    expect(await tags(['Received: by mx.example.net', ...BASE])).toEqual(['RCVD_COUNT_ONE', 'RCVD_NO_TLS_LAST']);
  });
});

describe('received module on hostile input', () => {
  it('reads 5,000 Received headers and a 1 MB one within seconds', async () => {
    const many = Array<string>(5000).fill('Received: from a.example.org (b.example.org [192.0.2.1]) by c.example.net; Mon, 23 Nov 2026 10:00:01 +0000');
    const huge = 'Received: from a.example.org (' + 'x.example.org [192.0.2.1] '.repeat(40_000) + ')';
    const t0 = performance.now();
    const r = await runOne('received', mail([...many, huge, ...BASE]));
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.tags).toContain('FORGED_RCVD_TRAIL');
    expect(r.tags.filter((t) => t.startsWith('RCVD_COUNT'))).toEqual([]);
    expect(r.warnings.some((w) => w.includes('read in part'))).toBe(true);
  });
});

describe('parseReceivedValue (mail-parser reading)', () => {
  it('reads the from host, its PTR name and IP, by, for and the greeting', () => {
    const r = parseReceivedValue(' from mail.example.org (HELO relay.example.org) (ptr.example.org [192.0.2.10])\r\n\tby mx.example.net (Postfix) with ESMTP id 4F1A2 for <bob@example.net>; Mon, 23 Nov 2026 10:00:01 +0000\r\n');
    expect(r).toMatchObject({
      parsed: true, from: { name: 'mail.example.org' }, helo: { name: 'relay.example.org' }, fromIprev: 'ptr.example.org',
      fromIp: '192.0.2.10', by: { name: 'mx.example.net' }, for: 'bob@example.net',
    });
  });

  it('reads IP hosts, IPv6 literals and brackets', () => {
    expect(parseReceivedValue(' from [192.0.2.9] by mx.example.net\r\n').from).toEqual({ ip: '192.0.2.9' });
    expect(parseReceivedValue(' from host.example.org (host.example.org [IPv6:2001:db8::7]) by mx.example.net\r\n').fromIp).toBe('2001:db8::7');
    expect(parseReceivedValue(' from ([192.0.2.78]) by mx.example.net\r\n')).toMatchObject({ from: undefined, fromIp: '192.0.2.78' });
  });

  it('accepts UTF-8 host names as domain names', () => {
    const r = parseReceivedValue(' from mail.exämple.org (mail.exämple.org [192.0.2.10]) by mx.example.net\r\n');
    expect(r).toMatchObject({ from: { name: 'mail.exämple.org' }, fromIprev: 'mail.exämple.org' });
  });

  it('keeps mail-parser\'s folding quirk: a host right after a fold keeps the blank before it', () => {
    expect(parseReceivedValue(' from\r\n mail.example.org (x.example.org [192.0.2.1])\r\n').from).toEqual({ name: ' mail.example.org' });
  });

  it('reads LF line ends as CRLF (a word before a fold does not keep the line break)', () => {
    const crlf = ' from a.example.org (a.example.org\r\n    [192.0.2.1]) by b.example.net; Mon, 23 Nov 2026 10:00:01 +0000\r\n';
    expect(parseReceivedValue(crlf.replace(/\r\n/g, '\n'))).toEqual(parseReceivedValue(crlf));
    expect(parseReceivedValue(crlf).fromIprev).toBe('a.example.org');
  });

  it('reads a bare LF wherever it falls exactly as the CRLF (words, separators, blanks, the end, a fold)', () => {
    const shapes = [
      ' from\r\n mail.example.org (x.example.org [192.0.2.1])\r\n',
      ' from a.example.org (HELO user)\r\n\t\tby b.example.net (Postfix) with\r\n ESMTPS id X1 for\r\n\t<bob@example.net>; Mon, 23\r\n Nov 2026 10:00:01 +0000\r\n',
      ' from a.example.org (a.example.org [192.0.2.1])\r\n\tby b.example.net\r\n(TLSv1.2)\r\n',
      '\r\n from [192.0.2.9]\r\n \r\n by mx.example.net id\r\n 12345\r\n',
      ' from a.example.org (using\r\n TLS1_2 with cipher\r\n ECDHE-RSA-AES128-SHA) by b.example.net\r\n',
    ];
    for (const crlf of shapes) expect(parseReceivedValue(crlf.replace(/\r\n/g, '\n'))).toEqual(parseReceivedValue(crlf));
  });

  it('reads huge values in bounded time', () => {
    const huge = ' from a.example.org (' + 'b.example.org ['.repeat(20_000) + '\r\n';
    const t0 = performance.now();
    expect(parseReceivedValue(huge).parsed).toBe(true);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
