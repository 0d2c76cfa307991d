/**
 * `x:<Type>/get`, `/set` and `/query` (RFC 8620 §5.1, §5.3, §5.5) for the managed object types,
 * with the facade's decisions from docs/jmap.md: real states, `ifInState`, per-object
 * `forbidden` in `/set`, `invalidProperties` with JSON-pointer paths, `alreadyExists` for a unique
 * `name`/`namespace` already taken.
 */
import { changesMethod } from './changes.js';
import type { Permission } from './auth.js';
import { MethodError, SetErrorException, type SetError } from './errors.js';
import { compareIds, type IdGenerator } from './ids.js';
import type { KindHookContext } from './kind.js';
import type { Data, ObjectKind, ObjectType, Validators } from './objects.js';
import { runQuery } from './query.js';
import { queryChangesMethod } from './query-changes.js';
import type { ObjectRepository } from './repo.js';
import { isObject } from '../util/index.js';

/** RFC 8620 §2 core limits, advertised in the session and enforced. */
export interface Limits {
  maxSizeUpload: number;
  maxConcurrentUpload: number;
  /** Bytes. */
  maxSizeRequest: number;
  maxConcurrentRequests: number;
  maxCallsInRequest: number;
  maxObjectsInGet: number;
  maxObjectsInSet: number;
  collationAlgorithms: string[];
}

/** Stalwart's defaults (`x:Jmap` schema defaults, Stalwart's registry schema). */
export const DEFAULT_LIMITS: Limits = {
  maxSizeUpload: 50_000_000,
  maxConcurrentUpload: 4,
  maxSizeRequest: 10_000_000,
  maxConcurrentRequests: 4,
  maxCallsInRequest: 16,
  maxObjectsInGet: 500,
  maxObjectsInSet: 500,
  collationAlgorithms: ['i;ascii-numeric', 'i;ascii-casemap', 'i;unicode-casemap'],
};

export interface MethodContext {
  accountId: string;
  permissions: ReadonlySet<Permission>;
  /** Creation id → server id, for `#cid` references (RFC 8620 §3.3, §5.3). */
  createdIds: Map<string, string>;
  repo: ObjectRepository;
  ids: IdGenerator;
  validate: Validators;
  limits: Limits;
  /** Largest number of ids a query returns (Stalwart `queryMaxResults`). */
  queryMaxResults: number;
  /** Called after a `/set` committed changes of `type`, so the engine reloads. */
  afterChange(type: ObjectType): void;
  /** Uploaded blobs and the classifier's sample store, for `x:SpamTrainingSample`. */
  hooks?: KindHookContext;
}

export const stateString = (n: number): string => `s${n}`;

function checkAccount(args: Record<string, unknown>, ctx: MethodContext): void {
  const a = args.accountId;
  if (a === undefined || a === null) return; // optional for x: methods, as in Stalwart
  if (typeof a !== 'string') throw new MethodError('invalidArguments', 'accountId must be a string');
  if (a !== ctx.accountId) throw new MethodError('accountNotFound', `account "${a}" does not exist`);
}

function requirePermission(ctx: MethodContext, perm: string): void {
  if (!ctx.permissions.has(perm as Permission)) throw new MethodError('forbidden', `missing permission ${perm}`);
}

function resolveId(id: string, ctx: MethodContext): string | undefined {
  return id.startsWith('#') ? ctx.createdIds.get(id.slice(1)) : id;
}

/** `/get`: `ids` null = all (requestTooLarge over maxObjectsInGet), `properties` null = all, `[]` = id only. */
export function getMethod(kind: ObjectKind, args: Record<string, unknown>, ctx: MethodContext): Data {
  requirePermission(ctx, `${kind.permissionPrefix}Get`);
  checkAccount(args, ctx);
  const snap = ctx.repo.snapshot(kind.type);
  let ids: string[];
  if (args.ids === undefined || args.ids === null) {
    ids = [...snap.objects.keys()].sort(compareIds);
    if (ids.length > ctx.limits.maxObjectsInGet)
      throw new MethodError('requestTooLarge', `${ids.length} objects exceed maxObjectsInGet (${ctx.limits.maxObjectsInGet}); ask by ids`);
  } else {
    if (!Array.isArray(args.ids) || args.ids.some((i) => typeof i !== 'string')) throw new MethodError('invalidArguments', 'ids must be an array of strings or null');
    if (args.ids.length > ctx.limits.maxObjectsInGet) throw new MethodError('requestTooLarge', `more than maxObjectsInGet (${ctx.limits.maxObjectsInGet}) ids`);
    ids = [...new Set(args.ids as string[])];
  }
  let props: Set<string> | undefined;
  if (args.properties !== undefined && args.properties !== null) {
    if (!Array.isArray(args.properties) || args.properties.some((p) => typeof p !== 'string'))
      throw new MethodError('invalidArguments', 'properties must be an array of strings or null');
    const unknown = (args.properties as string[]).filter((p) => !kind.properties.includes(p));
    if (unknown.length > 0) throw new MethodError('invalidArguments', `unknown properties: ${unknown.join(', ')}`);
    props = new Set(['id', ...(args.properties as string[])]);
  }
  const list: Data[] = [];
  const notFound: string[] = [];
  for (const raw of ids) {
    const id = resolveId(raw, ctx);
    const data = id === undefined ? undefined : snap.objects.get(id);
    if (data === undefined || id === undefined) {
      notFound.push(raw);
      continue;
    }
    const wire = kind.toWire(id, data);
    list.push(props === undefined ? wire : Object.fromEntries(Object.entries(wire).filter(([k]) => props!.has(k))));
  }
  return { accountId: ctx.accountId, state: stateString(snap.state), list, notFound };
}

/** An empty map for keys a client chose: no prototype, so no key reaches or replaces an inherited one. */
function keyedByClient<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

function optionalMap(v: unknown, name: string): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new MethodError('invalidArguments', `${name} must be an object or null`);
  return v;
}

/**
 * `/set`: creates, then updates, then destroys (RFC 8620 §5.3), in one storage transaction. A
 * missing create/update/destroy permission gives that object a `forbidden` SetError while the
 * permitted ones proceed (docs/jmap.md). Throws MethodError for `stateMismatch`,
 * `requestTooLarge` and malformed arguments.
 */
export async function setMethod(kind: ObjectKind, args: Record<string, unknown>, ctx: MethodContext): Promise<Data> {
  checkAccount(args, ctx);
  const create = optionalMap(args.create, 'create');
  // A creation id is an Id (RFC 8620 §1.2, §5.3): 1–255 characters of the URL-safe base64 alphabet.
  for (const cid of Object.keys(create)) {
    if (!/^[A-Za-z0-9_-]{1,255}$/.test(cid)) throw new MethodError('invalidArguments', `creation id ${JSON.stringify(cid.slice(0, 64))} is not an Id (1 to 255 of A-Z a-z 0-9 - _)`);
  }
  const update = optionalMap(args.update, 'update');
  let destroy: string[] = [];
  if (args.destroy !== undefined && args.destroy !== null) {
    if (!Array.isArray(args.destroy) || args.destroy.some((i) => typeof i !== 'string')) throw new MethodError('invalidArguments', 'destroy must be an array of ids or null');
    destroy = args.destroy as string[];
  }
  const ifInState = args.ifInState;
  if (ifInState !== undefined && ifInState !== null && typeof ifInState !== 'string') throw new MethodError('invalidArguments', 'ifInState must be a string or null');
  const count = Object.keys(create).length + Object.keys(update).length + destroy.length;
  if (count > ctx.limits.maxObjectsInSet) throw new MethodError('requestTooLarge', `${count} operations exceed maxObjectsInSet (${ctx.limits.maxObjectsInSet})`);

  const may = (op: 'Create' | 'Update' | 'Destroy'): boolean => ctx.permissions.has(`${kind.permissionPrefix}${op}` as Permission);
  const forbidden = (op: string): SetError => ({ type: 'forbidden', description: `missing permission ${kind.permissionPrefix}${op}` });

  // Asynchronous preparation outside the transaction (x:SpamTrainingSample stores its message in the
  // classifier's store first). A create the transaction does not store is undone afterwards; a
  // MethodError undoes every preparation, so that the call leaves the server unchanged.
  const hooks = ctx.hooks ?? {};
  const preparedInputs = new Map<string, Data>();
  const prepareErrors = new Map<string, SetError>();
  const discard = async (cids: Iterable<string>): Promise<void> => {
    for (const cid of cids) await kind.discardCreate?.(preparedInputs.get(cid)!, hooks).catch(() => undefined);
  };
  if (kind.prepareCreate !== undefined) {
    for (const [cid, input] of Object.entries(create)) {
      if (!may('Create')) continue;
      try {
        preparedInputs.set(cid, await kind.prepareCreate(input, hooks));
      } catch (e) {
        if (e instanceof SetErrorException) prepareErrors.set(cid, e.error);
        else {
          await discard(preparedInputs.keys());
          throw e;
        }
      }
    }
  }
  const destroyedData: Data[] = [];

  const run = () => ctx.repo.transact(kind.type, (working, read) => {
    const oldState = stateString(working.state);
    if (typeof ifInState === 'string' && ifInState !== oldState) throw new MethodError('stateMismatch', `state is ${oldState}, not ${ifInState}`);
    const touched = new Set<string>();
    // Keyed by client strings (creation ids, ids): without a prototype, so that a creation id such as
    // "__proto__" (a valid Id, RFC 8620 §1.2) is a key like any other.
    const created = keyedByClient<Data>();
    const notCreated = keyedByClient<SetError>();
    const updated = keyedByClient<null>();
    const notUpdated = keyedByClient<SetError>();
    const destroyed: string[] = [];
    const notDestroyed = keyedByClient<SetError>();

    const clash = (id: string, data: Data): SetError | undefined => {
      const key = data[kind.uniqueProperty];
      for (const [other, d] of working.objects)
        if (other !== id && d[kind.uniqueProperty] === key)
          return { type: 'alreadyExists', description: `${kind.uniqueProperty} "${String(key)}" is already used by ${other}`, properties: [kind.uniqueProperty], existingId: other };
      for (const t of kind.alsoUniqueIn ?? [])
        for (const [other, d] of read(t.type).objects)
          if (d[t.property] === key)
            return { type: 'alreadyExists', description: `${kind.uniqueProperty} "${String(key)}" is already used by x:${t.type} ${other}`, properties: [kind.uniqueProperty], existingId: other };
      return undefined;
    };

    for (const [cid, input] of Object.entries(create)) {
      if (!may('Create')) {
        notCreated[cid] = forbidden('Create');
        continue;
      }
      const failed = prepareErrors.get(cid);
      if (failed !== undefined) {
        notCreated[cid] = failed;
        continue;
      }
      let id = ctx.ids.next();
      // Another server on the same database may have minted this id (same node id and millisecond).
      while (working.objects.has(id)) id = ctx.ids.next();
      try {
        const data = kind.create(preparedInputs.get(cid) ?? input, id, ctx.validate);
        const dup = clash(id, data);
        if (dup) {
          notCreated[cid] = dup;
          continue;
        }
        working.objects.set(id, data);
        touched.add(id);
        created[cid] = { id, ...kind.createdEcho(input as Data, data) };
        ctx.createdIds.set(cid, id);
      } catch (e) {
        if (!(e instanceof SetErrorException)) throw e;
        notCreated[cid] = e.error;
      }
    }

    const destroyIds = new Set(destroy.map((d) => resolveId(d, ctx) ?? d));
    for (const [key, patch] of Object.entries(update)) {
      const id = resolveId(key, ctx);
      if (!may('Update')) notUpdated[key] = forbidden('Update');
      else if (id === undefined || !working.objects.has(id)) notUpdated[key] = { type: 'notFound' };
      else if (destroyIds.has(id)) notUpdated[key] = { type: 'willDestroy', description: 'the object is destroyed by this call' };
      else {
        try {
          const old = working.objects.get(id)!;
          const data = kind.update(old, patch, id, ctx.validate);
          const dup = clash(id, data);
          if (dup) notUpdated[key] = dup;
          else {
            updated[id] = null;
            // An update that changes nothing is reported but not written (Stalwart's registry schema).
            if (JSON.stringify(data) !== JSON.stringify(old)) {
              working.objects.set(id, data);
              touched.add(id);
            }
          }
        } catch (e) {
          if (!(e instanceof SetErrorException)) throw e;
          notUpdated[key] = e.error;
        }
      }
    }

    // RFC 8620 §5.3: `destroyed` and `notDestroyed` answer each id asked for once. An id named twice (or
    // as both "#cid" and the id that creation got) is destroyed once, not also reported notFound.
    const asked = new Set<string>();
    for (const raw of destroy) {
      const id = resolveId(raw, ctx);
      if (asked.has(id ?? raw)) continue;
      asked.add(id ?? raw);
      if (!may('Destroy')) notDestroyed[raw] = forbidden('Destroy');
      else if (id === undefined || !working.objects.has(id)) notDestroyed[raw] = { type: 'notFound' };
      else {
        destroyedData.push(working.objects.get(id)!);
        working.objects.delete(id);
        touched.add(id);
        destroyed.push(id);
      }
    }
    const newState = stateString(touched.size > 0 ? working.state + 1 : working.state);
    const nullIfEmpty = (m: Record<string, unknown>) => (Object.keys(m).length === 0 ? null : m);
    return {
      touched,
      result: {
        accountId: ctx.accountId,
        oldState,
        newState,
        created: nullIfEmpty(created),
        updated: nullIfEmpty(updated),
        destroyed: destroyed.length === 0 ? null : destroyed,
        notCreated: nullIfEmpty(notCreated),
        notUpdated: nullIfEmpty(notUpdated),
        notDestroyed: nullIfEmpty(notDestroyed),
        changed: touched.size > 0,
      },
    };
  }, kind.alsoUniqueIn?.map((t) => t.type));
  let outcome: Awaited<ReturnType<typeof run>>;
  try {
    outcome = await run();
  } catch (e) {
    await discard(preparedInputs.keys());
    throw e;
  }
  const { changed, ...response } = outcome;
  if (preparedInputs.size > 0) {
    const stored = new Set(Object.keys((response.created as Data | null) ?? {}));
    await discard([...preparedInputs.keys()].filter((cid) => !stored.has(cid)));
  }
  for (const data of destroyedData) await kind.afterDestroy?.(data, hooks).catch(() => undefined);
  if (changed) ctx.afterChange(kind.type);
  return response;
}

/** `/changes` (RFC 8620 §5.2), see changes.ts; the permission of `/get`. */
export function changesMethodOf(kind: ObjectKind, args: Record<string, unknown>, ctx: MethodContext): Promise<Data> {
  requirePermission(ctx, `${kind.permissionPrefix}Get`);
  checkAccount(args, ctx);
  return changesMethod(kind, args, {
    accountId: ctx.accountId,
    current: ctx.repo.snapshot(kind.type).state,
    log: ctx.repo,
    maxChangesLimit: ctx.limits.maxObjectsInGet,
    stateString,
  });
}

/** `/query`, see query.ts. Its `queryState` is the type's state, which `/queryChanges` takes. */
export function queryMethod(kind: ObjectKind, args: Record<string, unknown>, ctx: MethodContext): Data {
  requirePermission(ctx, `${kind.permissionPrefix}Query`);
  checkAccount(args, ctx);
  const snap = ctx.repo.snapshot(kind.type);
  return { accountId: ctx.accountId, queryState: stateString(snap.state), canCalculateChanges: true, ...runQuery(kind, snap.objects, args, ctx.queryMaxResults) };
}

/** `/queryChanges` (RFC 8620 §5.6), see query-changes.ts; the permission of `/query`. */
export function queryChangesMethodOf(kind: ObjectKind, args: Record<string, unknown>, ctx: MethodContext): Promise<Data> {
  requirePermission(ctx, `${kind.permissionPrefix}Query`);
  checkAccount(args, ctx);
  const snap = ctx.repo.snapshot(kind.type);
  return queryChangesMethod(kind, args, { accountId: ctx.accountId, current: snap.state, objects: snap.objects, log: ctx.repo, stateString });
}
