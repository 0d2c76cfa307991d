/**
 * The two managed object types, `x:SpamRule` and `x:StoreLookup`: validation of creates and
 * PatchObject updates, the stored shape, the `/get` shape, and what `/query` may filter and sort on.
 * Error vocabulary per docs/jmap.md (invalidProperties with JSON-pointer paths); property names
 * and defaults per Stalwart's registry schema.
 */
import { invalidProperties, MethodError, SetErrorException } from './errors.js';
import { applyPatch } from './pointer.js';
import { listInput, LOOKUP_STORE_VARIANTS, maskSecrets, validateVariant, type Problem } from './schema.js';

export type ObjectType = 'SpamRule' | 'StoreLookup';
export type Data = Record<string, unknown>;

/** SpamRule scopes (`@type`), schema enum `SpamRuleType`. */
export const SPAM_RULE_SCOPES = ['Any', 'Url', 'Domain', 'Email', 'Ip', 'Header', 'Body'] as const;

/** Compiles a condition for a scope: `[]` or problems with paths `condition/match/0/if`. */
export type ConditionValidator = (scope: string, condition: { match: { if: string; then: string }[]; else: string }) => Problem[];

/**
 * Checks a validated `store` the way the lookup adapters will read it (`parseLookupStoreConfig` of
 * src/lookup), so nothing is stored that `createLookupStore` would refuse. Paths relative to the store.
 */
export type StoreValidator = (config: Data) => Problem[];

/** The server-side compilers/validators an object passes before it is stored. */
export interface Validators {
  condition: ConditionValidator;
  store?: StoreValidator;
}

/** Largest stored object, in bytes of JSON (Stalwart's registry limit, Stalwart's registry schema). */
export const MAX_OBJECT_BYTES = 200_000;

export interface ObjectKind {
  readonly type: ObjectType;
  /** Permission prefix (`sysSpamRule`, `sysStoreLookup`), Stalwart's registry schema. */
  readonly permissionPrefix: string;
  /** Every property `/get` can return, `id` included. */
  readonly properties: readonly string[];
  /** The property that must be unique among objects of this type. */
  readonly uniqueProperty: string;
  /** Validates a create; returns the stored data (without `id`). Throws SetErrorException. */
  create(input: unknown, id: string, validate: Validators): Data;
  /** Applies a PatchObject to stored data and validates the result. Throws SetErrorException. */
  update(old: Data, patch: unknown, id: string, validate: Validators): Data;
  /** The `/get` shape (secrets removed). */
  toWire(id: string, data: Data): Data;
  /** Properties echoed in `created` beside `id`: the ones the server set or changed (RFC 8620 §5.3). */
  createdEcho(input: Data, data: Data): Data;
  /** Tests one FilterCondition (RFC 8620 §5.5); throws MethodError(unsupportedFilter). */
  matches(condition: Record<string, unknown>, id: string, data: Data): boolean;
  /** FilterCondition properties (all take strings). */
  readonly filterProperties: readonly string[];
  /** Sort keys by `property`; unknown → unsupportedSort. */
  readonly sortKeys: Record<string, (id: string, data: Data) => string | number>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

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
    else if (!allowed.includes(k)) problems.push({ path: k, message: 'unknown property' });
  }
}

/** Stalwart normalises SpamRule names: upper-cased, then all white space removed (Stalwart's registry schema). */
export function normalizeRuleName(name: string): string {
  return name.toUpperCase().replace(/\s+/gu, '');
}

function textMatch(value: unknown, key: string, target: string): boolean {
  if (typeof value !== 'string') throw new MethodError('unsupportedFilter', `filter "${key}" needs a string`);
  return target.toLowerCase().includes(value.toLowerCase());
}

// ---------------------------------------------------------------------------------------------
// x:SpamRule

const RULE_PROPS = ['@type', 'name', 'description', 'enable', 'priority', 'condition'] as const;

function validateRule(input: Record<string, unknown>, validate: Validators): Data {
  const problems: Problem[] = [];
  refuseUnknown(input, RULE_PROPS, problems);
  const scope = input['@type'];
  if (typeof scope !== 'string' || !(SPAM_RULE_SCOPES as readonly string[]).includes(scope))
    problems.push({ path: '@type', message: `missing or invalid "@type" (expected one of ${SPAM_RULE_SCOPES.join(', ')})` });
  const name = input.name;
  if (typeof name !== 'string' || normalizeRuleName(name) === '')
    problems.push({ path: 'name', message: name === undefined || name === null ? 'required' : 'expected a non-empty string' });
  const description = input.description ?? null;
  if (description !== null && (typeof description !== 'string' || description === ''))
    problems.push({ path: 'description', message: 'expected a non-empty string or null' });
  const enable = input.enable ?? true;
  if (typeof enable !== 'boolean') problems.push({ path: 'enable', message: 'expected true or false' });
  const priority = input.priority ?? 500;
  if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) problems.push({ path: 'priority', message: 'expected an integer' });
  else if (priority < -99999 || priority > 99999) problems.push({ path: 'priority', message: 'must be in -99999..99999' });

  const condition = validateConditionShape(input.condition, problems);
  // Compile whenever the shape is sound and the scope known (the compiler needs both), so one
  // response reports a bad priority and a bad expression together.
  if (condition !== undefined && !problems.some((p) => p.path === '@type')) problems.push(...validate.condition(scope as string, condition));
  if (problems.length > 0) throw invalidProperties(problems);
  return checkSize({ '@type': scope, name: normalizeRuleName(name as string), description, enable, priority, condition });
}

function validateConditionShape(v: unknown, problems: Problem[]): { match: { if: string; then: string }[]; else: string } | undefined {
  if (v === undefined || v === null) {
    problems.push({ path: 'condition', message: 'required' });
    return undefined;
  }
  if (!isObject(v)) {
    problems.push({ path: 'condition', message: 'expected an object {"match", "else"}' });
    return undefined;
  }
  const before = problems.length;
  for (const k of Object.keys(v)) if (k !== 'match' && k !== 'else') problems.push({ path: `condition/${k}`, message: 'unknown property' });
  const items = v.match === undefined || v.match === null ? [] : listInput(v.match, 'condition/match', problems);
  const match: { if: string; then: string }[] = [];
  items?.forEach((it, i) => {
    const path = `condition/match/${i}`;
    if (!isObject(it)) return problems.push({ path, message: 'expected an object {"if", "then"}' });
    for (const k of Object.keys(it)) if (k !== 'if' && k !== 'then') problems.push({ path: `${path}/${k}`, message: 'unknown property' });
    for (const k of ['if', 'then'] as const)
      if (typeof it[k] !== 'string' || (it[k] as string).trim() === '') problems.push({ path: `${path}/${k}`, message: 'expected a non-empty expression' });
    match.push({ if: it.if as string, then: it.then as string });
  });
  const els = v.else;
  if (typeof els !== 'string' || els.trim() === '')
    problems.push({ path: 'condition/else', message: els === undefined ? 'required' : 'expected a non-empty expression' });
  return problems.length === before ? { match, else: els as string } : undefined;
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
  else store = validateVariant(LOOKUP_STORE_VARIANTS, input.store, old?.store, 'store', problems);
  if (store !== undefined && problems.length === 0 && validate.store)
    for (const p of validate.store(store)) problems.push({ path: p.path === '' ? 'store' : `store/${p.path}`, message: p.message });
  if (problems.length > 0) throw invalidProperties(problems);
  return checkSize({ namespace, store });
}

export const StoreLookupKind: ObjectKind = {
  type: 'StoreLookup',
  permissionPrefix: 'sysStoreLookup',
  properties: ['id', 'namespace', 'store'],
  uniqueProperty: 'namespace',
  create(input, id, validate) {
    return validateLookup(requireObject(input, 'a StoreLookup'), id, undefined, validate);
  },
  update(old, patch, id, validate) {
    const p = requireObject(patch, 'a PatchObject');
    const next = applyPatch(old, p);
    if (typeof next.namespace === 'string' && next.namespace.trim() !== old.namespace)
      throw invalidProperties([{ path: 'namespace', message: 'namespace cannot be changed after creation' }]);
    // A whole `store` written back with the same @type but no `authSecret` keeps the stored secret:
    // secrets are write-only, so a client that read the object cannot send them back.
    const oldStore = old.store as Data;
    const newStore = next.store;
    if (isObject(newStore) && newStore['@type'] === oldStore['@type'] && 'store' in p)
      for (const k of ['authSecret', 'sentinelSecret']) if (!(k in newStore) && k in oldStore) newStore[k] = oldStore[k];
    return validateLookup(next, id, old, validate);
  },
  toWire(id, data) {
    return { id, namespace: data.namespace, store: maskSecrets(data.store) };
  },
  createdEcho(input, data) {
    return input.namespace === data.namespace ? {} : { namespace: data.namespace };
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

export const KINDS: Record<ObjectType, ObjectKind> = { SpamRule: SpamRuleKind, StoreLookup: StoreLookupKind };
