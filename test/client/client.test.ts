/** JmapClient over real HTTP against createJmapServer: session, calls, typed helpers, and the three error levels. */
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSetError, JmapClient, JmapMethodError, JmapRequestError, normalizeRuleName, type SpamRule } from '../../src/client/index.js';
import { startServer, type ClientHarness } from './harness.js';

const rule = (name: string, extra: Record<string, unknown> = {}) => ({ '@type': 'Any', name, condition: { match: [{ if: 'true', then: "'T'" }], else: 'false' }, ...extra });

describe('JmapClient', () => {
  let h: ClientHarness;
  let client: JmapClient;
  beforeAll(async () => {
    h = await startServer({ limits: { maxObjectsInGet: 5 }, queryMaxResults: 7 });
    client = new JmapClient({ server: h.server.url + '/', token: h.admin });
  });
  afterAll(() => h?.close());

  it('reads the Session: account from primaryAccounts, core limits', async () => {
    const s = await client.session();
    expect(s.primaryAccounts['urn:stalwart:jmap']).toBe('a');
    expect(await client.accountId()).toBe('a');
    expect(await client.limits()).toEqual({ maxObjectsInGet: 5, maxObjectsInSet: 500, maxCallsInRequest: 16 });
  });

  it('creates, queries, gets, updates and destroys rules through the typed helpers', async () => {
    const set = await client.setRules({ create: { a: rule('alpha one', { priority: 7 }) } });
    const id = set.created!.a!.id;
    expect(set.created!.a!.name).toBe('ALPHAONE');
    const q = await client.queryRules({ filter: { name: 'alphaone' } });
    expect(q.ids).toEqual([id]);
    const got = await client.getRules([id]);
    expect(got.list).toEqual([
      { id, '@type': 'Any', name: 'ALPHAONE', description: null, enable: true, priority: 7, condition: { match: [{ if: 'true', then: "'T'" }], else: 'false' } },
    ]);
    const upd = await client.setRules({ update: { [id]: { priority: 8 } } });
    expect(upd.updated).toEqual({ [id]: null });
    expect((await client.findRule('Alpha One'))?.priority).toBe(8);
    const del = await client.setRules({ destroy: [id] });
    expect(del.destroyed).toEqual([id]);
    expect(await client.findRule('ALPHAONE')).toBeUndefined();
  });

  it('getAll pages past maxObjectsInGet and the per-query cap, keeping query order', async () => {
    const create = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`c${i}`, rule(`page${String(i).padStart(2, '0')}`, { priority: 100 - i })]));
    await client.setRules({ create });
    expect((await client.queryRules({ filter: { name: 'PAGE' } })).ids).toHaveLength(7);
    const all = await client.getAll<SpamRule>('SpamRule', { filter: { name: 'PAGE' }, sort: [{ property: 'priority' }] });
    expect(all.map((r) => r.name)).toEqual(Array.from({ length: 12 }, (_, i) => `PAGE${String(11 - i).padStart(2, '0')}`));
  });

  it('findRule needs an exact name although the server filter is a substring match', async () => {
    await client.setRules({ create: { x: rule('FINDME'), y: rule('FINDMETOO') } });
    expect((await client.findRule('findme'))?.name).toBe('FINDME');
    expect(await client.findRule('FIND')).toBeUndefined();
    expect(await client.findRule('   ')).toBeUndefined();
  });

  it('manages stores and finds them by namespace or id', async () => {
    const r = await client.setStores({ create: { s: { namespace: 'lists', store: { '@type': 'Sqlite', path: join(h.dir, 'none.db') } } } });
    const id = r.created!.s!.id;
    expect((await client.findStore('lists'))?.id).toBe(id);
    expect((await client.findStore(id))?.namespace).toBe('lists');
    expect(await client.findStore('nothing')).toBeUndefined();
    expect((await client.queryStores({ filter: { type: 'Sqlite' } })).ids).toEqual([id]);
    expect((await client.getStores([id])).list[0]!.store).toEqual({ '@type': 'Sqlite', path: join(h.dir, 'none.db'), poolWorkers: null, poolMaxConnections: 10 });
  });

  it('call fills in accountId and returns method errors as responses; invoke throws JmapMethodError', async () => {
    const r = await client.call([
      ['x:SpamRule/query', { limit: 1 }, 'q'],
      ['x:Nope/get', {}, 'n'],
    ]);
    expect(r[0]![0]).toBe('x:SpamRule/query');
    expect(r[0]![1].accountId).toBe('a');
    expect(r[1]).toEqual(['error', { type: 'unknownMethod', description: expect.any(String) }, 'n']);
    const e = await client.invoke('x:SpamRule/query', { limit: -1 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(JmapMethodError);
    expect((e as JmapMethodError).type).toBe('invalidArguments');
    expect((e as JmapMethodError).message).toMatch(/^x:SpamRule\/query failed: invalidArguments: .+/);
  });

  it('a permission-less token gets a forbidden method error', async () => {
    const c = new JmapClient({ server: h.server.url, token: h.token(['sysStoreLookupGet'], 'ro') });
    const e = await c.queryRules().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(JmapMethodError);
    expect((e as JmapMethodError).type).toBe('forbidden');
  });

  it('request-level problems become JmapRequestError with status, type and detail', async () => {
    const bad = new JmapClient({ server: h.server.url, token: 'srt_nope' });
    const e1 = (await bad.session().catch((x: unknown) => x)) as JmapRequestError;
    expect(e1).toBeInstanceOf(JmapRequestError);
    expect(e1.status).toBe(401);
    expect(e1.message).toBe(`${h.server.url}/.well-known/jmap: HTTP 401: The token is unknown or revoked.`);

    const foreign = new JmapClient({ server: h.server.url, token: h.admin, capability: 'urn:example:other' });
    const e2 = (await foreign.queryRules().catch((x: unknown) => x)) as JmapRequestError;
    expect(e2).toBeInstanceOf(JmapRequestError);
    expect(e2.status).toBe(400);
    expect(e2.type).toBe('unknownCapability');
    expect(e2.message).toBe(`${h.server.url}/jmap/: HTTP 400 unknownCapability: unknown capabilities: urn:example:other`);
  });

  it('reports an unreachable server and a non-JMAP endpoint readably', async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const e = (await new JmapClient({ server: `http://127.0.0.1:${port}`, token: 't' }).session().catch((x: unknown) => x)) as JmapRequestError;
    expect(e).toBeInstanceOf(JmapRequestError);
    expect(e.message).toBe(`cannot reach http://127.0.0.1:${port}/.well-known/jmap: connect ECONNREFUSED 127.0.0.1:${port}`);

    const html = createServer((_q, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'));
    await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
    const hp = (html.address() as AddressInfo).port;
    try {
      const e2 = (await new JmapClient({ server: `http://127.0.0.1:${hp}`, token: 't' }).session().catch((x: unknown) => x)) as JmapRequestError;
      expect(e2.message).toBe(`http://127.0.0.1:${hp}/.well-known/jmap: the response is not JSON`);
    } finally {
      await new Promise<void>((r) => html.close(() => r()));
    }
  });

  it('refuses a malformed server URL or an empty token up front', () => {
    expect(() => new JmapClient({ server: 'localhost:8080', token: 't' })).toThrow('must be an http(s) URL');
    expect(() => new JmapClient({ server: 'not a url', token: 't' })).toThrow('is not a URL');
    expect(() => new JmapClient({ server: 'http://x', token: '' })).toThrow('a token is required');
  });

  it('formats SetErrors with properties, description and existingId', () => {
    expect(formatSetError('rule X', { type: 'invalidProperties', properties: ['condition/match/0/if', 'priority'], description: 'bad' })).toBe(
      'rule X: invalidProperties [condition/match/0/if, priority]: bad',
    );
    expect(formatSetError('rule X', { type: 'alreadyExists', existingId: 'abc' })).toBe('rule X: alreadyExists (existing id abc)');
    expect(formatSetError('x', { type: 'notFound' })).toBe('x: notFound');
    expect(normalizeRuleName(' my\trule x ')).toBe('MYRULEX');
  });
});
