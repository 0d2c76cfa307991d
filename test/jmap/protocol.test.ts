import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ limits: { maxCallsInRequest: 5, maxObjectsInGet: 10, maxObjectsInSet: 3, maxSizeRequest: 4000 } });
});
afterAll(() => h.close());

describe('session resource', () => {
  it('serves the authenticated session at /.well-known/jmap and /jmap/session', async () => {
    for (const path of ['/.well-known/jmap', '/jmap/session']) {
      const res = await fetch(h.server.url + path, { headers: { authorization: `Bearer ${h.admin}` } });
      expect(res.status).toBe(200);
      const s = (await res.json()) as any;
      expect(s.capabilities['urn:ietf:params:jmap:core']).toEqual({
        maxSizeUpload: 50_000_000,
        maxConcurrentUpload: 4,
        maxSizeRequest: 4000,
        maxConcurrentRequests: 4,
        maxCallsInRequest: 5,
        maxObjectsInGet: 10,
        maxObjectsInSet: 3,
        collationAlgorithms: ['i;ascii-numeric', 'i;ascii-casemap', 'i;unicode-casemap'],
      });
      expect(s.capabilities['urn:stalwart:jmap']).toEqual({});
      expect(s.primaryAccounts).toEqual({ 'urn:stalwart:jmap': 'a' });
      expect(s.accounts.a.accountCapabilities).toEqual({ 'urn:stalwart:jmap': {} });
      expect(s.username).toBe('admin');
      expect(s.apiUrl).toBe(`${h.server.url}/jmap/`);
      expect(s.state).toBe('c0');
    }
  });

  it('refuses a missing or unknown token with 401 and WWW-Authenticate: Bearer', async () => {
    const none = await fetch(h.server.url + '/jmap/session');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="spamrule"');
    expect(none.headers.get('content-type')).toBe('application/problem+json');
    expect(((await none.json()) as any).status).toBe(401);
    const bad = await h.post('{}', { authorization: 'Bearer nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe('Bearer realm="spamrule", error="invalid_token"');
    const basic = await h.post('{}', { authorization: `Basic ${h.admin}` });
    expect(basic.status).toBe(401);
  });

  it('stops accepting a revoked token at once', async () => {
    const tok = h.token(['sysSpamRuleGet'], 'short-lived');
    expect((await h.call([['x:SpamRule/get', { ids: [] }, 'r']], tok))[0]![0]).toBe('x:SpamRule/get');
    expect(h.server.tokens.revoke('short-lived')).toBe(1);
    expect((await h.post('{}', { authorization: `Bearer ${tok}` })).status).toBe(401);
  });

  it('serves the configured capability URN', async () => {
    const other = await startHarness({ capability: 'urn:example:jmap' });
    try {
      const s = (await (await fetch(other.server.url + '/.well-known/jmap', { headers: { authorization: `Bearer ${other.admin}` } })).json()) as any;
      expect(Object.keys(s.capabilities)).toEqual(['urn:ietf:params:jmap:core', 'urn:example:jmap']);
      const r = await other.post(JSON.stringify({ using: ['urn:example:jmap'], methodCalls: [] }));
      expect(r.status).toBe(200);
      const bad = await other.post(JSON.stringify({ using: ['urn:stalwart:jmap'], methodCalls: [] }));
      expect(bad.json.type).toBe('urn:ietf:params:jmap:error:unknownCapability');
    } finally {
      await other.close();
    }
  });
});


describe('request-level errors (RFC 8620 §3.6.1, problem JSON)', () => {
  it('notJSON for a body that is not JSON and for a wrong Content-Type', async () => {
    const r = await h.post('{nope');
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.json.type).toBe('urn:ietf:params:jmap:error:notJSON');
    expect(r.json.status).toBe(400);
    const ct = await h.post('{}', { 'content-type': 'text/plain' });
    expect(ct.json.type).toBe('urn:ietf:params:jmap:error:notJSON');
    // Bytes that are not UTF-8 are not I-JSON: refused, not replaced by U+FFFD.
    const bytes = Buffer.concat([Buffer.from('{"using":["urn:ietf:params:jmap:core"],"methodCalls":[["Core/echo",{"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"},"a"]]}')]);
    const bad = await fetch(`${h.server.url}/jmap`, { method: 'POST', headers: { authorization: `Bearer ${h.admin}`, 'content-type': 'application/json' }, body: bytes });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: 'urn:ietf:params:jmap:error:notJSON', detail: 'the request body is not valid UTF-8' });
  });

  it('notRequest for JSON that is not a Request', async () => {
    for (const body of ['[]', '{"using":[]}', '{"using":"x","methodCalls":[]}', '{"using":[],"methodCalls":[["x:SpamRule/get",{}]]}', '{"using":[],"methodCalls":[["x:SpamRule/get",[],"a"]]}']) {
      const r = await h.post(body);
      expect(r.status).toBe(400);
      expect(r.json.type).toBe('urn:ietf:params:jmap:error:notRequest');
    }
  });

  it('unknownCapability for an unknown URN in using (RFC 8620 §3.6.1)', async () => {
    const r = await h.post(JSON.stringify({ using: ['urn:foo'], methodCalls: [] }));
    expect(r.status).toBe(400);
    expect(r.json.type).toBe('urn:ietf:params:jmap:error:unknownCapability');
    expect(r.json.detail).toContain('urn:foo');
  });

  it('limit with the limit property for maxCallsInRequest and maxSizeRequest', async () => {
    const calls = Array.from({ length: 6 }, (_, i) => ['x:SpamRule/get', { ids: [] }, `c${i}`]);
    const r = await h.post(JSON.stringify({ using: [], methodCalls: calls }));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', limit: 'maxCallsInRequest', status: 400 });
    const big = await h.post(JSON.stringify({ using: [], methodCalls: [], pad: 'x'.repeat(5000) }));
    expect(big.status).toBe(400);
    expect(big.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', limit: 'maxSizeRequest' });
  });

  it('404 for other paths, 405 for other methods, 204 for OPTIONS', async () => {
    expect((await fetch(h.server.url + '/nope')).status).toBe(404);
    const get = await fetch(h.server.url + '/jmap', { headers: { authorization: `Bearer ${h.admin}` } });
    expect(get.status).toBe(405);
    expect((await fetch(h.server.url + '/jmap', { method: 'OPTIONS' })).status).toBe(204);
  });

  it('accepts /api and /jmap/ as the API endpoint, and a missing Content-Type', async () => {
    for (const path of ['/api', '/jmap/']) {
      const res = await fetch(h.server.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.admin}` },
        // A Uint8Array body makes fetch send no Content-Type at all (a string would be text/plain).
        body: new TextEncoder().encode(JSON.stringify({ using: ['urn:ietf:params:jmap:core'], methodCalls: [['x:SpamRule/get', { ids: [] }, 'x']] })),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.methodResponses[0][0]).toBe('x:SpamRule/get');
      expect(body.sessionState).toBe('c0');
      expect(body.createdIds).toBeUndefined();
    }
  });
});

describe('method-level errors', () => {
  it('unknownMethod for other methods; later calls still run (§7 case 35)', async () => {
    const r = await h.call([
      ['x:SpamRule/copy', {}, 'a'],
      ['Email/get', {}, 'b'],
      ['x:SpamRule/get', { ids: [] }, 'c'],
    ]);
    expect(r[0]).toEqual(['error', { type: 'unknownMethod', description: 'unknown method x:SpamRule/copy' }, 'a']);
    expect(r[1]![1].type).toBe('unknownMethod');
    expect(r[2]![0]).toBe('x:SpamRule/get');
  });

  it('keeps a method error short when it quotes a huge input', async () => {
    const path = '/' + 'x'.repeat(3_000); // within this harness's maxSizeRequest (4000 bytes)
    const r = await h.call([['x:SpamRule/query', {}, 'q'], ['x:SpamRule/get', { '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path } }, 'g']]);
    expect(r[1]![1].type).toBe('invalidResultReference');
    expect(r[1]![1].description.length).toBeLessThan(1_100);
    expect(r[1]![1].description).toMatch(/… \(\d+ characters\)$/);
  });

  it('Core/echo returns its arguments, result references resolved (RFC 8620 §4)', async () => {
    const r = await h.call([
      ['Core/echo', { hello: true, list: [1, 'two', { three: null }] }, 'a'],
      ['x:SpamRule/query', {}, 'q'],
      ['Core/echo', { '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path: '/ids' } }, 'b'],
    ]);
    expect(r[0]).toEqual(['Core/echo', { hello: true, list: [1, 'two', { three: null }] }, 'a']);
    expect(r[2]).toEqual(['Core/echo', { ids: r[1]![1].ids }, 'b']);
  });

  it('invalidArguments for a creation id that is not an Id (RFC 8620 §1.2)', async () => {
    for (const cid of ['', 'a b/c', 'x'.repeat(256)]) {
      const r = await h.call([['x:SpamTag/set', { create: { [cid]: { '@type': 'Score', tag: 'CID_TEST', score: 1 } } }, 'a']]);
      expect(r[0]![1].type).toBe('invalidArguments');
    }
    const ok = await h.call([['x:SpamTag/set', { create: { 'A-z_9': { '@type': 'Score', tag: 'CID_TEST', score: 1 } } }, 'a']]);
    expect(ok[0]![1].created['A-z_9'].id).toBeTypeOf('string');
  });

  it('invalidArguments for wrong argument types', async () => {
    const r = await h.call([
      ['x:SpamRule/get', { ids: 'x' }, 'a'],
      ['x:SpamRule/get', { properties: ['nope'] }, 'b'],
      ['x:SpamRule/set', { create: [] }, 'c'],
      ['x:SpamRule/query', { limit: -1 }, 'd'],
    ]);
    const r2 = await h.call([
      ['x:SpamRule/query', { filter: { operator: 'XOR', conditions: [] } }, 'e'],
      ['x:SpamRule/get', { accountId: 7 }, 'f'],
      ['x:SpamRule/query', { filter: { operator: 'AND', conditions: [], name: 'x' } }, 'g'],
      ['x:SpamRule/set', { ifInState: 5 }, 'h'],
    ]);
    for (const x of [...r, ...r2]) expect(x[1].type).toBe('invalidArguments');
  });

  it('accountNotFound for another account id; the own one is accepted', async () => {
    const r = await h.call([
      ['x:SpamRule/get', { accountId: 'zz', ids: [] }, 'a'],
      ['x:SpamRule/get', { accountId: 'a', ids: [] }, 'b'],
    ]);
    expect(r[0]![1].type).toBe('accountNotFound');
    expect(r[1]![1].accountId).toBe('a');
  });

  it('requestTooLarge over maxObjectsInGet and maxObjectsInSet (§7 case 32)', async () => {
    const r = await h.call([
      ['x:SpamRule/get', { ids: Array.from({ length: 11 }, (_, i) => `i${i}`) }, 'a'],
      ['x:SpamRule/set', { create: { a: rule('R1'), b: rule('R2') }, destroy: ['x', 'y'] }, 'b'],
    ]);
    expect(r[0]![1].type).toBe('requestTooLarge');
    expect(r[1]![1].type).toBe('requestTooLarge');
  });
});

describe('references', () => {
  it('resolves result references with * paths and creation ids across calls', async () => {
    const r = await h.call([
      ['x:SpamRule/set', { create: { k1: rule('REF_ONE'), k2: rule('REF_TWO') } }, 's'],
      ['x:SpamRule/get', { '#ids': { resultOf: 's', name: 'x:SpamRule/set', path: '/created/*/id' }, properties: ['name'] }, 'g'],
      ['x:SpamRule/get', { ids: ['#k2', '#unknown'], properties: [] }, 'g2'],
      ['x:SpamRule/query', { filter: { name: 'ref_' }, sort: [{ property: 'name' }] }, 'q'],
      ['x:SpamRule/get', { '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path: '/ids' }, properties: ['name'] }, 'g3'],
    ]);
    const id1 = r[0]![1].created.k1.id;
    const id2 = r[0]![1].created.k2.id;
    expect(r[1]![1].list).toEqual([
      { id: id1, name: 'REF_ONE' },
      { id: id2, name: 'REF_TWO' },
    ]);
    expect(r[2]![1].list).toEqual([{ id: id2 }]);
    expect(r[2]![1].notFound).toEqual(['#unknown']);
    expect(r[3]![1].ids).toEqual([id1, id2]);
    expect(r[4]![1].list.map((x: any) => x.name)).toEqual(['REF_ONE', 'REF_TWO']);
  });

  it('destroys every object through a /get reference (§7 case 3), then echoes createdIds', async () => {
    const r = await h.call(
      [
        ['x:SpamRule/get', { ids: null, properties: ['id'] }, 'R1'],
        ['x:SpamRule/set', { '#destroy': { resultOf: 'R1', name: 'x:SpamRule/get', path: '/list/*/id' } }, 'R2'],
        ['x:SpamRule/get', { ids: null }, 'R3'],
      ],
      h.admin,
    );
    expect(r[1]![1].destroyed).toEqual(r[0]![1].list.map((x: any) => x.id));
    expect(r[2]![1].list).toEqual([]);
    const res = await h.post(
      JSON.stringify({ using: [], createdIds: { old: 'zzz' }, methodCalls: [['x:SpamRule/set', { create: { n: rule('ECHO') } }, 'c']] }),
    );
    expect(res.json.createdIds).toEqual({ old: 'zzz', n: res.json.methodResponses[0][1].created.n.id });
  });

  it('invalidResultReference for a missing call, a wrong name or a bad path; invalidArguments for both forms', async () => {
    const r = await h.call([
      ['x:SpamRule/query', {}, 'q'],
      ['x:SpamRule/get', { '#ids': { resultOf: 'nope', name: 'x:SpamRule/query', path: '/ids' } }, 'a'],
      ['x:SpamRule/get', { '#ids': { resultOf: 'q', name: 'x:SpamRule/get', path: '/ids' } }, 'b'],
      ['x:SpamRule/get', { '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path: '/nothing' } }, 'c'],
      ['x:SpamRule/get', { ids: [], '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path: '/ids' } }, 'd'],
    ]);
    expect(r.slice(1, 4).map((x) => x[1].type)).toEqual(['invalidResultReference', 'invalidResultReference', 'invalidResultReference']);
    expect(r[4]![1].type).toBe('invalidArguments');
  });
});

describe('a client that hangs up mid-request', () => {
  it('is not logged as a server fault', async () => {
    const logged: string[] = [];
    const x = await startHarness({ log: (l) => logged.push(l) });
    try {
      const { connect } = await import('node:net');
      const u = new URL(x.server.url);
      await new Promise<void>((resolve) => {
        const sock = connect(Number(u.port), u.hostname, () => {
          sock.write(`POST /jmap HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${x.admin}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"using":`);
          setTimeout(() => sock.destroy(), 100);
        });
        sock.on('close', () => resolve());
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(logged.filter((l) => l.includes('internal error'))).toEqual([]);
      // The server is still there for the next client.
      expect((await x.call([['Core/echo', { ok: 1 }, 'a']]))[0]).toEqual(['Core/echo', { ok: 1 }, 'a']);
    } finally {
      await x.close();
    }
  });
});

describe('maxConcurrentRequests', () => {
  it('refuses a request while the limit is taken by an unfinished one of the same token', async () => {
    const { request } = await import('node:http');
    const x = await startHarness({ limits: { maxConcurrentRequests: 1 } });
    try {
      const body = JSON.stringify({ using: [], methodCalls: [['x:SpamRule/get', { ids: [] }, 'a']] });
      const slow = request(`${x.server.url}/jmap`, { method: 'POST', headers: { authorization: `Bearer ${x.admin}`, 'content-type': 'application/json' } });
      const slowDone = new Promise<number>((resolve) => slow.on('response', (res) => (res.resume(), resolve(res.statusCode!))));
      slow.write(body.slice(0, 10)); // headers and part of the body: the request is now being served
      // Until the server has seen the slow request's headers, a second request may still get in.
      let second = await x.post(body);
      for (let i = 0; i < 100 && second.status === 200; i++) {
        await new Promise((r) => setTimeout(r, 20));
        second = await x.post(body);
      }
      expect(second.status).toBe(400);
      expect(second.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', limit: 'maxConcurrentRequests' });
      // The limit is per token: another client is served meanwhile, and a request without a valid
      // token is answered 401, not "limit".
      const other = x.token(['sysSpamRuleGet'], 'other');
      expect((await x.post(body, { authorization: `Bearer ${other}` })).status).toBe(200);
      expect((await x.post(body, { authorization: 'Bearer nope' })).status).toBe(401);
      // Uploads count as uploads only: one under way takes no request slot.
      const upload = request(`${x.server.url}/jmap/upload/a/`, { method: 'POST', headers: { authorization: `Bearer ${other}`, 'content-type': 'text/plain', 'content-length': '100' } });
      const uploadDone = new Promise<number>((resolve) => upload.on('response', (res) => (res.resume(), resolve(res.statusCode!))));
      upload.write('x'.repeat(10));
      await new Promise((r) => setTimeout(r, 100));
      expect((await x.post(body, { authorization: `Bearer ${other}` })).status).toBe(200);
      upload.end('x'.repeat(90));
      expect(await uploadDone).toBe(201);
      slow.end(body.slice(10));
      expect(await slowDone).toBe(200);
      expect((await x.post(body)).status).toBe(200);
    } finally {
      await x.close();
    }
  });
});

