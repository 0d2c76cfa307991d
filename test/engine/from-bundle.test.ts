/**
 * A rule file gives the same engine in the library as in `spamrule classify --rules FILE`: its
 * file-extension table, DNSBL servers and lists included (engineOptionsFromBundle, which the CLI uses).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createResolver, engineOptionsFromBundle, loadRuleFile, parseRuleBundle, ruleSetSpecFromBundle, SpamEngine, SpamEnginePool, type ClassifyResult } from '../../src/index.js';
import { run as classifyCli } from '../../src/cli/classify.js';
import { capture } from '../helpers/capture.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

const SESSION = { remoteIp: '203.0.113.9', heloDomain: 'mail.example.net', mailFrom: 'bob@example.net', rcptTo: ['alice@example.org'] };
const SESSION_FLAGS = ['--remote-ip', SESSION.remoteIp, '--helo', SESSION.heloDomain, '--mail-from', SESSION.mailFrom, '--rcpt-to', SESSION.rcptTo[0]!];

/** An invoice with an `invoice.pdf.exe` attachment (the integrator's report). */
const MESSAGE =
  'From: Bob <bob@example.net>\r\nTo: alice@example.org\r\nSubject: invoice\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n' +
  'Message-ID: <a1@example.net>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="XYZ"\r\n\r\n' +
  '--XYZ\r\nContent-Type: text/plain\r\n\r\nplease see the attached invoice for last month\r\n' +
  '--XYZ\r\nContent-Type: application/octet-stream; name="invoice.pdf.exe"\r\nContent-Transfer-Encoding: base64\r\n' +
  'Content-Disposition: attachment; filename="invoice.pdf.exe"\r\n\r\n' +
  'TVqQAAMAAAAEAAAA//8AALgAAAAAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAgAAAAA==\r\n--XYZ--\r\n';

/** A small rule file: one rule reading a static list, a DNSBL server, the `exe` extension, and scores. */
const BUNDLE = {
  SpamRule: [{ '@type': 'Any', name: 'LOCAL_INVOICE', priority: 100, condition: { match: [{ if: "key_exists('bad-subjects', subject)", then: "'INVOICE_SUBJECT'" }], else: 'false' } }],
  SpamTag: [
    { '@type': 'Score', tag: 'MIME_BAD_EXTENSION', score: 2 },
    { '@type': 'Score', tag: 'RBL_TEST_LISTED', score: 3 },
    { '@type': 'Score', tag: 'INVOICE_SUBJECT', score: 0.5 },
  ],
  MemoryLookupKey: [{ namespace: 'bad-subjects', key: 'invoice' }],
  SpamDnsblServer: [{ '@type': 'Ip', name: 'TEST_RBL', zone: { else: "ip_reverse + '.rbl.example'" }, tag: { else: "'RBL_TEST_LISTED'" } }],
  SpamFileExtension: [{ extension: 'exe', contentTypes: {}, isArchive: false, isBad: true, isNz: false }],
};

function summary(r: Pick<ClassifyResult, 'action' | 'score' | 'tags'>): { action: string; score: number; tags: string[] } {
  return { action: r.action, score: r.score, tags: [...r.tags].sort() };
}

async function viaCli(rules: string, extra: string[]): Promise<{ action: string; score: number; tags: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-bundle-'));
  const eml = join(dir, 'invoice.eml');
  writeFileSync(eml, MESSAGE);
  const { result, stdout } = await capture(() => classifyCli(['--json', '--rules', rules, '--cache-dir', dir, ...SESSION_FLAGS, ...extra, eml]));
  expect(result).toBe(0);
  return summary(JSON.parse(stdout.trim()) as ClassifyResult);
}

/** BUNDLE as a rule file, and a static DNS zone listing the session's IP on its DNSBL, in a new folder. */
function bundleFiles(): { dir: string; rules: string; zone: string } {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-bundle-'));
  const rules = join(dir, 'rules.json');
  writeFileSync(rules, JSON.stringify(BUNDLE));
  const zone = join(dir, 'zone.json');
  writeFileSync(zone, JSON.stringify({ '9.113.0.203.rbl.example': { A: ['127.0.0.2'] } }));
  return { dir, rules, zone };
}

describe('engineOptionsFromBundle', () => {
  it('gives the library the verdict the CLI gives for the same rule file (file extensions, DNSBLs, lists)', async () => {
    const { dir, rules, zone } = bundleFiles();

    const engine = new SpamEngine({ ...engineOptionsFromBundle(loadRuleFile(rules), { listCacheDir: dir }), dns: createResolver(`static:${zone}`) });
    const lib = summary(await engine.classify(MESSAGE, { session: SESSION }));
    await engine.lookups.close();

    expect(lib.tags).toEqual(expect.arrayContaining(['MIME_BAD_EXTENSION', 'RBL_TEST_LISTED', 'INVOICE_SUBJECT']));
    expect(lib).toEqual(await viaCli(rules, ['--dns', `static:${zone}`]));
  });

  it('merges analysis settings with the bundle\'s; `analysis: false` runs the rules alone', async () => {
    const bundle = parseRuleBundle(BUNDLE);
    const merged = engineOptionsFromBundle(bundle, { analysis: { modules: { html: false } } });
    expect(merged.analysis).toEqual({ modules: { html: false }, dnsblServers: bundle.dnsblServers, fileExtensions: bundle.fileExtensions });
    const lib = await new SpamEngine(merged).classify(MESSAGE, { session: SESSION });
    expect(lib.tags).toEqual(expect.arrayContaining(['MIME_BAD_EXTENSION', 'INVOICE_SUBJECT']));
    const rulesOnly = engineOptionsFromBundle(bundle, { analysis: false });
    expect(rulesOnly.analysis).toBe(false);
    expect((await new SpamEngine(rulesOnly).classify(MESSAGE, { session: SESSION })).tags).not.toContain('MIME_BAD_EXTENSION');
  });

  it.skipIf(!hasSharedData)('Stalwart\'s published rule set: MIME_BAD_EXTENSION in the library as with the CLI', async () => {
    const rules = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-bundle-'));
    const engine = new SpamEngine({ ...engineOptionsFromBundle(loadRuleFile(rules), { listCacheDir: dir, warn: () => {} }) });
    const lib = summary(await engine.classify(MESSAGE, { session: SESSION }));
    await engine.lookups.close();
    expect(lib.tags).toContain('MIME_BAD_EXTENSION');
    expect(lib).toEqual(await viaCli(rules, []));
  });
});

describe('ruleSetSpecFromBundle', () => {
  it('gives a SpamEnginePool the verdict the CLI gives for the same rule file', async () => {
    const { dir, rules, zone } = bundleFiles();
    const pool = new SpamEnginePool({ ...ruleSetSpecFromBundle(loadRuleFile(rules)), listCacheDir: dir, refreshLists: false, dns: `static:${zone}`, workers: 1 });
    try {
      const lib = summary(await pool.classify(MESSAGE, { session: SESSION }));
      expect(lib.tags).toEqual(expect.arrayContaining(['MIME_BAD_EXTENSION', 'RBL_TEST_LISTED', 'INVOICE_SUBJECT']));
      expect(lib).toEqual(await viaCli(rules, ['--dns', `static:${zone}`]));
    } finally {
      await pool.close();
    }
  }, 60_000);
});
