/** Pure helpers of the client: bundle normalisation, list files, PatchObjects, tables, --set parsing. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  formatTable,
  isUnrepresentableKey,
  listFromWire,
  normalizeRule,
  parseAssignments,
  parseStalwartBundle,
  rulePatch,
  writeListsDir,
  type SpamRule,
} from '../../src/client/index.js';

describe('bundle helpers', () => {
  it('listFromWire orders index-keyed objects numerically and passes arrays through', () => {
    expect(listFromWire({ '10': 'c', '2': 'b', '0': 'a' })).toEqual(['a', 'b', 'c']);
    expect(listFromWire(['x'])).toEqual(['x']);
    expect(listFromWire(undefined)).toEqual([]);
    expect(listFromWire(null)).toEqual([]);
  });

  it('normalizeRule applies Stalwart defaults and name normalisation', () => {
    expect(normalizeRule({ name: 'my rule', condition: { else: 'false', match: { '1': { if: 'b', then: "'B'" }, '0': { if: 'a', then: "'A'" } } } })).toEqual({
      '@type': 'Any',
      name: 'MYRULE',
      description: null,
      enable: true,
      priority: 500,
      condition: { match: [{ if: 'a', then: "'A'" }, { if: 'b', then: "'B'" }], else: 'false' },
    });
    // The schema the server applies (src/engine/schema.ts), so a bad rule fails before it is sent.
    expect(() => normalizeRule({ name: '  ' }, 'f')).toThrow('f (  ): name: expected a non-empty string; condition: required');
    expect(() => normalizeRule({ name: 'p', priority: 100000, condition: { else: 'false' } }, 'f')).toThrow('f (p): priority: must be in -99999..99999');
  });

  it('parseStalwartBundle accepts a bare array and rejects other shapes', () => {
    const b = parseStalwartBundle([{ name: 'a', condition: { else: 'false' } }], 'x.json');
    expect(b.rules.map((r) => r.name)).toEqual(['A']);
    expect(b.tags).toEqual([]);
    expect(() => parseStalwartBundle('nope', 'x.json')).toThrow('x.json: expected a JSON object with a "SpamRule" list');
    expect(() => parseStalwartBundle({ SpamRule: {} }, 'x.json')).toThrow('x.json: "SpamRule" must be an array');
    expect(() => parseStalwartBundle({ MemoryLookupKey: [{ key: 'k' }] }, 'x.json')).toThrow('x.json: MemoryLookupKey[0] needs string "namespace" and "key"');
  });

  it('writeListsDir leaves out keys a list file cannot express and refuses unsafe namespaces', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-lists-'));
    try {
      const r = writeListsDir(dir, [
        { namespace: 'ns', key: 'a.com' },
        { namespace: 'ns', key: '*.b.com', isGlobPattern: true },
        { namespace: 'ns', key: 'what?', isGlobPattern: false },
        { namespace: 'ns', key: '#hash' },
      ]);
      expect(r.counts).toEqual({ ns: 2 });
      expect(r.skipped.map((k) => k.key)).toEqual(['what?', '#hash']);
      expect(readFileSync(join(dir, 'ns.txt'), 'utf8')).toBe('a.com\n*.b.com\n');
      expect(() => writeListsDir(dir, [{ namespace: '../etc', key: 'x' }])).toThrow('MemoryLookupKey namespace "../etc" is not a safe file name');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(isUnrepresentableKey(' x', false)).toBe(true);
    expect(isUnrepresentableKey('x*', true)).toBe(false);
  });

  it('rulePatch lists only changed top-level properties, ignoring key order', () => {
    const have: SpamRule = { id: 'a', '@type': 'Any', name: 'R', description: null, enable: true, priority: 5, condition: { match: [{ if: 'x', then: 'y' }], else: 'false' } };
    const same = { '@type': 'Any' as const, name: 'R', description: null, enable: true, priority: 5, condition: { else: 'false', match: [{ then: 'y', if: 'x' }] } };
    expect(rulePatch(have, same)).toEqual({});
    expect(rulePatch(have, { ...same, priority: 6, '@type': 'Url' })).toEqual({ '@type': 'Url', priority: 6 });
  });
});

describe('CLI helpers', () => {
  it('formatTable aligns columns, right-aligns numeric columns, trims trailing blanks', () => {
    expect(formatTable(['NAME', 'N', 'X'], [['long-name', 5, ''], ['b', 100, 'z']])).toBe('NAME         N  X\nlong-name    5\nb          100  z\n');
  });

  it('parseAssignments types values by property, := forces JSON', () => {
    const kind = (p: string) => (p === 'e' ? 'string' : p === 'n' ? 'integer' : p === 'b' ? 'boolean' : 'auto') as 'string' | 'integer' | 'boolean' | 'auto';
    expect(parseAssignments(['e=false', 'n=-3', 'b=true', 'a=5432', 'h=db.example', 'j:={"x":[1]}', 'eq=a=b'], kind)).toEqual({
      e: 'false',
      n: -3,
      b: true,
      a: 5432,
      h: 'db.example',
      j: { x: [1] },
      eq: 'a=b',
    });
    expect(() => parseAssignments(['novalue'], kind)).toThrow('--set expects PROP=VALUE or PROP:=JSON, got "novalue"');
    expect(() => parseAssignments(['b=yes'], kind)).toThrow('--set b expects true or false, got "yes"');
  });
});
