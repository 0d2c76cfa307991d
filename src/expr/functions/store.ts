/**
 * Lookup-store and directory functions (docs/expression-language.md; Stalwart `functions/asynch.rs`).
 *
 * Namespace resolution: `ctx.lookups?.get(ts(ns))` (`""`/`"*"` = the default store is the
 * registry's business). An unknown namespace or no registry makes all five key/counter functions
 * return `""` (Stalwart behaviour, README.md, "Compatibility with Stalwart"). Store rejections become {@link ExprEvalError}
 * naming the namespace, with the original error as `cause`.
 */
import type { LookupStore, LookupValue, SqlParam } from '../../lookup/types.js';
import { ExprEvalError, type EvalContext } from '../types.js';
import { Float, toInteger, toStr, type Value } from '../value.js';
import type { AsyncFunctionDef } from './types.js';

function async_(arity: number, fn: AsyncFunctionDef['fn']): AsyncFunctionDef {
  return { arity, async: true, fn };
}

/** Static lists (`StaticLookupList`) answer without a promise chain; see `hasSync`/`getSync` (the compiler's `key_exists` fast path uses it too). */
export interface SyncLookup {
  hasSync(key: string): boolean;
  getSync(key: string): string | number | null;
}
export function isSyncLookup(s: LookupStore): s is LookupStore & SyncLookup {
  return typeof (s as Partial<SyncLookup>).hasSync === 'function' && typeof (s as Partial<SyncLookup>).getSync === 'function';
}

function wrap(ns: string, op: string, e: unknown): ExprEvalError {
  if (e instanceof ExprEvalError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new ExprEvalError(`${op} on lookup store "${ns}" failed: ${msg}`, { cause: e, store: ns });
}

/** Converts a store's value (`{float}` boxes, nested arrays) into an expression Value. */
export function fromLookupValue(v: LookupValue): Value {
  if (typeof v === 'string' || typeof v === 'number') return v;
  if (Array.isArray(v)) return v.map(fromLookupValue);
  return new Float(v.float);
}

/** `sql_query` parameter: Strings, Integers and Floats keep their type; others are stringified. */
function toSqlParam(v: Value): SqlParam {
  if (typeof v === 'string' || typeof v === 'number') return v;
  if (v instanceof Float) return v.value;
  return toStr(v);
}

/** Runs `op` on the namespace's store, or returns `""` for an unknown namespace. */
async function withStore(
  ctx: EvalContext,
  nsArg: Value,
  opName: string,
  op: (store: LookupStore) => Promise<Value>,
): Promise<Value> {
  const ns = toStr(nsArg);
  const store = ctx.lookups?.get(ns);
  if (store === undefined) return '';
  try {
    return await op(store);
  } catch (e) {
    throw wrap(ns, opName, e);
  }
}

async function directory(
  check: ((v: string) => boolean | Promise<boolean>) | undefined,
  arg: Value,
  name: string,
): Promise<Value> {
  if (check === undefined) return 0;
  try {
    return (await check(toStr(arg))) ? 1 : 0;
  } catch (e) {
    throw new ExprEvalError(`${name} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

export const STORE_FUNCTIONS: Record<string, AsyncFunctionDef> = {
  /** Integer 1 if the directory knows the domain; 0 without a directory. */
  is_local_domain: async_(1, ([d], ctx) => directory(ctx.isLocalDomain, d!, 'is_local_domain')),
  /** Integer 1 if the address resolves to a recipient; 0 without a directory. */
  is_local_address: async_(1, ([a], ctx) => directory(ctx.isLocalAddress, a!, 'is_local_address')),
  /** The stored String, Integer 1 for a present key of a static set, `""` when missing. */
  key_get: async_(2, async ([ns, key], ctx) => {
    const store = ctx.lookups?.get(toStr(ns!));
    if (store !== undefined && isSyncLookup(store)) return store.getSync(toStr(key!)) ?? '';
    return withStore(ctx, ns!, 'key_get', async (s) => (await s.keyGet(toStr(key!))) ?? '');
  }),
  /** Integer 0/1; static lists also match glob patterns. Static lists are answered without awaiting a store. */
  key_exists: async_(2, async ([ns, key], ctx) => {
    const store = ctx.lookups?.get(toStr(ns!));
    if (store !== undefined && isSyncLookup(store)) return store.hasSync(toStr(key!)) ? 1 : 0;
    return withStore(ctx, ns!, 'key_exists', async (s) => ((await s.keyExists(toStr(key!))) ? 1 : 0));
  }),
  /** Stores `ts(value)` with no expiry and returns 1; static stores reject (NotSupported → ExprEvalError). */
  key_set: async_(3, ([ns, key, value], ctx) =>
    withStore(ctx, ns!, 'key_set', async (s) => {
      await s.keySet(toStr(key!), toStr(value!));
      return 1;
    }),
  ),
  /** Adds `to_integer(n)` (failure → 0) and returns the new value. */
  counter_incr: async_(3, ([ns, key, n], ctx) =>
    withStore(ctx, ns!, 'counter_incr', (s) => s.counterIncr(toStr(key!), toInteger(n!) ?? 0)),
  ),
  /** The counter (0 when missing). */
  counter_get: async_(2, ([ns, key], ctx) => withStore(ctx, ns!, 'counter_get', (s) => s.counterGet(toStr(key!)))),
  /**
   * `sql_query(store, query, args)` (§4.3): `args` is an Array of parameters or one parameter.
   * Throws `Store not found or is not a SQL store`, `Empty query string`, or the store's error.
   * The store shapes the result (rows → `""`, value, Array, Array of Arrays; non-SELECT → count).
   */
  sql_query: async_(3, async ([nsArg, q, args], ctx) => {
    const ns = toStr(nsArg!);
    const store = ctx.lookups?.get(ns);
    if (store === undefined || typeof store.sqlQuery !== 'function') {
      throw new ExprEvalError('Store not found or is not a SQL store');
    }
    const query = toStr(q!);
    if (query === '') throw new ExprEvalError('Empty query string');
    const params = Array.isArray(args) ? args.map(toSqlParam) : [toSqlParam(args!)];
    try {
      return fromLookupValue(await store.sqlQuery(query, params));
    } catch (e) {
      throw wrap(ns, 'sql_query', e);
    }
  }),
};
