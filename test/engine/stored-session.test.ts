/**
 * trustReceived: the session read back from the message's own headers (taken from the engine's
 * single parse) classifies exactly as the same session given by the caller.
 */
import { describe, expect, it } from 'vitest';
import { completeFromHeaders } from '../../src/analysis/stored.js';
import { SessionError } from '../../src/analysis/session.js';
import { SpamEngine } from '../../src/engine/engine.js';

const STORED = [
  'Return-Path: <alice@example.org>',
  'Delivered-To: bob@example.net',
  'Received: from localhost (localhost [127.0.0.1]) by box.example.net (fetchmail) for bob@localhost; Tue, 24 Nov 2026 09:00:05 +0000',
  'Received: from mx.example.org (mail.example.org [198.51.100.20]) by mx.example.net (Postfix) with ESMTPS id 4F (version=TLSv1.3) for <bob@example.net>; Tue, 24 Nov 2026 09:00:00 +0000',
  'From: Alice <alice@example.org>',
  'To: bob@example.net',
  'Subject: notes',
  'Date: Tue, 24 Nov 2026 08:59:50 +0000',
  'Message-ID: <n1@example.org>',
  '',
  'hello http://example.com/x',
  '',
].join('\r\n');

const RULES = [
  {
    '@type': 'Any' as const,
    name: 'SESSION',
    condition: { match: [{ if: "remote_ip == '198.51.100.20' && helo_domain == 'mx.example.org' && env_from == 'alice@example.org'", then: "'FROM_HEADERS'" }], else: 'false' },
  },
];

describe('trustReceived session', () => {
  it('gives the same result as passing the recovered session explicitly', async () => {
    const trusting = new SpamEngine({ rules: RULES, analysis: {}, trustReceived: true });
    const plain = new SpamEngine({ rules: RULES, analysis: {} });
    const a = await trusting.classify(STORED);
    const b = await plain.classify(STORED, { session: completeFromHeaders({}, STORED) });
    expect(a.tags).toContain('FROM_HEADERS');
    expect(a.tags).toContain('RCVD_TLS_LAST');
    expect([...a.tags].sort()).toEqual([...b.tags].sort());
    expect(a.score).toBe(b.score);
  });

  it('a field given as null is absent: the headers give it', async () => {
    const trusting = new SpamEngine({ rules: RULES, analysis: {}, trustReceived: true });
    const r = await trusting.classify(STORED, { session: { remoteIp: null, heloDomain: null, mailFrom: null } as never });
    expect(r.tags).toContain('FROM_HEADERS');
  });

  it('an unusable given session still rejects with SessionError', async () => {
    const trusting = new SpamEngine({ rules: RULES, trustReceived: true });
    await expect(trusting.classify(STORED, { session: { remoteIp: 'not an ip' } })).rejects.toBeInstanceOf(SessionError);
  });
});
