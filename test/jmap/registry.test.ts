/**
 * x:SpamTag, x:SpamDnsblServer, x:HttpLookup and x:SpamFileExtension: get/set/query with their own
 * permissions, the shared schema's validation, persistence, and what reaches the running engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SpamEngine } from '../../src/engine/index.js';
import { createJmapServer, loadManagedRuleSet } from '../../src/jmap/index.js';
import { startHarness, type Harness } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TAG = { '@type': 'Score', tag: 'MY_TAG', score: 2.5 };
const DNSBL = { '@type': 'Ip', name: 'MY_RBL', zone: { match: {}, else: "ip_reverse + '.rbl.example'" }, tag: { match: { '0': { if: 'octets[3] == 2', then: "'MY_RBL_HIT'" } }, else: 'false' } };
const LIST = { namespace: 'my_freemail', url: 'https://lists.example/freemail.txt', format: { '@type': 'List' } };
const EXT = { extension: 'exe', contentTypes: { 'application/x-msdownload': true }, isBad: true };

describe('registry objects over JMAP', () => {
  it('creates, reads, queries and updates each type, with the schema defaults filled in', async () => {
    h = await startHarness();
    const r = await h.call([
      ['x:SpamTag/set', { create: { t: TAG } }, 'a'],
      ['x:SpamDnsblServer/set', { create: { d: DNSBL } }, 'b'],
      ['x:HttpLookup/set', { create: { l: LIST } }, 'c'],
      ['x:SpamFileExtension/set', { create: { e: EXT } }, 'd'],
    ]);
    for (const [name, res] of r) expect(res.notCreated, name).toBeNull();
    const ids = r.map(([, res]) => Object.values(res.created as Record<string, { id: string }>)[0]!.id);
    expect(r[2]![1].created.l).toMatchObject({ enable: true, isGzipped: false, maxSize: 104857600, refresh: 43200000, timeout: 30000 });

    const got = await h.call([
      ['x:SpamTag/get', { ids: null }, 'a'],
      ['x:SpamDnsblServer/get', { ids: null }, 'b'],
      ['x:HttpLookup/query', { filter: { namespace: 'FREEMAIL' } }, 'c'],
      ['x:SpamFileExtension/query', { filter: { extension: 'ex' }, sort: [{ property: 'extension' }] }, 'd'],
    ]);
    expect(got[0]![1].list).toEqual([{ id: ids[0], ...TAG }]);
    expect(got[1]![1].list[0]).toEqual({ id: ids[1], '@type': 'Ip', name: 'MY_RBL', enable: true, zone: { match: [], else: DNSBL.zone.else }, tag: { match: [DNSBL.tag.match['0']], else: 'false' } });
    expect(got[2]![1].ids).toEqual([ids[2]]);
    expect(got[3]![1].ids).toEqual([ids[3]]);

    const upd = await h.call([
      ['x:SpamTag/set', { update: { [ids[0]!]: { score: -1 } } }, 'a'],
      ['x:SpamTag/get', { ids: [ids[0]] }, 'b'],
    ]);
    expect(upd[0]![1].updated).toEqual({ [ids[0]!]: null });
    expect(upd[1]![1].list[0].score).toBe(-1);
  });

  it('refuses invalid objects with invalidProperties and JSON-pointer paths, and duplicates with alreadyExists', async () => {
    h = await startHarness();
    const r = await h.call([
      ['x:SpamTag/set', { create: { a: { '@type': 'Score', tag: 'X', score: 'high' }, b: { '@type': 'Block', tag: 'Y' }, c: TAG, d: TAG } }, 's'],
      [
        'x:SpamDnsblServer/set',
        {
          create: {
            a: { ...DNSBL, zone: { else: 'len(' } },
            b: { ...DNSBL, colour: 1 },
            // The tag expression compiles on write too, over the answer's Ip variables.
            c: { ...DNSBL, name: 'bad-tag', tag: { else: '(((( nope' } },
            e: { ...DNSBL, name: 'unknown-fn', tag: { match: [{ if: 'undefined_fn(1)', then: "'X'" }], else: "''" } },
          },
        },
        'd',
      ],
      ['x:HttpLookup/set', { create: { a: { ...LIST, url: 'ftp://x' } } }, 'h'],
    ]);
    const tags = r[0]![1];
    expect(tags.notCreated.a).toMatchObject({ type: 'invalidProperties', properties: ['score'] });
    expect(tags.notCreated.b).toMatchObject({ type: 'invalidProperties', properties: ['@type'] });
    expect(tags.notCreated.d).toMatchObject({ type: 'alreadyExists', properties: ['tag'] });
    expect(r[1]![1].notCreated.a).toMatchObject({ type: 'invalidProperties', properties: ['zone/else'] });
    expect(r[1]![1].notCreated.b).toMatchObject({ type: 'invalidProperties', properties: ['colour'] });
    expect(r[1]![1].notCreated.c).toMatchObject({ type: 'invalidProperties', properties: ['tag/else'] });
    expect(r[1]![1].notCreated.e).toMatchObject({ type: 'invalidProperties', properties: ['tag/match/0/if'] });
    expect(r[2]![1].notCreated.a).toMatchObject({ type: 'invalidProperties', properties: ['url'], description: 'url: expected an http(s) URL' });
  });

  it('a lookup namespace belongs to one StoreLookup or one HttpLookup, not both', async () => {
    h = await startHarness();
    const list = (await h.call([['x:HttpLookup/set', { create: { l: LIST } }, 'a']]))[0]![1].created.l.id;
    const r = await h.call([
      ['x:StoreLookup/set', { create: { s: { namespace: LIST.namespace, store: { '@type': 'Sqlite', path: 'x.db' } } } }, 'b'],
      ['x:StoreLookup/set', { create: { s: { namespace: 'other', store: { '@type': 'Sqlite', path: 'x.db' } } } }, 'c'],
      ['x:HttpLookup/set', { create: { l: { ...LIST, namespace: 'other' } } }, 'd'],
    ]);
    expect(r[0]![1].notCreated.s).toEqual({
      type: 'alreadyExists', description: `namespace "${LIST.namespace}" is already used by x:HttpLookup ${list}`, properties: ['namespace'], existingId: list,
    });
    expect(r[1]![1].created.s).toBeDefined();
    expect(r[2]![1].notCreated.l).toMatchObject({ type: 'alreadyExists', existingId: r[1]![1].created.s.id });
  });

  it('has its own permissions per type', async () => {
    h = await startHarness();
    const tok = h.token(['sysSpamTagGet', 'sysSpamTagQuery', 'sysHttpLookupCreate']);
    const r = await h.call(
      [
        ['x:SpamTag/set', { create: { t: TAG } }, 'a'],
        ['x:SpamTag/get', { ids: null }, 'b'],
        ['x:SpamDnsblServer/get', { ids: null }, 'c'],
        ['x:HttpLookup/set', { create: { l: LIST } }, 'd'],
        ['x:SpamFileExtension/query', {}, 'e'],
      ],
      tok,
    );
    expect(r[0]![1].notCreated.t).toEqual({ type: 'forbidden', description: 'missing permission sysSpamTagCreate' });
    expect(r[1]![1].list).toEqual([]);
    expect(r[2]).toEqual(['error', { type: 'forbidden', description: 'missing permission sysSpamDnsblServerGet' }, 'c']);
    expect(Object.keys(r[3]![1].created)).toEqual(['l']);
    expect(r[4]).toEqual(['error', { type: 'forbidden', description: 'missing permission sysSpamFileExtensionQuery' }, 'e']);
  });

  it('persists across a restart, reaches the running engine, and loadManagedRuleSet reads it', async () => {
    h = await startHarness();
    const engine = h.server.engine as unknown as SpamEngine;
    await h.call([
      ['x:SpamTag/set', { create: { t: TAG } }, 'a'],
      ['x:SpamDnsblServer/set', { create: { d: DNSBL } }, 'b'],
      ['x:HttpLookup/set', { create: { l: LIST } }, 'c'],
      ['x:SpamFileExtension/set', { create: { e: EXT } }, 'd'],
    ]);
    expect(engine.tags.lookup('MY_TAG')).toEqual({ kind: 'score', score: 2.5 });
    expect(engine.analysis?.dnsblServers?.map((s) => s.name)).toEqual(['MY_RBL']);
    expect(engine.analysis?.fileExtensions?.map((e) => e.extension)).toEqual(['exe']);

    const set = loadManagedRuleSet(h.db);
    expect([set.tags, set.dnsblServers, set.httpLookups, set.fileExtensions].map((l) => l.length)).toEqual([1, 1, 1, 1]);
    expect(set.httpLookups[0]).toMatchObject(LIST);

    await h.server.close();
    const again = await createJmapServer({ db: h.db, log: () => undefined });
    try {
      const res = await fetch(`${again.url}/jmap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ using: ['urn:ietf:params:jmap:core'], methodCalls: [['x:SpamFileExtension/get', { ids: null }, 'g']] }),
      });
      const body = (await res.json()) as { methodResponses: [string, { list: unknown[] }, string][] };
      expect(body.methodResponses[0]![1].list).toMatchObject([EXT]);
    } finally {
      await again.close();
    }
  });
});
