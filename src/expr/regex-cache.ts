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
 * its own. It reads re2js's DFA fields (`re2().lazyDFA`: `stateBudget`, `memBudget`, `maxMem`,
 * `clearCache`); a program without them (another re2js version) is counted in `untracked` and left
 * unbounded, as it was before.
 */
import type { RE2JS } from 're2js';

/** Default of the thread's budget (`setRegexCacheBudget`, `EngineOptions.regexCacheBytes`): 64 MiB. */
export const DEFAULT_REGEX_CACHE_BYTES = 64 * 1024 * 1024;

/** re2js's (and RE2's) default cap of one program's DFA cache: 8 MiB. */
export const PROGRAM_CACHE_BYTES = 8 * 1024 * 1024;

/** Smallest accepted budget, 1 MiB: below, DFAs of ordinary patterns could not hold their states. */
export const MIN_REGEX_CACHE_BYTES = 1024 * 1024;

/** The fields of re2js's lazy DFA read here (`RE2.lazyDFA`), checked at run time. */
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

/** The thread's budget, what its caches hold and how many were dropped (a snapshot). */
export function regexCacheStats(): RegexCacheStats {
  return { budgetBytes: budget, bytes: total, warmPrograms: warm.size, evictions, untracked };
}

/**
 * Sets the thread's budget for the DFA caches of compiled patterns, in bytes (default
 * {@link DEFAULT_REGEX_CACHE_BYTES}). Programs whose DFA is built afterwards get a cap of a quarter
 * of it (those already searched keep theirs); the caches over the new budget are dropped now.
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
  /** re2js's program, whose `lazyDFA` is built on its first DFA search; undefined when untracked. */
  #re2: { lazyDFA: unknown; dfa: unknown } | undefined;
  #dfa: Dfa | undefined;
  #slot: Slot | undefined;

  constructor(re: RE2JS) {
    this.re = re;
    const re2 = re.re2() as unknown as { lazyDFA?: unknown; dfa: unknown };
    if (!('lazyDFA' in re2)) {
      untracked++;
      return;
    }
    this.#re2 = re2 as { lazyDFA: unknown; dfa: unknown };
    // A cap under re2js's own is best set before the DFA holds anything: such a DFA is built now (the
    // getter builds it). Otherwise it is taken on at its first use, for building it costs a pass over
    // the program (a fifth of the time to compile a list of 1,000 keywords) that most never need.
    if (programCap() < PROGRAM_CACHE_BYTES) this.#adopt(this.#re2.dfa);
  }

  /** Takes re2js's DFA under the budget: caps it, and follows it weakly. */
  #adopt(d: unknown): Dfa | undefined {
    if (!isDfa(d)) {
      untracked++;
      this.#re2 = undefined;
      return undefined;
    }
    const cap = programCap();
    if (cap < d.stateBudget) {
      // Under what a first search may hold already: re2js then finds the cache full at its next new
      // state and starts it afresh, within the cap (its own reset).
      d.memBudget -= d.stateBudget - cap;
      d.stateBudget = cap;
      d.maxMem = cap;
    }
    this.#dfa = d;
    this.#slot = { dfa: new WeakRef(d), bytes: 0, stamp: 0 };
    collected.register(d, this.#slot);
    return d;
  }

  /** Accounts the growth (or the reset) of the cache by the search just made; evicts when over budget. */
  searched(): void {
    let dfa = this.#dfa;
    if (dfa === undefined) {
      const lazy = this.#re2?.lazyDFA;
      if (lazy === null || lazy === undefined) return; // no DFA search yet (or untracked)
      dfa = this.#adopt(lazy);
      if (dfa === undefined) return;
    }
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
