/**
 * `/queryChanges` (RFC 8620 §5.6) from the change log behind `/changes` (changes.ts). A query state is
 * the type's state (`/query`'s `queryState`), so the changes since `sinceQueryState` are the log's.
 *
 * The results are not kept per query: the server knows which ids changed, not where they stood in
 * the old results. As §5.6 allows, every id updated or destroyed since `sinceQueryState` is in
 * `removed` (whether or not it was in the old results; ids created since are not), and every id of
 * the current results that was created or updated since is in `added` with its index. A client that
 * removes the `removed` ids from its cached list and splices in the `added` ones in index order gets
 * the current results. `upToId` is ignored, which §5.6 permits: every filter and sort property
 * (`name`, and `id` for sorting, which a create sets) can change or be set by a create.
 */
import { maxChangesArg, mergeChange, readChangesSince, sinceArg, type ChangeLog } from './changes.js';
import { MethodError } from './errors.js';
import type { Data, ObjectKind } from './kind.js';
import { queryIds } from './query.js';

export interface QueryChangesContext {
  accountId: string;
  /** The type's current state and objects, from one snapshot. */
  current: number;
  objects: Map<string, Data>;
  log: ChangeLog;
  stateString(n: number): string;
}

/**
 * `/queryChanges` of one type: `filter`, `sort`, `sinceQueryState`, `maxChanges`, `upToId`,
 * `calculateTotal`. Returns `{accountId, oldQueryState, newQueryState, total?, removed, added}`.
 * @throws MethodError `cannotCalculateChanges` for an unknown, future or too old `sinceQueryState`;
 *   `tooManyChanges` when `removed` and `added` hold more than `maxChanges` entries;
 *   `invalidArguments`, `unsupportedFilter` or `unsupportedSort` for bad arguments.
 */
export async function queryChangesMethod(kind: ObjectKind, args: Record<string, unknown>, ctx: QueryChangesContext): Promise<Data> {
  const max = maxChangesArg(args);
  if (args.upToId !== undefined && args.upToId !== null && typeof args.upToId !== 'string') throw new MethodError('invalidArguments', 'upToId must be a string or null');
  if (args.calculateTotal !== undefined && typeof args.calculateTotal !== 'boolean') throw new MethodError('invalidArguments', 'calculateTotal must be a boolean');
  // The filter and sort are checked before the state, so that a bad one is told as such.
  const ids = queryIds(kind, ctx.objects, args);

  const since = sinceArg(kind, 'sinceQueryState', args.sinceQueryState, 'a query state');
  const rows = await readChangesSince(kind, since, ctx.current, ctx.log, 'sinceQueryState', 'run the query again');

  const merged = new Map<string, 'c' | 'u' | 'd' | 'gone'>();
  for (const r of rows) merged.set(r.id, mergeChange(merged.get(r.id), r.kind));
  const removed = [...merged].filter(([, k]) => k === 'u' || k === 'd').map(([id]) => id);
  const added: { id: string; index: number }[] = [];
  ids.forEach((id, index) => {
    const k = merged.get(id);
    if (k === 'c' || k === 'u') added.push({ id, index });
  });
  if (max !== null && removed.length + added.length > max)
    throw new MethodError('tooManyChanges', `${removed.length + added.length} changes since s${since}, more than maxChanges (${max}); run the query again`);

  const out: Data = { accountId: ctx.accountId, oldQueryState: ctx.stateString(since), newQueryState: ctx.stateString(ctx.current) };
  if (args.calculateTotal === true) out.total = ids.length;
  out.removed = removed;
  out.added = added;
  return out;
}
