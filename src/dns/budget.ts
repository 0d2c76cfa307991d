/**
 * A per-message DNS budget: a cap on queries and a deadline, so one message can neither flood the resolver
 * nor wait on DNS longer than allowed, even when the underlying resolver never answers.
 */
import { WaitClock } from '../util/index.js';
import type { DnsAnswer, DnsType, Resolver } from './types.js';

export interface DnsBudget {
  /** Queries this message may make (default: unlimited). Past the cap a query answers `error` without being sent. */
  maxQueries?: number;
  /**
   * Time in ms, from the wrapper's creation, after which every query answers `error`: a query still pending then
   * resolves at the deadline, later queries at once (default: none).
   */
  deadlineMs?: number;
}

export interface DnsBudgetStats {
  /** Queries passed to the underlying resolver. */
  queries: number;
  /** `error` answers returned, those of `capped` included. */
  errors: number;
  /** Queries refused or cut short by the cap or the deadline. */
  capped: number;
}

/** A Resolver bound to one message's budget. */
export interface BudgetedResolver extends Resolver {
  stats(): DnsBudgetStats;
  /**
   * Milliseconds during which at least one of this message's queries was waiting for its answer (so
   * far): the time the message spent on DNS, which the classify time budget does not count (a sender
   * whose DNS never answers must not make the rules be skipped; the deadline here bounds that wait).
   */
  waitedMs(): number;
}

/**
 * Wraps `resolver` for one message (create one per message). Every call counts towards `maxQueries`, cache
 * hits of the underlying resolver included, since the wrapper cannot tell them apart. Never rejects: a rejection
 * of the underlying resolver becomes an `error` answer.
 */
export function withBudget(resolver: Resolver, budget: DnsBudget = {}): BudgetedResolver {
  const maxQueries = budget.maxQueries ?? Infinity;
  const deadline = budget.deadlineMs === undefined ? Infinity : performance.now() + budget.deadlineMs;
  const counters: DnsBudgetStats = { queries: 0, errors: 0, capped: 0 };
  // Set when a deadline timer fires. libuv computes a timer's due time from the loop's cached clock, which lags
  // `performance.now()` after a long loop turn, so a timer can fire a little before `deadline` by the clock. Once
  // the wrapper has answered "deadline passed" it must keep refusing, or a query made right after would be sent.
  let expired = false;
  // Overlapping waits count once.
  const waits = new WaitClock();

  const refuse = <T extends DnsType>(error: string): DnsAnswer<T> => {
    counters.capped++;
    counters.errors++;
    return { status: 'error', error };
  };

  return {
    async query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
      if (counters.queries >= maxQueries) return refuse(`DNS query cap of ${maxQueries} per message reached`);
      const left = deadline - performance.now();
      if (expired || left <= 0) return refuse('DNS deadline of the message passed');
      counters.queries++;
      const sent = resolver.query(name, type).catch(
        (e: unknown): DnsAnswer<T> => ({ status: 'error', error: String((e as Error)?.message ?? e) }),
      );
      // The wait ends when this call answers (at the deadline at the latest), not when a resolver
      // that never answers gives up: the message is no longer waiting then.
      let answer: DnsAnswer<T> | undefined;
      if (deadline === Infinity) {
        answer = await waits.time(sent);
      } else {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<undefined>((resolve) => {
          timer = setTimeout(() => {
            expired = true;
            resolve(undefined);
          }, left);
        });
        answer = await waits.time(Promise.race([sent, late])).finally(() => clearTimeout(timer));
      }
      if (answer === undefined) return refuse('DNS deadline of the message passed');
      if (answer.status === 'error') counters.errors++;
      return answer;
    },
    stats: () => ({ ...counters }),
    waitedMs: () => waits.waitedMs(),
  };
}
