/**
 * The managed object types `x:SpamRule` and `x:StoreLookup` (the other four: registry-kinds.ts): validation of creates and
 * PatchObject updates, the stored shape, the `/get` shape, and what `/query` may filter and sort on.
 * Error vocabulary per docs/jmap.md (invalidProperties with JSON-pointer paths); property names
 * and defaults per Stalwart's registry schema.
 */
import { invalidProperties, MethodError, SetErrorException } from './errors.js';
import { applyPatch, pointerSegment } from './pointer.js';
import { normalizeRuleName, validateRegistryObject } from '../engine/schema.js';
import { parseLookupStoreConfig } from '../lookup/config.js';
import { maskSecrets } from '../lookup/secret.js';
import type { Problem } from './schema.js';
import { carriedSecretProblems, keepSecrets } from './store-secrets.js';
import { REGISTRY_KINDS } from './registry-kinds.js';
import { SpamTrainingSampleKind } from './training-samples.js';
import { MAX_OBJECT_BYTES, type Data, type ObjectKind, type ObjectType, type Validators } from './kind.js';
import { isObject, unescapePointerSegment } from '../util/index.js';

export type { ObjectType, Data, ConditionValidator, Validators, ObjectKind } from './kind.js';
export { MAX_OBJECT_BYTES } from './kind.js';
export { SPAM_RULE_SCOPES, normalizeRuleName } from '../engine/schema.js';

function requireObject(v: unknown, what: string): Record<string, unknown> {
  if (!isObject(v)) throw new SetErrorException({ type: 'invalidPatch', description: `${what} must be a JSON object`, properties: [''] });
  return v;
}

function checkSize(data: Data): Data {
  const bytes = Buffer.byteLength(JSON.stringify(data));
  if (bytes > MAX_OBJECT_BYTES)
    throw new SetErrorException({ type: 'tooLarge', description: `object is ${bytes} bytes, more than the maximum of ${MAX_OBJECT_BYTES}` });
  return data;
}

function refuseUnknown(input: Record<string, unknown>, allowed: readonly string[], problems: Problem[]): void {
  for (const k of Object.keys(input)) {
    if (k === 'id') problems.push({ path: 'id', message: 'id is set by the server' });
    else if (!allowed.includes(k)) problems.push({ path: pointerSegment(k), message: 'unknown property' });
  }
}

function textMatch(value: unknown, key: string, target: string): boolean {
  if (typeof value !== 'string') throw new MethodError('unsupportedFilter', `filter "${key}" needs a string`);
  return target.toLowerCase().includes(value.toLowerCase());
}

// ---------------------------------------------------------------------------------------------
// x:SpamRule

const RULE_PROPS = ['@type', 'name', 'description', 'enable', 'priority', 'condition'] as const;

/** The shared SpamRule schema (src/engine/schema.ts, as `lint` and `import` use), then the compiler. */
function validateRule(input: Record<string, unknown>, validate: Validators): Data {
  const r = validateRegistryObject('SpamRule', input);
  if (!r.ok) {
    // Compile whenever the shape is sound and the scope known, so one response reports a bad
    // priority and a bad expression together.
    const problems = [...r.problems];
    const cond = input.condition;
    const scope = input['@type'];
    if (!problems.some((p) => p.path === '@type' || p.path.startsWith('condition'))) {
      const shaped = validateRegistryObject('SpamRule', { '@type': scope, name: 'X', condition: cond });
      if (shaped.ok) problems.push(...validate.condition(scope as string, shaped.value.condition));
    }
    throw invalidProperties(problems);
  }
  const rule = r.value;
  const compileProblems = validate.condition(rule['@type'], rule.condition);
  if (compileProblems.length > 0) throw invalidProperties(compileProblems);
  return checkSize({ ...rule });
}

export const SpamRuleKind: ObjectKind = {
  type: 'SpamRule',
  permissionPrefix: 'sysSpamRule',
  properties: ['id', ...RULE_PROPS],
  uniqueProperty: 'name',
  create(input, _id, validate) {
    return validateRule(requireObject(input, 'a SpamRule'), validate);
  },
  update(old, patch, _id, validate) {
    const next = applyPatch(old, requireObject(patch, 'a PatchObject'));
    // `name` is set on create and immutable after; re-sending the same value is fine (docs/jmap.md).
    if (typeof next.name === 'string' && normalizeRuleName(next.name) !== old.name)
      throw invalidProperties([{ path: 'name', message: 'name cannot be changed after creation' }]);
    return validateRule(next, validate);
  },
  toWire(id, data) {
    return { id, ...data };
  },
  createdEcho(input, data) {
    const echo: Data = {};
    if (input.name !== data.name) echo.name = data.name;
    for (const k of ['description', 'enable', 'priority'] as const) if (!(k in input)) echo[k] = data[k];
    return echo;
  },
  matches(cond, _id, data) {
    return Object.entries(cond).every(([k, v]) => {
      if (k === 'name') return textMatch(v, k, data.name as string);
      throw new MethodError('unsupportedFilter', `cannot filter x:SpamRule on "${k}"`);
    });
  },
  filterProperties: ['name'],
  sortKeys: {
    id: (id) => id,
    name: (_id, d) => d.name as string,
    priority: (_id, d) => d.priority as number,
  },
};

// ---------------------------------------------------------------------------------------------
// x:StoreLookup

function validateLookup(input: Record<string, unknown>, id: string, old: Data | undefined, validate: Validators): Data {
  const problems: Problem[] = [];
  // Stalwart ignores a top-level `@type` on StoreLookup (Stalwart's registry schema), so we do too.
  refuseUnknown(input, ['namespace', 'store', '@type'], problems);
  let namespace = input.namespace ?? id;
  if (typeof namespace !== 'string' || namespace.trim() === '') problems.push({ path: 'namespace', message: 'expected a non-empty string' });
  else namespace = namespace.trim();
  let store: Data | undefined;
  if (input.store === undefined || input.store === null) problems.push({ path: 'store', message: 'required' });
  else {
    // The one schema of a store configuration: the lookup adapters' own (src/lookup/config.ts).
    const given = keepSecrets(input.store, old?.store);
    const r = parseLookupStoreConfig(given);
    if (!r.ok) for (const p of r.errors) problems.push(storeProblem(given, p));
    else {
      // Then what the server's operator lets a managed store reach on this host (files, variables).
      const checked = validate.storePolicy?.(r.value as unknown as Data) ?? { ok: true as const, store: r.value as unknown as Data };
      if (checked.ok) store = storeToWire(checked.store);
      else for (const p of checked.problems) problems.push({ path: p.path === '' ? 'store' : `store/${p.path}`, message: p.message });
    }
  }
  if (problems.length > 0) throw invalidProperties(problems);
  return checkSize({ namespace, store });
}

/** A store problem with its `store/…` path; an absent property says "required", a bad variant names the choices. */
function storeProblem(given: unknown, p: Problem): Problem {
  const path = p.path === '' ? 'store' : `store/${p.path}`;
  if (p.path === '@type' || p.path.endsWith('/@type')) return { path, message: `missing or invalid "@type" (${p.message})` };
  let cur: unknown = given;
  // The path is a JSON pointer: a key such as "redis://h" is written "redis:~1~1h" there.
  const keys = p.path.split('/').map(unescapePointerSegment);
  for (const k of keys.slice(0, -1)) cur = isObject(cur) || Array.isArray(cur) ? (cur as Record<string, unknown>)[k] : undefined;
  const absent = (isObject(cur) || Array.isArray(cur)) && (cur as Record<string, unknown>)[keys[keys.length - 1]!] === undefined;
  return { path, message: absent && !p.message.startsWith('unknown property') ? 'required' : p.message };
}

/** The stored (wire) shape of a validated store: sets as `{"value": true}` maps, as JMAP shows them. */
function storeToWire(v: unknown): Data {
  const walk = (x: unknown, key?: string): unknown => {
    if (key === 'urls' && Array.isArray(x)) return Object.fromEntries(x.map((u) => [u, true]));
    if (Array.isArray(x)) return x.map((y) => walk(y));
    if (isObject(x)) return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y, k)]));
    return x;
  };
  return walk(v) as Data;
}

export const StoreLookupKind: ObjectKind = {
  type: 'StoreLookup',
  permissionPrefix: 'sysStoreLookup',
  properties: ['id', 'namespace', 'store'],
  uniqueProperty: 'namespace',
  alsoUniqueIn: [{ type: 'HttpLookup', property: 'namespace' }],
  create(input, id, validate) {
    return validateLookup(requireObject(input, 'a StoreLookup'), id, undefined, validate);
  },
  update(old, patch, id, validate) {
    const p = requireObject(patch, 'a PatchObject');
    // As sent: what follows fills the secrets the client could not send into `next`.
    const sent = structuredClone(p);
    const next = applyPatch(old, p);
    // null too: it would reset the namespace to its default (the id) and rename the live lookup.
    if (Object.hasOwn(p, 'namespace') && (typeof next.namespace !== 'string' || next.namespace.trim() !== old.namespace))
      throw invalidProperties([{ path: 'namespace', message: 'namespace cannot be changed after creation' }]);
    // A whole `store` written back with the same @type but no `authSecret` keeps the stored secret:
    // secrets are write-only, so a client that read the object cannot send them back.
    const oldStore = old.store as Data;
    const newStore = next.store;
    if (isObject(newStore) && newStore['@type'] === oldStore['@type'] && 'store' in p)
      for (const k of ['authSecret', 'sentinelSecret']) if (!(k in newStore) && k in oldStore) newStore[k] = oldStore[k];
    const data = validateLookup(next, id, old, validate);
    const carried = carriedSecretProblems(sent, oldStore, data.store);
    if (carried.length > 0) throw invalidProperties(carried);
    return data;
  },
  toWire(id, data) {
    return { id, namespace: data.namespace, store: maskSecrets(data.store) };
  },
  createdEcho(input, data) {
    const echo: Data = input.namespace === data.namespace ? {} : { namespace: data.namespace };
    // A relative Sqlite path is stored absolute, inside the server's directory for them (the store policy).
    const given = input.store;
    const store = data.store as Data;
    if (store['@type'] === 'Sqlite' && isObject(given) && given.path !== store.path) echo.store = maskSecrets(store);
    return echo;
  },
  matches(cond, _id, data) {
    return Object.entries(cond).every(([k, v]) => {
      if (k === 'namespace') return textMatch(v, k, data.namespace as string);
      if (k === 'type') {
        if (typeof v !== 'string') throw new MethodError('unsupportedFilter', 'filter "type" needs a string');
        return (data.store as Data)['@type'] === v;
      }
      throw new MethodError('unsupportedFilter', `cannot filter x:StoreLookup on "${k}"`);
    });
  },
  filterProperties: ['namespace', 'type'],
  sortKeys: {
    id: (id) => id,
    namespace: (_id, d) => d.namespace as string,
  },
};

export const KINDS: Record<ObjectType, ObjectKind> = { SpamRule: SpamRuleKind, StoreLookup: StoreLookupKind, ...REGISTRY_KINDS, SpamTrainingSample: SpamTrainingSampleKind };
/** Every managed type, in the order the server loads them. */
export const OBJECT_TYPES = Object.keys(KINDS) as ObjectType[];
