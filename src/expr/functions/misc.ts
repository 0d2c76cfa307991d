/**
 * Miscellaneous functions (docs/expression-language.md; Stalwart `functions/misc.rs`).
 */
import { createHash } from 'node:crypto';
import { Float, toBool, toStr } from '../value.js';
import type { SyncFunctionDef } from './types.js';
import { int } from './util.js';

function sync(arity: number, fn: SyncFunctionDef['fn']): SyncFunctionDef {
  return { arity, async: false, fn };
}

/** The digests Stalwart accepts; the name is case-sensitive. */
const HASH_ALGOS = new Set(['md5', 'sha1', 'sha256', 'sha512']);

export const MISC_FUNCTIONS: Record<string, SyncFunctionDef> = {
  /** String/Array → whether empty; Integer, Float, Constant → 0. */
  is_empty: sync(1, ([v]) => (typeof v === 'string' || Array.isArray(v) ? int(v.length === 0) : 0)),
  /** 1 iff Integer or Float; numeric strings do not count. */
  is_number: sync(1, ([v]) => int(typeof v === 'number' || v instanceof Float)),
  /** Lowercase hex digest of the UTF-8 bytes of `ts(v)`; an unknown `algo` → `""`. */
  hash: sync(2, ([v, algo]) => {
    const a = toStr(algo!);
    if (!HASH_ALGOS.has(a)) return '';
    return createHash(a).update(toStr(v!), 'utf8').digest('hex');
  }),
  /** `a` if `c` is truthy, else `b`; both were already evaluated (no laziness, §4). */
  if_then: sync(3, ([c, a, b]) => (toBool(c!) ? a! : b!)),
};
