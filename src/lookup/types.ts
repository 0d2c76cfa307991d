/**
 * The one lookup-store interface that expression functions (`key_get`, `key_exists`, `key_set`,
 * `counter_get`, `counter_incr`, `sql_query`) call, whatever the backend (docs/compiler.md).
 *
 * Semantics follow docs/expression-language.md. Every method may reject (store down, timeout,
 * unsupported operation); the engine turns a rejection into "this rule set no tag" plus an entry in
 * `classify`'s `errors` (Stalwart's rule evaluation).
 */

/** A value a store hands back: strings (lossy UTF-8), integers, floats, or arrays of them. */
export type LookupValue = string | number | LookupValue[] | { float: number };

/** A parameter of `sql_query`: strings, integers and floats keep their type (§4.3). */
export type SqlParam = string | number;

/** Result of `sql_query`, already shaped by the spec's rules (§4.3); floats use `{ float }`. */
export type SqlResult = LookupValue;

export interface LookupStore {
  /** The store's `@type` (`Sqlite`, `Redis`, …) or `Memory` for static MemoryLookupKey lists. */
  readonly type: string;
  /**
   * `key_get`: the stored value, or `null` when the key is missing. Static key sets return
   * Integer `1` for a present key (Stalwart behaviour).
   */
  keyGet(key: string): Promise<string | number | null>;
  /** `key_exists`: exact entry, or (static lists) a glob-pattern match. */
  keyExists(key: string): Promise<boolean>;
  /** `key_set`: store `value`; `ttlMs` (milliseconds) is optional. Static lists reject with NotSupported. */
  keySet(key: string, value: string, ttlMs?: number): Promise<void>;
  /** `counter_get`: the counter, 0 when missing. Static lists reject. */
  counterGet(key: string): Promise<number>;
  /** `counter_incr`: add `by` and return the new value. Static lists reject. */
  counterIncr(key: string, by: number): Promise<number>;
  /** `sql_query`, present on SQL stores only. */
  sqlQuery?(query: string, params: SqlParam[]): Promise<SqlResult>;
  /** Release connections; idempotent. */
  close(): Promise<void>;
}

/**
 * Namespace → store, as lookups name them. `""` and `"*"` mean the default in-memory store
 * (§4.3). `get` returns `undefined` for an unknown namespace, which the functions turn into `""`.
 */
export interface LookupRegistry {
  get(namespace: string): LookupStore | undefined;
}

/** Thrown for `key_set`/`counter_*` on a read-only (static) store. */
export class LookupNotSupportedError extends Error {
  constructor(store: string, op: string) {
    super(`lookup store "${store}" does not support ${op}`);
    this.name = 'LookupNotSupportedError';
  }
}

/** Thrown when a store fails (down, timeout, refused). `namespace` names the StoreLookup. */
export class LookupStoreError extends Error {
  constructor(
    readonly namespace: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`lookup store "${namespace}": ${message}`, options);
    this.name = 'LookupStoreError';
  }
}
