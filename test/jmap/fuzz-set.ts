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
      // Expressions that do not compile.
      'len(', '1 +', "'unterminated", '(((', 'nosuchfn(1)', ')', '1 ? 2', "'A' + ",
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  // A string over the 200,000-byte object limit; and one long but within it.
  { weight: 1, arbitrary: fc.constantFrom('A'.repeat(210_000), 'b'.repeat(5_000)) },
);

const goodExpr = fc.constantFrom('true', 'false', 'len(subject) > 200', "'TAG'", "'LONG_SUBJ'", 'len(subject) > 5 && len(subject) < 90');
const expr = fc.oneof(
  { weight: 6, arbitrary: goodExpr },
  { weight: 3, arbitrary: fc.constantFrom('len(', '1 +', "'unterminated", '', ' ', '(((', 'nosuchfn(1)', 'subject', ')', '1 ? 2', "'A' + ") },
  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
);
const ruleName = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('A', 'a', 'B', ' a ', 'x y', 'X\tY', 'RULE', 'Ä', '\u00a0', '', ' ') },
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z][A-Za-z0-9_ ]{0,7}$/) },
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
  .record({ scope: fc.constantFrom(...SCOPES), name: ruleName, ifE: goodExpr, thenE: fc.constantFrom("'TAG'", "'LONG_SUBJ'"), elseE: fc.oneof(goodExpr, expr), priority: fc.option(fc.integer({ min: -99999, max: 99999 }), { nil: undefined }), muts: fc.oneof({ weight: 2, arbitrary: fc.constant([]) }, { weight: 3, arbitrary: fc.array(mutation(RULE_PATHS), { minLength: 1, maxLength: 2 }) }) })
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
  { weight: 2, arbitrary: fc.constantFrom('ns', 'NS', ' ns ', 'seed', 'other', '', ' ', undefined) },
  { weight: 3, arbitrary: fc.stringMatching(/^[a-z][a-z0-9._-]{0,7}$/) },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
);

/** A StoreLookup create: one of the sound stores, with 0–2 mutations. */
export const lookupCreate: fc.Arbitrary<Record<string, unknown>> = fc
  .record({ ns: namespace, store: fc.constantFrom(...STORES), muts: fc.oneof({ weight: 2, arbitrary: fc.constant([]) }, { weight: 3, arbitrary: fc.array(mutation(STORE_PATHS), { minLength: 1, maxLength: 2 }) }) })
  .map(({ ns, store, muts }) => {
    const r: Record<string, unknown> = { store: structuredClone(store) };
    if (ns !== undefined) r.namespace = ns;
    for (const [p, v] of muts) mutate(r, p, v);
    return r;
  });

const RULE_PATCH_KEYS = [...RULE_PATHS, 'condition/match/0', 'condition/match/-', 'condition/match/01', '/priority', '', 'a/b/c', '~1', 'condition/nope/x', 'priority/x', 'name/0'];
const STORE_PATCH_KEYS = [...STORE_PATHS, 'store/urls/redis:~1~1a:1', 'store/readReplicas/0', 'store/readReplicas/1', 'store/stores/2', 'store/x/y', 'a/b/c', '/namespace', ''];

/** Sound values for the paths a patch names, so that many updates are applied (the rest get {@link oddValue}). */
const goodValue: Record<string, fc.Arbitrary<unknown>> = {
  description: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.constant(null)),
  enable: fc.boolean(),
  priority: fc.integer({ min: -99999, max: 99999 }),
  '@type': fc.constantFrom(...SCOPES),
  name: ruleName,
  condition: fc.record({ match: fc.array(fc.record({ if: goodExpr, then: fc.constantFrom("'TAG'", "'T2'") }), { maxLength: 2 }), else: goodExpr }),
  'condition/else': goodExpr,
  'condition/match/0/if': goodExpr,
  'condition/match/0/then': fc.constantFrom("'TAG'", "'T2'"),
  'condition/match/1': fc.record({ if: goodExpr, then: fc.constantFrom("'TAG'") }),
  store: fc.constantFrom(...STORES),
  'store/host': fc.constantFrom('db', 'db2', '10.9.8.7'),
  'store/port': fc.integer({ min: 1, max: 65535 }),
  'store/timeout': fc.integer({ min: 0, max: 60_000 }),
  'store/url': fc.constantFrom('redis://10.0.0.1', 'redis://10.0.0.3:6380', 'redis://u:****@10.0.0.1'),
  'store/authSecret/secret': fc.constantFrom('new', 'pw'),
  'store/authSecret': fc.constantFrom({ '@type': 'Value', secret: 'n' }, { '@type': 'None' }, { '@type': 'Value' }),
  'store/poolMaxConnections': fc.integer({ min: 1, max: 8192 }),
  'store/readReplicas/0/host': fc.constantFrom('r1', 'r2'),
  'store/urls/redis:~1~1a:1': fc.constantFrom(true, false, null),
  namespace: namespace,
};

/** A PatchObject: keys from the type's paths (sound, invalid, nonexistent) and random ones; values mostly sound for their key. */
export const patchFor = (type: SetType): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .uniqueArray(
      fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...(type === 'SpamRule' ? RULE_PATCH_KEYS : STORE_PATCH_KEYS).filter((k) => Object.hasOwn(goodValue, k))) },
        { weight: 3, arbitrary: fc.constantFrom(...(type === 'SpamRule' ? RULE_PATCH_KEYS : STORE_PATCH_KEYS)) },
        { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
      ),
      { minLength: 1, maxLength: 3 },
    )
    .chain((keys) =>
      fc.tuple(...keys.map((k) => (Object.hasOwn(goodValue, k) ? fc.oneof({ weight: 3, arbitrary: goodValue[k]! }, { weight: 1, arbitrary: oddValue }) : oddValue))).map((vals) => Object.fromEntries(keys.map((k, i) => [k, vals[i]]))),
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
    destroy: fc.oneof({ weight: 3, arbitrary: fc.constant<IdRef[]>([]) }, { weight: 1, arbitrary: fc.array(idRef, { minLength: 1, maxLength: 2 }) }),
    ifInState: fc.constantFrom<IfInState>('none', 'none', 'null', 'current', 'stale', 'garbage'),
  }),
);
