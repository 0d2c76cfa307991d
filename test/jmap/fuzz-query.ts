/**
 * Generators and a reference for fuzzing `/query` (RFC 8620 §5.5) of SpamRule and StoreLookup: filters
 * (FilterOperator trees with unknown operators, missing or extra members, conditions on unknown or
 * wrong-typed properties), sorts (unknown properties and collations, wrong types), and `position`,
 * `anchor`, `anchorOffset`, `limit`, `calculateTotal` at and past their edges. Each generated part
 * carries the method errors it may cause; the reference computes the ids a sound query selects, in
 * order, from the objects `/get` returns.
 */
import fc from 'fast-check';
import type { SetType } from './fuzz-set.js';

/** A query argument, and the method errors it may cause ([] = none). */
export interface Part<T> {
  value: T;
  errors: string[];
}

const ok = <T>(value: T): Part<T> => ({ value, errors: [] });
const bad = <T>(value: T, ...errors: string[]): Part<T> => ({ value, errors });

const FILTER_PROPS: Record<SetType, string[]> = { SpamRule: ['name'], StoreLookup: ['namespace', 'type'] };
const SORT_PROPS: Record<SetType, string[]> = { SpamRule: ['id', 'name', 'priority'], StoreLookup: ['id', 'namespace'] };
export const COLLATIONS = ['i;ascii-numeric', 'i;ascii-casemap', 'i;unicode-casemap'];

const needle = fc.constantFrom('a', 'AL', 'g1', '', 'Z', 'nope', 'ä', 'Redis', 'PostgreSql', 'Sqlite', 'b', '.', 'ns');

/** One FilterCondition. */
const condition = (type: SetType): fc.Arbitrary<Part<unknown>> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...FILTER_PROPS[type]), needle).map(([k, v]) => ok({ [k]: v })) },
    { weight: 1, arbitrary: fc.constant(ok({})) },
    { weight: 1, arbitrary: fc.constantFrom('nope', 'id', 'priority', 'store', '__proto__', 'constructor').map((k) => bad(JSON.parse(`{"${k}":"x"}`), 'unsupportedFilter')) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...FILTER_PROPS[type]), fc.constantFrom(5, null, true, ['a'], { a: 1 })).map(([k, v]) => bad({ [k]: v }, 'invalidArguments')) },
  );

const OPERATORS = ['AND', 'OR', 'NOT', 'AllOf', 'AnyOf', 'Not'];

/** A filter: a condition or a FilterOperator tree, sound or not. */
export const filterPart = (type: SetType): fc.Arbitrary<Part<unknown>> =>
  fc.letrec<{ node: Part<unknown> }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 3, arbitrary: condition(type) },
      {
        weight: 2,
        arbitrary: fc.tuple(fc.constantFrom(...OPERATORS), fc.array(tie('node'), { maxLength: 3 })).map(([operator, subs]) => ({
          value: { operator, conditions: subs.map((s) => s.value) },
          errors: subs.flatMap((s) => s.errors),
        })),
      },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.constant(bad({ operator: 'XOR', conditions: [] }, 'invalidArguments')),
          fc.constant(bad({ operator: 'AND' }, 'invalidArguments')),
          fc.constant(bad({ operator: 'OR', conditions: {} }, 'invalidArguments')),
          fc.constant(bad({ operator: 'NOT', conditions: [], name: 'a' }, 'invalidArguments')),
          fc.constant(bad({ operator: 5, conditions: [] }, 'invalidArguments')),
          fc.constant(bad({ operator: 'AND', conditions: [5] }, 'invalidArguments')),
          fc.constant(bad({ operator: 'AND', conditions: ['a'] }, 'invalidArguments')),
        ),
      },
    ),
  })).node;

/** The whole `filter` argument: absent, null, a filter, or not an object at all. */
const filterArg = (type: SetType): fc.Arbitrary<Part<unknown> | undefined> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(ok(null)) },
    { weight: 6, arbitrary: filterPart(type) },
    { weight: 1, arbitrary: fc.constantFrom('name', 5, ['a'], true).map((v) => bad(v, 'invalidArguments')) },
  );

const comparator = (type: SetType): fc.Arbitrary<Part<unknown>> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record({ property: fc.constantFrom(...SORT_PROPS[type]), isAscending: fc.boolean(), collation: fc.constantFrom(...COLLATIONS) }, { requiredKeys: ['property'] })
        .map((c) => ok(c)),
    },
    { weight: 1, arbitrary: fc.constantFrom('nope', 'enable', 'store', 'constructor', 'toString').map((property) => bad({ property }, 'unsupportedSort')) },
    { weight: 1, arbitrary: fc.constantFrom('i;nope', 'i;octet', '').map((collation) => bad({ property: SORT_PROPS[type][1], collation }, 'unsupportedSort')) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Part<unknown>>(
        bad({ property: 5 }, 'invalidArguments'),
        bad({}, 'invalidArguments'),
        bad('name', 'invalidArguments'),
        bad(null, 'invalidArguments'),
        bad({ property: 'id', isAscending: 'yes' }, 'invalidArguments'),
        bad({ property: 'id', collation: 5 }, 'invalidArguments'),
      ),
    },
  );

const sortArg = (type: SetType): fc.Arbitrary<Part<unknown> | undefined> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant(ok(null)) },
    { weight: 6, arbitrary: fc.array(comparator(type), { maxLength: 3 }).map((cs) => ({ value: cs.map((c) => c.value), errors: cs.flatMap((c) => c.errors) })) },
    { weight: 1, arbitrary: fc.constantFrom('name', 5, {}).map((v) => bad(v, 'invalidArguments')) },
  );

/** An Int argument (position, anchorOffset): absent, null, an integer at or past the edges, or not an Int. */
const intArg: fc.Arbitrary<Part<unknown> | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(ok(null)) },
  { weight: 6, arbitrary: fc.oneof(fc.integer({ min: -12, max: 12 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER)).map(ok) },
  { weight: 1, arbitrary: fc.constantFrom(1.5, '3', true, [], 2 ** 53).map((v) => bad(v, 'invalidArguments')) },
);

const limitArg: fc.Arbitrary<Part<unknown> | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(ok(null)) },
  { weight: 6, arbitrary: fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constant(Number.MAX_SAFE_INTEGER)).map(ok) },
  { weight: 1, arbitrary: fc.constantFrom(-1, -100, 1.5, '3', false).map((v) => bad(v, 'invalidArguments')) },
);

/** An anchor: an id (by index into every object there is, maybe not selected by the filter), an unknown one, or not a string. */
export type AnchorSpec = { index: number } | Part<unknown>;
const anchorArg: fc.Arbitrary<AnchorSpec | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.nat().map((index) => ({ index })) },
  { weight: 1, arbitrary: fc.constantFrom('zzzz', '').map(ok) },
  { weight: 1, arbitrary: fc.constantFrom(5, ['a'], {}).map((v) => bad(v, 'invalidArguments')) },
);

const calculateTotalArg: fc.Arbitrary<Part<unknown> | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.boolean().map(ok) },
  { weight: 1, arbitrary: fc.constantFrom('yes', 1).map((v) => bad(v, 'invalidArguments')) },
);

export interface QuerySpec {
  type: SetType;
  filter?: Part<unknown>;
  sort?: Part<unknown>;
  position?: Part<unknown>;
  anchor?: AnchorSpec;
  anchorOffset?: Part<unknown>;
  limit?: Part<unknown>;
  calculateTotal?: Part<unknown>;
}

export const querySpec: fc.Arbitrary<QuerySpec> = fc.constantFrom<SetType>('SpamRule', 'StoreLookup').chain((type) =>
  fc.record({
    type: fc.constant(type),
    filter: filterArg(type),
    sort: sortArg(type),
    position: intArg,
    anchor: anchorArg,
    anchorOffset: intArg,
    limit: limitArg,
    calculateTotal: calculateTotalArg,
  }),
);

type Obj = Record<string, any>;

/** Whether `o` passes the sound filter `f` (RFC 8620 §5.5; name and namespace: case-insensitive substring). */
export function matches(type: SetType, f: unknown, o: Obj): boolean {
  if (f === undefined || f === null) return true;
  const n = f as Obj;
  if ('operator' in n) {
    const subs = (n.conditions as unknown[]).map((c) => matches(type, c, o));
    const op = { AllOf: 'AND', AnyOf: 'OR', Not: 'NOT' }[n.operator as string] ?? n.operator;
    return op === 'AND' ? subs.every(Boolean) : op === 'OR' ? subs.some(Boolean) : !subs.some(Boolean);
  }
  return Object.entries(n).every(([k, v]) => {
    if (k === 'type') return o.store['@type'] === v;
    return String(o[k]).toLowerCase().includes(String(v).toLowerCase());
  });
}

/** RFC 4790 collations as sort keys (the ones the session advertises). */
function fold(collation: string | undefined, s: string): string | number {
  if (collation === 'i;ascii-casemap') return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (collation === 'i;unicode-casemap') return s.normalize('NFKD').toLowerCase();
  if (collation === 'i;ascii-numeric') return /^\d/.test(s) ? Number(/^\d+/.exec(s)![0]) : Number.POSITIVE_INFINITY;
  return s;
}

/**
 * The ids a sound filter and sort select, in order: `objects` in creation order (as `/get` lists them),
 * sorted by each comparator in turn, ties kept in creation order.
 */
export function referenceIds(type: SetType, objects: Obj[], filter: unknown, sort: unknown): string[] {
  const rank = new Map(objects.map((o, i) => [o.id as string, i]));
  const comparators = (Array.isArray(sort) ? sort : []) as Obj[];
  const sel = objects.filter((o) => matches(type, filter, o));
  return sel
    .sort((a, b) => {
      for (const c of comparators) {
        let r: number;
        if (c.property === 'id') r = rank.get(a.id)! - rank.get(b.id)!;
        else if (typeof a[c.property] === 'number') r = a[c.property] - b[c.property];
        else {
          const x = fold(c.collation, a[c.property]);
          const y = fold(c.collation, b[c.property]);
          r = x === y ? 0 : x < y ? -1 : 1;
        }
        if (r !== 0) return c.isAscending === false ? -r : r;
      }
      return rank.get(a.id)! - rank.get(b.id)!;
    })
    .map((o) => o.id as string);
}
