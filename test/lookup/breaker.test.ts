/**
 * Fail-fast stores: a store whose server is gone is marked down after a few failures and answers with an
 * error at once (no per-message wait for a dead connection); a background probe finds it back.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { CachedLookupStore, CircuitBreakerStore, createLookupStore, LookupMap, LookupStoreError, type LookupStore } from '../../src/lookup/index.js';
import { freePort, startRedis, waitFor } from '../servers/index.js';

const stores: LookupStore[] = [];
const open = (ns: string, config: Record<string, unknown>, breaker = {}) => {
  const s = createLookupStore(ns, config, { cache: { enabled: false }, breaker });
  stores.push(s);
  return s;
};
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const rule: SpamRuleInput = {
  '@type': 'Any',
  name: 'BLOCKED_SENDER',
  priority: 1,
  condition: { match: [{ if: "key_exists('blocked', from.domain)", then: "'BLOCKED'" }], else: 'false' },
};
const ALWAYS: SpamRuleInput = { '@type': 'Any', name: 'ALWAYS', priority: 2, condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } };

/** The messages of a 300-message mbox, one sender domain each. */
const mbox = Array.from({ length: 300 }, (_, i) =>
  [`From: Sender ${i} <s${i}@d${i}.example>`, 'To: b@example.org', `Subject: message ${i}`, `Message-ID: <${i}@d${i}.example>`, '', `body ${i}`, ''].join('\r\n'),
);

describe('circuit breaker', () => {
  it('Redis killed mid-run: 300 messages classified in seconds, each reporting the store error; recovers when Redis is back', async () => {
    const server = await startRedis();
    try {
      const blocked = open('blocked', { '@type': 'Redis', url: server.url, timeout: 1000 }, { initialBackoffMs: 100, maxBackoffMs: 500 });
      const engine = new SpamEngine({ analysis: false, lookups: new LookupMap().set('blocked', blocked), rules: [rule, ALWAYS] });
      await blocked.keySet('d1.example', '1');
      for (let i = 0; i < 10; i++) {
        const r = await engine.classify(mbox[i]!);
        expect(r.errors).toEqual([]);
        expect(r.tags.includes('BLOCKED')).toBe(i === 1);
      }

      await server.kill();
      const started = performance.now();
      for (const msg of mbox) {
        const r = await engine.classify(msg);
        expect(r.tags).toContain('SEEN');
        expect(r.tags).not.toContain('BLOCKED');
        expect(r.errors).toHaveLength(1);
        expect(r.errors[0]!.source).toBe('BLOCKED_SENDER');
        expect(r.errors[0]!.message).toMatch(/lookup store "blocked": /);
      }
      const elapsed = performance.now() - started;
      console.log(`300 messages with the store dead: ${elapsed.toFixed(0)} ms`);
      expect(elapsed).toBeLessThan(10_000);
      expect((blocked as CircuitBreakerStore).isDown).toBe(true);
      const down = await blocked.keyGet('x').catch((e: unknown) => e);
      expect(down).toBeInstanceOf(LookupStoreError);
      expect((down as Error).message).toMatch(/^lookup store "blocked": store is down \(for \d+ s; last error: .+\); probing in the background$/);

      await server.start(); // empty again: no persistence
      await waitFor('probe finds Redis back', async () => !(blocked as CircuitBreakerStore).isDown, 20_000, 100);
      await blocked.keySet('d2.example', '1');
      const r = await engine.classify(mbox[2]!);
      expect(r.errors).toEqual([]);
      expect(r.tags).toContain('BLOCKED');
    } finally {
      await server.stop();
    }
  }, 60_000);

  it.each([
    ['PostgreSql', (port: number) => ({ '@type': 'PostgreSql', host: '127.0.0.1', port, timeout: 2000 })],
    ['MySql', (port: number) => ({ '@type': 'MySql', host: '127.0.0.1', port, timeout: 2000 })],
    ['Redis', (port: number) => ({ '@type': 'Redis', url: `redis://127.0.0.1:${port}`, timeout: 2000 })],
  ])('%s with no server: down after 3 refused calls, then every call fails at once', async (type, config) => {
    const port = await freePort(); // nothing listens there
    const store = open(`none-${type}`, config(port), { initialBackoffMs: 60_000 });
    for (let i = 0; i < 3; i++) await expect(store.keyGet('k')).rejects.toBeInstanceOf(LookupStoreError);
    expect((store as CircuitBreakerStore).isDown).toBe(true);
    const started = performance.now();
    for (let i = 0; i < 1000; i++) await expect(store.keyExists('k')).rejects.toThrow(/store is down/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('a frozen server is marked down after slowCallMs, not after its timeout; a late probe answer keeps it down', async () => {
    const server = await startRedis();
    try {
      const config = { '@type': 'Redis', url: server.url, timeout: 10_000 };
      const fast = open('frozen', config, { slowCallMs: 300, initialBackoffMs: 100, maxBackoffMs: 200 });
      // With the read cache in front, as rules use a store: lookups of a key already asked for join that call.
      const cached = createLookupStore('frozen-cached', config, { breaker: { slowCallMs: 300, initialBackoffMs: 60_000 } });
      stores.push(cached);
      const patient = open('frozen-no-slow', config, { slowCallMs: 0 });
      await fast.keySet('k', '1');
      await patient.keySet('k', '1');
      expect(await cached.keyExists('warm')).toBe(false);
      server.pause();
      const started = performance.now();
      // Three messages' lookups, under way together as in a server.
      const pending = [1, 2, 3].map(() => fast.keyExists('k').catch((e: unknown) => e));
      const slow = patient.keyExists('k').catch((e: unknown) => e);
      // Through the cache: a popular key's call freezes, and three other keys' calls open the breaker.
      const popular = cached.keyExists('k1').catch((e: unknown) => e);
      const others = [2, 3, 4].map((i) => cached.keyExists(`k${i}`).catch((e: unknown) => e));
      await waitFor('breaker open', async () => (fast as CircuitBreakerStore).isDown, 3_000);
      await waitFor('cached breaker open', async () => ((cached as CachedLookupStore).inner as CircuitBreakerStore).isDown, 3_000);
      expect(performance.now() - started).toBeLessThan(2_000);
      await expect(fast.keyGet('k')).rejects.toThrow(/store is down \(for \d+ s; last error: no answer within 300 ms\)/);
      // A lookup of the popular key does not join its call, which started before the breaker opened and
      // would keep it waiting for the store's 10 s timeout: it is answered at once.
      const t0 = performance.now();
      await expect(cached.keyExists('k1')).rejects.toThrow(/store is down/);
      expect(performance.now() - t0).toBeLessThan(100);
      // Without the slow-call limit the breaker waits for the store's own 10 s timeout.
      expect((patient as CircuitBreakerStore).isDown).toBe(false);

      // The probe sent 100 ms after the breaker opened is still waiting: it answers a second late.
      await new Promise((r) => setTimeout(r, 1_000));
      server.resume();
      await new Promise((r) => setTimeout(r, 50));
      expect((fast as CircuitBreakerStore).isDown).toBe(true);
      await expect(fast.keyGet('k')).rejects.toThrow(/the probe answered in \d+ ms, over 300 ms/);
      // The calls themselves answer late, which does not close the breaker either; the next probe does.
      expect(await Promise.all(pending)).toEqual([true, true, true]);
      expect(await slow).toBe(true);
      expect(await popular).toBe(false);
      expect(await Promise.all(others)).toEqual([false, false, false]);
      await waitFor('breaker closed', async () => !(fast as CircuitBreakerStore).isDown, 3_000);
      expect(await fast.keyGet('k')).toBe('1');
    } finally {
      server.resume();
      await server.stop();
    }
  });

  it('is off with breaker.enabled false', async () => {
    const port = await freePort();
    const store = open('no-breaker', { '@type': 'Redis', url: `redis://127.0.0.1:${port}`, timeout: 2000 }, { enabled: false });
    expect(store).not.toBeInstanceOf(CircuitBreakerStore);
    for (let i = 0; i < 4; i++) await expect(store.keyGet('k')).rejects.toThrow(/ECONNREFUSED|connect|closed|writeable/i);
  });
});

describe('close() with a server that accepted the connection and went silent', () => {
  it.each(['PostgreSql', 'MySql'])('%s: returns within a second or so, not after the store timeout (30 s here)', async (type) => {
    // Before, the driver's pool end() waited for the connect in progress: 52 s with a timeout of 60 s.
    const sockets: Socket[] = [];
    const silent = createServer((s) => void sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      const s = createLookupStore('silent', { '@type': type, host: '127.0.0.1', port, database: 'x', authUsername: 'u', timeout: 30_000 }, { breaker: { enabled: false } });
      const pending = s.keyExists('k').then(
        () => 'answered',
        (e: Error) => e.message,
      );
      await waitFor('the connection', async () => sockets.length > 0, 5_000, 20);
      const started = performance.now();
      await s.close();
      expect(performance.now() - started).toBeLessThan(10_000);
      // The call in flight fails at once too, with the store's name.
      expect(await pending).toMatch(/^lookup store "silent": key_exists failed/);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});
