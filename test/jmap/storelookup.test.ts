import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  // Environment-variable secrets named MYSQL_… may be used (the store policy, store-policy.test.ts).
  h = await startHarness({ storePolicy: { secretEnvPrefixes: ['MYSQL_'] } });
});
afterAll(() => h.close());

async function create(obj: unknown): Promise<any> {
  return (await h.call([['x:StoreLookup/set', { create: { k: obj } }, 's']]))[0]![1];
}
async function get(id: string): Promise<any> {
  return (await h.call([['x:StoreLookup/get', { ids: [id] }, 'g']]))[0]![1].list[0];
}

const PG_DEFAULTS = {
  timeout: 15000,
  useTls: false,
  allowInvalidCerts: false,
  poolMaxConnections: 10,
  poolRecyclingMethod: 'fast',
  readReplicas: [],
  host: 'db',
  port: 5432,
  database: 'stalwart',
  authUsername: 'stalwart',
  options: null,
};

describe('x:StoreLookup create and get', () => {
  it('stores the Stalwart test fact (§7 case 1) and reads it back with defaults', async () => {
    // Stalwart's relative `data/smtp_sql.db` is taken from the server's directory for Sqlite stores (the
    // registry's) and stored absolute, so `created` echoes the store.
    const res = await create({ namespace: 'sql', store: { '@type': 'Sqlite', path: 'data/smtp_sql.db', poolWorkers: null, poolMaxConnections: 10 } });
    const id = res.created.k.id;
    const store = { path: join(h.dir, 'data/smtp_sql.db'), poolWorkers: null, poolMaxConnections: 10, '@type': 'Sqlite' };
    expect(res.created.k).toEqual({ id, store });
    expect(await get(id)).toEqual({ id, namespace: 'sql', store });
    // An absolute path inside that directory is kept as given, and not echoed.
    const abs = await create({ namespace: 'sql2', store: { '@type': 'Sqlite', path: join(h.dir, 'lists.db') } });
    expect(abs.created.k).toEqual({ id: abs.created.k.id });
  });

  it('defaults namespace to the id and echoes it', async () => {
    const res = await create({ store: { '@type': 'Redis' } });
    const id = res.created.k.id;
    expect(res.created.k).toEqual({ id, namespace: id });
    expect(await get(id)).toEqual({
      id,
      namespace: id,
      store: { url: 'redis://127.0.0.1', timeout: 10000, poolMaxConnections: 10, poolTimeoutCreate: 30000, poolTimeoutWait: 30000, poolTimeoutRecycle: 30000, '@type': 'Redis' },
    });
  });

  it('never returns a Value secret, keeps env-var names (§7 case 25)', async () => {
    const res = await create({ namespace: 'pg', store: { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'Value', secret: 'hunter2' } } });
    const got = await get(res.created.k.id);
    expect(got.store).toEqual({ ...PG_DEFAULTS, authSecret: { '@type': 'Value' }, '@type': 'PostgreSql' });
    expect(JSON.stringify(got)).not.toContain('hunter2');
    const env = await create({ namespace: 'my', store: { '@type': 'MySql', host: 'm', authSecret: { '@type': 'EnvironmentVariable', variableName: 'MYSQL_PW' } } });
    expect((await get(env.created.k.id)).store.authSecret).toEqual({ '@type': 'EnvironmentVariable', variableName: 'MYSQL_PW' });
  });

  it('accepts sets as arrays or {value:true} maps and emits maps; lists index-keyed or arrays', async () => {
    const a = await create({ namespace: 'cl1', store: { '@type': 'RedisCluster', urls: ['redis://a:1', 'redis://b:2'] } });
    const b = await create({ namespace: 'cl2', store: { '@type': 'RedisCluster', urls: { 'redis://a:1': true, 'redis://c:3': false } } });
    expect((await get(a.created.k.id)).store.urls).toEqual({ 'redis://a:1': true, 'redis://b:2': true });
    expect((await get(b.created.k.id)).store.urls).toEqual({ 'redis://a:1': true });
    const s = await create({ namespace: 'sh', store: { '@type': 'Sharded', stores: { '0': { '@type': 'Redis', url: 'redis://x' }, '1': { '@type': 'Redis', url: 'redis://y' } } } });
    const stores = (await get(s.created.k.id)).store.stores;
    expect(stores.map((x: any) => x.url)).toEqual(['redis://x', 'redis://y']);
  });

  it('refuses a duplicate namespace with alreadyExists', async () => {
    const first = await create({ namespace: 'uniq', store: { '@type': 'Redis' } });
    const again = await create({ namespace: ' uniq ', store: { '@type': 'Redis' } });
    expect(again.notCreated.k).toMatchObject({ type: 'alreadyExists', properties: ['namespace'], existingId: first.created.k.id });
  });

  it.each([
    [{ namespace: 'x' }, ['store'], 'store: required'], // §7 case 16
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', port: '5432' } }, ['store/port'], 'expected a non-negative integer'], // §7 case 17
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', port: 70000 } }, ['store/port'], 'must be at most 65535'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', port: 0 } }, ['store/port'], 'must be at least 1'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql' } }, ['store/host'], 'store/host: required'],
    [{ namespace: 'x', store: { '@type': 'Sharded', stores: { '0': { '@type': 'Redis' } } } }, ['store/stores'], 'needs at least 2 items'], // case 18
    [{ namespace: 'x', store: { '@type': 'Redis', timeout: '10s' } }, ['store/timeout'], 'duration in milliseconds'], // case 19
    [{ namespace: 'x', store: { '@type': 'Redis', timeout: 0 } }, ['store/timeout'], 'duration in milliseconds'],
    [{ namespace: 'x', store: { '@type': 'RedisCluster', maxRetryWait: 2000 } }, ['store/maxRetryWait'], 'must be at most 1024'],
    [{ namespace: 'x', store: { '@type': 'RedisCluster', protocolVersion: 'resp9' } }, ['store/protocolVersion'], 'expected one of resp2, resp3'],
    [{ namespace: 'x', store: { host: 'db' } }, ['store/@type'], 'missing or invalid "@type"'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'Value' } } }, ['store/authSecret/secret'], 'required'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', authSecret: { secret: 'x' } } }, ['store/authSecret/@type'], '@type'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', authSecret: null } }, ['store/authSecret'], 'not null'],
    [{ namespace: 'x', store: { '@type': 'Sqlite', path: 'p', host: 'h' } }, ['store/host'], 'unknown property'],
    [{ namespace: 'x', host: 'db', store: { '@type': 'Redis' } }, ['host'], 'unknown property'],
    [{ namespace: '', store: { '@type': 'Redis' } }, ['namespace'], 'non-empty string'],
    [{ namespace: 'x', store: { '@type': 'PostgreSql', host: 'db', readReplicas: [{ port: 1 }] } }, ['store/readReplicas/0/host'], 'required'],
  ])('refuses %j with invalidProperties %j', async (obj, props, desc) => {
    const res = await create(obj);
    expect(res.notCreated.k.type).toBe('invalidProperties');
    expect(res.notCreated.k.properties).toEqual(props);
    expect(res.notCreated.k.description).toContain(desc);
  });
});

describe('x:StoreLookup update', () => {
  it('patches the store and keeps the secret (§7 case 23), but only for the same host and port', async () => {
    const id = (await create({ namespace: 'upd1', store: { '@type': 'PostgreSql', host: 'db', port: 6543, authSecret: { '@type': 'Value', secret: 's3' } } })).created.k.id;
    const stored = () => (h.server.repo.snapshot('StoreLookup').objects.get(id) as any).store;
    const r = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/database': 'lists' } } }, 'u']]);
    expect(r[0]![1].updated).toEqual({ [id]: null });
    const got = await get(id);
    expect(got.store).toMatchObject({ host: 'db', port: 6543, database: 'lists', authSecret: { '@type': 'Value' } });
    expect(stored().authSecret).toEqual({ '@type': 'Value', secret: 's3' });
    // Stalwart keeps the secret when only the host changes; here the stored password would then go to a
    // host of the caller's choosing, so the secret must come along (docs/jmap.md, "Secrets").
    for (const patch of [{ 'store/host': 'db2' }, { 'store/port': 5432 }, { store: { ...got.store, host: 'attacker.example' } }]) {
      const refused = await h.call([['x:StoreLookup/set', { update: { [id]: patch } }, 'u']]);
      expect(refused[0]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['store/authSecret'] });
      expect(refused[0]![1].notUpdated[id].description).toContain('send the secret again');
    }
    expect(stored()).toMatchObject({ host: 'db', port: 6543 });
    const moved = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/host': 'db2', 'store/authSecret/secret': 's4' } } }, 'u']]);
    expect(moved[0]![1].updated).toEqual({ [id]: null });
    expect(stored()).toMatchObject({ host: 'db2', authSecret: { '@type': 'Value', secret: 's4' } });
  });

  it('a replica moved to another host needs its secret again; the others keep theirs', async () => {
    const replica = (host: string, secret: string) => ({ host, authSecret: { '@type': 'Value', secret } });
    const id = (await create({ namespace: 'repl', store: { '@type': 'PostgreSql', host: 'db', readReplicas: [replica('r1', 'p1'), replica('r2', 'p2')] } })).created.k.id;
    const bad = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/readReplicas/1/host': 'elsewhere' } } }, 'u']]);
    expect(bad[0]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['store/readReplicas/1/authSecret'] });
    const wire = await get(id);
    // Written back from /get in the other order: each secret would follow its index to the other host.
    const swapped = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/readReplicas': [wire.store.readReplicas[1], wire.store.readReplicas[0]] } } }, 'u']]);
    expect(swapped[0]![1].notUpdated[id].properties).toEqual(['store/readReplicas/0/authSecret', 'store/readReplicas/1/authSecret']);
  });

  it('a whole store written back from /get keeps the stored secret; a new secret replaces it', async () => {
    const id = (await create({ namespace: 'upd2', store: { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'Value', secret: 'old' } } })).created.k.id;
    const wire = await get(id);
    await h.call([['x:StoreLookup/set', { update: { [id]: { store: { ...wire.store, timeout: 5000 } } } }, 'u']]);
    let stored = h.server.repo.snapshot('StoreLookup').objects.get(id) as any;
    expect(stored.store).toMatchObject({ timeout: 5000, authSecret: { '@type': 'Value', secret: 'old' } });
    await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/authSecret': { '@type': 'Value', secret: 'new' } } } }, 'u']]);
    stored = h.server.repo.snapshot('StoreLookup').objects.get(id) as any;
    expect(stored.store.authSecret).toEqual({ '@type': 'Value', secret: 'new' });
    await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/authSecret': { '@type': 'None' } } } }, 'u']]);
    stored = h.server.repo.snapshot('StoreLookup').objects.get(id) as any;
    expect(stored.store.authSecret).toEqual({ '@type': 'None' });
  });

  it('adds and removes set entries by pointer (store/urls/<escaped url>)', async () => {
    const id = (await create({ namespace: 'upd3', store: { '@type': 'RedisCluster', urls: ['redis://a'] } })).created.k.id;
    await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/urls/redis:~1~1b': true, 'store/urls/redis:~1~1a': null } } }, 'u']]);
    expect((await get(id)).store.urls).toEqual({ 'redis://b': true });
  });

  it('keeps namespace immutable but accepts the same value (§7 case 22)', async () => {
    const id = (await create({ namespace: 'fixed', store: { '@type': 'Redis' } })).created.k.id;
    const r = await h.call([
      ['x:StoreLookup/set', { update: { [id]: { namespace: 'y' } } }, 'a'],
      ['x:StoreLookup/set', { update: { [id]: { namespace: 'fixed', 'store/timeout': 500 } } }, 'b'],
      ['x:StoreLookup/set', { update: { [id]: { 'store/port': 1 } } }, 'c'],
      // null would reset it to its default (the id): a change too.
      ['x:StoreLookup/set', { update: { [id]: { namespace: null } } }, 'd'],
    ]);
    expect(r[0]![1].notUpdated[id]).toEqual({ type: 'invalidProperties', description: 'namespace: namespace cannot be changed after creation', properties: ['namespace'] });
    expect(r[3]![1].notUpdated[id]).toEqual(r[0]![1].notUpdated[id]);
    expect((await get(id)).namespace).toBe('fixed');
    expect(r[1]![1].updated).toEqual({ [id]: null });
    expect(r[2]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['store/port'] });
  });

  it('destroys, then the namespace is free again', async () => {
    const id = (await create({ namespace: 'gone', store: { '@type': 'Redis' } })).created.k.id;
    const r = await h.call([
      ['x:StoreLookup/set', { destroy: [id] }, 'd'],
      ['x:StoreLookup/set', { create: { again: { namespace: 'gone', store: { '@type': 'Redis' } } } }, 'c'],
    ]);
    expect(r[0]![1].destroyed).toEqual([id]);
    expect(r[1]![1].created.again.id).not.toBe(id);
  });
});

describe('x:StoreLookup URL passwords', () => {
  it('are masked in /get and kept when the store is written back, but never move to another host', async () => {
    const url = 'redis://default:RedisPassw0rd@10.0.0.5:6379/0';
    const id = (await create({ namespace: 'url1', store: { '@type': 'Redis', url } })).created.k.id;
    const cl = (await create({ namespace: 'url2', store: { '@type': 'RedisCluster', urls: ['redis://u:ClusterPw@10.0.0.6:7000', 'redis://10.0.0.7:7000'] } })).created.k.id;
    const stored = (i: string) => (h.server.repo.snapshot('StoreLookup').objects.get(i) as any).store;
    const wire = await get(id);
    expect(wire.store.url).toBe('redis://default:****@10.0.0.5:6379/0');
    expect(Object.keys((await get(cl)).store.urls)).toEqual(['redis://u:****@10.0.0.6:7000', 'redis://10.0.0.7:7000']);
    expect(JSON.stringify(await h.call([['x:StoreLookup/get', {}, 'g']]))).not.toMatch(/RedisPassw0rd|ClusterPw/);
    // Written back as read: the stored passwords stay.
    await h.call([['x:StoreLookup/set', { update: { [id]: { store: { ...wire.store, timeout: 500 } }, [cl]: { 'store/urls': (await get(cl)).store.urls } } }, 'u']]);
    expect(stored(id)).toMatchObject({ url, timeout: 500 });
    expect(Object.keys(stored(cl).urls)).toEqual(['redis://u:ClusterPw@10.0.0.6:7000', 'redis://10.0.0.7:7000']);
    // The masked URL of another host is taken literally: the stored password never goes there.
    await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/url': 'redis://default:****@attacker.example:6379/0' } } }, 'u']]);
    expect(stored(id).url).toBe('redis://default:****@attacker.example:6379/0');
  });
});
