/**
 * Several servers sharing one registry (one SQLite file, or one PostgreSQL database): each sees the
 * others' changes in its `/get`, its engine and its push streams, also when a change reaches it
 * inside a `/set` that fails; uniqueness across two types holds between processes; a locked SQLite
 * file does not freeze the server; a PostgreSQL server survives its connections being cut and
 * hears the other servers again afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import pg from 'pg';
import { rule, startHarness, type Harness } from './harness.js';
import { startPostgres, type PostgresServer } from '../servers/index.js';
import { stream } from './sse.js';

async function until<T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const list = (namespace: string) => ({ namespace, url: 'https://lists.example/x.txt', format: { '@type': 'List' } });
const store = (namespace: string) => ({ namespace, store: { '@type': 'Redis' } });

/** Two servers on one registry; B records the rule names its engine was loaded with. */
async function pair(opts: { pg?: string }): Promise<{ a: Harness; b: Harness; loadsB: string[][] }> {
  const loadsB: string[][] = [];
  const a = await startHarness(opts);
  const b = await startHarness({ ...opts, ...(opts.pg === undefined ? { db: a.db } : {}), engine: { loadRules: (rules) => void loadsB.push(rules.map((r) => r.name as string)) } });
  return { a, b, loadsB };
}

describe.each([['SQLite'], ['PostgreSQL']])('servers sharing a %s registry', (backend) => {
  let server: PostgresServer | undefined;
  let a: Harness;
  let b: Harness;
  let loadsB: string[][];
  beforeAll(async () => {
    if (backend === 'PostgreSQL') server = await startPostgres();
    ({ a, b, loadsB } = await pair(server === undefined ? {} : { pg: server.url }));
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await server?.stop();
  });

  it("a change through A reaches B's engine, /get and push without a request to B", async () => {
    const s = await stream(b, '?types=x:SpamRule&closeafter=state&ping=0');
    const r = await a.call([['x:SpamRule/set', { create: { n: rule(`SEEN_${backend.toUpperCase()}`) } }, 's']]);
    const ev = await s.next(10_000);
    expect(ev.data.changed).toEqual({ a: { 'x:SpamRule': r[0]![1].newState } });
    expect(loadsB.at(-1)).toContain(`SEEN_${backend.toUpperCase()}`);
    const got = await b.call([['x:SpamRule/get', { ids: null, properties: ['name'] }, 'g']]);
    expect(got[0]![1].state).toBe(r[0]![1].newState);
    // B's /changes reads the log A wrote (RFC 8620 §5.2).
    const ch = await b.call([['x:SpamRule/changes', { sinceState: r[0]![1].oldState }, 'c']]);
    expect(ch[0]![1]).toMatchObject({ newState: r[0]![1].newState, created: [r[0]![1].created.n.id], updated: [], destroyed: [], hasMoreChanges: false });
  });

  it("a change that reaches B inside a /set refused with stateMismatch also reaches B's engine and push", async () => {
    const s0 = (await b.call([['x:SpamRule/get', { ids: [] }, 'g']]))[0]![1].state as string;
    const s = await stream(b, '?types=x:SpamRule&closeafter=state&ping=0');
    // A's change, then at once a /set on B that still believes in the old state.
    const r = await a.call([['x:SpamRule/set', { create: { n: rule(`RACED_${backend.toUpperCase()}`) } }, 's']]);
    const stale = await b.call([['x:SpamRule/set', { ifInState: s0, create: { n: rule('LOST') } }, 's']]);
    expect(stale[0]![1].type).toBe('stateMismatch');
    // Whichever came first (the /set's reload, or the notification), B now runs and announces A's rule.
    await until(() => loadsB.at(-1) ?? [], (names) => names.includes(`RACED_${backend.toUpperCase()}`));
    expect(loadsB.at(-1)).not.toContain('LOST');
    const ev = await s.next(10_000);
    expect(ev.data.changed).toEqual({ a: { 'x:SpamRule': r[0]![1].newState } });
  });

  it('a namespace cannot be taken by a StoreLookup on one server and an HttpLookup on the other', async () => {
    for (let i = 0; i < 5; i++) {
      const ns = `shared_${i}`;
      const [viaA, viaB] = await Promise.all([
        a.call([['x:HttpLookup/set', { create: { l: list(ns) } }, 'h']]),
        b.call([['x:StoreLookup/set', { create: { s: store(ns) } }, 's']]),
      ]);
      const created = [viaA[0]![1].created?.l, viaB[0]![1].created?.s].filter((x) => x != null);
      expect(created).toHaveLength(1);
      const refused = viaA[0]![1].notCreated?.l ?? viaB[0]![1].notCreated?.s;
      expect(refused.type).toBe('alreadyExists');
    }
    // And one after the other, before B could have heard of A's list any other way.
    await a.call([['x:HttpLookup/set', { create: { l: list('taken_first') } }, 'h']]);
    const late = await b.call([['x:StoreLookup/set', { create: { s: store('taken_first') } }, 's']]);
    expect(late[0]![1].notCreated.s.type).toBe('alreadyExists');
  });
});

describe('a SQLite registry locked by another process', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.close());

  it('a /set waits for the lock without blocking the server, and commits once the lock is released', async () => {
    const other = new Database(h.db);
    other.exec('BEGIN IMMEDIATE');
    let settled = false;
    const set = h.call([['x:SpamRule/set', { create: { n: rule('AFTER_LOCK') } }, 's']]).finally(() => {
      settled = true;
    });
    // Answered while the /set waits: the event loop is free.
    const got = await h.call([['x:SpamRule/get', { ids: [] }, 'g']]);
    expect(got[0]![1].state).toBeTypeOf('string');
    expect(settled).toBe(false);
    other.exec('COMMIT');
    other.close();
    const r = await set;
    expect(r[0]![1].created.n.id).toBeTypeOf('string');
  });

  it('a lock held past the busy limit fails the /set with serverFail, and nothing is written', async () => {
    const other = new Database(h.db);
    other.exec('BEGIN IMMEDIATE');
    try {
      const r = await h.call([['x:SpamRule/set', { create: { n: rule('NEVER') } }, 's']]);
      expect(r[0]![0]).toBe('error');
      expect(r[0]![1]).toMatchObject({ type: 'serverFail' });
      expect(r[0]![1].description).toMatch(/locked|busy/i);
    } finally {
      other.exec('COMMIT');
      other.close();
    }
    const all = await h.call([['x:SpamRule/get', { ids: null, properties: ['name'] }, 'g']]);
    expect(all[0]![1].list.map((r: { name: string }) => r.name)).not.toContain('NEVER');
  });
});

describe('a PostgreSQL registry whose connections are cut', () => {
  let server: PostgresServer;
  let a: Harness;
  let b: Harness;
  let loadsB: string[][];
  beforeAll(async () => {
    server = await startPostgres();
    ({ a, b, loadsB } = await pair({ pg: server.url }));
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await server?.stop();
  });

  it('both servers survive, write again, and B hears A again once its LISTEN connection is back', async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      // Every connection of both servers: idle pool clients and the LISTEN connections.
      const cut = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
      expect(cut.rowCount).toBeGreaterThanOrEqual(4);
    } finally {
      await admin.end();
    }
    // A's pool opens new connections; B reconnects its LISTEN connection and reloads what it missed.
    const r = await until(
      () => a.call([['x:SpamRule/set', { create: { n: rule('AFTER_CUT') } }, 's']]).catch(() => undefined),
      (x) => x?.[0]?.[1].created != null,
    );
    await until(() => loadsB.at(-1) ?? [], (names) => names.includes('AFTER_CUT'));
    const got = await b.call([['x:SpamRule/get', { ids: null, properties: ['name'] }, 'g']]);
    expect(got[0]![1].state).toBe(r![0]![1].newState);
    // And a later change arrives by NOTIFY again, without any request to B.
    await a.call([['x:SpamRule/set', { create: { n: rule('AFTER_RECONNECT') } }, 's']]);
    await until(() => loadsB.at(-1) ?? [], (names) => names.includes('AFTER_RECONNECT'));
  });
});
