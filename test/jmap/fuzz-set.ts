/**
 * Generators for fuzzing `x:SpamRule/set` and `x:StoreLookup/set` (RFC 8620 §5.3): creates built from a
 * sound object with properties replaced by wrong-typed or boundary values, removed or added; PatchObjects
 * with sound, invalid and nonexistent paths; update and destroy ids that exist, do not, or name a
 * creation of the same call; `ifInState` current, stale or malformed. test/jmap/fuzz.test.ts runs them
 * and checks the outcome against a model of the objects.
 */
import fc from 'fast-check';

export type SetType = 'SpamRule' | 'StoreLookup';

/** Removes the property a mutation names (a value of its own, so that `null` stays a value to send). */
export const REMOVE = Symbol('remove');

/** Values that are wrong for most properties, or at the edge of their bounds. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      null, true, false, 0, -1, 1, 1.5, 1e21, 99999, -99999, 100000, -100000, 65535, 65536, 8192, 8193,
      Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, '', ' ', 'x', '500', 'Any', 'Url', 'Nope', 'Redis', 'Value',
      [], {}, ['a'], [1], { '@type': 'Value' }, { '@type': 'Value', secret: 's' }, { '@type': 'None' }, { value: true },
      { match: [], else: 'true' }, { match: { 0: { if: 'true', then: "'T'" } }, else: 'false' }, { else: 'len(' },
      'redis://10.0.0.2', 'redis://u:****@10.0.0.1', 'lists.db', '/etc/passwd', ':memory:', '../x.db',
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  // A string over the 200,000-byte object limit; and one long but within it.
  { weight: 1, arbitrary: fc.constantFrom('A'.repeat(210_000), 'b'.repeat(5_000)) },
);

const expr = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('true', 'false', 'len(subject) > 200', "'TAG'", "'LONG_SUBJ'", 'len(', '1 +', "'unterminated", '', ' ', '(((', 'nosuchfn(1)', 'subject', ')', '1 ? 2', "'A' + ") },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);
const ruleName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('A', 'a', 'B', ' a ', 'x y', 'X\tY', 'RULE', 'Ä', '\u00a0', '', ' ') },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);
const SCOPES = ['Any', 'Url', 'Domain', 'Email', 'Ip', 'Header', 'Body'];

/** One change to a sound object: at `path` (a JSON pointer), set `value` or remove what is there. */
const mutation = (paths: readonly string[]) =>
  fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...paths) }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) }), fc.oneof({ weight: 1, arbitrary: fc.constant<typeof REMOVE>(REMOVE) }, { weight: 4, arbitrary: oddValue }));

/** Sets or removes `path` (segments split on `/`) in `obj`, creating plain objects on the way. */
function mutate(obj: Record<string, unknown>, path: string, value: unknown): void {
  const segs = path.split('/');
  let node: any = obj;
  for (const s of segs.slice(0, -1)) {
    if (typeof node[s] !== 'object' || node[s] === null) node[s] = {};
    node = node[s];
  }
  const last = segs[segs.length - 1]!;
  if (value === REMOVE) delete node[last];
  else node[last] = value;
}

const RULE_PATHS = ['@type', 'name', 'description', 'enable', 'priority', 'condition', 'condition/else', 'condition/match', 'condition/match/0/if', 'condition/match/0/then', 'condition/match/1', 'condition/extra', 'extra', 'id'];

/** A SpamRule create: sound most of the time, with 0–2 mutations. */
export const ruleCreate: fc.Arbitrary<Record<string, unknown>> = fc
  .record({ scope: fc.constantFrom(...SCOPES), name: ruleName, ifE: expr, thenE: expr, elseE: expr, priority: fc.option(fc.integer({ min: -99999, max: 99999 }), { nil: undefined }), muts: fc.array(mutation(RULE_PATHS), { maxLength: 2 }) })
  .map(({ scope, name, ifE, thenE, elseE, priority, muts }) => {
    const r: Record<string, unknown> = { '@type': scope, name, condition: { match: [{ if: ifE, then: thenE }], else: elseE } };
    if (priority !== undefined) r.priority = priority;
    for (const [p, v] of muts) mutate(r, p, v);
    return r;
  });

const STORES: Record<string, unknown>[] = [
  { '@type': 'Redis', url: 'redis://10.0.0.1' },
  { '@type': 'Redis', url: 'redis://user:pw@10.0.0.1:6379', timeout: 500 },
  { '@type': 'PostgreSql', host: 'db', port: 5432, authSecret: { '@type': 'Value', secret: 'pw' } },
  { '@type': 'PostgreSql', host: 'db', readReplicas: [{ host: 'r1', authSecret: { '@type': 'Value', secret: 'rpw' } }] },
  { '@type': 'MySql', host: '10.1.2.3', port: 3306 },
  { '@type': 'Sqlite', path: 'lists.db' },
  { '@type': 'RedisCluster', urls: ['redis://a:1', 'redis://b:2'], authSecret: { '@type': 'Value', secret: 'c' } },
  { '@type': 'RedisSentinel', urls: { 'redis://s:26379': true }, serviceName: 'm', sentinelSecret: { '@type': 'Value', secret: 'ss' } },
  { '@type': 'Sharded', stores: [{ '@type': 'Redis', url: 'redis://x' }, { '@type': 'Redis', url: 'redis://y' }] },
];
const STORE_PATHS = [
  'namespace', 'store', 'store/@type', 'store/host', 'store/port', 'store/timeout', 'store/url', 'store/urls', 'store/path', 'store/authSecret',
  'store/authSecret/@type', 'store/authSecret/secret', 'store/poolMaxConnections', 'store/readReplicas', 'store/readReplicas/0/host',
  'store/stores', 'store/stores/0/url', 'store/extra', '@type', 'extra', 'id',
];
const namespace = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('ns', 'NS', ' ns ', 'seed', 'other', '', ' ', undefined) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** A StoreLookup create: one of the sound stores, with 0–2 mutations. */
export const lookupCreate: fc.Arbitrary<Record<string, unknown>> = fc
  .record({ ns: namespace, store: fc.constantFrom(...STORES), muts: fc.array(mutation(STORE_PATHS), { maxLength: 2 }) })
  .map(({ ns, store, muts }) => {
    const r: Record<string, unknown> = { store: structuredClone(store) };
    if (ns !== undefined) r.namespace = ns;
    for (const [p, v] of muts) mutate(r, p, v);
    return r;
  });

const RULE_PATCH_KEYS = [...RULE_PATHS, 'condition/match/0', 'condition/match/-', 'condition/match/01', '/priority', '', 'a/b/c', '~1', 'condition/nope/x', 'priority/x', 'name/0'];
const STORE_PATCH_KEYS = [...STORE_PATHS, 'store/urls/redis:~1~1a:1', 'store/readReplicas/0', 'store/readReplicas/1', 'store/stores/2', 'store/x/y', 'a/b/c', '/namespace', ''];

/** A PatchObject: keys from the type's paths (sound, invalid, nonexistent) and random ones. */
export const patchFor = (type: SetType): fc.Arbitrary<Record<string, unknown>> =>
  fc.dictionary(
    fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...(type === 'SpamRule' ? RULE_PATCH_KEYS : STORE_PATCH_KEYS)) }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) }),
    fc.oneof({ weight: 4, arbitrary: oddValue }, { weight: 2, arbitrary: type === 'SpamRule' ? expr : fc.constantFrom(...STORES) }),
    { minKeys: 1, maxKeys: 3 },
  );

/** An id in an update or destroy: the i-th object there is, one that does not exist, or a creation of the call. */
export type IdRef = { existing: number } | { unknown: string } | { creation: string };
const CIDS = ['k', 'k2', 'K_3'];
const idRef: fc.Arbitrary<IdRef> = fc.oneof(
  { weight: 5, arbitrary: fc.nat().map((existing) => ({ existing })) },
  { weight: 1, arbitrary: fc.constantFrom('zzzz', 'a', '', '#nope', 'x'.repeat(300)).map((unknown) => ({ unknown })) },
  { weight: 2, arbitrary: fc.constantFrom(...CIDS).map((creation) => ({ creation })) },
);

/** How `ifInState` is sent: left out, null, the current state, an earlier one, or not a state at all. */
export type IfInState = 'none' | 'null' | 'current' | 'stale' | 'garbage';

export interface SetOp {
  type: SetType;
  create: [string, Record<string, unknown>][];
  update: [IdRef, Record<string, unknown>][];
  destroy: IdRef[];
  ifInState: IfInState;
}

/** One `/set` call of either type. Creation ids are mostly valid Ids; now and then one is not. */
export const setOp: fc.Arbitrary<SetOp> = fc.constantFrom<SetType>('SpamRule', 'StoreLookup').chain((type) =>
  fc.record({
    type: fc.constant(type),
    create: fc.array(fc.tuple(fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...CIDS) }, { weight: 1, arbitrary: fc.constantFrom('bad id', '', 'é', '__proto__') }), type === 'SpamRule' ? ruleCreate : lookupCreate), { maxLength: 3 }),
    update: fc.array(fc.tuple(idRef, patchFor(type)), { maxLength: 2 }),
    destroy: fc.array(idRef, { maxLength: 2 }),
    ifInState: fc.constantFrom<IfInState>('none', 'none', 'null', 'current', 'stale', 'garbage'),
  }),
);
