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
