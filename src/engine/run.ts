/**
 * What one classification run needs besides the engine itself: the evaluation context of an
 * element, the time budget's abandonment of a rule still waiting, and the result's messages.
 */
import type { DnsBudgetStats } from '../dns/budget.js';
import type { LookupMap } from '../lookup/index.js';
import type { ScopeElement } from '../message/types.js';
import type { DnsResolver, EvalContext } from '../expr/types.js';
import type { Value } from '../expr/value.js';

/** The evaluation context of one element: a class, so the hot path allocates no closures. */
export class ElementContext implements EvalContext {
  constructor(
    private readonly el: ScopeElement,
    private readonly tags: ReadonlySet<string>,
    readonly lookups: LookupMap,
    readonly system: (name: string) => string | number,
    readonly dns: DnsResolver,
  ) {}
  variable(name: string): Value {
    return this.el.variable(name);
  }
  /** `$NAME`: 1 if the tag is already set (upstream, analysis, or an earlier rule), else 0. */
  global(name: string): number {
    return this.tags.has(name) ? 1 : 0;
  }
}

export const BUDGET_EXCEEDED = Symbol('time budget exceeded');

/**
 * A rule's pending evaluation, abandoned (rejecting with BUDGET_EXCEEDED) once the time budget is
 * spent. `end()` is when it will be (in `performance.now()` time); it moves later while the message
 * waits for DNS, so the timer looks again when it fires.
 */
export function withDeadline<T>(p: Promise<T>, end: () => number): Promise<T> {
  if (end() === Infinity) return p;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    const arm = (): void => {
      const left = end() - performance.now();
      if (left <= 0) return reject(BUDGET_EXCEEDED);
      timer = setTimeout(arm, left);
      timer.unref();
    };
    arm();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
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
