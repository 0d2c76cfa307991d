import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLookupStore, LookupConfigError, maskSecrets, parseLookupStoreConfig, resolveSecret } from '../../src/lookup/index.js';

const urls = (json: unknown) => {
  const c = ok(json);
  return c['@type'] === 'RedisCluster' || c['@type'] === 'RedisSentinel' ? c.urls : undefined;
};
function ok(json: unknown) {
  const r = parseLookupStoreConfig(json);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}
const errors = (json: unknown) => {
  const r = parseLookupStoreConfig(json);
  if (r.ok) throw new Error('expected errors');
  return r.errors;
};

describe('parseLookupStoreConfig: defaults of the schema', () => {
  it('PostgreSql', () => {
    expect(ok({ '@type': 'PostgreSql', host: ' db.example ' })).toEqual({
      '@type': 'PostgreSql',
      host: 'db.example',
      port: 5432,
      database: 'stalwart',
      authUsername: 'stalwart',
      authSecret: { '@type': 'None' },
      options: null,
      timeout: 15000,
      useTls: false,
      allowInvalidCerts: false,
      poolMaxConnections: 10,
      poolRecyclingMethod: 'fast',
      readReplicas: [],
    });
  });
  it('MySql', () => {
    expect(ok({ '@type': 'MySql', host: 'h' })).toMatchObject({ port: 3306, maxAllowedPacket: null, poolMaxConnections: 10, poolMinConnections: 5, timeout: 15000, database: 'stalwart' });
  });
  it('Sqlite', () => {
    expect(ok({ '@type': 'Sqlite', path: '/var/db' })).toEqual({ '@type': 'Sqlite', path: '/var/db', poolWorkers: null, poolMaxConnections: 10 });
  });
  it('Redis, RedisCluster, RedisSentinel', () => {
    expect(ok({ '@type': 'Redis' })).toEqual({
      '@type': 'Redis',
      url: 'redis://127.0.0.1',
      timeout: 10000,
      poolMaxConnections: 10,
      poolTimeoutCreate: 30000,
      poolTimeoutWait: 30000,
      poolTimeoutRecycle: 30000,
    });
    expect(ok({ '@type': 'RedisCluster' })).toMatchObject({
      urls: ['redis://127.0.0.1'],
      authUsername: 'stalwart',
      readFromReplicas: true,
      protocolVersion: 'resp2',
      maxRetries: null,
      minRetryWait: null,
      maxRetryWait: null,
    });
    expect(ok({ '@type': 'RedisSentinel' })).toMatchObject({ urls: ['redis://127.0.0.1:26379'], serviceName: 'mymaster', sentinelUsername: null, sentinelSecret: { '@type': 'None' } });
  });
  it('accepts sets as {value: true} maps or arrays, lists as arrays or index-keyed objects', () => {
    expect(urls({ '@type': 'RedisCluster', urls: { 'redis://a:1': true, 'redis://b:2': true, 'redis://off:3': false } })).toEqual(['redis://a:1', 'redis://b:2']);
    expect(urls({ '@type': 'RedisCluster', urls: ['redis://a:1'] })).toEqual(['redis://a:1']);
    const c = ok({ '@type': 'PostgreSql', host: 'p', readReplicas: { 1: { host: 'r2' }, 0: { host: 'r1', port: 6000 } } });
    expect(c['@type'] === 'PostgreSql' && c.readReplicas.map((r) => [r.host, r.port, r.database])).toEqual([
      ['r1', 6000, 'stalwart'],
      ['r2', 5432, 'stalwart'],
    ]);
    const s = ok({ '@type': 'Sharded', stores: { 0: { '@type': 'Redis' }, 1: { '@type': 'RedisSentinel' } } });
    expect(s['@type'] === 'Sharded' && s.stores.map((x) => x['@type'])).toEqual(['Redis', 'RedisSentinel']);
  });
});

describe('parseLookupStoreConfig: bounds and paths', () => {
  it.each([
    [{ '@type': 'PostgreSql', host: 'h', port: 0 }, 'port'],
    [{ '@type': 'PostgreSql', host: 'h', port: 65536 }, 'port'],
    [{ '@type': 'PostgreSql', host: 'h', poolMaxConnections: 8193 }, 'poolMaxConnections'],
    [{ '@type': 'PostgreSql', host: 'h', poolRecyclingMethod: 'lazy' }, 'poolRecyclingMethod'],
    [{ '@type': 'PostgreSql', host: '  ' }, 'host'],
    [{ '@type': 'PostgreSql' }, 'host'],
    [{ '@type': 'PostgreSql', host: 'h', authUsername: '' }, 'authUsername'],
    [{ '@type': 'PostgreSql', host: 'h', readReplicas: [{ host: 'ok' }, { port: 1 }] }, 'readReplicas/1/host'],
    [{ '@type': 'MySql', host: 'h', maxAllowedPacket: 1023 }, 'maxAllowedPacket'],
    [{ '@type': 'MySql', host: 'h', maxAllowedPacket: 1073741825 }, 'maxAllowedPacket'],
    [{ '@type': 'MySql', host: 'h', poolMinConnections: 0 }, 'poolMinConnections'],
    [{ '@type': 'Sqlite', path: '/x', poolWorkers: 65 }, 'poolWorkers'],
    [{ '@type': 'Sqlite', path: '/x', poolMaxConnections: null }, 'poolMaxConnections'],
    [{ '@type': 'Sqlite' }, 'path'],
    [{ '@type': 'Redis', timeout: -1 }, 'timeout'],
    [{ '@type': 'RedisCluster', maxRetryWait: 1025 }, 'maxRetryWait'],
    [{ '@type': 'RedisCluster', minRetryWait: 0 }, 'minRetryWait'],
    [{ '@type': 'RedisCluster', maxRetries: 1025 }, 'maxRetries'],
    [{ '@type': 'RedisCluster', protocolVersion: 'resp4' }, 'protocolVersion'],
    [{ '@type': 'RedisCluster', urls: ['redis://a', ''] }, 'urls/1'],
    [{ '@type': 'Sharded', stores: [{ '@type': 'Redis' }] }, 'stores'],
    [{ '@type': 'Sharded', stores: [{ '@type': 'Redis' }, { '@type': 'Sqlite', path: '/x' }] }, 'stores/1/@type'],
    [{ '@type': 'Sharded', stores: [{ '@type': 'Redis' }, { '@type': 'Redis', port: 1 }] }, 'stores/1/port'],
    [{ '@type': 'PostgreSql', host: 'h', authSecret: { '@type': 'Value' } }, 'authSecret/secret'],
    [{ '@type': 'PostgreSql', host: 'h', authSecret: { '@type': 'Value', secret: 'x', value: 'y' } }, 'authSecret/value'],
    [{ '@type': 'PostgreSql', host: 'h', authSecret: null }, 'authSecret'],
    [{ '@type': 'Mongo' }, '@type'],
    [{ host: 'h' }, '@type'],
  ])('%j → %s', (json, path) => {
    expect(errors(json).map((e) => e.path)).toEqual([path]);
  });

  it('refuses a set value other than true or false, and a list key that is not an index (they were dropped or put anywhere)', () => {
    // Found by the JMAP /set fuzz property (test/jmap/fuzz.test.ts): {"redis://a:1": "yes"} was a cluster with no URL.
    expect(errors({ '@type': 'RedisCluster', urls: { 'redis://a:1': 'yes' } })).toEqual([{ path: 'urls/redis:~1~1a:1', message: 'set values must be true or false' }]);
    expect(errors({ '@type': 'RedisSentinel', urls: { 'redis://s:1': true, 'redis://t:1': 1 } })).toEqual([{ path: 'urls/redis:~1~1t:1', message: 'set values must be true or false' }]);
    expect(errors({ '@type': 'PostgreSql', host: 'h', readReplicas: { x: { host: 'r' }, 0: { host: 'r0' } } })).toEqual([{ path: 'readReplicas/x', message: 'list keys must be decimal indices' }]);
  });

  it('refuses unknown properties, naming each', () => {
    expect(errors({ '@type': 'Redis', url: 'redis://x', colour: 'blue', size: 1 })).toEqual([
      { path: 'colour', message: 'unknown property "colour"' },
      { path: 'size', message: 'unknown property "size"' },
    ]);
  });

  it('says why: required fields and MinLength', () => {
    expect(errors({ '@type': 'PostgreSql', host: '' })[0]!.message).toBe('Required host');
    expect(errors({ '@type': 'Sharded', stores: [] })[0]!.message).toMatch(/MinLength stores 2/);
  });
});

describe('secrets', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-secret-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves None, Value, EnvironmentVariable and File (one trailing newline trimmed)', () => {
    process.env.SPAMRULE_TEST_SECRET = 's3cret';
    writeFileSync(join(dir, 'pw'), 'from-file\n');
    expect(resolveSecret({ '@type': 'None' }, 'st')).toBeUndefined();
    expect(resolveSecret({ '@type': 'Value', secret: 'v' }, 'st')).toBe('v');
    expect(resolveSecret({ '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_SECRET' }, 'st')).toBe('s3cret');
    expect(resolveSecret({ '@type': 'File', filePath: join(dir, 'pw') }, 'st')).toBe('from-file');
  });

  it('a missing variable or unreadable file is an error naming the store, never an empty password', () => {
    delete process.env.SPAMRULE_NO_SUCH_VAR;
    expect(() => resolveSecret({ '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_NO_SUCH_VAR' }, 'blocklist')).toThrow(
      'lookup store "blocklist": secret environment variable "SPAMRULE_NO_SUCH_VAR" is not set',
    );
    expect(() => resolveSecret({ '@type': 'File', filePath: join(dir, 'nope') }, 'blocklist')).toThrow(/^lookup store "blocklist": secret file ".*nope" cannot be read/);
    writeFileSync(join(dir, 'empty'), '\n');
    expect(() => resolveSecret({ '@type': 'File', filePath: join(dir, 'empty') }, 'blocklist')).toThrow(/secret file ".*empty" is empty/);
  });

  it('createLookupStore throws a LookupConfigError for a bad secret source or config, at once', () => {
    const bad = { '@type': 'PostgreSql', host: 'h', authSecret: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_NO_SUCH_VAR' } };
    expect(() => createLookupStore('pgstore', bad)).toThrow(LookupConfigError);
    expect(() => createLookupStore('pgstore', bad)).toThrow(/lookup store "pgstore": secret environment variable/);
    const sentinelBad = { '@type': 'RedisSentinel', sentinelSecret: { '@type': 'File', filePath: join(dir, 'missing') } };
    expect(() => createLookupStore('sent', sentinelBad)).toThrow(/lookup store "sent": secret file/);
    try {
      createLookupStore('cfg', { '@type': 'Redis', port: 1 });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(LookupConfigError);
      expect((e as LookupConfigError).problems).toEqual([{ path: 'port', message: 'unknown property "port"' }]);
    }
  });

  it('maskSecrets drops Value secrets at any depth and keeps the rest', () => {
    const cfg = {
      '@type': 'PostgreSql',
      host: 'h',
      authSecret: { '@type': 'Value', secret: 'pw' },
      readReplicas: [{ host: 'r', authSecret: { '@type': 'Value', secret: 'pw2' } }, { host: 'r2', authSecret: { '@type': 'File', filePath: '/run/pw' } }],
    };
    expect(maskSecrets(cfg)).toEqual({
      '@type': 'PostgreSql',
      host: 'h',
      authSecret: { '@type': 'Value' },
      readReplicas: [{ host: 'r', authSecret: { '@type': 'Value' } }, { host: 'r2', authSecret: { '@type': 'File', filePath: '/run/pw' } }],
    });
    expect(cfg.authSecret.secret).toBe('pw');
  });

  it('maskSecrets masks the password of every URL, as values and as set keys, and nothing else of it', () => {
    const cfg = {
      '@type': 'Sharded',
      stores: [
        { '@type': 'Redis', url: 'redis://default:RedisPassw0rd@10.0.0.5:6379/0' },
        { '@type': 'RedisCluster', urls: { 'rediss://u:p%40ss@h1:7000': true, 'redis://h2:7000': true, 'redis://onlyuser@h3:7000': true } },
      ],
    };
    expect(maskSecrets(cfg)).toEqual({
      '@type': 'Sharded',
      stores: [
        { '@type': 'Redis', url: 'redis://default:****@10.0.0.5:6379/0' },
        { '@type': 'RedisCluster', urls: { 'rediss://u:****@h1:7000': true, 'redis://h2:7000': true, 'redis://onlyuser@h3:7000': true } },
      ],
    });
    expect(maskSecrets({ '@type': 'Redis', url: '/run/redis/redis.sock' })).toEqual({ '@type': 'Redis', url: '/run/redis/redis.sock' });
  });
});

describe('Redis server addresses', () => {
  it('refuses at creation a URL ioredis cannot use, naming it (before, the first lookup failed with "connect ENOENT")', async () => {
    const bad = [
      [{ '@type': 'Redis', url: 'http://127.0.0.1:6379' }, /url: "http:\/\/127.0.0.1:6379" is not a Redis URL: the scheme is redis:\/\/ or rediss:\/\/ \(TLS\), not http:\/\//],
      [{ '@type': 'Redis', url: 'not a url' }, /url: "not a url" is not a URL/],
      [{ '@type': 'RedisCluster', urls: ['127.0.0.1:7000', 'http://127.0.0.1:7001'] }, /urls: "http:\/\/127.0.0.1:7001" is not a Redis URL/],
      [{ '@type': 'RedisSentinel', urls: ['ftp://127.0.0.1:26379'] }, /urls: "ftp:\/\/127.0.0.1:26379" is not a Redis URL/],
    ] as const;
    for (const [config, message] of bad) {
      expect(() => createLookupStore('r', config)).toThrow(LookupConfigError);
      expect(() => createLookupStore('r', config)).toThrow(message);
    }
    // The message reaches the server's log: never with the URL's password.
    expect(() => createLookupStore('r', { '@type': 'Redis', url: 'http://default:S3cret@127.0.0.1:6379' })).toThrow(/url: "http:\/\/default:\*\*\*\*@127.0.0.1:6379" is not a Redis URL/);
    // What ioredis takes: redis://, rediss://, a bare host:port in a node list, a Unix socket path.
    for (const config of [{ '@type': 'Redis', url: 'rediss://u:p@127.0.0.1:6380/2' }, { '@type': 'Redis', url: '/run/redis/redis.sock' }, { '@type': 'RedisCluster', urls: ['127.0.0.1:7000', 'redis://127.0.0.1:7001'] }]) {
      await createLookupStore('r', config).close();
    }
  });

  it('refuses Cluster and Sentinel URLs that mix TLS modes (a rediss:// seed must not end up in plain text)', async () => {
    const mixes = [
      ['rediss://h1:7000', 'redis://h2:7000'],
      ['rediss://h1:7000', 'h2:7000'],
      ['rediss://h1:7000', 'rediss://h2:7000#insecure'],
    ];
    for (const type of ['RedisCluster', 'RedisSentinel']) {
      for (const urls of mixes) {
        const make = () => createLookupStore('r', { '@type': type, urls });
        expect(make).toThrow(LookupConfigError);
        expect(make).toThrow(/^lookup store "r": urls: all URLs must use the same scheme and TLS setting \(all redis:\/\/, all rediss:\/\/, or all rediss:\/\/…#insecure\), not a mix: "rediss:\/\/h1:7000", /);
      }
    }
    // The message names the URLs, never their passwords.
    expect(() => createLookupStore('r', { '@type': 'RedisCluster', urls: ['rediss://u:S3cret@h1:7000', 'redis://h2:7000'] })).toThrow(/not a mix: "rediss:\/\/u:\*\*\*\*@h1:7000", "redis:\/\/h2:7000"$/);
    // One mode for all is fine, #insecure included.
    for (const urls of [['rediss://h1:7000', 'rediss://h2:7000'], ['rediss://h1:7000#insecure', 'rediss://h2:7000#insecure'], ['h1:7000', 'redis://h2:7000']]) {
      await createLookupStore('r', { '@type': 'RedisCluster', urls }).close();
      await createLookupStore('r', { '@type': 'RedisSentinel', urls }).close();
    }
  });

  it('a rediss:// URL takes #insecure as its only fragment (as redis-rs)', async () => {
    for (const config of [{ '@type': 'Redis', url: 'rediss://127.0.0.1:6380#insecur' }, { '@type': 'RedisCluster', urls: ['rediss://h1:7000#verify'] }]) {
      expect(() => createLookupStore('r', config)).toThrow(LookupConfigError);
      expect(() => createLookupStore('r', config)).toThrow(/: the only fragment a rediss:\/\/ URL takes is #insecure \(accept any certificate\), not #/);
    }
    await createLookupStore('r', { '@type': 'Redis', url: 'rediss://127.0.0.1:6380/2#insecure' }).close();
  });
});
