/**
 * Where a managed store's connections go (src/lookup/store-pins.ts, store-policy.ts `resolveStorePins`):
 * each host name to the first address the policy's resolver gave and checked when the store started;
 * addresses a Redis Cluster or Sentinel announces only when the store's own names resolved there or the
 * policy allows them; a name without a checked address nowhere.
 */
import { describe, expect, it } from 'vitest';
import { createLookupStore, LookupConfigError, parseLookupStoreConfig, type LookupStoreConfig } from '../../src/lookup/index.js';
import { HostPins } from '../../src/lookup/store-pins.js';
import { resolveStorePins, resolveStorePolicy } from '../../src/lookup/store-policy.js';

const config = (json: unknown): LookupStoreConfig => {
  const r = parseLookupStoreConfig(json);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
};
const zone: Record<string, string[]> = {
  'db.example.test': ['not an address', '192.0.2.10', '192.0.2.11'],
  'replica.example.test': ['::ffff:192.0.2.20'],
  'meta.example.test': ['192.0.2.30', '169.254.169.254'],
};
const resolve = async (h: string): Promise<string[]> => zone[h.replace(/\.$/, '')] ?? [];

describe('resolveStorePins', () => {
  it('pins each name to the first address its resolver gave, and carries the allowedHosts', async () => {
    const c = config({ '@type': 'PostgreSql', host: 'DB.example.test.', readReplicas: [{ host: 'replica.example.test' }, { host: '10.0.0.5' }] });
    const r = await resolveStorePins(c, resolveStorePolicy({ allowedHosts: ['*.example.test', '10.0.0.0/8'] }), resolve);
    expect(r).toEqual({ ok: true, pinned: { addresses: { 'db.example.test': '192.0.2.10', 'replica.example.test': '::ffff:c000:214' }, allowedHosts: ['*.example.test', '10.0.0.0/8'] } });
  });

  it('refuses a name with a metadata address among its answers, and names the ones that gave none', async () => {
    const policy = resolveStorePolicy();
    const refused = await resolveStorePins(config({ '@type': 'Redis', url: 'redis://meta.example.test' }), policy, resolve);
    expect(refused).toMatchObject({ ok: false, problems: [{ path: 'url', message: expect.stringContaining('resolves to 169.254.169.254') }] });
    const silent = await resolveStorePins(config({ '@type': 'RedisCluster', urls: ['redis://nowhere.example.test:7000', 'redis://db.example.test:7001'] }), policy, resolve);
    expect(silent).toEqual({ ok: false, problems: [], unresolved: ['nowhere.example.test'] });
  });
});

describe('HostPins.route', () => {
  const pins = new HostPins({ addresses: { 'db.example.test': '192.0.2.10', 'v4mapped.example.test': '::ffff:192.0.2.20' }, allowedHosts: ['*.example.test', '/run/redis.sock'] });

  it('sends a name to its pinned address, with the name as TLS server name', () => {
    expect(pins.route('DB.Example.Test.')).toEqual({ host: '192.0.2.10', servername: 'db.example.test' });
    expect(pins.route('other.example.test')).toEqual({ problem: expect.stringContaining('has no address checked by the store policy') });
  });

  it('lets an announced address through when a name of the store resolved to it (in any spelling), or when the policy allows it', () => {
    expect(pins.route('192.0.2.10')).toEqual({ host: '192.0.2.10' });
    expect(pins.route('::ffff:192.0.2.10')).toEqual({ host: '::ffff:c000:20a' });
    expect(pins.route('192.0.2.20')).toEqual({ host: '192.0.2.20' });
    expect(pins.route('192.0.2.99')).toEqual({ problem: expect.stringContaining('192.0.2.99 is not among the hosts the server allows') });
    expect(pins.route('169.254.169.254')).toEqual({ problem: expect.stringContaining('link-local or cloud metadata address') });
    expect(new HostPins({ addresses: {}, allowedHosts: ['*'] }).route('10.1.2.3')).toEqual({ host: '10.1.2.3' });
  });

  it('keeps a socket path the policy lists', () => {
    expect(pins.route('/run/redis.sock')).toEqual({ host: '/run/redis.sock' });
    expect(pins.route('/var/run/other.sock')).toEqual({ problem: expect.stringContaining('is not among') });
  });
});

describe('createLookupStore with pins', () => {
  it('refuses a store whose host names are not all pinned, naming them', () => {
    const pinned = { addresses: { 'db.example.test': '192.0.2.10' }, allowedHosts: ['*'] };
    expect(() => createLookupStore('ns', { '@type': 'PostgreSql', host: 'db.example.test', readReplicas: [{ host: 'r.example.test' }] }, { pinned })).toThrow(LookupConfigError);
    expect(() => createLookupStore('ns', { '@type': 'Sharded', stores: [{ '@type': 'Redis', url: 'redis://db.example.test' }, { '@type': 'Redis', url: 'redis://s2.example.test' }] }, { pinned })).toThrow(
      /no checked address for "s2\.example\.test"/,
    );
  });
});
