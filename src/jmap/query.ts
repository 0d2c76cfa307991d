/**
 * `/query` filtering, sorting and windowing (RFC 8620 §5.5): FilterOperators AND/OR/NOT (and the
 * seed's AllOf/AnyOf/Not) nested to any depth, sort comparators with `isAscending`, `position`
 * (negative from the end), `anchor` + `anchorOffset`, `limit`, `calculateTotal`.
 */
import { MethodError } from './errors.js';
import { compareIds } from './ids.js';
import type { Data, ObjectKind } from './objects.js';
import { isObject } from '../util/index.js';

const OPERATORS: Record<string, 'AND' | 'OR' | 'NOT'> = { AND: 'AND', OR: 'OR', NOT: 'NOT', AllOf: 'AND', AnyOf: 'OR', Not: 'NOT' };

type Filter = (id: string, data: Data) => boolean;

/**
 * FilterOperators nested at most this deep. RFC 8620 §5.5 sets no bound; one is needed so that a
 * hostile filter gets `invalidArguments` rather than overflowing the stack of the compiler below.
 */
export const MAX_FILTER_DEPTH = 64;

function tooDeep(): MethodError {
  return new MethodError('invalidArguments', `filter operators nested deeper than ${MAX_FILTER_DEPTH}`);
}

/** Compiles a filter tree once; throws `invalidArguments` for a malformed operator, `unsupportedFilter` via the kind. */
function compileFilter(kind: ObjectKind, f: unknown, depth = 0): Filter {
  if (f === undefined || f === null) return () => true;
  if (!isObject(f)) throw new MethodError('invalidArguments', 'filter must be an object or null');
  if ('operator' in f) {
    if (depth >= MAX_FILTER_DEPTH) throw tooDeep();
    const op = typeof f.operator === 'string' && Object.hasOwn(OPERATORS, f.operator) ? OPERATORS[f.operator] : undefined;
    if (op === undefined) throw new MethodError('invalidArguments', `unknown filter operator ${JSON.stringify(f.operator)}`);
    const extra = Object.keys(f).filter((k) => k !== 'operator' && k !== 'conditions');
    if (extra.length > 0) throw new MethodError('invalidArguments', `a FilterOperator cannot also have ${extra.join(', ')}`);
    if (!Array.isArray(f.conditions)) throw new MethodError('invalidArguments', 'FilterOperator conditions must be an array');
    const subs = f.conditions.map((c) => compileFilter(kind, c, depth + 1));
    if (op === 'AND') return (id, d) => subs.every((s) => s(id, d));
    if (op === 'OR') return (id, d) => subs.some((s) => s(id, d));
    return (id, d) => !subs.some((s) => s(id, d));
  }
  const cond = f;
  return (id, d) => kind.matches(cond, id, d);
}

/** Checks every FilterCondition's keys even when there are no objects to test them on. */
function checkFilterKeys(kind: ObjectKind, f: unknown, depth = 0): void {
  if (!isObject(f)) return;
  if ('operator' in f) {
    if (depth >= MAX_FILTER_DEPTH) throw tooDeep();
    if (Array.isArray(f.conditions)) for (const c of f.conditions) checkFilterKeys(kind, c, depth + 1);
    return;
  }
  for (const [k, v] of Object.entries(f)) {
    if (!kind.filterProperties.includes(k)) throw new MethodError('unsupportedFilter', `cannot filter x:${kind.type} on "${k}"`);
    // A known property given the wrong type is a malformed call (RFC 8620 §3.6.2), not an unsupported filter.
    if (typeof v !== 'string') throw new MethodError('invalidArguments', `filter "${k}" needs a string`);
  }
}

function optionalInt(v: unknown, name: string, def: number): number {
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new MethodError('invalidArguments', `${name} must be an integer`);
  return v;
}

/**
 * Every id the query's `filter` and `sort` select, in order (no window). Throws MethodError
 * `invalidArguments`, `unsupportedFilter` or `unsupportedSort` for a bad filter or sort.
 */
export function queryIds(kind: ObjectKind, objects: Map<string, Data>, args: Record<string, unknown>): string[] {
  checkFilterKeys(kind, args.filter);
  const filter = compileFilter(kind, args.filter);

  let sort = args.sort ?? [];
  if (!Array.isArray(sort)) throw new MethodError('invalidArguments', 'sort must be an array or null');
  const comparators = sort.map((c: unknown) => {
    if (!isObject(c) || typeof c.property !== 'string') throw new MethodError('invalidArguments', 'each Comparator needs a string "property"');
    const key = Object.hasOwn(kind.sortKeys, c.property) ? kind.sortKeys[c.property] : undefined;
    if (key === undefined) throw new MethodError('unsupportedSort', `cannot sort x:${kind.type} by "${c.property}"`);
    if (c.isAscending !== undefined && typeof c.isAscending !== 'boolean') throw new MethodError('invalidArguments', 'isAscending must be a boolean');
    if (c.collation !== undefined && typeof c.collation !== 'string') throw new MethodError('invalidArguments', 'collation must be a string');
    const fold = c.collation === undefined ? undefined : COLLATIONS[c.collation];
    if (c.collation !== undefined && fold === undefined) throw new MethodError('unsupportedSort', `unknown collation ${JSON.stringify(c.collation)} (known: ${Object.keys(COLLATIONS).join(', ')})`);
    return { key, property: c.property, dir: c.isAscending === false ? -1 : 1, fold };
  });
  const rows = [...objects].filter(([id, d]) => filter(id, d));
  rows.sort((a, b) => {
    for (const c of comparators) {
      let x = c.key(a[0], a[1]);
      let y = c.key(b[0], b[1]);
      // `id` orders by creation (compareIds), not as a string: a collation has nothing to fold there, and
      // i;ascii-numeric would turn every id into a number (or +Infinity) that compareIds cannot order.
      if (c.fold !== undefined && c.property !== 'id' && typeof x === 'string' && typeof y === 'string') [x, y] = [c.fold(x), c.fold(y)];
      const r = c.property === 'id' ? compareIds(x as string, y as string) : typeof x === 'number' ? x - (y as number) : x < y ? -1 : x > y ? 1 : 0;
      // NaN: two strings an ascii-numeric collation puts last alike (Infinity - Infinity).
      if (r !== 0 && !Number.isNaN(r)) return r * c.dir;
    }
    return compareIds(a[0], b[0]); // stable tie-break: creation order
  });
  return rows.map(([id]) => id);
}

/**
 * The collations the session advertises (`collationAlgorithms`, RFC 8620 §5.5; RFC 4790), each as a key
 * that compares in binary order the way the collation orders its strings. Without one, strings compare
 * in binary (UTF-16) order.
 */
const COLLATIONS: Record<string, (s: string) => string | number> = {
  // RFC 4790 §9.2: ASCII letters compare case-insensitively, everything else as is.
  'i;ascii-casemap': (s) => s.replace(/[A-Z]/g, (ch) => ch.toLowerCase()),
  // RFC 5051, approximated: compatibility decomposition and case folding.
  'i;unicode-casemap': (s) => s.normalize('NFKD').toLowerCase(),
  // RFC 4790 §9.1: the number the string starts with; strings that start with no digit sort last.
  'i;ascii-numeric': (s) => (/^\d/.test(s) ? Number(/^\d+/.exec(s)![0]) : Number.POSITIVE_INFINITY),
};

/** Returns `{position, ids, total?, limit?}` for the objects of one type. */
export function runQuery(kind: ObjectKind, objects: Map<string, Data>, args: Record<string, unknown>, maxResults: number): Data {
  const all = queryIds(kind, objects, args);

  const position = optionalInt(args.position, 'position', 0);
  const anchorOffset = optionalInt(args.anchorOffset, 'anchorOffset', 0);
  const limitArg = args.limit === undefined || args.limit === null ? undefined : optionalInt(args.limit, 'limit', 0);
  if (limitArg !== undefined && limitArg < 0) throw new MethodError('invalidArguments', 'limit must not be negative');
  if (args.anchor !== undefined && args.anchor !== null && typeof args.anchor !== 'string') throw new MethodError('invalidArguments', 'anchor must be a string');
  if (args.calculateTotal !== undefined && typeof args.calculateTotal !== 'boolean') throw new MethodError('invalidArguments', 'calculateTotal must be a boolean');

  const total = all.length;

  let start: number;
  if (typeof args.anchor === 'string') {
    const idx = all.indexOf(args.anchor);
    if (idx < 0) throw new MethodError('anchorNotFound', `anchor ${args.anchor} is not in the results`);
    start = Math.max(0, idx + anchorOffset);
  } else start = position < 0 ? Math.max(0, total + position) : position;
  start = Math.min(start, total);

  const limit = Math.min(limitArg ?? maxResults, maxResults);
  const out: Data = { position: start, ids: all.slice(start, start + limit) };
  if (args.calculateTotal === true) out.total = total;
  // RFC 8620 §5.5: `limit` is returned when the server capped the client's (or no) limit.
  if ((limitArg === undefined || limitArg > maxResults) && total - start > maxResults) out.limit = maxResults;
  return out;
}
