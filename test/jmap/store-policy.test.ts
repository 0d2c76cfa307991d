/**
 * What a StoreLookup written over JMAP may reach on the server's host (docs/jmap.md "Store policy";
 * src/lookup/store-policy.ts): `File` and `EnvironmentVariable` secrets only where the operator allows them,
 * `Sqlite` files only inside the server's directory for them and never the registry or the model, checked
 * on create, on update, and again when a stored store is started. Real JMAP requests, a real engine, and a
 * fake Redis that records what the server would send it (the security review's exfiltration repro).
 */
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJmapServer } from '../../src/jmap/index.js';
import { startHarness, type Harness } from './harness.js';

const MESSAGE = 'From: a@example.com\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nHello.\r\n';

let outside: string;
beforeAll(() => {
  outside = mkdtempSync(join(tmpdir(), 'spamrule-outside-'));
  writeFileSync(join(outside, 'private.txt'), 'contents only the service may read\n', { mode: 0o600 });
});
afterAll(() => rmSync(outside, { recursive: true, force: true }));

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((x) => x.close()));
});
async function harness(opts: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const x = await startHarness(opts);
  harnesses.push(x);
  return x;
}

async function createStore(h: Harness, store: unknown, namespace = 'ns'): Promise<any> {
  const r = await h.call([['x:StoreLookup/set', { create: { k: { namespace, store } } }, 's']]);
  return r[0]![1];
}

/** A "Redis" on loopback that records every byte it receives and answers nothing useful. */
async function recordingRedis(): Promise<{ server: Server; url: string; received: () => string }> {
  let got = '';
  const server = createServer((s) => {
    s.on('error', () => undefined);
    s.on('data', (d) => {
      got += d.toString('latin1');
      s.write('-ERR no\r\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`, received: () => got };
}

const classify = (h: Harness) => (h.server.engine as unknown as { classify(raw: string): Promise<{ tags: string[]; errors: { message: string }[] }> }).classify(MESSAGE);

describe('File and EnvironmentVariable secrets over JMAP (default: refused)', () => {
  it.each([
    ['File', { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'File', filePath: '/proc/self/environ' } }, 'store/authSecret', 'File secrets are refused'],
    ['EnvironmentVariable', { '@type': 'MySql', host: 'db', authSecret: { '@type': 'EnvironmentVariable', variableName: 'HOME' } }, 'store/authSecret', 'EnvironmentVariable secrets are refused'],
    ['a replica', { '@type': 'PostgreSql', host: 'db', readReplicas: [{ host: 'r', authSecret: { '@type': 'File', filePath: '/etc/shadow' } }] }, 'store/readReplicas/0/authSecret', 'File secrets'],
    ['a sentinel', { '@type': 'RedisSentinel', sentinelSecret: { '@type': 'EnvironmentVariable', variableName: 'PATH' } }, 'store/sentinelSecret', 'EnvironmentVariable'],
    [
      'a shard',
      { '@type': 'Sharded', stores: [{ '@type': 'Redis' }, { '@type': 'RedisCluster', authSecret: { '@type': 'File', filePath: '/etc/passwd' } }] },
      'store/stores/1/authSecret',
      'File secrets',
    ],
  ])('%s: invalidProperties naming the secret and why', async (_name, store, path, why) => {
    const h = await harness();
    const res = await createStore(h, store);
    expect(res.notCreated.k).toMatchObject({ type: 'invalidProperties', properties: [path] });
    expect(res.notCreated.k.description).toContain(`${path}: ${why}`);
    expect(res.notCreated.k.description).toContain('managedStores.');
  });

  it('an update cannot bring one in either', async () => {
    const h = await harness();
    const id = (await createStore(h, { '@type': 'PostgreSql', host: 'db' })).created.k.id;
    const r = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/authSecret': { '@type': 'File', filePath: join(outside, 'private.txt') } } } }, 'u']]);
    expect(r[0]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['store/authSecret'] });
  });

  it('the security review repro: a refused store never makes the server read the file and send it to the named host', async () => {
    const h = await harness();
    const redis = await recordingRedis();
    try {
      process.env.SPAMRULE_TEST_DEMO_SECRET = 'value-of-an-env-var-of-the-service';
      const store = (auth: unknown) => ({ '@type': 'RedisCluster', urls: [redis.url], authUsername: 'x', authSecret: auth, timeout: 500, poolTimeoutCreate: 500 });
      const r = await h.call([
        ['x:StoreLookup/set', { create: { f: { namespace: 'exfil-file', store: store({ '@type': 'File', filePath: join(outside, 'private.txt') }) } } }, 'a'],
        ['x:StoreLookup/set', { create: { e: { namespace: 'exfil-env', store: store({ '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_DEMO_SECRET' }) } } }, 'b'],
        [
          'x:SpamRule/set',
          {
            create: {
              r: { '@type': 'Any', name: 'TOUCH1', condition: { match: [{ if: 'key_exists("exfil-file", "x")', then: '"T"' }], else: 'false' } },
              s: { '@type': 'Any', name: 'TOUCH2', condition: { match: [{ if: 'key_exists("exfil-env", "x")', then: '"T"' }], else: 'false' } },
            },
          },
          'c',
        ],
      ]);
      await h.server.settled();
      await classify(h);
      await new Promise((res) => setTimeout(res, 300));
      expect(redis.received()).not.toContain('only the service may read');
      expect(redis.received()).not.toContain('value-of-an-env-var');
      expect(r[0]![1].notCreated.f.type).toBe('invalidProperties');
      expect(r[1]![1].notCreated.e.type).toBe('invalidProperties');
    } finally {
      delete process.env.SPAMRULE_TEST_DEMO_SECRET;
      redis.server.close();
    }
  });
});

describe("File and EnvironmentVariable secrets within the operator's allow-lists", () => {
  it('accepts a file below an allowed directory and a variable with an allowed prefix, nothing else', async () => {
    const secrets = mkdtempSync(join(tmpdir(), 'spamrule-secrets-'));
    try {
      writeFileSync(join(secrets, 'pg.pw'), 'pw\n');
      symlinkSync(join(outside, 'private.txt'), join(secrets, 'link.pw'));
      const h = await harness({ storePolicy: { secretFileDirs: [secrets], secretEnvPrefixes: ['SPAMRULE_STORE_'] } });
      const pg = (authSecret: unknown) => ({ '@type': 'PostgreSql', host: 'db', authSecret });
      expect((await createStore(h, pg({ '@type': 'File', filePath: join(secrets, 'pg.pw') }), 'ok1')).created.k.id).toBeTypeOf('string');
      expect((await createStore(h, pg({ '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_STORE_PG' }), 'ok2')).created.k.id).toBeTypeOf('string');
      const refused: [unknown, string][] = [
        [{ '@type': 'File', filePath: join(outside, 'private.txt') }, 'outside the directories the server allows'],
        [{ '@type': 'File', filePath: `${secrets}/../${outside.split('/').pop()}/private.txt` }, 'outside the directories'],
        // A link inside the allowed directory is judged by where it points.
        [{ '@type': 'File', filePath: join(secrets, 'link.pw') }, 'outside the directories'],
        [{ '@type': 'File', filePath: 'pg.pw' }, 'not an absolute path'],
        [{ '@type': 'EnvironmentVariable', variableName: 'PGPASSWORD' }, 'does not start with a prefix the server allows ("SPAMRULE_STORE_")'],
      ];
      for (const [secret, why] of refused) {
        const res = await createStore(h, pg(secret), 'no');
        expect(res.notCreated?.k, JSON.stringify(secret)).toMatchObject({ type: 'invalidProperties', properties: ['store/authSecret'] });
        expect(res.notCreated.k.description).toContain(why);
      }
    } finally {
      rmSync(secrets, { recursive: true, force: true });
    }
  });
});

describe('Sqlite paths over JMAP', () => {
  it('refuses the registry, its companions, the model, and anything outside the directory for Sqlite stores', async () => {
    const model = join(outside, 'model.db');
    const h = await harness({ storePolicy: { protectedFiles: [model] } });
    mkdirSync(join(h.dir, 'sub'));
    symlinkSync(outside, join(h.dir, 'escape'));
    linkSync(h.db, join(h.dir, 'hardlink.db'));
    const cases: [string, string][] = [
      [h.db, 'registry or model file'],
      ['jmap.db', 'registry or model file'],
      [`${h.db}-wal`, 'registry or model file'],
      [join(h.dir, 'hardlink.db'), 'registry or model file'],
      [join(outside, 'x.db'), 'outside the directory for Sqlite stores'],
      ['../x.db', 'outside the directory'],
      ['escape/x.db', 'outside the directory'],
      [model, 'outside the directory'],
      ['/etc', 'outside the directory'],
    ];
    for (const [path, why] of cases) {
      const res = await createStore(h, { '@type': 'Sqlite', path }, 'no');
      expect(res.notCreated?.k, path).toMatchObject({ type: 'invalidProperties', properties: ['store/path'] });
      expect(res.notCreated.k.description).toContain(why);
    }
    // The model is protected even inside the directory.
    const inner = await harness({ storePolicy: { protectedFiles: [model], sqliteDir: outside } });
    expect((await createStore(inner, { '@type': 'Sqlite', path: 'model.db' }, 'no')).notCreated.k.description).toContain('registry or model file');
    for (const path of ['lists.db', 'sub/lists.db', 'sub', ':memory:']) expect((await createStore(h, { '@type': 'Sqlite', path }, `ok-${path}`)).created, path).toBeTruthy();
  });

  it('refuses on update too, and a refused path creates no directory', async () => {
    const h = await harness();
    const id = (await createStore(h, { '@type': 'Sqlite', path: 'lists.db' })).created.k.id;
    const target = join(outside, 'made', 'by', 'mkdir', 'x.db');
    const r = await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/path': target } } }, 'u']]);
    expect(r[0]![1].notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['store/path'] });
    await h.server.settled();
    expect(existsSync(join(outside, 'made'))).toBe(false);
  });

  it('the security review repro: no rule reaches the registry to give a token every permission', async () => {
    const h = await harness();
    const before = h.server.tokens.list().length;
    const insert = "INSERT OR IGNORE INTO jmap_token (name, hash, permissions, created) VALUES ('evil', 'h', 'sysSpamRuleGet', 'x')";
    const reg = await createStore(h, { '@type': 'Sqlite', path: h.db }, 'reg');
    // A store inside the directory is allowed, but SQL that opens another file through it is refused.
    expect((await createStore(h, { '@type': 'Sqlite', path: 'mine.db' }, 'mine')).created).toBeTruthy();
    const rule = (name: string, query: string) => ({ '@type': 'Any', name, condition: { match: [{ if: `sql_query('mine', "${query}", []) >= 0`, then: `'${name}_DONE'` }], else: 'false' } });
    const r = await h.call([
      [
        'x:SpamRule/set',
        {
          create: {
            a: { ...rule('ESC1', insert.replace('jmap_token', 'reg.jmap_token')), priority: 1 },
            b: { ...rule('ATT', `ATTACH DATABASE '${h.db}' AS reg`), priority: 0 },
            c: rule('ESC2', insert),
          },
        },
        's',
      ],
    ]);
    expect(Object.keys(r[0]![1].created)).toEqual(['a', 'b', 'c']);
    // And the same through the registry itself, had a store on it been accepted.
    const direct = await h.call([['x:SpamRule/set', { create: { d: { ...rule('ESC3', insert), condition: { match: [{ if: `sql_query('reg', "${insert}", []) >= 0`, then: "'ESC3_DONE'" }], else: 'false' } } } }, 's']]);
    expect(direct[0]![1].created.d.id).toBeTypeOf('string');
    await h.server.settled();
    const verdict = await classify(h);
    expect(h.server.tokens.list().length).toBe(before);
    expect(verdict.tags).not.toContain('ESC3_DONE');
    expect(verdict.tags).not.toContain('ATT_DONE');
    expect(verdict.tags).not.toContain('ESC1_DONE');
    expect(verdict.errors.map((e) => e.message).join('\n')).toContain('sql_query refuses ATTACH statements on a Sqlite store');
    expect(reg.notCreated.k.type).toBe('invalidProperties');
  });
});

describe('stores already in the registry', () => {
  it('are checked again when the server starts them: a refused one is not started, and the log says why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-policy-'));
    try {
      const db = join(dir, 'jmap.db');
      writeFileSync(join(dir, 'pw'), 'pw\n');
      // Written while the operator allowed it (or by a version before the policy).
      const lax = await createJmapServer({ db, log: () => undefined, storePolicy: { secretFileDirs: [dir] }, createLookupStore: () => ({ close: async () => undefined }) });
      const admin = lax.tokens.create('admin', ['sysStoreLookupCreate']).token;
      const res = await fetch(`${lax.url}/jmap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'],
          methodCalls: [['x:StoreLookup/set', { create: { a: { namespace: 'old', store: { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'File', filePath: join(dir, 'pw') } } } } }, '0']],
        }),
      });
      expect(((await res.json()) as any).methodResponses[0][1].created.a.id).toBeTypeOf('string');
      await lax.close();
      const started: string[] = [];
      const logs: string[] = [];
      const strict = await createJmapServer({ db, log: (l) => logs.push(l), createLookupStore: (ns) => (started.push(ns), { close: async () => undefined }) });
      await strict.settled();
      await strict.close();
      expect(started).toEqual([]);
      expect(logs.join('\n')).toMatch(/lookup store "old" not started: refused by the store policy: authSecret: File secrets are refused/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
