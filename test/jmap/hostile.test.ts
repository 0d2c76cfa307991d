/**
 * Hostile JMAP requests: keys that name JavaScript's prototype chain, arguments nested beyond any
 * real object, patches of many keys, header-breaking download types. Each gets the RFC 8620 error a
 * client mistake gets, and leaves the server (and the process) as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PATCH_DEPTH } from '../../src/jmap/pointer.js';
import { MAX_FILTER_DEPTH } from '../../src/jmap/query.js';
import { rule, startHarness, type Harness } from './harness.js';

const USING = '"using":["urn:ietf:params:jmap:core","urn:stalwart:jmap"]';

let h: Harness;
let id: string;
beforeAll(async () => {
  h = await startHarness();
  const [[, r]] = (await h.call([['x:SpamRule/set', { create: { a: rule('A') } }, '0']])) as any;
  id = r.created.a.id;
});
afterAll(() => h.close());

/** A /set update of the rule `id` with `patch` written as raw JSON (so "__proto__" stays an own key). */
async function patchRaw(patchJson: string): Promise<any> {
  const r = await h.post(`{${USING},"methodCalls":[["x:SpamRule/set",{"update":{"${id}":${patchJson}}},"0"]]}`);
  expect(r.status).toBe(200);
  return r.json.methodResponses[0];
}

describe('prototype keys (RFC 8620 §5.3: a path that does not exist is invalidPatch)', () => {
  it('refuses "__proto__" in a patch path and leaves Object.prototype untouched', async () => {
    for (const key of ['__proto__/polluted', '__proto__', 'condition/__proto__/polluted']) {
      const [name, args] = await patchRaw(JSON.stringify({ [key]: 'yes' }));
      expect(name).toBe('x:SpamRule/set');
      expect(args.notUpdated[id].type).toBe('invalidPatch');
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // A valid create still passes validation afterwards (an inherited key would make it "unknown property").
    const [[, r]] = (await h.call([['x:SpamRule/set', { create: { b: rule('B') } }, '1']])) as any;
    expect(Object.keys(r.created)).toEqual(['b']);
  });

  it('does not follow inherited properties in a path ("constructor/name")', async () => {
    const [, args] = await patchRaw(JSON.stringify({ 'constructor/name': 'x' }));
    expect(args.notUpdated[id].type).toBe('invalidPatch');
  });

  it('answers a creation id "__proto__" (a valid Id, RFC 8620 §1.2) under that key', async () => {
    const good = JSON.stringify(rule('P1'));
    const r = await h.post(`{${USING},"methodCalls":[["x:SpamRule/set",{"create":{"__proto__":${good}}},"0"]]}`);
    const args = r.json.methodResponses[0][1];
    expect(Object.keys(args.created)).toEqual(['__proto__']);
    expect(typeof args.created.__proto__.id).toBe('string');
    const bad = await h.post(`{${USING},"methodCalls":[["x:SpamRule/set",{"create":{"__proto__":{"bad":1}}},"0"]]}`);
    expect(Object.keys(bad.json.methodResponses[0][1].notCreated)).toEqual(['__proto__']);
  });

  it('refuses sort properties and filter operators that only an object prototype has', async () => {
    for (const property of ['constructor', 'toString', '__proto__']) {
      const [[name, args]] = (await h.call([['x:SpamRule/query', { sort: [{ property }] }, '0']])) as any;
      expect(name).toBe('error');
      expect(args.type).toBe('unsupportedSort');
    }
    for (const operator of ['constructor', 'toString', '__proto__']) {
      const [[name, args]] = (await h.call([['x:SpamRule/query', { filter: { operator, conditions: [] } }, '0']])) as any;
      expect(name).toBe('error');
      expect(args.type).toBe('invalidArguments');
    }
  });
});

describe('nesting and size', () => {
  it('refuses a filter nested deeper than MAX_FILTER_DEPTH with invalidArguments; one at the limit runs', async () => {
    const nest = (n: number) => {
      let f = '{"name":"A"}';
      for (let i = 0; i < n; i++) f = `{"operator":"NOT","conditions":[${f}]}`;
      return f;
    };
    const ok = await h.post(`{${USING},"methodCalls":[["x:SpamRule/query",{"filter":${nest(MAX_FILTER_DEPTH)}},"0"]]}`);
    expect(ok.json.methodResponses[0][0]).toBe('x:SpamRule/query');
    for (const n of [MAX_FILTER_DEPTH + 1, 50_000]) {
      const r = await h.post(`{${USING},"methodCalls":[["x:SpamRule/query",{"filter":${nest(n)}},"0"]]}`);
      expect(r.json.methodResponses[0]).toEqual(['error', { type: 'invalidArguments', description: expect.stringContaining('nested') }, '0']);
    }
  });

  it('answers a patch value nested beyond the stack with invalidArguments, not serverFail', async () => {
    let v = '1';
    for (let i = 0; i < 100_000; i++) v = `{"a":${v}}`;
    const [name, args] = await patchRaw(`{"description":${v}}`);
    expect(name).toBe('error');
    expect(args.type).toBe('invalidArguments');
  });

  it('refuses a patch path deeper than MAX_PATCH_DEPTH', async () => {
    const [, args] = await patchRaw(JSON.stringify({ [Array(MAX_PATCH_DEPTH + 1).fill('a').join('/')]: 1 }));
    expect(args.notUpdated[id].type).toBe('invalidPatch');
  });

  it('finds an overlapping pair among 20,000 patch keys', async () => {
    const patch: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) patch[`x${i}`] = 1;
    patch['x19999/deeper'] = 2;
    const [, args] = await patchRaw(JSON.stringify(patch));
    expect(args.notUpdated[id]).toMatchObject({ type: 'invalidPatch', properties: ['x19999/deeper'] });
    expect(args.notUpdated[id].description).toContain('"x19999" and "x19999/deeper" overlap');
  });
});

describe('download (RFC 8620 §6.2)', () => {
  it('answers 400 for an accept type a header cannot hold, and serves a plain one', async () => {
    const up = await fetch(`${h.server.url}/jmap/upload/a/`, { method: 'POST', headers: { authorization: `Bearer ${h.admin}` }, body: 'From: a@b\r\n\r\nhi\r\n' });
    const { blobId } = (await up.json()) as { blobId: string };
    const get = (accept: string) => fetch(`${h.server.url}/jmap/download/a/${blobId}/m.eml?accept=${accept}`, { headers: { authorization: `Bearer ${h.admin}` } });
    for (const bad of ['text/plain%0d%0aX-A:%201', 'text/%00plain', 'text/pl%C3%A4in']) {
      const r = await get(bad);
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).detail).toContain('printable ASCII');
    }
    const ok = await get('text/plain');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('text/plain');
    expect(await ok.text()).toBe('From: a@b\r\n\r\nhi\r\n');
  });
});
