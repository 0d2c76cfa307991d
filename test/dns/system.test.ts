/**
 * SystemResolver against a real DNS server on loopback (test/dns/server.ts), through node's c-ares client:
 * answers per type, TTL and negative caching, de-duplication, timeouts and SERVFAIL.
 * Cache behaviour is asserted on the server's query counts, not on timings.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DnsConfigError, SystemResolver, type SystemResolverOptions } from '../../src/dns/index.js';
import { TestDnsServer } from './server.js';

const server = new TestDnsServer({
  'example.test': {
    A: ['192.0.2.1', '192.0.2.2'],
    AAAA: ['2001:db8::1'],
    MX: ['20 MX2.Example.test', '10 mx1.example.test'],
    TXT: ['v=spf1 -all', 'x'.repeat(300)],
    ttl: 120,
  },
  'short.test': { A: ['198.51.100.1'], MX: ['10 mx.short.test'], ttl: 1 },
  'zero.test': { A: ['198.51.100.2'], ttl: 0 },
  'v6only.test': { AAAA: ['2001:db8::6'] },
  '1.2.0.192.in-addr.arpa': { PTR: ['Host.Example.test.'] },
  '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa': { PTR: ['v6host.example.test'] },
});
let addr = '';

beforeAll(async () => {
  addr = await server.start();
  server.behaviourFor.set('drop.test', 'drop');
  server.behaviourFor.set('servfail.test', 'servfail');
});
afterAll(() => server.stop());
beforeEach(() => {
  server.received.length = 0;
});

const make = (o: SystemResolverOptions = {}): SystemResolver => new SystemResolver({ servers: [addr], ...o });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('answers per type', () => {
  const r = (): SystemResolver => make();

  it('A and AAAA with the smallest TTL in ms', async () => {
    const res = r();
    expect(await res.query('example.test', 'A')).toEqual({
      status: 'ok',
      records: ['192.0.2.1', '192.0.2.2'],
      ttlMs: 120_000,
    });
    expect(await res.query('example.test', 'AAAA')).toEqual({ status: 'ok', records: ['2001:db8::1'], ttlMs: 120_000 });
  });

  it('MX lowercased, no trailing dot, in the order received', async () => {
    expect(await r().query('example.test', 'MX')).toEqual({
      status: 'ok',
      records: [
        { preference: 20, exchange: 'mx2.example.test' },
        { preference: 10, exchange: 'mx1.example.test' },
      ],
    });
  });

  it("TXT joins a record's character-strings", async () => {
    const a = await r().query('example.test', 'TXT');
    expect(a).toEqual({ status: 'ok', records: ['v=spf1 -all', 'x'.repeat(300)] });
  });

  it('PTR takes the IP address (v4 and v6) and queries its arpa name', async () => {
    const res = r();
    expect(await res.query('192.0.2.1', 'PTR')).toEqual({ status: 'ok', records: ['host.example.test'] });
    expect(await res.query('2001:db8::1', 'PTR')).toEqual({ status: 'ok', records: ['v6host.example.test'] });
    expect(server.count('1.2.0.192.in-addr.arpa', 'PTR')).toBe(1);
    expect(await res.query('not-an-ip', 'PTR')).toMatchObject({ status: 'error' });
  });

  it('unknown name → nxdomain; known name without that type (NODATA) → nxdomain', async () => {
    const res = r();
    expect(await res.query('nope.test', 'A')).toEqual({ status: 'nxdomain' });
    expect(await res.query('v6only.test', 'A')).toEqual({ status: 'nxdomain' });
    expect(await res.query('v6only.test', 'MX')).toEqual({ status: 'nxdomain' });
  });

  it('names are case-insensitive and a trailing dot is ignored (one cache entry)', async () => {
    const res = r();
    await res.query('Example.TEST.', 'A');
    expect(await res.query('example.test', 'A')).toMatchObject({ status: 'ok' });
    expect(server.count('example.test', 'A')).toBe(1);
  });

  it('an unsupported type answers error and sends nothing', async () => {
    expect(await r().query('example.test', 'SOA' as 'A')).toMatchObject({ status: 'error' });
    expect(await r().query(42 as unknown as string, 'A')).toMatchObject({ status: 'error' });
    expect(server.received).toEqual([]);
  });
});

describe('cache', () => {
  it('honours the record TTL: a 1 s record is re-queried after it expires', async () => {
    const res = make();
    await res.query('short.test', 'A');
    await res.query('short.test', 'A');
    expect(server.count('short.test', 'A')).toBe(1);
    await sleep(1100);
    expect(await res.query('short.test', 'A')).toMatchObject({ status: 'ok', records: ['198.51.100.1'] });
    expect(server.count('short.test', 'A')).toBe(2);
  });

  it('caps record TTLs at maxTtlMs', async () => {
    const res = make({ maxTtlMs: 50 });
    await res.query('example.test', 'A');
    await sleep(80);
    await res.query('example.test', 'A');
    expect(server.count('example.test', 'A')).toBe(2);
  });

  it('does not cache a TTL 0 answer', async () => {
    const res = make();
    await res.query('zero.test', 'A');
    await res.query('zero.test', 'A');
    expect(server.count('zero.test', 'A')).toBe(2);
  });

  it('MX/TXT/PTR (no TTL from node) live defaultTtlMs', async () => {
    const res = make({ defaultTtlMs: 50 });
    await res.query('example.test', 'MX');
    await res.query('example.test', 'MX');
    expect(server.count('example.test', 'MX')).toBe(1);
    await sleep(80);
    await res.query('example.test', 'MX');
    expect(server.count('example.test', 'MX')).toBe(2);
  });

  it('caches NXDOMAIN and NODATA (negativeTtlMs), re-asks once it expires', async () => {
    const res = make({ negativeTtlMs: 60 });
    expect(await res.query('nope.test', 'A')).toEqual({ status: 'nxdomain' });
    expect(await res.query('nope.test', 'A')).toEqual({ status: 'nxdomain' });
    await res.query('v6only.test', 'A');
    await res.query('v6only.test', 'A');
    expect(server.count('nope.test', 'A')).toBe(1);
    expect(server.count('v6only.test', 'A')).toBe(1);
    await sleep(100);
    await res.query('nope.test', 'A');
    expect(server.count('nope.test', 'A')).toBe(2);
  });

  it('negativeTtlMs 0 does not cache negative answers', async () => {
    const res = make({ negativeTtlMs: 0 });
    await res.query('nope.test', 'A');
    await res.query('nope.test', 'A');
    expect(server.count('nope.test', 'A')).toBe(2);
  });

  it('does not cache errors by default; errorTtlMs caches them', async () => {
    const res = make();
    expect(await res.query('servfail.test', 'A')).toEqual({ status: 'error', error: 'ESERVFAIL' });
    const after1 = server.count('servfail.test', 'A');
    expect(after1).toBeGreaterThanOrEqual(1);
    await res.query('servfail.test', 'A');
    expect(server.count('servfail.test', 'A')).toBeGreaterThan(after1);

    server.received.length = 0;
    const caching = make({ errorTtlMs: 60_000 });
    await caching.query('servfail.test', 'A');
    const sent = server.count('servfail.test', 'A');
    expect(await caching.query('servfail.test', 'A')).toMatchObject({ status: 'error' });
    expect(server.count('servfail.test', 'A')).toBe(sent);
  });

  it('cacheSize 0 disables the cache', async () => {
    const res = make({ cacheSize: 0 });
    await res.query('example.test', 'A');
    await res.query('example.test', 'A');
    expect(server.count('example.test', 'A')).toBe(2);
  });

  it('is an LRU: past cacheSize the least recently used answer goes', async () => {
    const res = make({ cacheSize: 2 });
    await res.query('example.test', 'A');
    await res.query('example.test', 'AAAA');
    await res.query('example.test', 'A'); // A now most recent
    await res.query('example.test', 'MX'); // evicts AAAA
    await res.query('example.test', 'A');
    await res.query('example.test', 'AAAA');
    expect(server.count('example.test', 'A')).toBe(1);
    expect(server.count('example.test', 'AAAA')).toBe(2);
  });

  it('callers get their own records: changing one changes neither the cache nor the others', async () => {
    const res = make();
    const [a, b] = await Promise.all([res.query('example.test', 'A'), res.query('example.test', 'A')]);
    if (a.status === 'ok') a.records.length = 0;
    expect(b).toMatchObject({ records: ['192.0.2.1', '192.0.2.2'] });
    expect(await res.query('example.test', 'A')).toMatchObject({ records: ['192.0.2.1', '192.0.2.2'] });
  });

  it("is bounded in bytes too: large answers (a sender's 60 KB TXT) push older ones out", async () => {
    // example.test's TXT answer is about 420 bytes by the cache's count, its A answer about 150.
    const res = make({ cacheBytes: 600 });
    await res.query('example.test', 'A');
    await res.query('example.test', 'TXT');
    await res.query('example.test', 'AAAA');
    await res.query('example.test', 'A'); // evicted by the TXT answer: asked again
    expect(server.count('example.test', 'A')).toBe(2);
    const roomy = make();
    await roomy.query('example.test', 'A');
    await roomy.query('example.test', 'TXT');
    await roomy.query('example.test', 'A');
    expect(server.count('example.test', 'A')).toBe(3);
  });

  it('clearCache() forgets every answer', async () => {
    const res = make();
    await res.query('example.test', 'A');
    res.clearCache();
    await res.query('example.test', 'A');
    expect(server.count('example.test', 'A')).toBe(2);
  });
});

describe('de-duplication', () => {
  it('concurrent identical queries send one query and share its answer', async () => {
    const res = make();
    const answers = await Promise.all(Array.from({ length: 20 }, () => res.query('EXAMPLE.test', 'A')));
    expect(server.count('example.test', 'A')).toBe(1);
    for (const a of answers) expect(a).toEqual(answers[0]);
    expect(res.stats()).toEqual({ sent: 1, cacheHits: 0, joined: 19 });
  });

  it('concurrent negative queries too, and different types are different queries', async () => {
    const res = make();
    await Promise.all([
      res.query('nope.test', 'A'),
      res.query('nope.test', 'A'),
      res.query('nope.test', 'MX'),
      res.query('nope.test', 'MX'),
    ]);
    expect(server.count('nope.test', 'A')).toBe(1);
    expect(server.count('nope.test', 'MX')).toBe(1);
  });

  it('de-duplicates even with the cache off', async () => {
    const res = make({ cacheSize: 0 });
    await Promise.all([res.query('example.test', 'TXT'), res.query('example.test', 'TXT')]);
    expect(server.count('example.test', 'TXT')).toBe(1);
  });
});

describe('concurrency limit (maxInFlight)', () => {
  it('600 concurrent distinct queries all answer (c-ares alone drops those past 512)', async () => {
    const many = new TestDnsServer(
      Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`h${i}.test`, { A: [`10.0.${i >> 8}.${i & 255}`] }])),
    );
    const where = await many.start();
    try {
      const res = new SystemResolver({ servers: [where], timeoutMs: 10_000 });
      const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => res.query(`h${i}.test`, 'A')));
      expect(answers.filter((a) => a.status === 'ok')).toHaveLength(600);
      expect(answers[599]).toMatchObject({ records: ['10.0.2.87'] });
      expect(new Set(many.received).size).toBe(600);
    } finally {
      await many.stop();
    }
  });

  it('queries past the limit wait for a slot and are then sent', async () => {
    const res = make({ maxInFlight: 1 });
    const answers = await Promise.all([
      res.query('example.test', 'A'),
      res.query('example.test', 'AAAA'),
      res.query('nope.test', 'A'),
      res.query('example.test', 'MX'),
    ]);
    expect(answers.map((a) => a.status)).toEqual(['ok', 'ok', 'nxdomain', 'ok']);
    expect(res.stats().sent).toBe(4);
  });
});

describe('failures', () => {
  it('a server that never answers → error within about timeoutMs', async () => {
    const res = make({ timeoutMs: 300 });
    const t0 = performance.now();
    const a = await res.query('drop.test', 'A');
    expect(a).toMatchObject({ status: 'error' });
    expect(performance.now() - t0).toBeLessThan(3000);
    // c-ares retried (tries: 2) inside the same time limit.
    expect(server.count('drop.test', 'A')).toBeGreaterThanOrEqual(1);
  });

  it('the outer timer bounds a query even with many c-ares tries', async () => {
    const res = make({ timeoutMs: 200, tries: 6 });
    const t0 = performance.now();
    expect(await res.query('drop.test', 'MX')).toMatchObject({ status: 'error' });
    expect(performance.now() - t0).toBeLessThan(3000);
  });

  it('concurrent queries to a dropping server all fail by the timeout, then a new query is sent again', async () => {
    const res = make({ timeoutMs: 200 });
    const all = await Promise.all([res.query('drop.test', 'TXT'), res.query('drop.test', 'TXT')]);
    for (const a of all) expect(a.status).toBe('error');
    const n = server.count('drop.test', 'TXT');
    await res.query('drop.test', 'TXT');
    expect(server.count('drop.test', 'TXT')).toBeGreaterThan(n);
  });

  it('SERVFAIL → error', async () => {
    expect(await make().query('servfail.test', 'MX')).toEqual({ status: 'error', error: 'ESERVFAIL' });
  });

  it('connection refused / no server listening → error, not a rejection', async () => {
    const closed = new TestDnsServer();
    const where = await closed.start();
    await closed.stop();
    const res = new SystemResolver({ servers: [where], timeoutMs: 500 });
    expect(await res.query('example.test', 'A')).toMatchObject({ status: 'error' });
  });

  it('cancel() ends queries in flight with error', async () => {
    const res = make({ timeoutMs: 5000 });
    const p = res.query('drop.test', 'AAAA');
    await sleep(20);
    res.cancel();
    expect(await p).toEqual({ status: 'error', error: 'ECANCELLED' });
  });

  it('cancel() ends queries in flight on every per-query channel', async () => {
    const res = make({ timeoutMs: 5000 });
    for (const n of ['c1', 'c2', 'c3']) server.behaviourFor.set(`${n}.drop.test`, 'drop');
    const ps = ['c1', 'c2', 'c3'].map((n) => res.query(`${n}.drop.test`, 'A'));
    await sleep(20);
    res.cancel();
    expect(await Promise.all(ps)).toEqual(ps.map(() => ({ status: 'error', error: 'ECANCELLED' })));
  });

  it('bad configuration throws DnsConfigError', () => {
    expect(() => new SystemResolver({ servers: ['not an address'] })).toThrow(DnsConfigError);
    expect(() => new SystemResolver({ timeoutMs: -1 })).toThrow(DnsConfigError);
    expect(() => new SystemResolver({ timeoutMs: 0 })).toThrow(DnsConfigError);
    expect(() => new SystemResolver({ negativeTtlMs: Number.NaN })).toThrow(DnsConfigError);
  });
});

describe('source ports (docs/dns.md, "Trust")', () => {
  // 20 queries the server never answers are all in flight at once: each open socket holds its own port.
  let round = 0;
  const burst = async (res: SystemResolver, on: TestDnsServer = server): Promise<Set<number>> => {
    const names = Array.from({ length: 20 }, (_, i) => `q${i}.r${++round}.drop.test`);
    for (const n of names) on.behaviourFor.set(n, 'drop');
    const ps = names.map((n) => res.query(n, 'A'));
    while (names.some((n) => on.count(n) === 0)) await sleep(10);
    res.cancel();
    await Promise.all(ps);
    return new Set(names.flatMap((n) => on.sourcePorts.get(n) ?? []));
  };

  it('with one server, each query of a burst leaves from its own socket and port', async () => {
    expect((await burst(make({ timeoutMs: 5000, tries: 1 }))).size).toBe(20);
  });

  it('socketPerQuery: false (the default with several servers) sends a burst from one socket', async () => {
    expect((await burst(make({ timeoutMs: 5000, tries: 1, socketPerQuery: false }))).size).toBe(1);
    const second = new TestDnsServer();
    const other = await second.start();
    try {
      expect((await burst(new SystemResolver({ servers: [addr, other], timeoutMs: 5000, tries: 1 }))).size).toBe(1);
    } finally {
      await second.stop();
    }
  });
});
