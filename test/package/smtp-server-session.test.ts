/**
 * docs/deployment.md's mapping from smtp-server's session to spamrule's, run on sessions shaped as
 * smtp-server 3 makes them (an IPv4 client on a dual-stack listener, `user` false when no one
 * authenticated, MAIL FROM parameters in `args`): what it gives is a valid session.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { SessionError, SpamEngine, type SessionInput } from '../../src/index.js';
import { resolveSession } from '../../src/analysis/session.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

type SessionOf = (s: unknown) => SessionInput;

async function documentedMapping(): Promise<SessionOf> {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'deployment.md'), 'utf8');
  const block = [...doc.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => m[1]!).find((c) => c.includes('function sessionOf('));
  expect(block).toBeDefined();
  const js = ts.transpileModule(block!, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  const file = join(mkdtempSync(join(tmpdir(), 'spamrule-doc-')), 'session-of.mjs');
  writeFileSync(file, `${js}\nexport { sessionOf };\n`);
  return ((await import(pathToFileURL(file).href)) as { sessionOf: SessionOf }).sessionOf;
}

/** What smtp-server 3 passes to onData (the fields the mapping reads, and a few it does not). */
function smtpServerSession(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'x7k2', localAddress: '::ffff:192.0.2.25', localPort: 25, remoteAddress: '::ffff:203.0.113.7', remotePort: 50123,
    clientHostname: '[203.0.113.7]', openingCommand: 'EHLO', hostNameAppearsAs: 'mail.example.net', secure: false,
    transmissionType: 'ESMTP', tlsOptions: false, user: false,
    envelope: { mailFrom: { address: 'Alice@Example.net', args: { BODY: '8BITMIME', SMTPUTF8: true } }, rcptTo: [{ address: 'bob@example.org', args: false }] },
    ...over,
  };
}

describe("docs/deployment.md: smtp-server's session", () => {
  it('smtp-server\'s own session object is refused, naming the field meant', () => {
    expect(() => resolveSession(smtpServerSession() as never)).toThrow(SessionError);
  });

  it('maps to a valid session: IPv4 client, no authentication, MAIL FROM parameters', async () => {
    const sessionOf = await documentedMapping();
    const s = resolveSession(sessionOf(smtpServerSession()));
    expect(s).toMatchObject({
      remoteIp: '203.0.113.7', localIp: '192.0.2.25', heloDomain: 'mail.example.net', mailFrom: 'alice@example.net', rcptTo: ['bob@example.org'],
      authenticatedAs: null, tls: false, mailFromFlags: { smtputf8: true, eightBitMime: true, binaryMime: false },
    });
  });

  it('maps an authenticated TLS session with the null sender and no MAIL FROM parameters', async () => {
    const sessionOf = await documentedMapping();
    const s = resolveSession(sessionOf(smtpServerSession({
      secure: true, user: 'alice', remoteAddress: '2001:db8::7',
      envelope: { mailFrom: { address: '', args: false }, rcptTo: [{ address: 'bob@example.org', args: false }] },
    })));
    expect(s).toMatchObject({ remoteIp: '2001:db8::7', authenticatedAs: 'alice', tls: 'TLS', mailFrom: '', mailFromFlags: { smtputf8: false, eightBitMime: false } });
    const r = await new SpamEngine().classify('Subject: hi\r\n\r\nhello\r\n', { session: sessionOf(smtpServerSession()) });
    expect(r.action).toBeDefined();
  });
});
