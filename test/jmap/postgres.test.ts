/**
 * Two servers on one PostgreSQL database: a change committed through one is visible through the
 * other (LISTEN/NOTIFY reload), and concurrent writers never lose an update or break uniqueness.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';
import { startPostgres, type PostgresServer } from '../servers/index.js';
import { stream } from './sse.js';

let pg: PostgresServer;
let url: string;
let a: Harness;
let b: Harness;
/** Rule names B's engine was loaded with, per reload. */
const loadsB: string[][] = [];
beforeAll(async () => {
  pg = await startPostgres();
  url = pg.url;
  a = await startHarness({ pg: url });
  b = await startHarness({ pg: url, engine: { loadRules: (rules) => loadsB.push(rules.map((r) => r.name as string)) } });
}, 120_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await pg?.stop();
});

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await fn();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not reached in 5 s');
}

describe('PostgreSQL backend with LISTEN/NOTIFY', () => {
  it('a rule created through server A appears in server B without a request to B first', async () => {
    const r = await a.call([['x:SpamRule/set', { create: { n: rule('FROM_A') } }, 's']]);
    const id = r[0]![1].created.n.id;
    // B's engine reloads through NOTIFY alone.
    await until(
      async () => loadsB.at(-1) ?? [],
      (names) => names.includes('FROM_A'),
    );
    const got = await b.call([['x:SpamRule/get', { ids: [id], properties: ['name'] }, 'g']]);
    expect(got[0]![1].list).toEqual([{ id, name: 'FROM_A' }]);
    expect(got[0]![1].state).toBe(r[0]![1].newState);
  });

  it('updates and destroys propagate too, and states agree', async () => {
    const r = await a.call([['x:StoreLookup/set', { create: { s: { namespace: 'shared', store: { '@type': 'Redis' } } } }, 's']]);
    const id = r[0]![1].created.s.id;
    await b.call([['x:StoreLookup/set', { update: { [id]: { 'store/timeout': 1234 } } }, 'u']]);
    const got = await until(
      () => a.call([['x:StoreLookup/get', { ids: [id] }, 'g']]),
      (x) => x[0]![1].list[0]?.store.timeout === 1234,
    );
    expect(got[0]![1].list[0].namespace).toBe('shared');
    await a.call([['x:StoreLookup/set', { destroy: [id] }, 'd']]);
    await until(
      () => b.call([['x:StoreLookup/get', { ids: [id] }, 'g']]),
      (x) => x[0]![1].notFound.length === 1,
    );
  });

  it('serialises writers across servers: ifInState detects the other server, names stay unique', async () => {
    const s0 = (await a.call([['x:SpamRule/get', { ids: [] }, 'g']]))[0]![1].state;
    await b.call([['x:SpamRule/set', { create: { n: rule('FROM_B') } }, 's']]);
    // A has not necessarily heard the NOTIFY yet, but the write re-checks state under the row lock.
    const stale = await a.call([['x:SpamRule/set', { ifInState: s0, create: { n: rule('LATE') } }, 's']]);
    expect(stale[0]![1].type).toBe('stateMismatch');
    const results = await Promise.all([
      a.call([['x:SpamRule/set', { create: { n: rule('RACE') } }, 's']]),
      b.call([['x:SpamRule/set', { create: { n: rule('RACE') } }, 's']]),
    ]);
    const created = results.filter((r) => r[0]![1].created !== null);
    const refused = results.filter((r) => r[0]![1].notCreated !== null);
    expect(created).toHaveLength(1);
    expect(refused[0]![0]![1].notCreated.n.type).toBe('alreadyExists');
  });

  it("an event stream on one server hears a change committed through the other (RFC 8620 §7.3)", async () => {
    const s = await stream(b, '?types=x:SpamTag&closeafter=state&ping=0');
    const r = await a.call([['x:SpamTag/set', { create: { t: { '@type': 'Score', tag: 'PUSHED_ACROSS', score: 1 } } }, 's']]);
    const ev = await s.next(5000);
    expect(ev.data.changed).toEqual({ a: { 'x:SpamTag': r[0]![1].newState } });
    await s.ended;
  });
});
