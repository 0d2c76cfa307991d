/**
 * buildLookupMap: the one place a rule set's static lists, remote lists and managed stores become
 * lookup namespaces (used by `spamrule classify` and by the servers). Precedence, disabled remote
 * lists, stores that are refused without losing the rest, and stores marked not started (their lookups fail). The managed store is a real SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SpamEngine } from '../../src/engine/index.js';
import { buildLookupMap, HttpListStore, LookupStoreError, NotStartedStore } from '../../src/lookup/index.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-sources-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const remote = (namespace: string, enable = true) => ({ namespace, url: 'http://127.0.0.1:9/list.txt', enable });

describe('buildLookupMap', () => {
  it('registers static lists, remote lists and managed stores; a store wins over a static list, which wins over a remote list', async () => {
    const warnings: string[] = [];
    const lookups = buildLookupMap(
      {
        lists: new Map([
          ['trusted-domains', ['example.org']],
          ['both', ['from-static']],
          ['shadowed', ['static-key']],
        ]),
        httpLookups: [remote('both'), remote('remote-only'), remote('off', false)],
        stores: [{ namespace: 'shadowed', config: { '@type': 'Sqlite', path: join(dir, 'lookups.db') } }],
      },
      { autoRefresh: false, cacheDir: dir, warn: (m) => warnings.push(m) },
    );
    try {
      expect(lookups.namespaces().sort()).toEqual(['both', 'remote-only', 'shadowed', 'trusted-domains']);
      expect(await lookups.get('trusted-domains')!.keyExists('example.org')).toBe(true);
      // The static list of the same namespace wins over the remote list.
      expect(lookups.get('both')!.type).toBe('Memory');
      expect(await lookups.get('both')!.keyExists('from-static')).toBe(true);
      expect(lookups.get('remote-only')).toBeInstanceOf(HttpListStore);
      // A disabled remote list is left out: its namespace is unknown.
      expect(lookups.get('off')).toBeUndefined();
      // The managed store replaces the static list: a real SQLite store that takes writes.
      const store = lookups.get('shadowed')!;
      expect(store.type).toBe('Sqlite');
      expect(await store.keyExists('static-key')).toBe(false);
      await store.keySet('k', 'v');
      expect(await store.keyGet('k')).toBe('v');
      expect(warnings).toEqual([]);
    } finally {
      await lookups.close();
    }
  });

  it('gives a store it cannot create a NotStartedStore, says why through warn, and keeps every other namespace', async () => {
    delete process.env.SPAMRULE_NO_SUCH_VAR;
    const warnings: string[] = [];
    const lookups = buildLookupMap(
      {
        lists: [['good', ['a']]],
        stores: [
          { namespace: 'bad-config', config: { '@type': 'Redis', port: 1 } },
          { namespace: 'bad-secret', config: { '@type': 'PostgreSql', host: 'h', authSecret: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_NO_SUCH_VAR' } } },
        ],
      },
      { autoRefresh: false, warn: (m) => warnings.push(m) },
    );
    try {
      expect(lookups.namespaces().sort()).toEqual(['bad-config', 'bad-secret', 'good']);
      expect(await lookups.get('good')!.keyExists('a')).toBe(true);
      expect(warnings).toEqual([
        'store "bad-config" not started: port: unknown property "port"',
        expect.stringMatching(/^store "bad-secret" not started: lookup store "bad-secret": secret environment variable "SPAMRULE_NO_SUCH_VAR" is not set/),
      ]);
      // Each lookup of a store that is not there fails with the reason, rather than answering "" unsaid.
      const e = await lookups.get('bad-config')!.keyExists('k').then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(LookupStoreError);
      expect((e as Error).message).toBe('lookup store "bad-config": not started: port: unknown property "port"');
    } finally {
      await lookups.close();
    }
  });

  it('gives a store marked notStarted a store whose every call fails with the reason, without reading its configuration', async () => {
    const warnings: string[] = [];
    const lookups = buildLookupMap(
      { lists: [['trusted', ['shadowed']]], stores: [{ namespace: 'trusted', config: null, notStarted: '"db.example" gave no address (tried again every 30 s)' }] },
      { autoRefresh: false, warn: (m) => warnings.push(m) },
    );
    try {
      const store = lookups.get('trusted')!;
      expect(store).toBeInstanceOf(NotStartedStore);
      const why = 'lookup store "trusted": not started: "db.example" gave no address (tried again every 30 s)';
      for (const call of [() => store.keyExists('k'), () => store.keyGet('k'), () => store.keySet('k', 'v'), () => store.counterGet('k'), () => store.counterIncr('k', 1), () => store.sqlQuery!('SELECT 1', [])]) {
        const e = await call().then(() => undefined, (x: unknown) => x);
        expect(e).toBeInstanceOf(LookupStoreError);
        expect((e as LookupStoreError).namespace).toBe('trusted');
        expect((e as Error).message).toBe(why);
      }
      expect(warnings).toEqual([]);
    } finally {
      await lookups.close();
    }
  });

  it('a rule using a store not started fails with the reason in classify\'s errors; the other rules still run', async () => {
    const engine = new SpamEngine({
      rules: [
        { '@type': 'Any', name: 'TRUSTED', condition: { match: [{ if: "key_exists('trusted', 'example.org')", then: "'TRUSTED'" }], else: 'false' } },
        { '@type': 'Any', name: 'ALWAYS', condition: { match: [], else: "'ALWAYS'" } },
      ],
      lookups: buildLookupMap({ stores: [{ namespace: 'trusted', config: null, notStarted: 'refused by the store policy: host: …' }] }, { autoRefresh: false, warn: () => undefined }),
    });
    try {
      const v = await engine.classify('From: a@example.org\r\nSubject: x\r\n\r\nbody\r\n');
      expect(v.tags).toContain('ALWAYS');
      expect(v.tags).not.toContain('TRUSTED');
      expect(v.errors).toEqual([
        expect.objectContaining({ source: 'TRUSTED', store: 'trusted', message: 'key_exists on lookup store "trusted" failed: lookup store "trusted": not started: refused by the store policy: host: …' }),
      ]);
    } finally {
      await engine.close();
    }
  });
});
