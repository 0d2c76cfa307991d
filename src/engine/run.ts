/**
 * What one classification run needs besides the engine itself: the evaluation context of an
 * element, the time budget's abandonment of a rule still waiting, and the result's messages.
 */
import type { DnsBudgetStats } from '../dns/budget.js';
import type { LookupMap } from '../lookup/index.js';
import type { ScopeElement } from '../message/types.js';
import type { DnsResolver, EvalContext, IfResult } from '../expr/types.js';
import type { CompiledRule } from './rules.js';
import type { Value } from '../expr/value.js';

/** The evaluation context of one element: a class, so the hot path allocates no closures. */
export class ElementContext implements EvalContext {
  constructor(
    private readonly el: ScopeElement,
    private readonly tags: ReadonlySet<string>,
    readonly lookups: LookupMap,
    readonly system: (name: string) => string | number,
    readonly dns: DnsResolver,
    readonly regexWorkLimit: number,
  ) {}
  variable(name: string): Value {
    return this.el.variable(name);
  }
  /** `$NAME`: 1 if the tag is already set (upstream, analysis, or an earlier rule), else 0. */
  global(name: string): number {
    return this.tags.has(name) ? 1 : 0;
  }
}

/** Rejection of a rule's wait cut by the message's wait budget ({@link RuleWaits}). */
export const WAIT_EXCEEDED = Symbol('wait budget exceeded');

/**
 * A pending evaluation, abandoned (rejecting with `reason`) at `end()` (in `performance.now()` time),
 * which may move later meanwhile (the timer looks again when it fires).
 */
export function withDeadline<T>(p: Promise<T>, end: () => number, reason: symbol): Promise<T> {
  if (end() === Infinity) return p;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    const arm = (): void => {
      const left = end() - performance.now();
      if (left <= 0) return reject(reason);
      timer = setTimeout(arm, left);
      timer.unref();
    };
    arm();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * The time one message's rules spend waiting for lookup stores (and DNS, for `dns_query`), in ms:
 * not counted in the classify time budget, but bounded by a budget of its own, `limitMs` in all
 * (`EngineOptions.ruleWaitMs`). So a store that is slow or frozen costs a message at most that long,
 * its rules fail with an error once it is spent, and the rules that need no store still run (the time
 * budget would otherwise be spent waiting, and every later rule skipped). `Infinity`: no limit (each
 * wait is then bounded by its store's own timeout).
 */
export class RuleWaits {
  /** Time waited so far (ms). */
  waitedMs = 0;

  constructor(readonly limitMs: number) {}

  /** Awaits a rule's pending evaluation; rejects with WAIT_EXCEEDED once the budget is spent. */
  async wait<T>(p: Promise<T>): Promise<T> {
    const t = performance.now();
    const end = t + Math.max(0, this.limitMs - this.waitedMs);
    try {
      return await withDeadline(p, () => end, WAIT_EXCEEDED);
    } finally {
      this.waitedMs += performance.now() - t;
    }
  }
}

/** The result's warning when some of a message's DNS queries failed (timeout, server failure, budget). */
export function dnsFailureWarning(st: DnsBudgetStats): string {
  const n = st.errors;
  const budget = st.capped > 0 ? `, ${st.capped} of them refused or cut short by the message's DNS budget` : '';
  return `dns: ${n} ${n === 1 ? 'query' : 'queries'} got no answer (timeout or server failure${budget}); the checks that needed ${n === 1 ? 'it' : 'them'} set no tag`;
}

/** An error's message, whatever was thrown. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

type Prefetched = IfResult | undefined | Promise<IfResult | undefined>;

/**
 * Starts the evaluations of a scope's prefetchable rules (those that cannot depend on other rules) for
 * every element, so that their lookups go out together (pipelined by the store clients) instead of one
 * round trip at a time; the engine still applies the results in order. `undefined` when there are none.
 * Each entry is a result, or a promise when a store really had to wait.
 */
export function prefetchRules(rules: readonly CompiledRule[], ctxs: EvalContext[]): (Prefetched[] | undefined)[] | undefined {
  if (ctxs.length < 2 || !rules.some((r) => r.prefetchable)) return undefined;
  return rules.map((rule) => {
    if (!rule.prefetchable) return undefined;
    return ctxs.map((ctx): Prefetched => {
      let v: Prefetched;
      try {
        v = rule.block.evalMaybe(ctx);
      } catch (e) {
        v = Promise.reject(e);
      }
      if (v instanceof Promise) v.catch(() => {}); // awaited later in order; never unhandled meanwhile
      return v;
    });
  });
}
