/**
 * Property-based fuzzing of the JMAP API (RFC 8620) against one started server (test/helpers/fuzz.ts
 * sets the seed and run counts; SPAMRULE_FUZZ_RUNS raises them for a campaign):
 *
 * 1. The Request envelope: any body gets either the RFC 8620 §3.6.1 request error a reference
 *    classifier expects (problem JSON, HTTP 400) or HTTP 200 with one response per call, in order,
 *    under its call id, each the method's own or a client-error method error: never a 500, never
 *    `serverFail`. A good request right after is answered as before.
 * 2. `/set` of SpamRule and StoreLookup against a model of the objects (the `/get` before): every
 *    create, update and destroy is reported done or refused with a SetError of the RFC's vocabulary
 *    (invalidProperties naming properties the item has), a refused item changes nothing, the state
 *    moves exactly when an object does, `ifInState` mismatches are `stateMismatch` and change nothing,
 *    and whatever `/get` then returns can be written back unchanged.
 * 3. `/query` filters, sorts and windows against a reference (fuzz-query.ts): a sound query returns
 *    the ids the reference selects, in its order, windowed as §5.5 says (negative `position` from the
 *    end, `anchor` + `anchorOffset` clamped, `limit`), `total` only when asked; a bad one gets one of
 *    the method errors its parts may cause (unsupportedFilter, unsupportedSort, invalidArguments), and
 *    an anchor the results do not hold `anchorNotFound`.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzParams } from '../helpers/fuzz.js';
import { CLIENT_METHOD_ERRORS, CORE, envelopeBody, expectedRequestErrors, MGMT, shortPrinted } from './fuzz-envelope.js';
import { setOp, type IdRef, type SetOp, type SetType } from './fuzz-set.js';
import { querySpec, referenceIds } from './fuzz-query.js';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  // Lookup stores are never started: the property is about the API, not about connecting to made-up hosts.
  h = await startHarness({ createLookupStore: () => ({ close: async () => undefined }) });
  await h.call([
    ['x:SpamRule/set', { create: { a: rule('A'), b: rule('B', { priority: 10 }) } }, '0'],
    ['x:StoreLookup/set', { create: { s: { namespace: 'seed', store: { '@type': 'Redis', url: 'redis://10.0.0.1' } } } }, '1'],
  ]);
});
afterAll(() => h.close());

/** A fixed good request; its answer is compared before and after each fuzzed one. */
const GOOD = JSON.stringify({
  using: [CORE, MGMT],
  methodCalls: [
    ['x:SpamRule/get', { ids: null }, 'g'],
    ['x:SpamRule/query', { sort: [{ property: 'name' }] }, 'q'],
    ['x:StoreLookup/get', { ids: null }, 's'],
  ],
});

/** Whether a response holds a `/set` that changed its type's state. */
const changedState = (responses: unknown): boolean =>
  Array.isArray(responses) && responses.some((r) => Array.isArray(r) && typeof r[0] === 'string' && r[0].endsWith('/set') && r[1]?.oldState !== r[1]?.newState);

describe('regressions found by the fuzz properties', () => {
  it('answers a Core/echo of arguments nested 20,000 deep with that call\'s invalidArguments, not a 500', async () => {
    // JSON.parse takes any depth; JSON.stringify of the Response overflowed the stack at about 10,000.
    const deep = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
    const r = await h.post(`{"using":["${CORE}"],"methodCalls":[["Core/echo",{"deep":${deep}},"0"],["Core/echo",{"x":1},"1"]]}`);
    expect(r.status).toBe(200);
    expect(r.json.methodResponses).toEqual([
      ['error', { type: 'invalidArguments', description: 'arguments nested too deeply' }, '0'],
      ['Core/echo', { x: 1 }, '1'],
    ]);
    expect(r.json.sessionState).toBe('c0');
  });

  it('destroys an id named twice in one /set once, and does not also report it notDestroyed', async () => {
    const [[, c]] = (await h.call([['x:SpamRule/set', { create: { k: rule('TWICE') } }, '0']])) as any;
    const id = c.created.k.id as string;
    const [[, d]] = (await h.call([['x:SpamRule/set', { destroy: [id, id] }, '0']])) as any;
    expect(d.destroyed).toEqual([id]);
    expect(d.notDestroyed).toBeNull();
    // Also when named as the creation id and as the id it was given, in the call that creates it.
    const [[, e]] = (await h.call([['x:SpamRule/set', { create: { k: rule('TWICE') }, destroy: ['#k'] }, '0']])) as any;
    expect(e.destroyed).toEqual([e.created.k.id]);
    expect(e.notDestroyed).toBeNull();
  });

  it('names an unknown StoreLookup property in invalidProperties as a JSON pointer ("a/b" as "a~1b", "~" as "~0")', async () => {
    const store = { '@type': 'Redis', url: 'redis://10.0.0.1' };
    const [[, r]] = (await h.call([['x:StoreLookup/set', { create: { k: { namespace: 'esc', store, 'a/b': 1, '~': 2 } } }, '0']])) as any;
    expect(r.notCreated.k).toEqual({ type: 'invalidProperties', description: 'a~1b: unknown property; ~0: unknown property', properties: ['a~1b', '~0'] });
  });

  it('refuses a patch key whose "~" is not "~0" or "~1" (RFC 6901) with invalidPatch, not as a property named with "~0"', async () => {
    const [[, c]] = (await h.call([['x:SpamRule/set', { create: { k: rule('TILDE') } }, '0']])) as any;
    const id = c.created.k.id as string;
    const [[, r]] = (await h.call([['x:SpamRule/set', { update: { [id]: { '~jR': 1 } } }, '0']])) as any;
    expect(r.notUpdated[id]).toMatchObject({ type: 'invalidPatch', properties: ['~jR'] });
    expect(r.newState).toBe(r.oldState);
    // "~0" and "~1" stay escapes: "~0x" is property "~x", which a SpamRule does not have.
    const [[, ok]] = (await h.call([['x:SpamRule/set', { update: { [id]: { '~0x': 1 } } }, '0']])) as any;
    expect(ok.notUpdated[id]).toMatchObject({ type: 'invalidProperties', properties: ['~0x'] });
    // And a ResultReference path with one is invalidResultReference.
    const res = await h.call([
      ['x:SpamRule/query', {}, 'q'],
      ['x:SpamRule/get', { '#ids': { resultOf: 'q', name: 'x:SpamRule/query', path: '/ids~' } }, 'g'],
    ]);
    expect(res[1]).toEqual(['error', { type: 'invalidResultReference', description: expect.stringContaining('RFC 6901') }, 'g']);
    await h.call([['x:SpamRule/set', { destroy: [id] }, '0']]);
  });

  it('sorts by id in creation order whatever the collation (i;ascii-numeric left every id tied)', async () => {
    const [[, c]] = (await h.call([['x:SpamRule/set', { create: { x: rule('ID1'), y: rule('ID2'), z: rule('ID3') } }, '0']])) as any;
    const mine = ['x', 'y', 'z'].map((k) => c.created[k].id as string);
    const filter = { name: 'ID' };
    for (const collation of ['i;ascii-numeric', 'i;ascii-casemap', 'i;unicode-casemap']) {
      const [[, q]] = (await h.call([['x:SpamRule/query', { filter, sort: [{ property: 'id', isAscending: false, collation }] }, '0']])) as any;
      expect(q.ids, collation).toEqual([...mine].reverse());
    }
    await h.call([['x:SpamRule/set', { destroy: mine }, '0']]);
  });

  it('refuses a StoreLookup whose urls map has a value other than true/false, naming the entry and why', async () => {
    const store = { '@type': 'RedisCluster', urls: { 'redis://a:1': 'yes' } };
    const [[, r]] = (await h.call([['x:StoreLookup/set', { create: { k: { namespace: 'yes', store } } }, '0']])) as any;
    expect(r.notCreated.k).toEqual({
      type: 'invalidProperties',
      description: 'store/urls/redis:~1~1a:1: set values must be true or false',
      properties: ['store/urls/redis:~1~1a:1'],
    });
    expect(r.newState).toBe(r.oldState);
  });
});

describe('fuzz: the Request envelope (RFC 8620 §3.3–3.7)', () => {
  it('answers every body with the request error the reference expects, or one response per call; never a 500', async () => {
    let baseline = await h.post(GOOD);
    await fc.assert(
      fc.asyncProperty(envelopeBody, async ({ body }) => {
        const r = await h.post(body);
        const expected = expectedRequestErrors(body);
        if (expected.length > 0) {
          expect(r.status).toBe(400);
          expect(r.headers.get('content-type')).toBe('application/problem+json');
          expect(expected.map((t) => `urn:ietf:params:jmap:error:${t}`)).toContain(r.json.type);
          expect(r.json.status).toBe(400);
          if (r.json.type.endsWith(':limit')) expect(r.json.limit).toBe('maxCallsInRequest');
        } else {
          expect(r.status).toBe(200);
          const req = JSON.parse(body) as { methodCalls: [string, Record<string, unknown>, string][]; createdIds?: unknown };
          const out = r.json as { methodResponses: [string, any, string][]; sessionState: unknown; createdIds?: unknown };
          expect(typeof out.sessionState).toBe('string');
          expect('createdIds' in out).toBe(req.createdIds !== undefined);
          expect(out.methodResponses).toHaveLength(req.methodCalls.length);
          out.methodResponses.forEach(([name, result, id], i) => {
            const [callName, , callId] = req.methodCalls[i]!;
            expect(id).toBe(callId);
            if (name === 'error') {
              expect(CLIENT_METHOD_ERRORS, JSON.stringify(result)).toContain(result.type);
              expect(typeof result.description === 'string' || result.description === undefined).toBe(true);
            } else {
              expect(name).toBe(callName);
              expect(typeof result).toBe('object');
            }
          });
        }
        // The server still serves: the good request gets the answer it got before, unless a fuzzed
        // /set (a #destroy of a /query's ids, say) changed the objects.
        const after = await h.post(GOOD);
        expect(after.status).toBe(200);
        if (r.status === 200 && changedState(r.json.methodResponses)) baseline = after;
        else expect(after.json).toEqual(baseline.json);
      }),
      fuzzParams(300),
    );
  }, 120_000);
});

const SEEDS: Record<SetType, Record<string, unknown>> = {
  SpamRule: { a: rule('A'), b: rule('B', { priority: 10, description: 'second' }) },
  StoreLookup: {
    s: { namespace: 'seed', store: { '@type': 'Redis', url: 'redis://u:pw@10.0.0.1' } },
    p: { namespace: 'pg', store: { '@type': 'PostgreSql', host: 'db', authSecret: { '@type': 'Value', secret: 'pw' } } },
  },
};

/** Every object of `type` by id (ids in creation order) and the type's state. */
async function getAll(type: SetType): Promise<{ state: string; objects: Map<string, Record<string, unknown>> }> {
  const [[name, r]] = (await h.call([[`x:${type}/get`, { ids: null }, 'g']])) as any;
  expect(name).toBe(`x:${type}/get`);
  return { state: r.state, objects: new Map(r.list.map((o: any) => [o.id, o])) };
}

/** Destroys every SpamRule and StoreLookup and creates the seeds again: each run starts alike, so a failure shrinks. */
async function reset(): Promise<void> {
  for (const type of ['SpamRule', 'StoreLookup'] as const) {
    const ids = [...(await getAll(type)).objects.keys()];
    if (ids.length > 0) await h.call([[`x:${type}/set`, { destroy: ids }, 'd']]);
    const [[, r]] = (await h.call([[`x:${type}/set`, { create: SEEDS[type] }, 'c']])) as any;
    expect(r.notCreated).toBeNull();
  }
}

const SET_ERRORS = new Set(['invalidProperties', 'invalidPatch', 'alreadyExists', 'tooLarge', 'notFound', 'willDestroy']);
const TOP_PROPERTIES: Record<SetType, string[]> = { SpamRule: ['@type', 'name', 'description', 'enable', 'priority', 'condition', 'id'], StoreLookup: ['namespace', 'store', '@type', 'id'] };

/**
 * A SetError of the RFC's vocabulary; `invalidProperties` names properties (JSON pointers) the type or
 * the item has: `sent` is a create's object (keys are names, escaped in a pointer: `~` as `~0`, `/` as
 * `~1`) or a PatchObject (keys are pointers already).
 */
function checkSetError(type: SetType, e: any, sent: unknown, patch: boolean): void {
  expect(SET_ERRORS, JSON.stringify(e)).toContain(e.type);
  if (e.type !== 'invalidProperties') return;
  expect(typeof e.description).toBe('string');
  expect(Array.isArray(e.properties) && e.properties.length > 0, JSON.stringify(e)).toBe(true);
  const keys = sent !== null && typeof sent === 'object' ? Object.keys(sent) : [];
  const given = keys.map((k) => (patch ? k.replace(/^\//, '').split('/')[0]! : k.replace(/~/g, '~0').replace(/\//g, '~1')));
  for (const p of e.properties as unknown[]) {
    expect(typeof p).toBe('string');
    expect([...TOP_PROPERTIES[type], ...given], JSON.stringify(e)).toContain((p as string).split('/')[0]);
  }
}

/** Runs one /set and checks it against the objects before and after. */
async function checkSetOp(op: SetOp): Promise<void> {
  const before = await getAll(op.type);
  const ids = [...before.objects.keys()];
  const ref = (r: IdRef): string => ('existing' in r ? (ids.length > 0 ? ids[r.existing % ids.length]! : 'zzzz') : 'unknown' in r ? r.unknown : `#${r.creation}`);
  const create = Object.fromEntries(op.create);
  const update = Object.fromEntries(op.update.map(([r, p]) => [ref(r), p]));
  const destroy = op.destroy.map(ref);
  const args: Record<string, unknown> = { create, update, destroy };
  if (op.ifInState === 'null') args.ifInState = null;
  else if (op.ifInState === 'current') args.ifInState = before.state;
  else if (op.ifInState === 'stale') args.ifInState = before.state === 's0' ? 's999999' : `s${Number(before.state.slice(1)) - 1}`;
  else if (op.ifInState === 'garbage') args.ifInState = 'not a state';
  const [[name, res]] = (await h.call([[`x:${op.type}/set`, args, 'set']])) as any;
  const after = await getAll(op.type);

  const badCid = Object.keys(create).some((cid) => !/^[A-Za-z0-9_-]{1,255}$/.test(cid));
  const mismatch = op.ifInState === 'stale' || op.ifInState === 'garbage';
  if (badCid || mismatch) {
    expect(name, JSON.stringify(res)).toBe('error');
    expect([...(badCid ? ['invalidArguments'] : []), ...(mismatch ? ['stateMismatch'] : [])]).toContain(res.type);
  } else expect(name, JSON.stringify(res)).toBe(`x:${op.type}/set`);
  if (name === 'error') {
    // A refused call changes nothing.
    expect(after).toEqual(before);
    return;
  }
  expect(res.oldState).toBe(before.state);
  expect(res.newState).toBe(after.state);
  const created: Record<string, any> = res.created ?? {};
  const notCreated: Record<string, any> = res.notCreated ?? {};
  const updated: Record<string, null> = res.updated ?? {};
  const notUpdated: Record<string, any> = res.notUpdated ?? {};
  const destroyed: string[] = res.destroyed ?? [];
  const notDestroyed: Record<string, any> = res.notDestroyed ?? {};

  // Every item is answered once: done, or refused with a SetError.
  for (const cid of Object.keys(create)) {
    expect(Object.hasOwn(created, cid) !== Object.hasOwn(notCreated, cid), `create ${cid}`).toBe(true);
    if (Object.hasOwn(notCreated, cid)) checkSetError(op.type, notCreated[cid], create[cid], false);
  }
  expect(Object.keys(created).length + Object.keys(notCreated).length).toBe(Object.keys(create).length);
  const resolve = (k: string): string | undefined => (k.startsWith('#') ? created[k.slice(1)]?.id : k);
  for (const k of Object.keys(update)) {
    const id = resolve(k);
    const done = id !== undefined && Object.hasOwn(updated, id);
    expect(done !== Object.hasOwn(notUpdated, k), `update ${k}: ${JSON.stringify(res)}`).toBe(true);
    if (!done) checkSetError(op.type, notUpdated[k], update[k], true);
  }
  for (const d of destroy) {
    const id = resolve(d);
    const done = id !== undefined && destroyed.includes(id);
    expect(done !== Object.hasOwn(notDestroyed, d), `destroy ${d}: ${JSON.stringify(res)}`).toBe(true);
    if (!done) expect(['notFound'], JSON.stringify(notDestroyed[d])).toContain(notDestroyed[d].type);
  }
  expect(new Set(destroyed).size).toBe(destroyed.length);

  // The model: the objects before, less the destroyed, plus the created; nothing else changed.
  const expectedIds = new Set([...ids, ...Object.values(created).map((c) => c.id as string)]);
  for (const d of destroyed) expectedIds.delete(d);
  expect(new Set(after.objects.keys())).toEqual(expectedIds);
  let visible = Object.keys(created).some((cid) => after.objects.has(created[cid].id)) || destroyed.length > 0;
  for (const [id, was] of before.objects) {
    if (!after.objects.has(id)) continue;
    if (!Object.hasOwn(updated, id)) expect(after.objects.get(id), `not updated ${id}`).toEqual(was);
    else if (JSON.stringify(after.objects.get(id)) !== JSON.stringify(was)) visible = true;
  }
  const createdOrDestroyed = Object.keys(created).length > 0 || destroyed.length > 0;
  if (createdOrDestroyed || visible) expect(res.newState).not.toBe(res.oldState);
  // A StoreLookup update may change only a secret, which /get does not show.
  else if (op.type === 'SpamRule') expect(res.newState).toBe(res.oldState);

  // /changes since the state before tells the same story (RFC 8620 §5.2): what appeared, what went, and
  // every object that changed (maybe more: a StoreLookup secret does not show in /get).
  const [[cn, ch]] = (await h.call([[`x:${op.type}/changes`, { sinceState: before.state }, 'c']])) as any;
  expect(cn, JSON.stringify(ch)).toBe(`x:${op.type}/changes`);
  const sorted = (xs: Iterable<string>) => [...xs].sort();
  expect(ch).toMatchObject({ oldState: before.state, newState: after.state, hasMoreChanges: false });
  expect(sorted(ch.created)).toEqual(sorted([...after.objects.keys()].filter((id) => !before.objects.has(id))));
  expect(sorted(ch.destroyed)).toEqual(sorted([...before.objects.keys()].filter((id) => !after.objects.has(id))));
  const kept = [...before.objects.keys()].filter((id) => after.objects.has(id));
  for (const id of kept) if (JSON.stringify(after.objects.get(id)) !== JSON.stringify(before.objects.get(id))) expect(ch.updated).toContain(id);
  for (const id of ch.updated) expect(kept.includes(id) && Object.hasOwn(updated, id), `changes: updated ${id}`).toBe(true);

  // What /get returns is valid and stored as it reads: written back whole, it changes nothing.
  const back = [...after.objects.keys()].filter((id) => !before.objects.has(id) || Object.hasOwn(updated, id));
  if (back.length > 0) {
    const patches = Object.fromEntries(back.map((id) => [id, Object.fromEntries(Object.entries(after.objects.get(id)!).filter(([k]) => k !== 'id'))]));
    const [[n2, again]] = (await h.call([[`x:${op.type}/set`, { update: patches }, 'back']])) as any;
    expect(n2).toBe(`x:${op.type}/set`);
    expect(again.notUpdated, JSON.stringify(again.notUpdated)).toBeNull();
    expect(again.newState).toBe(again.oldState);
    expect(await getAll(op.type)).toEqual(after);
  }
}

describe('fuzz: /set of SpamRule and StoreLookup (RFC 8620 §5.3) against a model', () => {
  it('answers each item done or with a SetError, changes nothing for a refused one, and moves the state with the objects', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(setOp, { minLength: 1, maxLength: 4 }).map((ops) => shortPrinted({ ops })), async ({ ops }) => {
        await reset();
        for (const op of ops) await checkSetOp(op);
      }),
      fuzzParams(80),
    );
  }, 120_000);
});

describe('fuzz: /query of SpamRule and StoreLookup (RFC 8620 §5.5) against a reference', () => {
  const objects = {} as Record<SetType, Record<string, any>[]>;
  const states = {} as Record<SetType, string>;
  beforeAll(async () => {
    await reset();
    const rules = { ALPHA: 500, alpha2: 10, BETA: 10, G10: -5, G9: 99999, Z1: 10, ÄRGER: 0, '10X': 1, bz: -99999 };
    const create = Object.fromEntries(Object.entries(rules).map(([n, priority], i) => [`r${i}`, rule(n, { priority })]));
    const stores = { a: 'Redis', B: 'PostgreSql', c1: 'Sqlite', 'ns.x': 'Redis', Ns2: 'Redis', '2b': 'Sqlite' };
    const store = (t: string) => (t === 'Redis' ? { '@type': t, url: 'redis://10.0.0.1' } : t === 'Sqlite' ? { '@type': t, path: 'q.db' } : { '@type': t, host: 'db' });
    const lookups = Object.fromEntries(Object.entries(stores).map(([ns, t], i) => [`s${i}`, { namespace: ns, store: store(t) }]));
    const made = (await h.call([
      ['x:SpamRule/set', { create }, '0'],
      ['x:StoreLookup/set', { create: lookups }, '1'],
    ])) as any[];
    for (const [, r] of made) expect(r.notCreated).toBeNull();
    for (const type of ['SpamRule', 'StoreLookup'] as const) {
      const all = await getAll(type);
      objects[type] = [...all.objects.values()];
      states[type] = all.state;
    }
  });

  it('answers a sound query as the reference does, windowed per §5.5, and a bad one with an error its parts may cause', async () => {
    await fc.assert(
      fc.asyncProperty(querySpec, async (spec) => {
        const all = objects[spec.type];
        const args: Record<string, unknown> = {};
        const errors: string[] = [];
        for (const k of ['filter', 'sort', 'position', 'anchorOffset', 'limit', 'calculateTotal'] as const) {
          const part = spec[k];
          if (part === undefined) continue;
          args[k] = part.value;
          errors.push(...part.errors);
        }
        if (spec.anchor !== undefined) {
          if ('index' in spec.anchor) args.anchor = all[spec.anchor.index % all.length]!.id;
          else {
            args.anchor = spec.anchor.value;
            errors.push(...spec.anchor.errors);
          }
        }
        const [[name, res]] = (await h.call([[`x:${spec.type}/query`, args, 'q']])) as any;
        if (errors.length > 0) {
          expect(name, JSON.stringify(res)).toBe('error');
          expect(errors, JSON.stringify(res)).toContain(res.type);
          return;
        }
        const full = referenceIds(spec.type, all, args.filter, args.sort);
        if (typeof args.anchor === 'string' && !full.includes(args.anchor)) {
          expect([name, res.type], JSON.stringify(res)).toEqual(['error', 'anchorNotFound']);
          return;
        }
        expect(name, JSON.stringify(res)).toBe(`x:${spec.type}/query`);
        const int = (v: unknown) => (typeof v === 'number' ? v : 0);
        let start: number;
        if (typeof args.anchor === 'string') start = Math.max(0, full.indexOf(args.anchor) + int(args.anchorOffset));
        else start = int(args.position) < 0 ? Math.max(0, full.length + int(args.position)) : int(args.position);
        start = Math.min(start, full.length);
        const limit = typeof args.limit === 'number' ? args.limit : full.length;
        expect(res).toEqual({
          accountId: 'a',
          queryState: states[spec.type],
          canCalculateChanges: true,
          position: start,
          ids: full.slice(start, start + limit),
          ...(args.calculateTotal === true ? { total: full.length } : {}),
        });
      }),
      fuzzParams(500),
    );
  }, 120_000);
});
