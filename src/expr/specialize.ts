/**
 * Call specialisation for the closure compiler: the hot library calls of the public rule set
 * (`contains` 55×, `starts_with`, `ends_with`, `is_empty`, `is_intersect`, `contains_ignore_case`,
 * `key_exists`) get closures that skip the argument array and the generic dispatch when an
 * argument is a compile-time literal. Every fast path covers only the case whose result is
 * obvious (a String operand, a constant array of Strings) and hands anything else to the
 * library function itself, so results stay bit-for-bit those of `functions/` (spec §4.1).
 */
import { includesLoose } from './functions/array.js';
import { isSyncLookup } from './functions/store.js';
import type { FunctionDef } from './functions/types.js';
import type { EvalContext } from './types.js';
import { Float, num, parseNumber, toStr, type Value } from './value.js';

/** The capture buffer: group 0..n of the last `matches` (spec §4.4). */
export type Captures = string[];
export type SyncFn = (ctx: EvalContext, caps: Captures) => Value;
/** A closure that returns a Promise only when it really had to wait. */
export type AsyncFn = (ctx: EvalContext, caps: Captures) => Value | Promise<Value>;

/** A compiled argument: its closure, and its value when it is a compile-time constant. */
export interface ArgInfo {
  sync: boolean;
  f: SyncFn | AsyncFn;
  lit?: { value: Value } | undefined;
  /**
   * Set when the argument is a plain variable read (no slot): the specialised closure then calls
   * `ctx.variable` itself, one closure call less on the hottest path of the public rule set.
   */
  varName?: string | undefined;
}

/** A constant array whose elements are all Strings (then `==` against a String is `Set.has`). */
function stringArray(a: ArgInfo): string[] | undefined {
  const v = a.lit?.value;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return undefined;
  return v as string[];
}

/**
 * `contains(<Array>, '<literal>')` without the library's `looseEq` per element: the needle's type
 * is known at compile time, so a String element is `===` and a number is compared with the
 * needle's numeric form, parsed once (value.ts `looseEq`: String vs number compares
 * `parse_number(string)`); Arrays and Constants never equal a String. Integer 1/0.
 */
function arrayHasString(h: readonly Value[], needle: string, needleNum: number): Value {
  for (let i = 0; i < h.length; i++) {
    const x = h[i]!;
    if (typeof x === 'string') {
      if (x === needle) return 1;
    } else if (typeof x === 'number') {
      if (x === needleNum) return 1;
    } else if (x instanceof Float && x.value === needleNum) return 1;
  }
  return 0;
}

/**
 * `contains(h, <literal>)`: a String haystack is a plain `includes` of the precomputed needle; an
 * Array haystack with a String needle is {@link arrayHasString} (`body.words`, `subject.words`).
 */
function containsLiteralNeedle(def: FunctionDef & { async: false }, hf: SyncFn, nv: Value, varName?: string): SyncFn {
  const needle = toStr(nv);
  const fn = def.fn;
  const strNeedle = typeof nv === 'string' ? nv : undefined;
  const needleNum = num(parseNumber(needle));
  const other = (h: Value, c: EvalContext): Value =>
    strNeedle !== undefined && Array.isArray(h) ? arrayHasString(h, strNeedle, needleNum) : fn([h, nv], c);
  if (varName !== undefined) {
    return (c) => {
      const h = c.variable(varName);
      return typeof h === 'string' ? (h.includes(needle) ? 1 : 0) : other(h, c);
    };
  }
  return (c, k) => {
    const h = hf(c, k);
    return typeof h === 'string' ? (h.includes(needle) ? 1 : 0) : other(h, c);
  };
}

/**
 * `contains([<Strings>], x)`: loose `==` of a String x against String elements is `===`, so a
 * `Set`; a number x may equal a numeric String element (`0 == 'abc'` too), so non-Strings take
 * the library path.
 */
function containsInSet(def: FunctionDef & { async: false }, arr: string[], nf: SyncFn, varName?: string): SyncFn {
  const set = new Set(arr);
  const fn = def.fn;
  if (varName !== undefined) {
    return (c) => {
      const n = c.variable(varName);
      return typeof n === 'string' ? (set.has(n) ? 1 : 0) : fn([arr, n], c);
    };
  }
  return (c, k) => {
    const n = nf(c, k);
    return typeof n === 'string' ? (set.has(n) ? 1 : 0) : fn([arr, n], c);
  };
}

/**
 * `is_intersect([<Strings>], b)`: some element of `b` (or `b` itself when not an Array) is `==`
 * an element of the constant; `==` is symmetric (value.ts `looseEq`), so each String of `b` is a
 * `Set.has` and anything else is checked with the library's `includesLoose`.
 */
function intersectSet(arr: string[], bf: SyncFn): SyncFn {
  const set = new Set(arr);
  return (c, k) => {
    const b = bf(c, k);
    if (Array.isArray(b)) {
      for (let i = 0; i < b.length; i++) {
        const y = b[i]!;
        if (typeof y === 'string' ? set.has(y) : includesLoose(arr, y)) return 1;
      }
      return 0;
    }
    if (typeof b === 'string') return set.has(b) ? 1 : 0;
    return includesLoose(arr, b) ? 1 : 0;
  };
}

/**
 * A specialised closure for a synchronous call, or `undefined` when none applies.
 *
 * @param name function name (spec §4.1)
 * @param def its library definition, called for every case the fast path does not cover
 * @param args the compiled arguments, all synchronous
 */
export function specializeSyncCall(name: string, def: FunctionDef, args: ArgInfo[]): SyncFn | undefined {
  if (def.async || !args.every((a) => a.sync)) return undefined;
  const f0 = args[0]?.f as SyncFn;
  const f1 = args[1]?.f as SyncFn;
  const lit1 = args[1]?.lit;
  switch (name) {
    case 'contains': {
      const arr = stringArray(args[0]!);
      if (arr !== undefined && lit1 === undefined) return containsInSet(def, arr, f1, args[1]!.varName);
      if (lit1 !== undefined && args[0]!.lit === undefined) return containsLiteralNeedle(def, f0, lit1.value, args[0]!.varName);
      return undefined;
    }
    case 'starts_with':
    case 'ends_with': {
      if (lit1 === undefined || args[0]!.lit !== undefined) return undefined;
      const s = toStr(lit1.value);
      const v0 = args[0]!.varName;
      // Same as the library: `ts(a).startsWith(ts(b))`, with no argument array.
      if (v0 !== undefined) {
        return name === 'starts_with'
          ? (c) => {
              const a = c.variable(v0);
              return (typeof a === 'string' ? a : toStr(a)).startsWith(s) ? 1 : 0;
            }
          : (c) => {
              const a = c.variable(v0);
              return (typeof a === 'string' ? a : toStr(a)).endsWith(s) ? 1 : 0;
            };
      }
      return name === 'starts_with'
        ? (c, k) => {
            const a = f0(c, k);
            return (typeof a === 'string' ? a : toStr(a)).startsWith(s) ? 1 : 0;
          }
        : (c, k) => {
            const a = f0(c, k);
            return (typeof a === 'string' ? a : toStr(a)).endsWith(s) ? 1 : 0;
          };
    }
    case 'is_empty':
      return (c, k) => {
        const v = f0(c, k);
        return typeof v === 'string' || Array.isArray(v) ? (v.length === 0 ? 1 : 0) : 0;
      };
    case 'is_intersect': {
      const arr = stringArray(args[0]!);
      if (arr !== undefined && lit1 === undefined) return intersectSet(arr, f1);
      return undefined;
    }
    case 'contains_ignore_case': {
      if (lit1 === undefined || args[0]!.lit !== undefined) return undefined;
      const nv = lit1.value;
      const lower = toStr(nv).toLowerCase();
      const fn = def.fn;
      return (c, k) => {
        const h = f0(c, k);
        return typeof h === 'string' ? (h.toLowerCase().includes(lower) ? 1 : 0) : fn([h, nv], c);
      };
    }
    default:
      return undefined;
  }
}

/**
 * `key_exists('<ns>', key)`: a static list answers synchronously, so the closure returns a plain
 * Integer with no promise, and an unknown namespace gives `""` at once; any other store goes
 * through the library function, which
 * keeps its errors. A throw on the fast path becomes a rejection, as inside the async library
 * function.
 */
export function specializeKeyExists(def: FunctionDef, args: ArgInfo[]): AsyncFn | undefined {
  const nsArg = args[0]?.lit;
  if (!def.async || nsArg === undefined || args.length !== 2) return undefined;
  const nsv = nsArg.value;
  const ns = toStr(nsv);
  const kf = args[1]!.f;
  const fn = def.fn;
  const run = (c: EvalContext, key: Value): Value | Promise<Value> => {
    const store = c.lookups?.get(ns);
    // Unknown namespace: `""` at once, as the library function answers (spec §4.3), no promise.
    if (store === undefined) return '';
    if (isSyncLookup(store)) {
      try {
        return store.hasSync(toStr(key)) ? 1 : 0;
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return fn([nsv, key], c);
  };
  return (c, k) => {
    const key = kf(c, k);
    return key instanceof Promise ? key.then((v) => run(c, v)) : run(c, key);
  };
}
