import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLookupStore, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
import { redisCli, startRedisSentinel, waitFor, type RedisSentinelServer } from '../servers/index.js';
import { kvContract } from './contract.js';

let sentinel: RedisSentinelServer;
let store: LookupStore;

beforeAll(async () => {
  sentinel = await startRedisSentinel();
  store = createLookupStore(
    'sentinel-test',
    { '@type': 'RedisSentinel', urls: sentinel.urls, serviceName: sentinel.serviceName, authUsername: null, timeout: 1000 },
    { cache: { enabled: false } },
  );
});
afterAll(async () => {
  await store?.close();
  await sentinel?.stop();
});

describe('Redis Sentinel store', () => {
  kvContract(() => store, 'sentinel');

  it('writes through the master the sentinels name, and the replica follows', async () => {
    await store.keySet('via-sentinel', 'yes');
    expect(redisCli(sentinel.masterPort, 'GET', 'via-sentinel')).toBe('yes');
    await waitFor('replication', () => redisCli(sentinel.replicaPort, 'GET', 'via-sentinel') === 'yes', 10_000);
  });

  it('follows a failover: the master dies, the replica is promoted, lookups resume', async () => {
    await store.keySet('before-failover', 'kept');
    await store.counterIncr('failover-count', 10);
    await waitFor('replication', () => redisCli(sentinel.replicaPort, 'GET', 'before-failover') === 'kept', 10_000);
    const oldMaster = sentinel.currentMasterPort();
    await sentinel.killMaster();

    // While the sentinels decide, calls fail cleanly (LookupStoreError), never hang or crash.
    const during = await store.keyGet('before-failover').catch((e: unknown) => e);
    if (during !== 'kept') expect(during).toBeInstanceOf(LookupStoreError);

    const newMaster = await sentinel.waitForFailover(oldMaster, 30_000);
    expect(newMaster).toBe(sentinel.replicaPort);
    await waitFor('the store to reach the new master', async () => (await store.keySet('after-failover', 'ok').then(() => true, () => false)), 30_000, 200);
    expect(await store.keyGet('before-failover')).toBe('kept');
    expect(await store.counterIncr('failover-count', 1)).toBe(11);
    expect(redisCli(newMaster, 'GET', 'after-failover')).toBe('ok');
  }, 90_000);
});

describe('Redis Sentinel store with separate data-node and sentinel credentials', () => {
  let secured: RedisSentinelServer;
  const stores: LookupStore[] = [];
  const open = (more: Record<string, unknown>) => {
    const s = createLookupStore('sentinel-auth', { '@type': 'RedisSentinel', urls: secured.urls, timeout: 1000, ...more }, { cache: { enabled: false } });
    stores.push(s);
    return s;
  };
  beforeAll(async () => {
    secured = await startRedisSentinel({ password: 'data-pw', sentinelPassword: 'sentinel-pw' });
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await secured?.stop();
  });

  it('authenticates to sentinels with sentinelSecret and to data nodes with authSecret', async () => {
    process.env.SPAMRULE_TEST_SENTINEL_PW = 'sentinel-pw';
    // requirepass protects Redis' "default" user; the schema's default username "stalwart" has no ACL here.
    const s = open({
      authUsername: 'default',
      authSecret: { '@type': 'Value', secret: 'data-pw' },
      sentinelSecret: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_SENTINEL_PW' },
    });
    await s.keySet('auth', 'ok');
    expect(await s.keyGet('auth')).toBe('ok');
    expect(redisCli(secured.masterPort, 'GET', 'auth')).toBe('ok');
  });

  it('without sentinelSecret, authenticates to the sentinels with the credentials written in their URLs', async () => {
    const urls = secured.urls.map((u) => u.replace('redis://', 'redis://:sentinel-pw@'));
    const s = createLookupStore('sentinel-url-auth', { '@type': 'RedisSentinel', urls, timeout: 1000, authUsername: null, authSecret: { '@type': 'Value', secret: 'data-pw' } }, { cache: { enabled: false } });
    stores.push(s);
    await s.keySet('url-auth', 'ok');
    expect(redisCli(secured.masterPort, 'GET', 'url-auth')).toBe('ok');
    // URLs that disagree are refused when the store is created, passwords masked.
    const mixed = [urls[0]!, secured.urls[1] ?? secured.urls[0]!.replace('redis://', 'redis://:other@')];
    expect(() => createLookupStore('sentinel-mixed', { '@type': 'RedisSentinel', urls: mixed })).toThrow(/urls: the URLs carry different user names or passwords/);
  });

  it.each([
    ['a wrong sentinel secret', { authUsername: null, authSecret: { '@type': 'Value', secret: 'data-pw' }, sentinelSecret: { '@type': 'Value', secret: 'nope' } }],
    ['a wrong data-node secret', { authUsername: null, authSecret: { '@type': 'Value', secret: 'nope' }, sentinelSecret: { '@type': 'Value', secret: 'sentinel-pw' } }],
    ['the credentials swapped', { authUsername: null, authSecret: { '@type': 'Value', secret: 'sentinel-pw' }, sentinelSecret: { '@type': 'Value', secret: 'data-pw' } }],
  ])('%s fails cleanly with a LookupStoreError', async (_name, creds) => {
    const err = await open(creds).keyGet('auth').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LookupStoreError);
    expect((err as Error).message).toMatch(/^lookup store "sentinel-auth": key_get (failed|timed out)/);
  });
});
