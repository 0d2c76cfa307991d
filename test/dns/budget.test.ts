/**
 * withBudget: the per-message query cap and deadline, over the system resolver and a loopback DNS server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { StaticResolver, SystemResolver, withBudget, type Resolver } from '../../src/dns/index.js';
import { TestDnsServer } from './server.js';

const server = new TestDnsServer({
  'a.test': { A: ['192.0.2.1'] },
  'b.test': { A: ['192.0.2.2'] },
  'c.test': { A: ['192.0.2.3'] },
});
let addr = '';
beforeAll(async () => {
  addr = await server.start();
});
afterAll(() => server.stop());
beforeEach(() => {
  server.received.length = 0;
  server.mode = 'answer';
});

describe('withBudget', () => {
  it('answers normally under the cap, then error without sending anything', async () => {
    const b = withBudget(new SystemResolver({ servers: [addr] }), { maxQueries: 2 });
    expect(await b.query('a.test', 'A')).toMatchObject({ status: 'ok', records: ['192.0.2.1'] });
    expect(await b.query('nx.test', 'A')).toEqual({ status: 'nxdomain' });
    const capped = await b.query('b.test', 'A');
    expect(capped).toMatchObject({ status: 'error' });
    expect(capped.status === 'error' && capped.error).toMatch(/cap/);
    expect(await b.query('c.test', 'A')).toMatchObject({ status: 'error' });
    expect(server.received).toEqual(['A a.test', 'A nx.test']);
    expect(b.stats()).toEqual({ queries: 2, errors: 2, capped: 2 });
  });

  it('counts per wrapper: a new message gets a new budget over the same resolver', async () => {
    const shared = new SystemResolver({ servers: [addr] });
    const m1 = withBudget(shared, { maxQueries: 1 });
    await m1.query('a.test', 'A');
    expect(await m1.query('b.test', 'A')).toMatchObject({ status: 'error' });
    const m2 = withBudget(shared, { maxQueries: 1 });
    expect(await m2.query('b.test', 'A')).toMatchObject({ status: 'ok' });
  });

  it('with a server that never answers, every query resolves by the deadline', async () => {
    server.mode = 'drop';
    // The resolver's own timeout is far longer than the message's deadline.
    const slow = new SystemResolver({ servers: [addr], timeoutMs: 20_000 });
    const b = withBudget(slow, { deadlineMs: 300 });
    const t0 = performance.now();
    const answers = await Promise.all([
      b.query('a.test', 'A'),
      b.query('b.test', 'MX'),
      b.query('c.test', 'TXT'),
    ]);
    const elapsed = performance.now() - t0;
    for (const a of answers) expect(a).toMatchObject({ status: 'error' });
    expect(elapsed).toBeLessThan(3000);
    // After the deadline: error at once, nothing sent (c-ares may still retransmit the abandoned queries).
    expect(await b.query('a.test', 'AAAA')).toMatchObject({ status: 'error' });
    expect(server.received).not.toContain('AAAA a.test');
    expect(b.stats()).toEqual({ queries: 3, errors: 4, capped: 4 });
    slow.cancel(); // the abandoned queries would otherwise wait out their 20 s
  });

  it('keeps refusing once a deadline timer has fired, even if the clock says the deadline is not yet past', async () => {
    // libuv dates a timer from the loop's cached clock, so after a long loop turn it fires a little early by
    // performance.now(). Freeze the clock to make that gap as wide as it gets.
    const never: Resolver = { query: () => new Promise(() => {}) };
    const sent: string[] = [];
    const counting: Resolver = {
      query: (name, type) => {
        sent.push(`${type} ${name}`);
        return never.query(name, type);
      },
    };
    const now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockReturnValue(now);
    try {
      const b = withBudget(counting, { deadlineMs: 30 });
      expect(await b.query('a.test', 'A')).toMatchObject({ status: 'error' });
      expect(await b.query('a.test', 'AAAA')).toMatchObject({ status: 'error' });
      expect(sent).toEqual(['A a.test']);
      expect(b.stats()).toEqual({ queries: 1, errors: 2, capped: 2 });
    } finally {
      clock.mockRestore();
    }
  });

  it('answers arriving before the deadline pass through', async () => {
    const b = withBudget(new SystemResolver({ servers: [addr] }), { deadlineMs: 10_000, maxQueries: 10 });
    expect(await b.query('a.test', 'A')).toMatchObject({ status: 'ok' });
    expect(b.stats()).toEqual({ queries: 1, errors: 0, capped: 0 });
  });

  it('counts error answers of the resolver', async () => {
    server.mode = 'servfail';
    const b = withBudget(new SystemResolver({ servers: [addr] }));
    expect(await b.query('a.test', 'A')).toMatchObject({ status: 'error' });
    expect(b.stats()).toEqual({ queries: 1, errors: 1, capped: 0 });
  });

  it('turns a resolver that rejects (breaking the contract) into an error answer', async () => {
    const broken: Resolver = { query: () => Promise.reject(new Error('boom')) };
    expect(await withBudget(broken).query('a.test', 'A')).toEqual({ status: 'error', error: 'boom' });
  });

  it('a cap of 0 allows nothing', async () => {
    const b = withBudget(new StaticResolver({ 'a.test': { A: ['192.0.2.1'] } }), { maxQueries: 0 });
    expect(await b.query('a.test', 'A')).toMatchObject({ status: 'error' });
  });
});

describe('withBudget: the time the message waited for DNS', () => {
  it('counts overlapping queries once, stops counting at the deadline, and counts nothing for refused queries', async () => {
    const after = (ms: number): Resolver => ({ query: () => new Promise((r) => setTimeout(() => r({ status: 'nxdomain' }), ms)) });
    const b = withBudget(after(200), { deadlineMs: 5_000 });
    expect(b.waitedMs()).toBe(0);
    await Promise.all([b.query('a.example', 'A'), b.query('b.example', 'A'), b.query('c.example', 'A')]);
    expect(b.waitedMs()).toBeGreaterThanOrEqual(150);
    expect(b.waitedMs()).toBeLessThan(600);
    // A resolver that never answers: the wait ends at the deadline, and does not grow after it.
    const never = withBudget({ query: () => new Promise(() => {}) }, { deadlineMs: 200 });
    expect((await never.query('x.example', 'TXT')).status).toBe('error');
    const atDeadline = never.waitedMs();
    expect(atDeadline).toBeGreaterThanOrEqual(150);
    await new Promise((r) => setTimeout(r, 200));
    expect(never.waitedMs()).toBe(atDeadline);
    await never.query('y.example', 'TXT'); // refused at once: the deadline has passed
    expect(never.waitedMs()).toBe(atDeadline);
  });
});
