/**
 * The addresses a managed store's connections are pinned to (src/lookup/store-pins.ts) reach the scan
 * workers of `spamrule serve`: the JMAP side records them with the store's configuration
 * (src/cli/serve-managed.ts) and the pool hands both to every thread, which connects where they say.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lookup } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpamRuleInput } from '../../src/engine/index.js';
import { SpamEnginePool } from '../../src/server/index.js';
import { startManaged } from '../../src/cli/serve-managed.js';
import type { ServeConfig } from '../../src/server/config.js';
import { redisCli, startRedis, type RedisServer } from '../servers/index.js';
import { jmapCall } from '../jmap/harness.js';

const listed: SpamRuleInput = {
  '@type': 'Any',
  name: 'PINNED',
  condition: { match: [{ if: "key_exists('pinned', from.domain)", then: "'PINNED_LISTED'" }], else: 'false' },
};
const mail = 'From: a@listed.example\r\nTo: b@example.com\r\nSubject: hi\r\n\r\nhello\r\n';

let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  redisCli(redis.port, 'SET', 'listed.example', '1');
  dir = mkdtempSync(join(tmpdir(), 'spamrule-pins-'));
}, 60_000);
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Classifies until the store answers (a thread builds its stores when the rule set reaches it). */
async function tagsOnceListed(pool: SpamEnginePool): Promise<string[]> {
  let tags: string[] = [];
  for (let i = 0; i < 50 && !tags.includes('PINNED_LISTED'); i++) {
    tags = (await pool.classify(mail)).tags;
    if (!tags.includes('PINNED_LISTED')) await new Promise((r) => setTimeout(r, 100));
  }
  return tags;
}

describe('pinned stores in the scan workers', () => {
  it('a worker connects a name at its pinned address (a name the system resolver does not know)', async () => {
    await expect(lookup('cache.pinned.test')).rejects.toThrow();
    const pool = new SpamEnginePool({
      rules: [listed],
      workers: 1,
      engine: { analysis: false },
      stores: [
        {
          namespace: 'pinned',
          config: { '@type': 'Redis', url: `redis://cache.pinned.test:${redis.port}`, timeout: 2000 },
          pinned: { addresses: { 'cache.pinned.test': '127.0.0.1' }, allowedHosts: ['cache.pinned.test'] },
        },
      ],
    });
    try {
      expect(await tagsOnceListed(pool)).toContain('PINNED_LISTED');
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('serve --db: a StoreLookup written over JMAP reaches the workers with the addresses checked when it started', async () => {
    const pool = new SpamEnginePool({ rules: [listed], workers: 1, engine: { analysis: false } });
    const c = { db: join(dir, 'managed.db'), managedStores: { allowedHosts: ['localhost'] } } as unknown as ServeConfig;
    const jmap = await startManaged(c, { host: '127.0.0.1', port: 0 }, pool, () => undefined);
    try {
      const token = jmap.tokens.create('admin', ['sysStoreLookupCreate']).token;
      const r = await jmapCall(jmap.url, token, [['x:StoreLookup/set', { create: { k: { namespace: 'pinned', store: { '@type': 'Redis', url: `redis://localhost:${redis.port}`, timeout: 2000 } } } }, '0']]);
      expect(r[0]![1].created.k.id).toBeTypeOf('string');
      await jmap.settled();
      // The system resolver's address for "localhost", checked and pinned when the store started.
      const [{ address }] = await lookup('localhost', { all: true });
      expect(pool.ruleSet.stores?.find((s) => s.namespace === 'pinned')?.pinned).toEqual({ addresses: { localhost: address }, allowedHosts: ['localhost'] });
      // (The registry's rules, none here, replaced the pool's when the JMAP side started.)
      pool.loadRules([listed]);
      expect(await tagsOnceListed(pool)).toContain('PINNED_LISTED');
    } finally {
      await jmap.close();
      await pool.close();
    }
  }, 60_000);
});
