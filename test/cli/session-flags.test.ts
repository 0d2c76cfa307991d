/**
 * classify's session flags: bad values are clear errors before any message is read (exit 2), good
 * ones reach the modules, and --json / --explain name the module that set each tag; --dns off and
 * a never-answering DNS server keep each message within the DNS budget.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { SpamEngine } from '../../src/engine/engine.js';
import type { DnsAnswer, DnsType, Resolver } from '../../src/dns/types.js';
import { capture } from '../helpers/capture.js';
import { buildEngine, type LoadedRuleSet } from '../../src/cli/ruleset.js';
import { parseSessionFlags } from '../../src/cli/session-flags.js';
import type { SpamRuleInput } from '../../src/engine/types.js';
import { createResolver } from '../../src/dns/index.js';
import { TestDnsServer } from '../dns/server.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-session-'));
const MAIL = join(dir, 'm.eml');
writeFileSync(
  MAIL,
  ['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: hello', 'Date: Mon, 23 Nov 2026 10:00:00 +0000', 'Message-ID: <a1@example.org>', '', 'hi', ''].join('\r\n'),
);

describe('classify session flags', () => {
  it.each([
    [['--remote-ip', 'notanip'], /^spamrule classify: --remote-ip: "notanip" is not an IP address\n$/],
    [['--spf', 'maybe'], /^spamrule classify: --spf: "maybe" is not one of pass, fail/],
    [['--spf-helo', 'maybe'], /^spamrule classify: --spf-helo: "maybe" is not one of pass, fail/],
    [['--dkim', 'pass'], /--dkim expects RESULT:DOMAIN/],
    [['--dmarc', 'fail:drop'], /^spamrule classify: --dmarc: policy "drop" is not one of none, quarantine/],
    [['--dkim', 'pass:example.org', '--dkim', 'bogus:example.net'], /^spamrule classify: --dkim: "bogus" is not one of pass/],
    [['--no-module', 'nosuch'], /--no-module: unknown module "nosuch"/],
    [['--dns', 'carrier-pigeon'], /unknown resolver kind "carrier-pigeon"/],
    [['--now', 'soonish'], /^spamrule classify: --now: "soonish" is not a date\n$/],
    [['--country', 'Germany'], /^spamrule classify: --country: "Germany" is not a two-letter ISO 3166 country code \(e\.g\. DE\)\n$/],
    [['--verify'], /^spamrule classify: --verify needs --dns system \(or --dns static:FILE\)/],
    [['--verify', '--dns', 'off'], /^spamrule classify: --verify needs --dns system \(or --dns static:FILE\)/],
    [['--time-budget=-1'], /--time-budget expects milliseconds/],
    [['--time-budget', '1.5s'], /--time-budget expects milliseconds/],
    [['--rule-wait=-5'], /--rule-wait expects milliseconds/],
    [['--rule-wait', ''], /--rule-wait expects milliseconds/],
    [['--pyzor', 'host:port'], /^spamrule classify: --pyzor: expected HOST\[:PORT\], got "host:port"\n$/],
    [['--pyzor', 'pyzor.example:0'], /^spamrule classify: --pyzor: port must be from 1 to 65535, got "0"\n$/],
    [['--pyzor', '127.0.0.1', '--pyzor-timeout', '5s'], /--pyzor-timeout expects milliseconds \(an integer > 0\), got "5s"/],
    [['--pyzor-timeout', '500'], /^spamrule classify: --pyzor-timeout needs --pyzor HOST\[:PORT\]/],
    [['--pyzor', '127.0.0.1', '--pyzor-digest', 'razor'], /^spamrule classify: --pyzor-digest expects stalwart or pyzor, got "razor"\n$/],
    [['--pyzor-digest', 'pyzor'], /^spamrule classify: --pyzor-digest needs --pyzor HOST\[:PORT\]/],
  ])('%j is an error before any message is read', async (flags, message) => {
    const { result, stdout, stderr } = await capture(() => classify([...flags, join(dir, 'missing.eml')]));
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
  });

  it('authentication flags set the dmarc module tags, named in --json and --explain', async () => {
    const flags = ['--spf', 'fail', '--dkim', 'pass:example.org', '--dmarc', 'fail:reject', '--iprev', 'pass:mx.example.org', '--remote-ip', '192.0.2.1', '--helo', 'mx.example.org'];
    const j = await capture(() => classify(['--json', ...flags, MAIL]));
    expect(j.result).toBe(0);
    const rec = JSON.parse(j.stdout.trim()) as { tags: string[]; matches: { module?: string; rule?: string; tag: string }[] };
    expect(rec.tags).toEqual(expect.arrayContaining(['SPF_FAIL', 'DKIM_ALLOW', 'DMARC_POLICY_REJECT', 'ARC_NA']));
    expect(rec.matches).toContainEqual({ module: 'dmarc', tag: 'DMARC_POLICY_REJECT' });
    const x = await capture(() => classify(['--explain', ...flags, MAIL]));
    expect(x.stdout).toMatch(/DMARC_POLICY_REJECT\s+\S+\s+module dmarc/);
    // Switched off: no dmarc tags at all.
    const off = await capture(() => classify(['--json', '--no-module', 'dmarc', ...flags, MAIL]));
    expect((JSON.parse(off.stdout.trim()) as { tags: string[] }).tags).not.toContain('SPF_FAIL');
  });

  it('a resolver that never answers: every message finishes within the DNS budget', async () => {
    const never: Resolver = { query: <T extends DnsType>() => new Promise<DnsAnswer<T>>(() => {}) };
    const engine = new SpamEngine({ dns: never, dnsBudget: { deadlineMs: 250 } });
    for (let i = 0; i < 4; i++) {
      const t0 = performance.now();
      const r = await engine.classify(
        `From: a${i}@sender${i}.example\r\nTo: b@example.net\r\nSubject: x\r\n\r\nsee https://site${i}.example/ ok\r\n`,
        { session: { remoteIp: '192.0.2.1', heloDomain: `mx.sender${i}.example`, mailFrom: `a${i}@sender${i}.example` } },
      );
      expect(performance.now() - t0).toBeLessThan(2_000);
      expect(r.tags).not.toContain('HELO_NORES_A_OR_MX'); // a failed query sets no tag
    }
  });

  it('closing the engine cancels the DNS queries still in c-ares, so that the CLI exits after its last message', async () => {
    const server = new TestDnsServer();
    server.mode = 'drop';
    const addr = await server.start();
    try {
      const engine = buildEngine({ rules: [], tags: [], lists: new Map(), dnsblServers: [], isDefault: false } satisfies LoadedRuleSet, {}, () => {}, { dns: createResolver(`system:${addr}`) });
      const pending = engine.dns.query('silent.example', 'A');
      while (server.received.length === 0) await new Promise((r) => setTimeout(r, 5)); // sent, unanswered
      await engine.close();
      // Answered by the cancel, not by the resolver's 2,000 ms timeout.
      expect(await pending).toEqual({ status: 'error', error: 'ECANCELLED' });
    } finally {
      await server.stop();
    }
  });

  it('--rule-wait MS bounds how long the rules wait for a store that never answers', async () => {
    const flags = parseSessionFlags({ 'rule-wait': '300', 'no-analysis': true });
    const rules = [
      { '@type': 'Any', name: 'stuck', priority: 1, condition: { match: [{ if: "key_exists('silent', 'x')", then: "'STUCK'" }], else: 'false' } },
      { '@type': 'Any', name: 'after', priority: 2, condition: { match: [{ if: 'true', then: "'AFTER'" }], else: 'false' } },
    ] as SpamRuleInput[];
    const engine = buildEngine({ rules, tags: [], lists: new Map(), dnsblServers: [], isDefault: false }, {}, () => {}, flags);
    const never = () => new Promise<never>(() => {});
    engine.setLookup('silent', { type: 'Silent', keyGet: never, keyExists: never, keySet: never, counterGet: never, counterIncr: never, close: async () => {} });
    const r = await engine.classify('From: a@example.org\r\nSubject: x\r\n\r\nhi\r\n');
    expect(r.tags).toContain('AFTER');
    expect(r.errors).toEqual([expect.objectContaining({ source: 'stuck', message: expect.stringContaining('(300 ms in all)') })]);
  });

  it('--pyzor HOST[:PORT], --pyzor-timeout MS and --pyzor-digest reach the engine\'s analysis.pyzor; without them Pyzor is off', () => {
    const set: LoadedRuleSet = { rules: [], tags: [], lists: new Map(), dnsblServers: [], isDefault: false };
    const on = parseSessionFlags({ pyzor: '[2001:db8::7]:2444', 'pyzor-timeout': '700' });
    expect(on.pyzor).toEqual({ host: '2001:db8::7', port: 2444, timeoutMs: 700 });
    expect(buildEngine(set, {}, () => {}, on).analysis?.pyzor).toEqual({ host: '2001:db8::7', port: 2444, timeoutMs: 700 });
    expect(parseSessionFlags({ pyzor: 'public.pyzor.org' }).pyzor).toEqual({ host: 'public.pyzor.org' });
    expect(parseSessionFlags({ pyzor: '::1' }).pyzor).toEqual({ host: '::1' });
    expect(buildEngine(set, {}, () => {}, parseSessionFlags({})).analysis?.pyzor).toBeUndefined();
    // --pyzor-digest picks the digest sent (default: Stalwart's).
    const pyzorMode = parseSessionFlags({ pyzor: 'public.pyzor.org', 'pyzor-digest': 'pyzor' });
    expect(buildEngine(set, {}, () => {}, pyzorMode).analysis?.pyzor).toEqual({ host: 'public.pyzor.org', digest: 'pyzor' });
    expect(parseSessionFlags({ pyzor: 'public.pyzor.org', 'pyzor-digest': 'Stalwart' }).pyzor).toEqual({ host: 'public.pyzor.org', digest: 'stalwart' });
  });

  it('--time-budget MS skips the rules not started in time and reports them; 0 lifts the budget', async () => {
    // 30 rules that each scan a 4 MB body for a run of letters it does not contain: tens of ms each (cost 8 ×
    // 4 MB stays under the regex work limit, which would refuse a longer run).
    const rules = Array.from({ length: 30 }, (_, i) => ({
      '@type': 'Any',
      name: `SLOW_${i}`,
      condition: { match: [{ if: `matches('[a-z]{8}', body.raw)`, then: `'SLOW_${i}'` }], else: 'false' },
    }));
    writeFileSync(join(dir, 'slow-rules.json'), JSON.stringify(rules));
    writeFileSync(join(dir, 'big.eml'), `From: a@example.org\r\nSubject: big\r\n\r\n${'line 12345 http://h.example.com/p?1\r\n'.repeat(110_000)}`);
    const budget = await capture(() => classify(['--json', '--no-analysis', '--rules', join(dir, 'slow-rules.json'), '--time-budget', '1', join(dir, 'big.eml')]));
    expect(budget.result).toBe(0);
    const errors = (JSON.parse(budget.stdout.trim()) as { errors: { source: string; message: string }[] }).errors;
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.message === 'skipped: the classify time budget of 1 ms was exceeded')).toBe(true);
    const none = await capture(() => classify(['--json', '--no-analysis', '--rules', join(dir, 'slow-rules.json'), '--time-budget', '0', join(dir, 'big.eml')]));
    expect((JSON.parse(none.stdout.trim()) as { errors: unknown[] }).errors).toEqual([]);
  }, 60_000);
});
