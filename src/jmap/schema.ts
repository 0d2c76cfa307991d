/**
 * Property tables for `x:LookupStore` variants and the structs inside them, transcribed from the
 * registry schema (Stalwart's registry schema, `registry-subset.json` `fields["x:*Store"]`), and one
 * validator that applies defaults, bounds and types to them. Wire forms follow docs/jmap.md:
 * lists are arrays (index-keyed objects accepted), sets are `{value: true}` maps (arrays accepted),
 * durations are integer milliseconds.
 */

export type Field =
  | { t: 'str'; def?: string | null; nullable?: boolean }
  | { t: 'uint'; def?: number | null; nullable?: boolean; min?: number; max?: number }
  | { t: 'bool'; def: boolean }
  | { t: 'dur'; def?: number | null; nullable?: boolean; min?: number; max?: number }
  | { t: 'enum'; def: string; values: readonly string[] }
  | { t: 'secret' }
  | { t: 'uriSet'; def: readonly string[] }
  | { t: 'list'; item: Struct }
  | { t: 'vlist'; variants: Record<string, Struct>; minLength?: number };

export type Struct = Record<string, Field>;

export interface Problem {
  path: string;
  message: string;
}

const MAX_CONN = { min: 1, max: 8192 } as const;
const secret: Field = { t: 'secret' };
const poolTimeouts: Struct = {
  poolTimeoutCreate: { t: 'dur', def: 30000, nullable: true },
  poolTimeoutWait: { t: 'dur', def: 30000, nullable: true },
  poolTimeoutRecycle: { t: 'dur', def: 30000, nullable: true },
};

const PostgreSqlSettings: Struct = {
  host: { t: 'str' },
  port: { t: 'uint', def: 5432, min: 1, max: 65535 },
  database: { t: 'str', def: 'stalwart' },
  authUsername: { t: 'str', def: 'stalwart', nullable: true },
  authSecret: secret,
  options: { t: 'str', def: null, nullable: true },
};

const MySqlSettings: Struct = {
  host: { t: 'str' },
  port: { t: 'uint', def: 3306, min: 1, max: 65535 },
  database: { t: 'str', def: 'stalwart' },
  authUsername: { t: 'str', def: 'stalwart', nullable: true },
  authSecret: secret,
};

const Redis: Struct = {
  url: { t: 'str', def: 'redis://127.0.0.1' },
  timeout: { t: 'dur', def: 10000 },
  poolMaxConnections: { t: 'uint', def: 10, ...MAX_CONN },
  ...poolTimeouts,
};

const RedisCluster: Struct = {
  urls: { t: 'uriSet', def: ['redis://127.0.0.1'] },
  timeout: { t: 'dur', def: 10000 },
  authUsername: { t: 'str', def: 'stalwart', nullable: true },
  authSecret: secret,
  maxRetryWait: { t: 'dur', def: null, nullable: true, min: 1, max: 1024 },
  minRetryWait: { t: 'dur', def: null, nullable: true, min: 1, max: 1024 },
  maxRetries: { t: 'uint', def: null, nullable: true, min: 1, max: 1024 },
  readFromReplicas: { t: 'bool', def: true },
  protocolVersion: { t: 'enum', def: 'resp2', values: ['resp2', 'resp3'] },
  poolMaxConnections: { t: 'uint', def: 10, ...MAX_CONN },
  ...poolTimeouts,
};

const RedisSentinel: Struct = {
  urls: { t: 'uriSet', def: ['redis://127.0.0.1:26379'] },
  serviceName: { t: 'str', def: 'mymaster' },
  timeout: { t: 'dur', def: 10000 },
  authUsername: { t: 'str', def: 'stalwart', nullable: true },
  authSecret: secret,
  sentinelUsername: { t: 'str', def: null, nullable: true },
  sentinelSecret: secret,
  protocolVersion: { t: 'enum', def: 'resp2', values: ['resp2', 'resp3'] },
  poolMaxConnections: { t: 'uint', def: 10, ...MAX_CONN },
  ...poolTimeouts,
};

/** `x:LookupStore` variants by `@type`. */
export const LOOKUP_STORE_VARIANTS: Record<string, Struct> = {
  PostgreSql: {
    timeout: { t: 'dur', def: 15000, nullable: true },
    useTls: { t: 'bool', def: false },
    allowInvalidCerts: { t: 'bool', def: false },
    poolMaxConnections: { t: 'uint', def: 10, nullable: true, ...MAX_CONN },
    poolRecyclingMethod: { t: 'enum', def: 'fast', values: ['fast', 'verified', 'clean'] },
    readReplicas: { t: 'list', item: PostgreSqlSettings },
    ...PostgreSqlSettings,
  },
  MySql: {
    timeout: { t: 'dur', def: 15000, nullable: true },
    useTls: { t: 'bool', def: false },
    allowInvalidCerts: { t: 'bool', def: false },
    maxAllowedPacket: { t: 'uint', def: null, nullable: true, min: 1024, max: 1073741824 },
    poolMaxConnections: { t: 'uint', def: 10, nullable: true, ...MAX_CONN },
    poolMinConnections: { t: 'uint', def: 5, nullable: true, ...MAX_CONN },
    readReplicas: { t: 'list', item: MySqlSettings },
    ...MySqlSettings,
  },
  Sqlite: {
    path: { t: 'str' },
    poolWorkers: { t: 'uint', def: null, nullable: true, min: 1, max: 64 },
    poolMaxConnections: { t: 'uint', def: 10, ...MAX_CONN },
  },
  Sharded: {
    stores: { t: 'vlist', variants: { Redis, RedisCluster, RedisSentinel }, minLength: 2 },
  },
  Redis,
  RedisCluster,
  RedisSentinel,
};

/** `x:SecretKeyOptional` variants: the one required field of each. */
const SECRET_VARIANTS: Record<string, string | null> = { None: null, Value: 'secret', EnvironmentVariable: 'variableName', File: 'filePath' };

const join = (path: string, key: string): string => (path === '' ? key : `${path}/${key}`);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * A list on input: an array, or Stalwart's index-keyed object (`{"0": …, "1": …}`, re-numbered in
 * key order). Returns undefined (after recording a problem) for anything else.
 */
export function listInput(v: unknown, path: string, problems: Problem[]): unknown[] | undefined {
  if (Array.isArray(v)) return v;
  if (isObject(v)) {
    const keys = Object.keys(v);
    const bad = keys.find((k) => !/^\d+$/.test(k));
    if (bad !== undefined) {
      problems.push({ path: join(path, bad), message: 'list keys must be decimal indices' });
      return undefined;
    }
    return keys.sort((a, b) => Number(a) - Number(b)).map((k) => v[k]);
  }
  problems.push({ path, message: 'expected a list (array or index-keyed object)' });
  return undefined;
}

function validateSecret(v: unknown, old: unknown, path: string, problems: Problem[]): Record<string, unknown> | undefined {
  if (v === undefined) return { '@type': 'None' };
  // As the registry schema says (and the lookup adapters' own check, src/lookup/config.ts): a
  // secret is an object; "no secret" is written {"@type": "None"}, never null.
  if (v === null) {
    problems.push({ path, message: 'expected a secret object ({"@type": "None"} for no secret), not null' });
    return undefined;
  }
  if (!isObject(v) || typeof v['@type'] !== 'string' || !(v['@type'] in SECRET_VARIANTS)) {
    problems.push({ path: join(path, '@type'), message: `expected "@type" one of ${Object.keys(SECRET_VARIANTS).join(', ')}` });
    return undefined;
  }
  const type = v['@type'];
  const field = SECRET_VARIANTS[type]!;
  const out: Record<string, unknown> = { '@type': type };
  for (const k of Object.keys(v)) if (k !== '@type' && k !== field) problems.push({ path: join(path, k), message: `unknown property of ${type}` });
  if (field === null) return out;
  let val = v[field];
  // Secrets are write-only (docs/jmap.md): a Value sent back without `secret` keeps the stored one.
  if (val === undefined && type === 'Value' && isObject(old) && old['@type'] === 'Value') val = old.secret;
  if (typeof val !== 'string' || val.trim() === '') {
    problems.push({ path: join(path, field), message: val === undefined ? 'required' : 'expected a non-empty string' });
    return undefined;
  }
  out[field] = field === 'secret' ? val : val.trim();
  return out;
}

function validateField(f: Field, v: unknown, old: unknown, path: string, problems: Problem[]): unknown {
  if (f.t === 'secret') return validateSecret(v, old, path, problems);
  if (v === undefined || v === null) {
    if (v === null && 'nullable' in f && f.nullable) return null;
    if (f.t === 'list') return [];
    if (f.t === 'vlist') v = [];
    else if (f.t === 'uriSet') return Object.fromEntries(f.def.map((u) => [u, true]));
    else if (f.def !== undefined) return f.def;
    else {
      problems.push({ path, message: 'required' });
      return undefined;
    }
  }
  switch (f.t) {
    case 'str':
      if (typeof v !== 'string' || v.trim() === '') {
        problems.push({ path, message: 'expected a non-empty string' });
        return undefined;
      }
      return v.trim();
    case 'uint':
    case 'dur': {
      const what = f.t === 'dur' ? 'a duration in milliseconds (integer > 0)' : 'a non-negative integer';
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || (f.t === 'dur' && v === 0)) {
        problems.push({ path, message: `expected ${what}` });
        return undefined;
      }
      if (f.min !== undefined && v < f.min) problems.push({ path, message: `must be at least ${f.min}` });
      if (f.max !== undefined && v > f.max) problems.push({ path, message: `must be at most ${f.max}` });
      return v;
    }
    case 'bool':
      if (typeof v !== 'boolean') problems.push({ path, message: 'expected true or false' });
      return v;
    case 'enum':
      if (typeof v !== 'string' || !f.values.includes(v)) problems.push({ path, message: `expected one of ${f.values.join(', ')}` });
      return v;
    case 'uriSet': {
      // Sets: `{value: true}` maps; arrays accepted; `false` entries dropped (Stalwart's registry schema).
      const entries = Array.isArray(v) ? v.map((u) => [u, true] as const) : isObject(v) ? Object.entries(v) : undefined;
      if (entries === undefined) {
        problems.push({ path, message: 'expected a set ({"value": true} map or array)' });
        return undefined;
      }
      const out: Record<string, true> = {};
      for (const [u, on] of entries) {
        if (typeof u !== 'string' || u.trim() === '') problems.push({ path, message: 'set entries must be non-empty strings' });
        else if (on === true) out[u.trim()] = true;
        else if (on !== false && on !== null) problems.push({ path: join(path, u), message: 'set values must be true' });
      }
      return out;
    }
    case 'list': {
      const items = listInput(v, path, problems);
      const olds = Array.isArray(old) ? old : [];
      return items?.map((it, i) => validateStruct(f.item, it, olds[i], join(path, String(i)), problems));
    }
    case 'vlist': {
      const items = listInput(v, path, problems);
      if (items === undefined) return undefined;
      if (f.minLength !== undefined && items.length < f.minLength) problems.push({ path, message: `needs at least ${f.minLength} items` });
      const olds = Array.isArray(old) ? old : [];
      return items.map((it, i) => validateVariant(f.variants, it, olds[i], join(path, String(i)), problems));
    }
  }
}

/**
 * Validates a plain struct (no `@type`): unknown keys are refused, absent keys take their
 * defaults, nullable keys emit `null`. `old` is the stored value at the same path, used only to keep
 * write-only secrets. Problems are appended with JSON-pointer paths.
 */
export function validateStruct(def: Struct, v: unknown, old: unknown, path: string, problems: Problem[]): Record<string, unknown> | undefined {
  if (!isObject(v)) {
    problems.push({ path, message: 'expected an object' });
    return undefined;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) if (!(k in def) && k !== '@type') problems.push({ path: join(path, k), message: 'unknown property' });
  const oldObj = isObject(old) ? old : {};
  for (const [k, f] of Object.entries(def)) out[k] = validateField(f, v[k], oldObj[k], join(path, k), problems);
  return out;
}

/** Validates a variant object: `@type` must name one of `variants`; output carries `@type` last. */
export function validateVariant(
  variants: Record<string, Struct>,
  v: unknown,
  old: unknown,
  path: string,
  problems: Problem[],
): Record<string, unknown> | undefined {
  const type = isObject(v) ? v['@type'] : undefined;
  if (typeof type !== 'string' || !Object.hasOwn(variants, type)) {
    problems.push({ path: join(path, '@type'), message: `missing or invalid "@type" (expected one of ${Object.keys(variants).join(', ')})` });
    return undefined;
  }
  // A secret is only kept across an update when the variant stays the same.
  const sameOld = isObject(old) && old['@type'] === type ? old : undefined;
  const out = validateStruct(variants[type]!, v, sameOld, path, problems);
  return out && { ...out, '@type': type };
}

/**
 * Copy of a stored value with write-only secrets removed: a `Value` secret comes back as
 * `{"@type": "Value"}` (docs/jmap.md). Names of env variables and files are not secret.
 */
export function maskSecrets(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(maskSecrets);
  if (!isObject(v)) return v;
  if (v['@type'] === 'Value' && 'secret' in v) return { '@type': 'Value' };
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, maskSecrets(x)]));
}
