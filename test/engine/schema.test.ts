/**
 * One validation: `lint`, `loadRuleFile` and JMAP `/set` apply the same schema (src/engine/schema.ts), so a
 * rule file that lints clean also imports clean, and one JMAP refuses is refused by lint and loadRuleFile.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as lint } from '../../src/cli/lint.js';
import { loadRuleFile, parseRuleBundle, RuleBundleError, validateRegistryObject } from '../../src/engine/index.js';
import { capture } from '../helpers/capture.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

const rule = (extra: Record<string, unknown>) => ({ '@type': 'Any', name: 'R', condition: { match: [], else: "'X'" }, ...extra });
const dir = mkdtempSync(join(tmpdir(), 'spamrule-schema-'));
const file = (name: string, json: unknown): string => {
  const p = join(dir, name);
  writeFileSync(p, JSON.stringify(json));
  return p;
};

/** The cases the issue names: JMAP refused them, lint passed them. */
const BAD: [string, Record<string, unknown>, string, string][] = [
  ['priority 100000', rule({ priority: 100000 }), 'priority', 'must be in -99999..99999'],
  ['priority 1.5', rule({ priority: 1.5 }), 'priority', 'expected an integer'],
  ['priority "5"', rule({ priority: '5' }), 'priority', 'expected an integer'],
  ['an empty name', rule({ name: '' }), 'name', 'expected a non-empty string'],
  ['an unknown property', rule({ colour: 'red' }), 'colour', 'unknown property'],
];

describe('one schema for lint, loadRuleFile and JMAP', () => {
  it.each(BAD)('%s: validateRegistryObject names the property', (_what, obj, path, message) => {
    const r = validateRegistryObject('SpamRule', obj);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems).toEqual([{ path, message }]);
  });

  it.each(BAD)('%s: loadRuleFile refuses it with the property', (_what, obj, path, message) => {
    const p = file(`bad-${path}.json`, { SpamRule: [rule({ name: 'GOOD' }), obj] });
    let err: unknown;
    try {
      loadRuleFile(p);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RuleBundleError);
    expect((err as RuleBundleError).problems).toEqual([{ type: 'SpamRule', index: 1, ...(typeof obj.name === 'string' ? { name: obj.name } : {}), path, message }]);
    expect((err as Error).message).toContain(`SpamRule[1]`);
  });

  it.each(BAD)('%s: lint reports an error and exits 1', async (_what, obj, path, message) => {
    const p = file(`lint-${path}.json`, [obj]);
    const { result, stdout } = await capture(() => lint(['--rules', p]));
    expect(result).toBe(1);
    expect(stdout).toMatch(new RegExp(`^error +\\S+ ${path}: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(SpamRule in `, 'm'));
  });

  it('validates the other imported objects too', () => {
    const bad = parseRuleBundle(
      {
        SpamTag: [{ '@type': 'Score', tag: 'T', score: 'high' }, { '@type': 'Block', tag: 'U' }],
        SpamDnsblServer: [{ '@type': 'Ip', name: 'Z', zone: { else: '' }, tag: { else: "'X'" } }],
        HttpLookup: [{ namespace: 'n', url: 'ftp://example.org/list.txt', maxSize: -1 }],
        SpamFileExtension: [{ extension: 'exe', isBad: 'yes' }],
      },
      'bundle',
      { lenient: true },
    );
    expect(bad.problems?.map((p) => `${p.type}[${p.index}] ${p.path}: ${p.message}`)).toEqual([
      'SpamTag[0] score: expected a number',
      'SpamTag[1] @type: missing or invalid "@type" (expected one of Score, Reject, Discard)',
      'SpamDnsblServer[0] zone/else: expected a non-empty expression',
      'HttpLookup[0] url: expected an http(s) URL',
      'HttpLookup[0] maxSize: must be in 1..1099511627776',
      'SpamFileExtension[0] isBad: expected true or false',
    ]);
  });

  it.skipIf(!hasSharedData)("accepts every object of Stalwart's published rule set", () => {
    const b = loadRuleFile(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'));
    expect([b.rules.length, b.tags.length, b.dnsblServers.length, b.httpLookups.length, b.fileExtensions.length]).toEqual([66, 403, 18, 4, 132]);
  });
});

describe('score files', () => {
  it('loadScoresFile checks a JSON array of SpamTags against the same schema', async () => {
    const { loadScoresFile } = await import('../../src/engine/index.js');
    expect(loadScoresFile(file('scores-ok.json', [{ '@type': 'Score', tag: 'A', score: 1.5 }, { '@type': 'Reject', tag: 'B' }]))).toHaveLength(2);
    expect(() => loadScoresFile(file('scores-bad.json', [{ '@type': 'Score', tag: 'A', score: 1e9 }]))).toThrow(/SpamTag\[0\] \(A\) score: must be in -999999\.\.999999/);
  });
});
