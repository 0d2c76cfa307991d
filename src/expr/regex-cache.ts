/**
 * One memory budget for the DFA state caches of every compiled pattern of this thread.
 *
 * re2js, like RE2, runs a search on a lazily built DFA whose states it keeps per compiled program,
 * for the life of the program, up to the program's `maxMem` (8 MiB by default; re2js's own
 * estimate of the bytes, which the heap measured at 1.0–1.3× that). Nothing bounded the sum: 312
 * patterns with growing DFAs held 619 MB of heap after 12 messages of 16 KB, on their way to
 * 312 × 8 MiB (bench/regex-memory.ts runs a smaller case). Each program compiled for a
 * `matches` pattern is therefore tracked here: after each search, the growth of its cache is added
 * to the thread's total, and when the total passes the budget the caches of the least recently used
 * programs are dropped (re2js's own `clearCache`, which it calls itself when one cache fills) until
 * the total is back under three quarters of the budget, so that eviction does not run again at the
 * next search. A dropped cache is rebuilt by the next search that needs it: results never change,
 * only the time of that search. Each program's own cap is also lowered to a quarter of the budget,
 * so that one program never takes more than that.
 *
 * The budget is per thread (a module's state is per isolate): each worker of `spamrule serve` has
 * its own. It reads re2js's DFA fields (`re2().dfa`: `stateBudget`, `memBudget`, `clearCache`);
 * a program whose DFA lacks them (another re2js version) is counted in `untracked` and left
 * unbounded, as it was before.
 */
import type { RE2JS } from 're2js';

/** Default of the thread's budget (`setRegexCacheBudget`, `EngineOptions.regexCacheBytes`): 64 MiB. */
export const DEFAULT_REGEX_CACHE_BYTES = 64 * 1024 * 1024;

/** re2js's (and RE2's) default cap of one program's DFA cache: 8 MiB. */
export const PROGRAM_CACHE_BYTES = 8 * 1024 * 1024;

/** Smallest accepted budget, 1 MiB: below, DFAs of ordinary patterns could not hold their states. */
export const MIN_REGEX_CACHE_BYTES = 1024 * 1024;

/** The fields of re2js's lazy DFA read here (`RE2.dfa`), checked at run time. */
interface Dfa {
  /** The cap of the cache, bytes (re2js: `maxMem`). */
  stateBudget: number;
  /** What is left of the cap, bytes: the cache holds `stateBudget - memBudget`. */
  memBudget: number;
  maxMem: number;
  clearCache(): void;
}

function isDfa(d: unknown): d is Dfa {
  if (typeof d !== 'object' || d === null) return false;
  const o = d as Record<string, unknown>;
  return typeof o.stateBudget === 'number' && typeof o.memBudget === 'number' && typeof o.maxMem === 'number' && typeof o.clearCache === 'function';
}

/** What the budget knows of a program: held weakly, so that a dropped rule set is collected. */
interface Slot {
  readonly dfa: WeakRef<Dfa>;
  /** The bytes its cache held after its last search. */
  bytes: number;
  /** When it was last searched (a counter, not a time). */
  stamp: number;
}

let budget = DEFAULT_REGEX_CACHE_BYTES;
/** Bytes of all the caches, as of their last search. */
let total = 0;
let clock = 0;
let evictions = 0;
let untracked = 0;
/** The programs whose cache holds something. */
const warm = new Set<Slot>();
// A collected program's cache is gone with it.
const collected = new FinalizationRegistry<Slot>((slot) => {
  if (warm.delete(slot)) total -= slot.bytes;
});

/** One program's cap: a quarter of the budget, at most re2js's default. */
const programCap = (): number => Math.min(PROGRAM_CACHE_BYTES, Math.floor(budget / 4));

/** The state of the budget, for metrics and tests. */
export interface RegexCacheStats {
  /** The budget, bytes. */
  budgetBytes: number;
  /** What the caches hold, bytes (re2js's estimate; the heap measured 1.0–1.3× that). */
  bytes: number;
  /** Programs whose cache holds something. */
  warmPrograms: number;
  /** Caches dropped for the budget since the thread started. */
  evictions: number;
  /** Programs left unbounded because their DFA did not have the fields read here (another re2js). */
  untracked: number;
}

export function regexCacheStats(): RegexCacheStats {
  return { budgetBytes: budget, bytes: total, warmPrograms: warm.size, evictions, untracked };
}

/**
 * Sets the thread's budget for the DFA caches of compiled patterns, in bytes (default
 * {@link DEFAULT_REGEX_CACHE_BYTES}). Programs compiled afterwards get a cap of a quarter of it; the
 * caches over the new budget are dropped now.
 * @throws TypeError for a value that is not a number ≥ {@link MIN_REGEX_CACHE_BYTES} (`Infinity`: no budget)
 */
export function setRegexCacheBudget(bytes: number): void {
  if (typeof bytes !== 'number' || Number.isNaN(bytes) || bytes < MIN_REGEX_CACHE_BYTES) {
    throw new TypeError(`regex cache budget: expected bytes (a number ≥ ${MIN_REGEX_CACHE_BYTES}, or Infinity), got ${JSON.stringify(bytes)}`);
  }
  budget = bytes;
  if (total > budget) evict();
}

/** Drops every cache (each is rebuilt when next needed). For tests and for memory pressure. */
export function clearRegexCaches(): void {
  for (const slot of warm) drop(slot);
}

function drop(slot: Slot): void {
  slot.dfa.deref()?.clearCache();
  total -= slot.bytes;
  slot.bytes = 0;
  warm.delete(slot);
}

/** Drops the least recently used caches until the total is under three quarters of the budget. */
function evict(): void {
  const byAge = [...warm].sort((a, b) => a.stamp - b.stamp);
  const target = budget * 0.75;
  for (const slot of byAge) {
    if (total <= target) break;
    drop(slot);
    evictions++;
  }
}

/**
 * A compiled re2js program under the budget. Call {@link searched} after each search of it (the
 * only place a cache grows); it costs two field reads when the cache did not grow.
 */
export class BudgetedProgram {
  readonly re: RE2JS;
  readonly #dfa: Dfa | undefined;
  readonly #slot: Slot | undefined;

  constructor(re: RE2JS) {
    this.re = re;
    // The DFA is built on first use otherwise; built now (empty), its cap can be set before it holds anything.
    const dfa: unknown = (re.re2() as unknown as { dfa?: unknown }).dfa;
    if (!isDfa(dfa)) {
      untracked++;
      return;
    }
    const cap = programCap();
    if (cap < dfa.stateBudget) {
      dfa.maxMem = cap;
      dfa.stateBudget = cap;
      dfa.memBudget = cap;
    }
    this.#dfa = dfa;
    this.#slot = { dfa: new WeakRef(dfa), bytes: 0, stamp: 0 };
    collected.register(dfa, this.#slot);
  }

  /** Accounts the growth (or the reset) of the cache by the search just made; evicts when over budget. */
  searched(): void {
    const dfa = this.#dfa;
    if (dfa === undefined) return;
    const slot = this.#slot!;
    slot.stamp = ++clock;
    const bytes = dfa.stateBudget - dfa.memBudget;
    if (bytes === slot.bytes) return;
    total += bytes - slot.bytes;
    slot.bytes = bytes;
    if (bytes > 0) warm.add(slot);
    else warm.delete(slot);
    if (total > budget) evict();
  }

  /** The bytes its cache holds (re2js's estimate). */
  get cacheBytes(): number {
    return this.#dfa === undefined ? 0 : this.#dfa.stateBudget - this.#dfa.memBudget;
  }
}
