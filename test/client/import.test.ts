/**
 * `spamrule import` against a real JMAP server: the full published spam-filter-rules.json (66
 * SpamRules) imported twice gives 66 rules, updates and skips on re-import, batching, failures,
 * and the SpamTag/MemoryLookupKey files the engine loads.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/import.js';
import { JmapClient, normalizeRule, type SpamRule } from '../../src/client/index.js';
import { loadScoresFile, parseListText } from '../../src/engine/load.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { cli, startServer, type ClientHarness } from './harness.js';

const BUNDLE = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
/** The rest of the published filter configuration, imported beside the rules (issue #9 item 4). */
const OTHERS = (file: string, created: boolean) =>
  [
    ['SpamTag', 403, 9],
    ['SpamDnsblServer', 18, 1],
    ['HttpLookup', 4, 1],
    ['SpamFileExtension', 132, 3],
  ]
    .map(([t, n, b]) => (created ? `${t}: ${n} created, 0 updated, 0 skipped, 0 failed (${n} in ${file}, ${b} batch${b === 1 ? '' : 'es'})` : `${t}: 0 created, 0 updated, ${n} skipped, 0 failed (${n} in ${file}, 0 batches)`))
    .concat(
      'MemoryLookupKey: 2084 keys in 3 lists not imported (surbl-hashbl 180, url-redirectors 1076, trusted-domains 828): JMAP does not manage them; ' +
        'write them with --lists-out DIR and load them with --list NAMESPACE=DIR/NAMESPACE.txt (classify, serve)',
    )
    .join('\n');

describe.skipIf(!hasSharedData)('spamrule import of spam-filter-rules.json', () => {
  let h: ClientHarness;
  let client: JmapClient;
  let bundle: { SpamRule: Record<string, unknown>[]; SpamTag: unknown[]; MemoryLookupKey: { namespace: string; key: string }[] };
  const imp = (...argv: string[]) => cli(run, [...argv, ...h.conn]);
  beforeAll(() => {
    bundle = JSON.parse(readFileSync(BUNDLE, 'utf8'));
  });
  beforeEach(async () => {
    h = await startServer();
    client = new JmapClient({ server: h.server.url, token: h.admin });
  });
  afterEach(() => h?.close());

  it('imports all 66 rules; a second run duplicates nothing', async () => {
    // This one uses the server's own condition validator (the engine's compile-on-write when the
    // engine module loads), so the published expressions are checked as in production.
    await h.close();
    h = await startServer({ validateCondition: undefined });
    client = new JmapClient({ server: h.server.url, token: h.admin });
    const first = await imp(BUNDLE);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(`SpamRule: 66 created, 0 updated, 0 skipped, 0 failed (66 in ${BUNDLE}, 2 batches)\n${OTHERS(BUNDLE, true)}\n`);
    const second = await imp(BUNDLE);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(`SpamRule: 0 created, 0 updated, 66 skipped, 0 failed (66 in ${BUNDLE}, 0 batches)\n${OTHERS(BUNDLE, false)}\n`);
    const all = await client.getAll<SpamRule>('SpamRule');
    expect(all).toHaveLength(66);
    expect(new Set(all.map((r) => r.name)).size).toBe(66);
    const want = new Map(bundle.SpamRule.map((r) => [r.name as string, normalizeRule(r)]));
    for (const r of all) {
      const { id, ...rest } = r;
      expect(id).toMatch(/^[a-z0-9]+$/);
      expect(rest).toEqual(want.get(r.name));
    }
  });

  it('updates rules changed on the server, or leaves them with --skip-existing; --json report', async () => {
    await imp(BUNDLE);
    const a = (await client.findRule('STWT_DKIM_SIGNED'))!;
    const b = (await client.findRule('STWT_SHORT_BAD_HEADERS'))!;
    await client.setRules({ update: { [a.id]: { priority: 1 }, [b.id]: { enable: false, 'condition/else': "'X'" } } });
    const skip = await imp(BUNDLE, '--skip-existing');
    expect(skip.stdout.split('\n')[0]).toBe(`SpamRule: 0 created, 0 updated, 66 skipped, 0 failed (66 in ${BUNDLE}, 0 batches)`);
    expect((await client.findRule('STWT_DKIM_SIGNED'))!.priority).toBe(1);
    const upd = await imp(BUNDLE, '--json');
    expect(upd.code).toBe(0);
    const report = JSON.parse(upd.stdout);
    expect(report.rules.created).toEqual([]);
    expect(report.rules.updated.sort()).toEqual(['STWT_DKIM_SIGNED', 'STWT_SHORT_BAD_HEADERS']);
    expect(report.rules.skipped).toHaveLength(64);
    expect(report.rules.failed).toEqual([]);
    expect(report.notImported).toBeUndefined();
    expect(Object.fromEntries(Object.entries(report.objects as Record<string, { skipped: string[] }>).map(([t, r]) => [t, r.skipped.length]))).toEqual({
      SpamTag: 403, SpamDnsblServer: 18, HttpLookup: 4, SpamFileExtension: 132,
    });
    expect((await client.findRule('STWT_DKIM_SIGNED'))!.priority).toBe(a.priority);
    expect(await client.findRule('STWT_SHORT_BAD_HEADERS')).toEqual(b);
    expect(await client.getAll('SpamRule')).toHaveLength(66);
  });

  it('--batch sets the rules per /set call; --dry-run changes nothing', async () => {
    const dry = await imp(BUNDLE, '--dry-run');
    expect(dry.stdout.split('\n')[0]).toBe(`SpamRule: 66 would be created, 0 would be updated, 0 skipped, 0 failed (66 in ${BUNDLE}, 0 batches)`);
    expect(await client.getAll('SpamRule')).toHaveLength(0);
    const r = await imp(BUNDLE, '--batch', '10');
    expect(r.stdout.split('\n')[0]).toBe(`SpamRule: 66 created, 0 updated, 0 skipped, 0 failed (66 in ${BUNDLE}, 7 batches)`);
    expect(await client.getAll('SpamRule')).toHaveLength(66);
  });

  it('writes SpamTag scores and MemoryLookupKey lists the engine loads; --files-only needs no server', async () => {
    const out = mkdtempSync(join(tmpdir(), 'spamrule-import-out-'));
    try {
      const scores = join(out, 'scores.json');
      const lists = join(out, 'lists');
      const r = await cli(run, [BUNDLE, '--files-only', '--tags-out', scores, '--lists-out', lists]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(
        [
          `SpamTag: 403 scores written to ${scores}`,
          `MemoryLookupKey: 2084 keys in 3 lists written to ${lists}: ${join(lists, 'surbl-hashbl.txt')} (180), ${join(lists, 'url-redirectors.txt')} (1076), ${join(lists, 'trusted-domains.txt')} (828)`,
          '',
        ].join('\n'),
      );
      expect(loadScoresFile(scores)).toEqual(bundle.SpamTag);
      expect(readdirSync(lists).sort()).toEqual(['surbl-hashbl.txt', 'trusted-domains.txt', 'url-redirectors.txt']);
      for (const ns of ['surbl-hashbl', 'trusted-domains', 'url-redirectors']) {
        const keys = parseListText(readFileSync(join(lists, `${ns}.txt`), 'utf8')).map((e) => e.key);
        expect(keys).toEqual(bundle.MemoryLookupKey.filter((k) => k.namespace === ns).map((k) => k.key));
      }
      expect(await client.getAll('SpamRule')).toHaveLength(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('spamrule import: failures and usage', () => {
  let h: ClientHarness;
  let dir: string;
  beforeAll(async () => {
    h = await startServer();
    dir = mkdtempSync(join(tmpdir(), 'spamrule-import-'));
  });
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports per-rule failures (SetErrors, duplicate names) and exits 1, importing the rest', async () => {
    const file = join(dir, 'rules.json');
    writeFileSync(
      file,
      JSON.stringify([
        { '@type': 'Any', name: 'GOOD_ONE', condition: { match: { '0': { if: 'true', then: "'G'" } }, else: 'false' } },
        { '@type': 'Any', name: 'BAD_ONE', priority: 5, condition: { match: { '0': { if: 'len(x', then: "'B'" } }, else: 'false' } },
        { '@type': 'Any', name: 'good_one', condition: { else: 'true' } },
      ]),
    );
    const r = await cli(run, [file, ...h.conn]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`SpamRule: 1 created, 0 updated, 0 skipped, 2 failed (3 in ${file}, 1 batch)\n`);
    expect(r.stderr).toBe(
      [
        'spamrule import: GOOD_ONE: the file names this rule more than once; only the first is imported',
        'spamrule import: BAD_ONE: create: invalidProperties [condition/match/0/if]: condition/match/0/if: unbalanced parentheses',
        '',
      ].join('\n'),
    );
    const again = await cli(run, [file, ...h.conn]);
    expect(again.stdout).toBe(`SpamRule: 0 created, 0 updated, 1 skipped, 2 failed (3 in ${file}, 1 batch)\n`);
  });

  it('a batch refused as a whole (forbidden) fails its rules with the method error', async () => {
    const file = join(dir, 'one.json');
    writeFileSync(file, JSON.stringify({ SpamRule: [{ '@type': 'Any', name: 'ONLY', condition: { else: 'false' } }] }));
    const ro = h.token(['sysSpamRuleGet', 'sysSpamRuleQuery'], 'ro');
    const r = await cli(run, [file, '--server', h.server.url, '--token', ro]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(`SpamRule: 0 created, 0 updated, 0 skipped, 1 failed (1 in ${file}, 1 batch)\n`);
    expect(r.stderr).toMatch(/^spamrule import: ONLY: create: forbidden/);
  });

  it('unreadable or malformed files and a missing server exit 1; bad usage exits 2', async () => {
    const missing = await cli(run, [join(dir, 'nope.json'), ...h.conn]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(new RegExp(`^spamrule import: cannot read ${join(dir, 'nope.json')}: ENOENT`));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"SpamRule": [');
    expect((await cli(run, [bad, ...h.conn])).stderr).toMatch(new RegExp(`^spamrule import: ${bad} is not valid JSON: `));
    const norule = join(dir, 'norule.json');
    writeFileSync(norule, JSON.stringify({ SpamRule: [{ name: 'X' }] }));
    expect((await cli(run, [norule, ...h.conn])).stderr).toBe(`spamrule import: ${norule}: SpamRule[0] (X): condition: required\n`);
    const saved = { s: process.env.SPAMRULE_SERVER, t: process.env.SPAMRULE_TOKEN };
    delete process.env.SPAMRULE_SERVER;
    delete process.env.SPAMRULE_TOKEN;
    try {
      const ns = await cli(run, [norule.replace('norule', 'bad'), '--token', 'x']);
      expect(ns.code).toBe(1);
      const noServer = join(dir, 'ok.json');
      writeFileSync(noServer, '[]');
      const r = await cli(run, [noServer, '--token', 'x']);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('spamrule import: no server: pass --server URL or set SPAMRULE_SERVER\n');
      process.env.SPAMRULE_SERVER = h.server.url;
      process.env.SPAMRULE_TOKEN = h.admin;
      const viaEnv = await cli(run, [noServer]);
      expect(viaEnv.code).toBe(0);
      expect(viaEnv.stdout).toBe(`SpamRule: 0 created, 0 updated, 0 skipped, 0 failed (0 in ${noServer}, 0 batches)\n`);
    } finally {
      if (saved.s === undefined) delete process.env.SPAMRULE_SERVER;
      else process.env.SPAMRULE_SERVER = saved.s;
      if (saved.t === undefined) delete process.env.SPAMRULE_TOKEN;
      else process.env.SPAMRULE_TOKEN = saved.t;
    }
    for (const [argv, msg] of [
      [[], 'spamrule import: expected exactly one FILE'],
      [['a.json', '--batch', '0'], 'spamrule import: --batch expects a positive integer, got "0"'],
      [['a.json', '--files-only'], 'spamrule import: --files-only needs --tags-out or --lists-out'],
    ] as [string[], string][]) {
      const r = await cli(run, argv);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toBe(msg);
    }
    const help = await cli(run, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: spamrule import FILE \[options\]\n/);
  });
});
