/**
 * The hosts a StoreLookup written over JMAP may connect to (docs/jmap.md "Secrets and the store policy";
 * src/lookup/store-hosts.ts): by default any host but the link-local and cloud metadata addresses, in any
 * form the resolver reads (literal, IPv4-mapped, decimal, a host name that resolves there); with
 * `allowedHosts`, only the addresses, ranges and names listed. A refused host is an RFC 8620 `invalidProperties`
 * SetError naming the property; an allowed one works against a real Redis; a store already in the registry
 * that breaks the policy is not started, and the log says why.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJmapServer, type JmapServer } from '../../src/jmap/index.js';
import { redisCli, startRedis, type RedisServer } from '../servers/index.js';
import { startHarness, type Harness } from './harness.js';

/** A resolver from a fixed map, as a static DNS zone: the names the tests use and nothing else. */
const ZONE: Record<string, string[]> = {
  'metadata.example.test': ['169.254.169.254'],
  'v6meta.example.test': ['2001:db8::5', 'fe80::1'],
  'redis.internal': ['10.0.0.9'],
  'db.example.test': ['192.0.2.10'],
  'nat64meta.example.test': ['64:ff9b::a9fe:a9fe'],
};
const resolveStoreHost = async (host: string): Promise<string[]> => ZONE[host] ?? [];

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((x) => x.close()));
});
async function harness(opts: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const x = await startHarness({ resolveStoreHost, ...opts });
  harnesses.push(x);
  return x;
}

async function createStore(h: Harness, store: unknown, namespace = 'ns'): Promise<any> {
  const r = await h.call([['x:StoreLookup/set', { create: { k: { namespace, store } } }, 's']]);
  return r[0]![1];
}

describe('default policy: any host but link-local and cloud metadata addresses', () => {
  it.each([
    ['an IPv4 link-local host', { '@type': 'PostgreSql', host: '169.254.169.254' }, 'store/host'],
    ['a decimal IPv4 the resolver reads as 169.254.169.254', { '@type': 'MySql', host: '2852039166' }, 'store/host'],
    ['an IPv4-mapped one', { '@type': 'PostgreSql', host: '::ffff:169.254.169.254' }, 'store/host'],
    ['an IPv6 link-local Redis URL', { '@type': 'Redis', url: 'redis://[fe80::1]:6379' }, 'store/url'],
    ["AWS's IPv6 metadata address", { '@type': 'Redis', url: 'redis://[fd00:ec2::254]:80' }, 'store/url'],
    ['a replica', { '@type': 'PostgreSql', host: 'db', readReplicas: [{ host: '169.254.1.1' }] }, 'store/readReplicas/0/host'],
    ['a cluster node', { '@type': 'RedisCluster', urls: ['redis://10.0.0.1:7000', 'redis://0xa9fea9fe:7000'] }, 'store/urls/1'],
    ['a shard', { '@type': 'Sharded', stores: [{ '@type': 'Redis' }, { '@type': 'Redis', url: 'redis://169.254.169.254' }] }, 'store/stores/1/url'],
    ['a name that resolves there', { '@type': 'PostgreSql', host: 'metadata.example.test' }, 'store/host'],
    ['a name with one IPv6 link-local address', { '@type': 'Redis', url: 'redis://v6meta.example.test' }, 'store/url'],
    ['the NAT64 form (64:ff9b::/96, RFC 6052)', { '@type': 'PostgreSql', host: '64:ff9b::169.254.169.254' }, 'store/host'],
    ['the IPv4-translated form (RFC 2765)', { '@type': 'Redis', url: 'redis://[::ffff:0:a9fe:a9fe]:6379' }, 'store/url'],
    ['a NAT64 name', { '@type': 'MySql', host: 'nat64meta.example.test' }, 'store/host'],
  ])('%s: invalidProperties naming the property', async (_name, store, path) => {
    const h = await harness();
    const res = await createStore(h, store);
    expect(res.notCreated.k).toMatchObject({ type: 'invalidProperties', properties: [path] });
    expect(res.notCreated.k.description).toMatch(/link-local or cloud metadata address, refused for managed stores unless the server lists it in allowedHosts/);
    expect(h.server.repo.snapshot('StoreLookup').objects.size).toBe(0);
  });

  it('accepts other addresses and names, as before; an update cannot point a store at a metadata host', async () => {
    const h = await harness();
    const res = await createStore(h, { '@type': 'PostgreSql', host: 'db.example.test', readReplicas: [{ host: '10.1.2.3' }, { host: '127.0.0.1' }] });
    const id = res.created.k.id as string;
    for (const patch of [{ 'store/host': 'metadata.example.test' }, { 'store/readReplicas/1/host': '169.254.169.254' }]) {
      const r = await h.call([['x:StoreLookup/set', { update: { [id]: patch } }, 'u']]);
      expect(r[0]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties' });
      expect(r[0]![1].notUpdated[id].properties[0]).toMatch(/^store\/(host|readReplicas\/1\/host)$/);
    }
    expect((h.server.repo.snapshot('StoreLookup').objects.get(id) as any).store.host).toBe('db.example.test');
  });
});

describe('allowedHosts', () => {
  it('admits only the addresses, ranges and names listed; a range admits no names', async () => {
    const h = await harness({ storePolicy: { allowedHosts: ['127.0.0.1', '192.0.2.0/24', 'redis.internal', '*.example.test'] } });
    for (const [store, path, why] of [
      [{ '@type': 'PostgreSql', host: '10.0.0.5' }, 'store/host', '10.0.0.5 is not among the hosts the server allows'],
      [{ '@type': 'Redis', url: 'redis://cache.other.test:6379' }, 'store/url', 'host "cache.other.test" is not among the hosts the server allows for managed stores ("127.0.0.1", "192.0.2.0/24", "redis.internal", "*.example.test"); a host name must be listed by name'],
      [{ '@type': 'Redis', url: 'redis://example.test' }, 'store/url', 'host "example.test" is not among'],
      [{ '@type': 'PostgreSql', host: '/var/run/postgresql' }, 'store/host', 'the socket "/var/run/postgresql" is not among'],
    ] as const) {
      const res = await createStore(h, store);
      expect(res.notCreated.k).toMatchObject({ type: 'invalidProperties', properties: [path] });
      expect(res.notCreated.k.description).toContain(why);
    }
    for (const [i, store] of [
      { '@type': 'PostgreSql', host: '192.0.2.44' },
      { '@type': 'Redis', url: 'redis://redis.internal:6379' },
      { '@type': 'RedisCluster', urls: ['redis://a.example.test:7000', 'redis://127.0.0.1:7001'] },
    ].entries())
      expect((await createStore(h, store, `ok${i}`)).created?.k.id, JSON.stringify(store)).toBeTypeOf('string');
  });

  it('a host that is no host name is refused: getaddrinfo would read it up to a NUL, past the name listed', async () => {
    // Node passes the name to getaddrinfo as a C string: this one connects to 10.0.0.5, not to a subdomain.
    const h = await harness({ storePolicy: { allowedHosts: ['*.example.test'] } });
    for (const host of ['10.0.0.5\u0000.example.test', '169.254.169.254\u0000.a.example.test', 'a b.example.test', 'a,b.example.test', 'b\u00fccher.example.test']) {
      const res = await createStore(h, { '@type': 'PostgreSql', host });
      expect(res.notCreated?.k, JSON.stringify(host)).toMatchObject({ type: 'invalidProperties', properties: ['store/host'] });
      expect(res.notCreated.k.description).toContain(`host ${JSON.stringify(host)} is neither an IP address, a socket path nor a host name`);
    }
    // Under the default `*` too (the name check alone would depend on the resolver's answer).
    const any = await harness();
    expect((await createStore(any, { '@type': 'MySql', host: 'db.example.test\u0000x' })).notCreated.k.properties).toEqual(['store/host']);
    // Names as the resolver takes them still pass, in any case and with a trailing dot.
    expect((await createStore(h, { '@type': 'PostgreSql', host: 'DB_1.Example.Test.' })).created?.k.id).toBeTypeOf('string');
  });

  it('a wider range or * never opens the metadata addresses; an entry inside their range does', async () => {
    const wide = await harness({ storePolicy: { allowedHosts: ['*', '0.0.0.0/0', '::/0'] } });
    expect((await createStore(wide, { '@type': 'PostgreSql', host: '169.254.169.254' })).notCreated.k.properties).toEqual(['store/host']);
    const opened = await harness({ storePolicy: { allowedHosts: ['169.254.10.0/24', 'metadata.example.test'] } });
    expect((await createStore(opened, { '@type': 'PostgreSql', host: '169.254.10.7' }, 'a')).created.k.id).toBeTypeOf('string');
    expect((await createStore(opened, { '@type': 'PostgreSql', host: '169.254.169.254' }, 'b')).notCreated.k.properties).toEqual(['store/host']);
    // Through a translator, the same: the IPv4 address it reaches is what the entries are read against.
    expect((await createStore(opened, { '@type': 'PostgreSql', host: '64:ff9b::169.254.10.8' }, 'd')).created.k.id).toBeTypeOf('string');
    expect((await createStore(wide, { '@type': 'PostgreSql', host: '64:ff9b::169.254.10.8' }, 'e')).notCreated.k.properties).toEqual(['store/host']);
    // Listed by name, but it resolves to an address no entry opens.
    expect((await createStore(opened, { '@type': 'PostgreSql', host: 'metadata.example.test' }, 'c')).notCreated.k.properties).toEqual(['store/host']);
  });

  it('refuses an entry that is none of the forms, before opening anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-hosts-'));
    try {
      await expect(createJmapServer({ db: join(dir, 'x.db'), storePolicy: { allowedHosts: ['redis internal'] } })).rejects.toThrow(/allowed host "redis internal" is neither \*/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('an allowed store against a real Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  }, 60_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it('is created and answers lookups', async () => {
    redisCli(redis.port, 'SET', 'listed.example', '1');
    const h = await harness({ storePolicy: { allowedHosts: [redis.host] } });
    const res = await createStore(h, { '@type': 'Redis', url: redis.url }, 'real');
    expect(res.created.k.id).toBeTypeOf('string');
    await h.server.settled();
    const store = (h.server.engine as unknown as { lookups: { get(ns: string): { keyExists(k: string): Promise<boolean> } | undefined } }).lookups.get('real');
    expect(await store?.keyExists('listed.example')).toBe(true);
    expect(await store?.keyExists('unlisted.example')).toBe(false);
  });
});

describe('stores already in the registry', () => {
  it('are checked again when the server starts them, names resolved then: a refused one is not started, and the log says why', async () => {
    // Written while the operator allowed the address, and while the name resolved elsewhere.
    const lax = await startHarness({
      storePolicy: { allowedHosts: ['*', '169.254.169.254'] },
      resolveStoreHost: async () => ['192.0.2.1'],
      createLookupStore: () => ({ close: async () => undefined }),
    });
    let strict: JmapServer | undefined;
    try {
      const [[, res]] = await lax.call([
        [
          'x:StoreLookup/set',
          {
            create: {
              a: { namespace: 'meta', store: { '@type': 'PostgreSql', host: '169.254.169.254' } },
              b: { namespace: 'rebound', store: { '@type': 'Redis', url: 'redis://metadata.example.test:6379' } },
              c: { namespace: 'fine', store: { '@type': 'Redis', url: 'redis://db.example.test:6379' } },
            },
          },
          '0',
        ],
      ]);
      expect(Object.keys(res!.created)).toEqual(['a', 'b', 'c']);
      await lax.server.close();
      const started: string[] = [];
      const logs: string[] = [];
      strict = await createJmapServer({ db: lax.db, log: (l) => logs.push(l), resolveStoreHost, createLookupStore: (ns) => (started.push(ns), { close: async () => undefined }) });
      await strict.settled();
      expect(started).toEqual(['fine']);
      expect(logs.join('\n')).toMatch(/lookup store "meta" not started: refused by the store policy: host: 169\.254\.169\.254 is a link-local or cloud metadata address/);
      expect(logs.join('\n')).toMatch(/lookup store "rebound" not started: refused by the store policy: url: host "metadata\.example\.test" resolves to 169\.254\.169\.254/);
    } finally {
      await strict?.close().catch(() => undefined);
      await lax.server.close().catch(() => undefined); // (closed already unless the test failed before)
      rmSync(lax.dir, { recursive: true, force: true });
    }
  });
});
