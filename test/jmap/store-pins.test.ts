/**
 * A StoreLookup written over JMAP connects to the addresses the store policy checked when the store started,
 * never to a later DNS answer (docs/jmap.md "Secrets and the store policy"; src/lookup/store-pins.ts):
 * against real PostgreSQL, MariaDB, Redis, Redis Cluster and Redis Sentinel servers on 127.0.0.1, with a
 * "trap" listening on 127.0.0.2 at the same port (nothing else listens there). The policy's resolver is a
 * static zone the test controls; the system resolver does not know its names, or answers otherwise.
 */
import { lookup } from 'node:dns/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  redisCli,
  startMariaDb,
  startPostgres,
  startRedis,
  startRedisCluster,
  startRedisSentinel,
  type MariaDbServer,
  type PostgresServer,
  type RedisClusterServer,
  type RedisSentinelServer,
  type RedisServer,
  waitFor,
} from '../servers/index.js';
import { createLookupStore, NotStartedStore } from '../../src/lookup/index.js';
import { resolveStorePolicy } from '../../src/lookup/store-policy.js';
import { storeSync } from '../../src/jmap/store-sync.js';
import { startHarness, type Harness } from './harness.js';

type Store = { keyGet(k: string): Promise<string | null>; keySet(k: string, v: string): Promise<void> };

/** A server on 127.0.0.2:port (port 0: any) that counts the connections it gets and closes them. */
interface Trap {
  port: number;
  connections: number;
  close(): Promise<void>;
}
async function trap(port: number, host = '127.0.0.2'): Promise<Trap> {
  const sockets = new Set<Socket>();
  const t = { port, connections: 0 } as Trap;
  const server: Server = createServer((s) => {
    t.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    s.destroy();
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  t.port = (server.address() as { port: number }).port;
  t.close = () => new Promise<void>((r) => server.close(() => r()));
  return t;
}

/**
 * A stand-in for a Redis server a token holder controls, on 127.0.0.2: as a cluster node it announces every
 * slot at `announce` (CLUSTER SLOTS); as a sentinel it names `announce` as the master.
 */
async function rogueRedis(announce: { host: string; port: number }): Promise<{ port: number; close(): Promise<void> }> {
  const bulk = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  const server = createServer((s) => {
    s.on('error', () => undefined);
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString('latin1');
      // RESP arrays of bulk strings, as ioredis sends them: answer each complete command.
      for (;;) {
        const m = /^\*(\d+)\r\n/.exec(buf);
        if (!m) return;
        let at = m[0].length;
        const args: string[] = [];
        for (let i = 0; i < Number(m[1]); i++) {
          const h = /^\$(\d+)\r\n/.exec(buf.slice(at));
          if (!h || buf.length < at + h[0].length + Number(h[1]) + 2) return;
          args.push(buf.slice(at + h[0].length, at + h[0].length + Number(h[1])));
          at += h[0].length + Number(h[1]) + 2;
        }
        buf = buf.slice(at);
        const cmd = args.map((a) => a.toLowerCase()).join(' ');
        if (cmd.startsWith('cluster slots')) s.write(`*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n${bulk(announce.host)}:${announce.port}\r\n`);
        else if (cmd.startsWith('sentinel get-master-addr-by-name')) s.write(`*2\r\n${bulk(announce.host)}${bulk(String(announce.port))}`);
        else if (cmd.startsWith('sentinel')) s.write('*0\r\n');
        else if (cmd.startsWith('info')) s.write(bulk('loading:0\r\nrole:master\r\n'));
        else s.write('+OK\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
  return { port: (server.address() as { port: number }).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The policy's resolver: a zone the test rewrites; `calls` counts the names asked for. */
const zone = new Map<string, string[]>();
let calls = 0;
const resolveStoreHost = async (host: string): Promise<string[]> => {
  calls++;
  return zone.get(host) ?? [];
};

const harnesses: Harness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((x) => x.close()));
  await Promise.all(traps.splice(0).map((t) => t.close()));
  zone.clear();
});
const logs: string[] = [];
async function harness(allowedHosts: string[]): Promise<Harness> {
  const x = await startHarness({ resolveStoreHost, storePolicy: { allowedHosts }, log: (l) => logs.push(l) });
  harnesses.push(x);
  return x;
}
async function create(h: Harness, namespace: string, store: Record<string, unknown>): Promise<{ id: string; store: Store }> {
  const r = await h.call([['x:StoreLookup/set', { create: { k: { namespace, store } } }, 's']]);
  const id = r[0]![1].created?.k?.id as string;
  expect(id, JSON.stringify(r[0]![1])).toBeTypeOf('string');
  await h.server.settled();
  const s = (h.server.engine as unknown as { lookups: { get(ns: string): Store | undefined } }).lookups.get(namespace);
  expect(s, `store "${namespace}" started (${logs.join('; ')})`).toBeDefined();
  return { id, store: s! };
}

let pg: PostgresServer;
let maria: MariaDbServer;
let redis: RedisServer;
let cluster: RedisClusterServer;
let sentinel: RedisSentinelServer;
const traps: Trap[] = [];
beforeAll(async () => {
  [pg, maria, redis] = await Promise.all([startPostgres(), startMariaDb(), startRedis()]);
  cluster = await startRedisCluster();
  sentinel = await startRedisSentinel();
}, 120_000);
afterAll(async () => {
  await Promise.all([pg?.stop(), maria?.stop(), redis?.stop(), cluster?.stop(), sentinel?.stop()]);
});

/** Each store type at host `name`, and the port its first connection goes to. */
const stores = (name: string): [string, () => { store: Record<string, unknown>; port: number }][] => [
  ['PostgreSql', () => ({ store: { '@type': 'PostgreSql', host: name, port: pg.port, database: pg.database, authUsername: pg.user, timeout: 3000 }, port: pg.port })],
  [
    'MySql',
    () => ({
      store: { '@type': 'MySql', host: name, port: maria.port, database: maria.database, authUsername: maria.user, authSecret: { '@type': 'Value', secret: maria.password }, timeout: 3000 },
      port: maria.port,
    }),
  ],
  ['Redis', () => ({ store: { '@type': 'Redis', url: `redis://${name}:${redis.port}`, timeout: 3000 }, port: redis.port })],
  ['RedisCluster', () => ({ store: { '@type': 'RedisCluster', urls: cluster.ports.map((p) => `redis://${name}:${p}`), timeout: 3000 }, port: cluster.ports[0]! })],
  [
    'RedisSentinel',
    () => ({ store: { '@type': 'RedisSentinel', urls: sentinel.sentinelPorts.map((p) => `redis://${name}:${p}`), serviceName: sentinel.serviceName, timeout: 3000 }, port: sentinel.sentinelPorts[0]! }),
  ],
];

describe('a host name connects at the address checked when the store started', () => {
  it.each(stores('db.pinned.test'))('%s: works at a name only the checked zone knows, and asks DNS nothing per query', async (_type, make) => {
    // The system resolver cannot give the driver this name's address: only the pin can.
    await expect(lookup('db.pinned.test')).rejects.toThrow();
    const { store } = make();
    zone.set('db.pinned.test', ['127.0.0.1']);
    const h = await harness(['db.pinned.test']);
    const { store: s } = await create(h, 'pinned', store);
    const asked = calls;
    // The name now points elsewhere; the running store keeps its checked address.
    zone.set('db.pinned.test', ['127.0.0.2']);
    await s.keySet('pinned.example', 'yes');
    expect(await s.keyGet('pinned.example')).toBe('yes');
    expect(calls).toBe(asked);
  });

  it.each(stores('localhost'))('%s: never at what the system resolver answers now (DNS rebinding), but at the checked address', async (_type, make) => {
    // The system resolver sends "localhost" to 127.0.0.1, where the real server holds data; the check saw 127.0.0.2.
    expect((await lookup('localhost', { all: true })).map((a) => a.address)).toContain('127.0.0.1');
    const { store, port } = make();
    const t = await trap(port);
    traps.push(t);
    zone.set('localhost', ['127.0.0.2']);
    const h = await harness(['localhost']);
    const { store: s } = await create(h, 'rebound', store);
    await expect(s.keyGet('any.example')).rejects.toThrow();
    expect(t.connections).toBeGreaterThan(0);
  });

  it('a store started again resolves again: an update moves it to the address its name has then', async () => {
    redisCli(redis.port, 'SET', 'moved.example', 'here');
    const t = await trap(redis.port);
    traps.push(t);
    zone.set('cache.pinned.test', ['127.0.0.1']);
    const h = await harness(['cache.pinned.test']);
    const { id, store: s } = await create(h, 'moving', { '@type': 'Redis', url: `redis://cache.pinned.test:${redis.port}`, timeout: 3000 });
    expect(await s.keyGet('moved.example')).toBe('here');
    expect(t.connections).toBe(0);
    zone.set('cache.pinned.test', ['127.0.0.2']);
    await h.call([['x:StoreLookup/set', { update: { [id]: { 'store/timeout': 2500 } } }, 'u']]);
    await h.server.settled();
    const again = (h.server.engine as unknown as { lookups: { get(ns: string): Store } }).lookups.get('moving');
    await expect(again.keyGet('moved.example')).rejects.toThrow();
    expect(t.connections).toBeGreaterThan(0);
  });

  it('a name that gives no address at the start is not started (its lookups fail); it is tried again, and starts once the name resolves', async () => {
    redisCli(redis.port, 'SET', 'late.example', '1');
    const lookups = new Map<string, Store>();
    const logs: string[] = [];
    const sync = storeSync({
      engine: { loadRules: () => undefined, lookups: { set: (ns: string, s: unknown) => void lookups.set(ns, s as Store), delete: (ns: string) => lookups.delete(ns) } },
      createLookupStore: (ns, config, opts) => createLookupStore(ns, config, opts) as unknown as Store & { close(): Promise<void> },
      policy: resolveStorePolicy({ allowedHosts: ['late.pinned.test'] }),
      resolve: resolveStoreHost,
      log: (l) => logs.push(l),
      retryMs: 200,
    });
    try {
      sync.sync(() => [{ namespace: 'late', store: { '@type': 'Redis', url: `redis://late.pinned.test:${redis.port}` } }]);
      await sync.settled();
      await expect(lookups.get('late')!.keyGet('late.example')).rejects.toThrow('lookup store "late": not started: "late.pinned.test" gave no address (tried again every 0.2 s)');
      expect(logs.join('\n')).toMatch(/lookup store "late" not started: "late\.pinned\.test" gave no address; tried again every 0\.2 s/);
      // Retries that fail for the same reason keep quiet: the log said it once.
      await new Promise((r) => setTimeout(r, 700));
      expect(logs.filter((l) => l.includes('not started'))).toHaveLength(1);
      zone.set('late.pinned.test', ['127.0.0.1']);
      await waitFor('the store started on a retry', () => !(lookups.get('late') instanceof NotStartedStore), 10_000, 50);
      expect(await lookups.get('late')!.keyGet('late.example')).toBe('1');
      expect(logs.at(-1)).toBe('spamrule serve: lookup store "late" started: its host names resolve now');
    } finally {
      await sync.close();
    }
  });
});

describe('servers a Redis Cluster or Sentinel announces are checked against the policy', () => {
  it.each([
    ['RedisCluster', (port: number) => ({ '@type': 'RedisCluster', urls: [`redis://rogue.pinned.test:${port}`], timeout: 2000, maxRetries: 1 })],
    ['RedisSentinel', (port: number) => ({ '@type': 'RedisSentinel', urls: [`redis://rogue.pinned.test:${port}`], timeout: 2000 })],
  ] as const)('%s: a node announced at an address the policy refuses gets no connection; allowed, it does', async (_type, make) => {
    const inside = await trap(0, '127.0.0.1'); // an internal service the rogue server points at
    traps.push(inside);
    const rogue = await rogueRedis({ host: '127.0.0.1', port: inside.port });
    try {
      zone.set('rogue.pinned.test', ['127.0.0.2']);
      // Names only: 127.0.0.1 is neither listed nor an address a name of the store resolved to.
      const strict = await harness(['*.pinned.test']);
      const { store: s } = await create(strict, 'rogue', make(rogue.port));
      await expect(s.keyGet('any.example')).rejects.toThrow(/refused by the store policy: 127\.0\.0\.1 is not among the hosts the server allows for managed stores \("\*\.pinned\.test"\)/);
      expect(inside.connections).toBe(0);
      // The same server, with the address allowed: the announced node is connected to.
      const open = await harness(['*.pinned.test', '127.0.0.1']);
      const { store: o } = await create(open, 'rogue', make(rogue.port));
      await o.keyGet('any.example').catch(() => undefined);
      expect(inside.connections).toBeGreaterThan(0);
    } finally {
      await rogue.close();
    }
  });
});
