/**
 * Array functions (docs/expression-language.md; Stalwart `functions/array.rs`).
 */
import { intoArray, looseEq, totalCmp, toBool, type Value } from '../value.js';
import { dedupLoose, intersectsLoose } from './loose-set.js';
import type { SyncFunctionDef } from './types.js';
import { int } from './util.js';

function sync(arity: number, fn: SyncFunctionDef['fn']): SyncFunctionDef {
  return { arity, async: false, fn };
}

/** `==`-membership (§2.5 loose equality). */
export function includesLoose(arr: readonly Value[], v: Value): boolean {
  for (let i = 0; i < arr.length; i++) if (looseEq(arr[i]!, v)) return true;
  return false;
}

export const ARRAY_FUNCTIONS: Record<string, SyncFunctionDef> = {
  /** Array → length; `""` → 0; anything else → 1. */
  count: sync(1, ([v]) => (Array.isArray(v) ? v.length : v === '' ? 0 : 1)),
  /**
   * `into_array(v)` sorted with `cmp` (§2.5, undefined → Greater); ascending when `asc` is truthy.
   * Rust's sort is unstable, so the order of equal elements is unspecified there; ours is stable.
   */
  sort: sync(2, ([v, asc]) => {
    const out = intoArray(v!).slice();
    if (toBool(asc!)) out.sort(totalCmp);
    else out.sort((a, b) => totalCmp(b, a));
    return out;
  }),
  /** `into_array(v)` keeping the first of each group of `==` elements (`[1,'1',1,2]` → `[1,2]`). */
  dedup: sync(1, ([v]) => dedupLoose(intoArray(v!))),
  /** Array → without the `""` elements (0 and `[]` stay); non-Array → unchanged. */
  winnow: sync(1, ([v]) => (Array.isArray(v) ? v.filter((el) => el !== '') : v!)),
  /**
   * Both Arrays → any element of `a` `==` some element of `b`; one Array → it contains the other
   * value; neither → 0.
   */
  is_intersect: sync(2, ([a, b]) => {
    if (Array.isArray(a)) {
      if (Array.isArray(b)) return int(intersectsLoose(a, b));
      return int(includesLoose(a, b!));
    }
    if (Array.isArray(b)) return int(includesLoose(b, a!));
    return 0;
  }),
};
