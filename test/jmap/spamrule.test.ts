import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

async function create(obj: unknown): Promise<any> {
  const r = await h.call([['x:SpamRule/set', { create: { k: obj } }, 's']]);
  return r[0]![1];
}

describe('x:SpamRule/set create', () => {
  it('applies defaults, normalises the name and echoes what the server set (§7 case 6)', async () => {
    const res = await create({ '@type': 'Any', name: 'my rule', condition: { else: 'false' } });
    const id = res.created.k.id;
    expect(res.created.k).toEqual({ id, name: 'MYRULE', description: null, enable: true, priority: 500 });
    expect(res.oldState).not.toBe(res.newState);
    const got = await h.call([['x:SpamRule/get', { ids: [id] }, 'g']]);
    expect(got[0]![1].list).toEqual([
      { id, '@type': 'Any', name: 'MYRULE', description: null, enable: true, priority: 500, condition: { match: [], else: 'false' } },
    ]);
    expect(got[0]![1].state).toBe(res.newState);
  });

  it('accepts Stalwart index-keyed match lists and emits arrays', async () => {
    const res = await create({
      '@type': 'Any',
      name: 'STWT_LONG_SUBJ',
      enable: true,
      priority: 23,
      condition: { else: 'false', match: { '1': { if: 'true', then: "'B'" }, '0': { if: 'len(subject) > 200', then: "'LONG_SUBJ'" } } },
    });
    const got = await h.call([['x:SpamRule/get', { ids: [res.created.k.id], properties: ['condition', 'priority'] }, 'g']]);
    expect(got[0]![1].list[0]).toEqual({
      id: res.created.k.id,
      priority: 23,
      condition: { else: 'false', match: [{ if: 'len(subject) > 200', then: "'LONG_SUBJ'" }, { if: 'true', then: "'B'" }] },
    });
  });

  it('refuses a duplicate name with alreadyExists and existingId (§7 case 7)', async () => {
    const first = await create(rule('dup rule'));
    const again = await create(rule('DUP RULE'));
    expect(again.notCreated.k).toEqual({
      type: 'alreadyExists',
      description: `name "DUPRULE" is already used by ${first.created.k.id}`,
      properties: ['name'],
      existingId: first.created.k.id,
    });
    expect(again.oldState).toBe(again.newState);
  });

  it.each([
    [{ name: 'X', condition: { else: 'false' } }, ['@type'], '@type: missing or invalid "@type"'],
    [{ '@type': 'Nope', name: 'X', condition: { else: 'false' } }, ['@type'], '@type: missing or invalid'],
    [rule('P', { priority: 100000 }), ['priority'], 'priority: must be in -99999..99999'],
    [rule('P', { priority: -100000 }), ['priority'], 'priority: must be in -99999..99999'],
    [rule('P', { priority: 1.5 }), ['priority'], 'priority: expected an integer'],
    [rule('P', { enable: 'yes' }), ['enable'], 'enable: expected true or false'],
    [rule('P', { description: '' }), ['description'], 'description: expected a non-empty string or null'],
    [{ '@type': 'Any', condition: { else: 'false' } }, ['name'], 'name: required'],
    [{ '@type': 'Any', name: '   ', condition: { else: 'false' } }, ['name'], 'name: expected a non-empty string'],
    [{ '@type': 'Any', name: 'N' }, ['condition'], 'condition: required'],
    [{ '@type': 'Any', name: 'N', condition: { match: [] } }, ['condition/else'], 'condition/else: required'],
    [{ '@type': 'Any', name: 'N', condition: { else: 'false', match: [{ if: '', then: "'X'" }] } }, ['condition/match/0/if'], 'condition/match/0/if: expected a non-empty expression'],
    [{ '@type': 'Any', name: 'N', condition: { else: 'false', match: { a: { if: 'x', then: 'y' } } } }, ['condition/match/a'], 'list keys must be decimal indices'],
    [{ '@type': 'Any', name: 'N', condition: { else: 'false', other: 1 } }, ['condition/other'], 'condition/other: unknown property'],
    [rule('N', { foo: 1 }), ['foo'], 'foo: unknown property'],
    [rule('N', { id: 'abc' }), ['id'], 'id: id is set by the server'],
  ])('refuses %j with invalidProperties %j', async (obj, props, desc) => {
    const res = await create(obj);
    expect(res.created).toBeNull();
    expect(res.notCreated.k.type).toBe('invalidProperties');
    expect(res.notCreated.k.properties).toEqual(props);
    expect(res.notCreated.k.description).toContain(desc);
  });

  it('reports several bad properties in one SetError', async () => {
    const res = await create({ '@type': 'Any', name: 'N', priority: 'high', enable: 1, condition: { else: '' } });
    expect(res.notCreated.k.properties).toEqual(['enable', 'priority', 'condition/else']);
  });

  it('refuses a non-object create with invalidPatch, an oversized object with tooLarge', async () => {
    expect((await create('rule')).notCreated.k.type).toBe('invalidPatch');
    const big = await create(rule('BIG', { description: 'x'.repeat(200_001) }));
    expect(big.notCreated.k.type).toBe('tooLarge');
  });
});

describe('condition compilation (needs the expression compiler)', () => {
  it('refuses an expression that does not parse, with the path and position', async () => {
    const res = await create({ '@type': 'Any', name: 'BAD_EXPR', condition: { else: 'false', match: [{ if: 'len(subject', then: "'X'" }] } });
    expect(res.notCreated.k.type).toBe('invalidProperties');
    expect(res.notCreated.k.properties).toEqual(['condition/match/0/if']);
    expect(res.notCreated.k.description).toMatch(/^condition\/match\/0\/if: .*\d/);
  });

  it('refuses a variable the scope does not allow (url in Any), accepts it in Url', async () => {
    const bad = await create({ '@type': 'Any', name: 'SCOPE_VAR', condition: { else: 'false', match: [{ if: "url == 'x'", then: "'X'" }] } });
    expect(bad.notCreated.k.properties).toEqual(['condition/match/0/if']);
    const ok = await create({ '@type': 'Url', name: 'SCOPE_VAR', condition: { else: 'false', match: [{ if: "url == 'x'", then: "'X'" }] } });
    expect(Object.keys(ok.created)).toEqual(['k']);
  });

  it('refuses an unterminated string in else (§7 case 10)', async () => {
    const res = await create({ '@type': 'Any', name: 'UNTERM', condition: { else: "'unterminated" } });
    expect(res.notCreated.k.properties).toEqual(['condition/else']);
  });
});

describe('x:SpamRule/set update and destroy', () => {
  it('patches nested values with JSON-pointer keys and keeps the rest (§7 case 13)', async () => {
    const id = (await create(rule('PATCHME'))).created.k.id;
    const r = await h.call([
      ['x:SpamRule/set', { update: { [id]: { 'condition/match/0/then': "'OTHER'", '/condition/else': 'true', priority: 10 } } }, 'u'],
      ['x:SpamRule/get', { ids: [id], properties: ['condition', 'priority', 'name'] }, 'g'],
    ]);
    expect(r[0]![1].updated).toEqual({ [id]: null });
    expect(r[1]![1].list[0]).toEqual({ id, name: 'PATCHME', priority: 10, condition: { match: [{ if: 'len(subject) > 200', then: "'OTHER'" }], else: 'true' } });
  });

  it('appends and removes list items by index, replaces a whole property at top level', async () => {
    const id = (await create(rule('LISTS'))).created.k.id;
    await h.call([['x:SpamRule/set', { update: { [id]: { 'condition/match/1': { if: 'true', then: "'SECOND'" } } } }, 'u']]);
    let got = await h.call([['x:SpamRule/get', { ids: [id], properties: ['condition'] }, 'g']]);
    expect(got[0]![1].list[0].condition.match).toHaveLength(2);
    await h.call([['x:SpamRule/set', { update: { [id]: { 'condition/match/0': null } } }, 'u']]);
    got = await h.call([['x:SpamRule/get', { ids: [id], properties: ['condition'] }, 'g']]);
    expect(got[0]![1].list[0].condition).toEqual({ match: [{ if: 'true', then: "'SECOND'" }], else: 'false' });
    // Top-level key replaces the whole value (RFC 8620 §5.3), so `match` goes.
    await h.call([['x:SpamRule/set', { update: { [id]: { condition: { else: 'true' } } } }, 'u']]);
    got = await h.call([['x:SpamRule/get', { ids: [id], properties: ['condition'] }, 'g']]);
    expect(got[0]![1].list[0].condition).toEqual({ match: [], else: 'true' });
  });

  it('null resets a property to its default; description can be set and cleared', async () => {
    const id = (await create(rule('NULLS', { priority: 7, description: 'd' }))).created.k.id;
    await h.call([['x:SpamRule/set', { update: { [id]: { priority: null, description: null, enable: false } } }, 'u']]);
    const got = await h.call([['x:SpamRule/get', { ids: [id], properties: ['priority', 'description', 'enable'] }, 'g']]);
    expect(got[0]![1].list[0]).toEqual({ id, priority: 500, description: null, enable: false });
  });

  it('keeps name immutable, but accepts the same name again (§7 case 12)', async () => {
    const id = (await create(rule('fixed name'))).created.k.id;
    const r = await h.call([
      ['x:SpamRule/set', { update: { [id]: { name: 'OTHER' } } }, 'a'],
      ['x:SpamRule/set', { update: { [id]: { name: 'FIXEDNAME', priority: 3 } } }, 'b'],
      ['x:SpamRule/set', { update: { [id]: { name: 'Fixed Name' } } }, 'c'],
    ]);
    expect(r[0]![1].notUpdated[id]).toEqual({ type: 'invalidProperties', description: 'name: name cannot be changed after creation', properties: ['name'] });
    expect(r[1]![1].updated).toEqual({ [id]: null });
    expect(r[2]![1].updated).toEqual({ [id]: null });
    expect(r[2]![1].oldState).toBe(r[2]![1].newState); // nothing changed, nothing written
  });

  it('changes the scope with @type and validates the result', async () => {
    const id = (await create(rule('SCOPED'))).created.k.id;
    const r = await h.call([
      ['x:SpamRule/set', { update: { [id]: { '@type': 'Header' } } }, 'a'],
      ['x:SpamRule/set', { update: { [id]: { '@type': 'Bogus' } } }, 'b'],
      ['x:SpamRule/get', { ids: [id], properties: ['@type'] }, 'g'],
    ]);
    expect(r[0]![1].updated).toEqual({ [id]: null });
    expect(r[1]![1].notUpdated[id].properties).toEqual(['@type']);
    expect(r[2]![1].list[0]['@type']).toBe('Header');
  });

  it('gives invalidPatch for a path that does not exist, overlapping keys, or a non-object patch', async () => {
    const id = (await create(rule('BADPATCH'))).created.k.id;
    const r = await h.call([
      ['x:SpamRule/set', { update: { [id]: { 'nothing/here': 1 } } }, 'a'],
      ['x:SpamRule/set', { update: { [id]: { condition: { else: 'true' }, 'condition/else': 'false' } } }, 'b'],
      ['x:SpamRule/set', { update: { [id]: 'x' } }, 'c'],
      ['x:SpamRule/set', { update: { [id]: { 'condition/match/5': { if: 'true', then: "'X'" } } } }, 'd'],
    ]);
    for (const x of r) expect(x[1].notUpdated[id].type).toBe('invalidPatch');
    expect(r[0]![1].notUpdated[id].properties).toEqual(['nothing/here']);
  });

  it('reports notFound for unknown ids, willDestroy for update+destroy (§7 cases 33, 34)', async () => {
    const id = (await create(rule('DOOMED'))).created.k.id;
    const r = await h.call([['x:SpamRule/set', { update: { [id]: { priority: 1 }, zzzz: { priority: 1 } }, destroy: [id, 'cccc'] }, 's']]);
    expect(r[0]![1].notUpdated).toEqual({ [id]: { type: 'willDestroy', description: 'the object is destroyed by this call' }, zzzz: { type: 'notFound' } });
    expect(r[0]![1].destroyed).toEqual([id]);
    expect(r[0]![1].notDestroyed).toEqual({ cccc: { type: 'notFound' } });
    const g = await h.call([['x:SpamRule/get', { ids: [id] }, 'g']]);
    expect(g[0]![1].notFound).toEqual([id]);
  });

  it('honours ifInState: stateMismatch when stale, applied when current', async () => {
    const q = await h.call([['x:SpamRule/get', { ids: [] }, 'g']]);
    const state = q[0]![1].state;
    const r = await h.call([
      ['x:SpamRule/set', { ifInState: 'stale', create: { a: rule('IFSTATE') } }, 'a'],
      ['x:SpamRule/set', { ifInState: state, create: { a: rule('IFSTATE') } }, 'b'],
      ['x:SpamRule/set', { ifInState: state, create: { a: rule('IFSTATE2') } }, 'c'],
    ]);
    expect(r[0]![1].type).toBe('stateMismatch');
    expect(r[1]![1].oldState).toBe(state);
    expect(r[1]![1].created.a.id).toBeTypeOf('string');
    expect(r[2]![1].type).toBe('stateMismatch');
  });

  it('uses creation ids in update and destroy of the same call', async () => {
    const r = await h.call([['x:SpamRule/set', { create: { n: rule('CIDS') }, update: { '#n': { priority: 4 } }, destroy: ['#n'] }, 's']]);
    const id = r[0]![1].created.n.id;
    expect(r[0]![1].notUpdated['#n'].type).toBe('willDestroy');
    expect(r[0]![1].destroyed).toEqual([id]);
  });
});

describe('x:SpamRule/get', () => {
  it('returns id only for properties [], de-duplicates ids, lists unknown ids in notFound', async () => {
    const id = (await create(rule('GETTER'))).created.k.id;
    const r = await h.call([['x:SpamRule/get', { ids: [id, id, 'nope'], properties: [] }, 'g']]);
    expect(r[0]![1].list).toEqual([{ id }]);
    expect(r[0]![1].notFound).toEqual(['nope']);
  });
});
