/**
 * The session of stored mail, read back from its own headers (`trustReceived`): the first hop from
 * a public address, Return-Path, Delivered-To, the arrival time; given fields win.
 */
import { describe, expect, it } from 'vitest';
import { rawHeaders, sessionFromHeaders } from '../../src/analysis/stored.js';
import { SpamEngine } from '../../src/engine/engine.js';

const STORED = [
  'Return-Path: <Alice@Example.ORG>',
  'Delivered-To: bob@example.net',
  'Received: from localhost (localhost [127.0.0.1]) by box.example.net (fetchmail) for bob@localhost; Tue, 24 Nov 2026 09:00:05 +0000',
  'Received: from mx.example.org (mail.example.org [198.51.100.20]) by mx.example.net (Postfix) with ESMTPS id 4F (version=TLSv1.3) for <bob@example.net>; Tue, 24 Nov 2026 09:00:00 +0000',
  'Received: from [10.0.0.5] by mx.example.org; Tue, 24 Nov 2026 08:59:58 +0000',
  'From: Alice <alice@example.org>',
  'To: bob@example.net',
  'Subject: notes',
  'Date: Tue, 24 Nov 2026 08:59:50 +0000',
  'Message-ID: <n1@example.org>',
  '',
  'hello',
  '',
].join('\r\n');

describe('sessionFromHeaders', () => {
  it('takes the first hop from a public address, skipping internal ones', () => {
    const s = sessionFromHeaders(rawHeaders(STORED));
    expect(s).toMatchObject({
      remoteIp: '198.51.100.20',
      heloDomain: 'mx.example.org',
      iprev: { result: 'pass', ptr: ['mail.example.org'] },
      mailFrom: 'Alice@Example.ORG',
      rcptTo: ['bob@example.net'],
    });
    expect(s.tls).toMatch(/TLS/i);
    expect(s.now).toBe(Date.parse('2026-11-24T09:00:00Z'));
  });

  it('a null Return-Path is the null sender; no Received header gives no network facts', () => {
    const s = sessionFromHeaders(rawHeaders('Return-Path: <>\r\nFrom: a@b.example\r\n\r\nx'));
    expect(s).toEqual({ mailFrom: '' });
  });

  it('classify with trustReceived: the session comes from the headers, given fields win', async () => {
    const rules = [{ '@type': 'Any' as const, name: 'IP', condition: { match: [{ if: "remote_ip == '198.51.100.20' && env_from == 'alice@example.org'", then: "'FROM_HEADERS'" }], else: 'false' } }];
    const engine = new SpamEngine({ rules, trustReceived: true });
    const r = await engine.classify(STORED);
    expect(r.tags).toContain('FROM_HEADERS');
    expect(r.tags).not.toContain('DATE_IN_PAST'); // judged at arrival, not today
    const r2 = await engine.classify(STORED, { session: { remoteIp: '192.0.2.1' } });
    expect(r2.tags).not.toContain('FROM_HEADERS');
  });
});
