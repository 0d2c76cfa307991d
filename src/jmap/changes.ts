/**
 * The change log behind `/changes` (RFC 8620 §5.2): for every committed `/set` (one state step of a
 * type), which ids it created, updated and destroyed, kept in the registry's database beside the
 * objects, so that every server sharing the database answers the same (repo.ts writes it in the `/set`'s
 * transaction). The last {@link CHANGES_KEPT} states of each type are kept; a `sinceState` older than
 * that, or older than the log itself (a registry written before it existed), gets
 * `cannotCalculateChanges` and the client fetches everything again, as RFC 8620 §5.2 provides.
 */
import { MethodError } from './errors.js';
import type { Data, ObjectKind, ObjectType } from './kind.js';

/** States of each type whose changes are kept. */
export const CHANGES_KEPT = 1_000;

/** One id touched by one state step: created, updated or destroyed. */
export interface ChangeRow {
  state: number;
  id: string;
  kind: 'c' | 'u' | 'd';
}

/** What `/changes` reads from a repository. */
export interface ChangeLog {
  /**
   * The changes of `type` in the states after `since` up to `until`, in state order; `undefined` when
   * the log does not reach back to `since` (trimmed, or started later).
   */
  changesSince(type: ObjectType, since: number, until: number): Promise<ChangeRow[] | undefined>;
}

/** The rows one `/set` writes: each touched id as created, updated or destroyed against the previous objects. */
export function changeRows(before: ReadonlyMap<string, Data>, after: ReadonlyMap<string, Data>, touched: Iterable<string>, state: number): ChangeRow[] {
  const rows: ChangeRow[] = [];
  for (const id of touched) {
    const was = before.has(id);
    const is = after.has(id);
    if (was || is) rows.push({ state, id, kind: !was ? 'c' : is ? 'u' : 'd' });
  }
  return rows;
}

/**
 * What an id's changes over several steps amount to, given what they amounted to before (`was`) and
 * the next step's `kind`: created then updated → created; created then destroyed → `gone` (never
 * seen); updated then destroyed → destroyed.
 */
export function mergeChange(was: 'c' | 'u' | 'd' | 'gone' | undefined, kind: 'c' | 'u' | 'd'): 'c' | 'u' | 'd' | 'gone' {
  return was === undefined ? kind : was === 'c' ? (kind === 'd' ? 'gone' : 'c') : kind;
}

/** Parses our state strings (`s<n>`); undefined for anything else. */
function parseState(s: unknown): number | undefined {
  if (typeof s !== 'string' || !/^s(0|[1-9]\d{0,14})$/.test(s)) return undefined;
  return Number(s.slice(1));
}

/**
 * The state a `/changes` or `/queryChanges` call starts from: argument `name` (`sinceState`,
 * `sinceQueryState`), one of our state strings (`what` names it in the error).
 * @throws MethodError `invalidArguments` when it is not a string, `cannotCalculateChanges` for a string
 * that is not one of our states.
 */
export function sinceArg(kind: ObjectKind, name: string, value: unknown, what: string): number {
  // A missing or non-string state is a malformed call, not a state we cannot go back to (§3.6.2).
  if (typeof value !== 'string') throw new MethodError('invalidArguments', `${name} must be a state string`);
  const since = parseState(value);
  if (since === undefined) throw new MethodError('cannotCalculateChanges', `${name} ${JSON.stringify(value)} is not ${what} of x:${kind.type}`);
  return since;
}

/**
 * `maxChanges` (RFC 8620 §5.2, §5.6): a positive integer, or null when absent or null.
 * @throws MethodError `invalidArguments` for anything else.
 */
export function maxChangesArg(args: Record<string, unknown>): number | null {
  const max = args.maxChanges ?? null;
  if (max !== null && (typeof max !== 'number' || !Number.isInteger(max) || max < 1))
    throw new MethodError('invalidArguments', 'maxChanges must be a positive integer or null');
  return max;
}

/**
 * The log's changes of `kind` in the states after `since` up to `current`, in state order.
 * @throws MethodError `cannotCalculateChanges` when `since` is newer than `current` (named as
 *   argument `name`) or older than the log; `redo` tells the client what to do instead.
 */
export async function readChangesSince(kind: ObjectKind, since: number, current: number, log: ChangeLog, name: string, redo: string): Promise<ChangeRow[]> {
  if (since > current) throw new MethodError('cannotCalculateChanges', `${name} s${since} is newer than the current state s${current}`);
  const rows = since === current ? [] : await log.changesSince(kind.type, since, current);
  if (rows === undefined) throw new MethodError('cannotCalculateChanges', `changes since s${since} are no longer kept (the last ${CHANGES_KEPT} states are); ${redo}`);
  return rows;
}

export interface ChangesContext {
  accountId: string;
  current: number;
  log: ChangeLog;
  /** `maxChanges` when the client gives none, and the most it may ask for. */
  maxChangesLimit: number;
  stateString(n: number): string;
}

/**
 * `/changes` (RFC 8620 §5.2) of one type: `sinceState`, `maxChanges`. Changes are merged per id over the
 * steps returned (created then updated → created; created then destroyed → left out; updated then
 * destroyed → destroyed). With `maxChanges`, whole steps are returned up to that many ids, `newState`
 * being the last one included and `hasMoreChanges` true when steps remain; a single step with more ids
 * than `maxChanges` cannot be split: `cannotCalculateChanges`.
 * @throws MethodError `invalidArguments` for a bad `maxChanges`, `cannotCalculateChanges` for an
 * unknown, future or too old `sinceState`.
 */
export async function changesMethod(kind: ObjectKind, args: Record<string, unknown>, ctx: ChangesContext): Promise<Data> {
  const since = sinceArg(kind, 'sinceState', args.sinceState, 'a state');
  const max = maxChangesArg(args);
  const limit = Math.min(max ?? ctx.maxChangesLimit, ctx.maxChangesLimit);
  const current = ctx.current;
  const rows = await readChangesSince(kind, since, current, ctx.log, 'sinceState', 'fetch the objects again');

  // Whole steps, as many as fit in `limit` ids.
  const steps = new Map<number, ChangeRow[]>();
  for (const r of rows) {
    let step = steps.get(r.state);
    if (step === undefined) steps.set(r.state, (step = []));
    step.push(r);
  }
  const merged = new Map<string, 'c' | 'u' | 'd' | 'gone'>();
  let newState = since;
  let hasMoreChanges = false;
  for (const [state, step] of [...steps].sort((a, b) => a[0] - b[0])) {
    const ids = new Set([...merged.keys(), ...step.map((r) => r.id)]);
    if (ids.size > limit) {
      if (newState === since) throw new MethodError('cannotCalculateChanges', `one change of x:${kind.type} touched ${step.length} objects, more than maxChanges (${limit}); fetch the objects again`);
      hasMoreChanges = true;
      break;
    }
    for (const r of step) merged.set(r.id, mergeChange(merged.get(r.id), r.kind));
    newState = state;
  }
  // Every step up to the current state was read (each committed step logs at least one id).
  if (!hasMoreChanges) newState = current;
  const pick = (k: 'c' | 'u' | 'd'): string[] => [...merged].filter(([, v]) => v === k).map(([id]) => id);
  return {
    accountId: ctx.accountId,
    oldState: ctx.stateString(since),
    newState: ctx.stateString(newState),
    hasMoreChanges,
    created: pick('c'),
    updated: pick('u'),
    destroyed: pick('d'),
  };
}
