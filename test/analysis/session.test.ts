/**
 * Session input: validation with typed errors before any message is read, Stalwart's defaults,
 * the older envelope option, and authentication results from a trusted Authentication-Results
 * header (RFC 8601) or from verification with mailauth over a static resolver.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseAuthenticationResults, authFields } from '../../src/analysis/auth-results.js';
import { resolveSession, SessionError } from '../../src/analysis/session.js';
import { StaticResolver } from '../../src/dns/index.js';
import type { DnsAnswer, DnsType, Resolver } from '../../src/dns/types.js';
import { SpamEngine } from '../../src/engine/engine.js';

const MSG = [
  'From: Alice <alice@example.org>',
  'To: bob@example.net',
  'Subject: lunch',
  'Date: Mon, 23 Nov 2026 10:00:00 +0000',
  'Message-ID: <1@example.org>',
  '',
  'See you at noon.',
  '',
].join('\r\n');


/** The SessionError resolveSession throws for `input` (the test fails if it throws none, or another error). */
function refusal(input: unknown): SessionError {
  let err: unknown;
  try {
    resolveSession(input as never);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SessionError);
  return err as SessionError;
}

describe('resolveSession', () => {
  it('fills Stalwart defaults and lowercases addresses', () => {
    const s = resolveSession({ mailFrom: '<Alice@Example.ORG>', rcptTo: ['Bob@Example.net'], remoteIp: '[2001:DB8::1]' });
    expect(s.remoteIp).toBe('2001:db8::1');
    expect(s.localIp).toBe('127.0.0.1');
    expect(s.hostname).toBe('localhost');
    expect(s.mailFrom).toBe('alice@example.org');
    expect(s.rcptTo).toEqual(['bob@example.net']);
    expect(s.heloDomain).toBeNull();
    expect(s.tls).toBe(false);
    expect(s.spf).toEqual({ mailFrom: null, ehlo: null });
    expect(s.dkim).toEqual([]);
  });

  it.each([
    [{ remoteIp: 'notanip' }, 'remoteIp'],
    [{ spf: { mailFrom: 'maybe' } }, 'spf.mailFrom'],
    [{ dkim: [{ result: 'pass' }] }, 'dkim/0/domain'],
    [{ dmarc: { result: 'fail', policy: 'drop' } }, 'dmarc.policy'],
    [{ asn: -3 }, 'asn'],
    [{ now: 'yesterday-ish' }, 'now'],
    [{ iprev: { result: 'ok' } }, 'iprev.result'],
  ])('refuses %j with a SessionError naming %s', (input, field) => {
    expect(refusal(input).field).toBe(field);
  });

  it('classify rejects bad session input before reading the message', async () => {
    const engine = new SpamEngine();
    await expect(engine.classify(MSG, { session: { remoteIp: '999.1.1.1' } })).rejects.toBeInstanceOf(SessionError);
  });

  it.each([
    [{ remoteIP: '203.0.113.7' }, 'remoteIP', /did you mean remoteIp\?/],
    [{ helo: 'mail.example.net' }, 'helo', /did you mean heloDomain\?/],
    [{ remoteAddress: '203.0.113.7' }, 'remoteAddress', /did you mean remoteIp\?/],
    [{ mailfrom: 'a@example.net' }, 'mailfrom', /did you mean mailFrom\?/],
    [{ spf: { mailfrom: 'pass' } }, 'spf.mailfrom', /did you mean mailFrom\?/],
    [{ dmarc: { result: 'pass', polcy: 'reject' } }, 'dmarc.polcy', /did you mean policy\?/],
    [{ dkim: [{ result: 'pass', domian: 'example.net' }] }, 'dkim/0/domian', /did you mean domain\?/],
    [{ id: 'abc' }, 'id', /unknown field \(the fields are remoteIp, localIp, /],
  ])('refuses the unknown key of %j with a SessionError naming %s', (input, field, message) => {
    const err = refusal(input);
    expect(err.field).toBe(field);
    expect(err.message).toMatch(message);
  });

  it('classify refuses a session with an unknown key rather than classifying with a default session', async () => {
    const engine = new SpamEngine();
    await expect(engine.classify(MSG, { session: { remoteIP: '203.0.113.7', helo: 'mail.example.net' } as never })).rejects.toThrow(
      /^session\.remoteIP: unknown field \(did you mean remoteIp\?\)$/,
    );
  });

  it('takes null as absent, at every level (JSON callers)', () => {
    const now = Date.UTC(2026, 10, 23);
    const nulls = {
      remoteIp: null, heloDomain: null, mailFrom: null, rcptTo: null, authenticatedAs: null, tls: null, asn: null, country: null,
      iprev: { result: 'pass', ptr: null }, spf: { mailFrom: 'pass', ehlo: null }, dkim: null, arc: null, dmarc: { result: null, policy: 'reject' }, now,
    };
    expect(resolveSession(nulls as never)).toEqual(resolveSession({ iprev: { result: 'pass' }, spf: { mailFrom: 'pass' }, dmarc: { policy: 'reject' }, now }));
  });

  it.each([
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:10.1.2.3', '10.1.2.3'],
    ['[::ffff:192.0.2.1]', '192.0.2.1'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['2001:db8::ffff:203.0.113.7', '2001:db8::ffff:cb00:7107'],
  ])('an IPv4-mapped IPv6 remoteIp (%s, a dual-stack listener\'s IPv4 client) is that IPv4 address', (ip, want) => {
    expect(resolveSession({ remoteIp: ip, localIp: ip }).remoteIp).toBe(want);
    expect(resolveSession({ localIp: ip }).localIp).toBe(want);
  });

  it('asks the IPv4 DNS blocklists about an IPv4-mapped remoteIp', async () => {
    const engine = new SpamEngine({
      analysis: { dnsblServers: [{ '@type': 'Ip', name: 'TEST_RBL', zone: { else: "ip_reverse + '.zen.example'" }, tag: { else: "'RBL_TEST_SBL'" } }] },
      dns: new StaticResolver({ '7.113.0.203.zen.example': { A: ['127.0.0.2'] } }),
    });
    const r = await engine.classify(MSG, { session: { remoteIp: '::ffff:203.0.113.7' } });
    expect(r.tags).toContain('RBL_TEST_SBL');
  });

  it('keeps the older envelope option working', async () => {
    const engine = new SpamEngine({
      rules: [{ '@type': 'Any', name: 'IP', condition: { match: [{ if: "remote_ip == '192.0.2.9' && is_tls", then: "'ENV_OK'" }], else: 'false' } }],
    });
    const r = await engine.classify(MSG, { envelope: { remoteIp: '192.0.2.9' } });
    expect(r.tags).toContain('ENV_OK');
  });
});

describe('Authentication-Results (RFC 8601)', () => {
  it('parses methods, properties and comments', () => {
    const h = parseAuthenticationResults(
      ' mx.example.net 1; spf=pass (sender SPF authorized) smtp.mailfrom=example.org;\r\n' +
        '\tdkim=pass header.d=example.org header.s=sel; dkim=fail header.i=@other.example;\r\n' +
        '\tdmarc=fail (p=REJECT sp=NONE dis=NONE) header.from=example.org; arc=none;\r\n' +
        '\tiprev=pass policy.iprev=192.0.2.1 (mail.example.org)\r\n',
    )!;
    expect(h.authservId).toBe('mx.example.net');
    expect(h.results.map((r) => `${r.method}=${r.result}`)).toEqual(['spf=pass', 'dkim=pass', 'dkim=fail', 'dmarc=fail', 'arc=none', 'iprev=pass']);
    const f = authFields(h);
    expect(f.spf?.mailFrom).toBe('pass');
    expect(f.dkim).toEqual([{ result: 'pass', domain: 'example.org' }, { result: 'fail', domain: 'other.example' }]);
    expect(f.dmarc).toEqual({ result: 'fail', policy: 'reject' });
    expect(f.arc).toBe('none');
    expect(f.iprev).toEqual({ result: 'pass', ptr: ['mail.example.org'] });
  });

  it('"none" has no results; a header without authserv-id is ignored', () => {
    expect(parseAuthenticationResults('mx.example.net; none')?.results).toEqual([]);
    expect(parseAuthenticationResults('  ')).toBeUndefined();
  });

  it('a ")" that closes no comment is skipped (it looped the lexer until the heap ran out)', async () => {
    // Found by test/engine/classify-fuzz.test.ts (a message with bare-CR line ends, so that the header ran on
    // over the Received headers below it). Any A-R header did, trusted or not, once an authserv-id was trusted.
    expect(parseAuthenticationResults(' mx.example.org; spf=pass )')?.results.map((r) => `${r.method}=${r.result}`)).toEqual(['spf=pass']);
    expect(parseAuthenticationResults(') mx.example.org; spf=fail) smtp.mailfrom=a@example.org; dkim=pass ) header.d=example.org')?.results.map((r) => [r.method, r.result, r.props]))
      .toEqual([['spf', 'fail', { 'smtp.mailfrom': 'a@example.org' }], ['dkim', 'pass', { 'header.d': 'example.org' }]]);
    const engine = new SpamEngine({ authResults: { trustedAuthservIds: ['mx.example.net'] } });
    const r = await engine.classify('Authentication-Results: evil.example; spf=pass )\r\n' + MSG, {});
    expect(r.errors).toEqual([]);
  });

  it('classify takes results from the topmost header of a trusted authserv-id only', async () => {
    const forged = 'Authentication-Results: evil.example; spf=pass smtp.mailfrom=example.org; dmarc=pass\r\n';
    const own = 'Authentication-Results: mx.example.net; spf=fail smtp.mailfrom=example.org; dkim=pass header.d=example.org; dmarc=fail (p=reject) header.from=example.org\r\n';
    const engine = new SpamEngine({ authResults: { trustedAuthservIds: ['MX.example.net'] } });
    const r = await engine.classify(forged + own + MSG, {});
    expect(r.tags).toEqual(expect.arrayContaining(['SPF_FAIL', 'DKIM_ALLOW', 'DMARC_POLICY_REJECT']));
    expect(r.tags).not.toContain('SPF_ALLOW');
    // The session wins over the header.
    const r2 = await engine.classify(forged + own + MSG, { session: { spf: { mailFrom: 'pass' } } });
    expect(r2.tags).toContain('SPF_ALLOW');
    // Untrusted: no results → Stalwart's "no result" tags.
    const r3 = await new SpamEngine().classify(forged + own + MSG, {});
    expect(r3.tags).toEqual(expect.arrayContaining(['SPF_NA', 'DKIM_NA', 'DMARC_NA']));
  });
});

describe('verification with mailauth (verify: true)', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const zone = {
    'example.org': { TXT: ['v=spf1 ip4:192.0.2.1 -all'], MX: [{ preference: 10, exchange: 'mx.example.org' }] },
    'sel._domainkey.example.org': { TXT: [`v=DKIM1; k=rsa; p=${pub}`] },
    '_dmarc.example.org': { TXT: ['v=DMARC1; p=reject'] },
  };

  async function signed(): Promise<string> {
    const { dkimSign } = (await import('mailauth/lib/dkim/sign.js')) as unknown as {
      dkimSign: (m: string, o: object) => Promise<{ signatures: string }>;
    };
    const s = await dkimSign(MSG, {
      canonicalization: 'relaxed/relaxed',
      signatureData: [{ signingDomain: 'example.org', selector: 'sel', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) }],
    });
    return s.signatures + MSG;
  }

  it('verifies SPF, DKIM and DMARC over the given resolver', async () => {
    const engine = new SpamEngine({ dns: new StaticResolver(zone as never), authResults: { verify: true } });
    const r = await engine.classify(await signed(), { session: { remoteIp: '192.0.2.1', mailFrom: 'alice@example.org', heloDomain: 'mx.example.org' } });
    expect(r.tags).toEqual(expect.arrayContaining(['SPF_ALLOW', 'DKIM_ALLOW', 'DMARC_POLICY_ALLOW']));
  });

  it('a tampered body fails DKIM and an unlisted IP fails SPF, so DMARC fails with the published policy', async () => {
    const engine = new SpamEngine({ dns: new StaticResolver(zone as never), authResults: { verify: true } });
    const raw = (await signed()).replace('See you at noon.', 'Send me your password.');
    const r = await engine.classify(raw, { session: { remoteIp: '198.51.100.7', mailFrom: 'alice@example.org' } });
    expect(r.tags).toEqual(expect.arrayContaining(['SPF_FAIL', 'DKIM_REJECT', 'DMARC_POLICY_REJECT']));
  });

  it('a resolver that never answers costs at most the DNS budget and sets no result', async () => {
    const never: Resolver = { query: <T extends DnsType>() => new Promise<DnsAnswer<T>>(() => {}) };
    const engine = new SpamEngine({ dns: never, dnsBudget: { deadlineMs: 300 }, authResults: { verify: true } });
    const t0 = performance.now();
    const r = await engine.classify(MSG, { session: { remoteIp: '192.0.2.1', mailFrom: 'alice@example.org', heloDomain: 'mx.example.org' } });
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(r.tags).not.toContain('SPF_ALLOW');
  });
});
