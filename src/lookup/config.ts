/**
 * Validation of one `x:LookupStore` object (a `StoreLookup.store`), with the defaults and bounds of the
 * seed schema (`registry-subset.json`, `fields["x:PostgreSqlStore"]` … `x:SecretKey*`; Stalwart's registry schema
 * §1.2). Durations are milliseconds. Lists are accepted as arrays or Stalwart's index-keyed objects, sets
 * as `{value: true}` maps or arrays (docs/jmap.md). Unknown properties are refused.
 */
import { createRequire } from 'node:module';
import type { z } from 'zod';
import { MAX_TIMER_MS, pointerSegment } from '../util/index.js';

/**
 * The schemas, built on the first validation: zod is about 95 modules that start-up (`spamrule classify`,
 * `import('spamrule')`) need not load. Its CommonJS build is loaded with `require`, so
 * `parseLookupStoreConfig` stays synchronous.
 */
function buildSchemas() {
  const { z } = createRequire(import.meta.url)('zod') as typeof import('zod');
  /**
   * Stalwart's `List<T>` on input: an array, or an object keyed by index (`{"0": {...}}`), whose keys must
   * be decimal indices (as the rule schema's lists, src/engine/schema.ts): another key has no place in
   * the order, and would be dropped or put anywhere.
   */
  function listOf<T extends z.ZodType>(item: T) {
    return z.preprocess((v, ctx) => {
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const entries = Object.entries(v as Record<string, unknown>);
        const bad = entries.find(([k]) => !/^\d+$/.test(k));
        if (bad !== undefined) {
          ctx.issues.push({ code: 'custom', message: 'list keys must be decimal indices', input: v, path: [bad[0]] });
          return z.NEVER;
        }
        return entries.sort(([a], [b]) => Number(a) - Number(b)).map(([, x]) => x);
      }
      return v;
    }, z.array(item));
  }

  /**
   * Stalwart's `Set<String>` on input: `{"value": true}` map or an array; entries must be non-empty. A map's
   * values must be true or false (false leaves the entry out), as in the rule schema's sets: another
   * value (`"yes"`, 1) was left out as if false, so a store could be accepted with none of the URLs sent.
   */
  function setOfStrings() {
    return z.preprocess(
      (v, ctx) => {
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
          const entries = Object.entries(v as Record<string, unknown>);
          const bad = entries.find(([, on]) => typeof on !== 'boolean');
          if (bad !== undefined) {
            ctx.issues.push({ code: 'custom', message: 'set values must be true or false', input: v, path: [bad[0]] });
            return z.NEVER;
          }
          return entries.filter(([, on]) => on).map(([k]) => k);
        }
        return v;
      },
      z.array(z.string().trim().min(1, 'must not be empty')),
    );
  }

  const requiredString = (name: string) => z.string().trim().min(1, `Required ${name}`);
  /** Nullable strings: when present, non-empty (schema "if present, non-empty"). */
  const optionalString = () => z.string().trim().min(1, 'must not be empty if present').nullable();
  const uint = (min: number, max: number) =>
    z.number({ error: 'expected a non-negative integer' }).int('must be an integer').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);
  // Integer milliseconds > 0, as the registry's Duration (a string such as "10s" or 0 is refused), and no
  // longer than a timer can wait: `timeout: 3000000000` made every lookup time out after 1 ms (MAX_TIMER_MS).
  const DURATION = 'expected a duration in milliseconds (integer > 0)';
  const duration = () => z.number({ error: DURATION }).int(DURATION).positive(DURATION).max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (about 24.8 days)`);
  const oneOf = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `expected one of ${values.join(', ')}` });
  const bool = () => z.boolean({ error: 'expected true or false' });

  const SecretKeyOptionalSchema = z.discriminatedUnion('@type', [
    z.strictObject({ '@type': z.literal('None') }),
    z.strictObject({ '@type': z.literal('Value'), secret: z.string().min(1, 'Required secret') }),
    z.strictObject({ '@type': z.literal('EnvironmentVariable'), variableName: requiredString('variableName') }),
    z.strictObject({ '@type': z.literal('File'), filePath: requiredString('filePath') }),
  ], {
    // "No secret" is written {"@type": "None"}, never null (the registry schema's SecretKeyOptional).
    error: (iss) => (iss.input === null ? 'expected a secret object ({"@type": "None"} for no secret), not null' : 'expected "@type" one of None, Value, EnvironmentVariable, File'),
  });
  const secret = () => SecretKeyOptionalSchema.default({ '@type': 'None' });

  const pgSettings = {
    host: requiredString('host'),
    port: uint(1, 65535).default(5432),
    database: requiredString('database').default('stalwart'),
    authUsername: optionalString().default('stalwart'),
    authSecret: secret(),
    options: optionalString().default(null),
  };
  const mySettings = {
    host: requiredString('host'),
    port: uint(1, 65535).default(3306),
    database: requiredString('database').default('stalwart'),
    authUsername: optionalString().default('stalwart'),
    authSecret: secret(),
  };
  const redisPool = {
    timeout: duration().default(10000),
    poolMaxConnections: uint(1, 8192).default(10),
    poolTimeoutCreate: duration().nullable().default(30000),
    poolTimeoutWait: duration().nullable().default(30000),
    poolTimeoutRecycle: duration().nullable().default(30000),
  };

  const PostgreSqlSettings = z.strictObject(pgSettings);
  const MySqlSettings = z.strictObject(mySettings);

  const PostgreSqlStoreSchema = z.strictObject({
    '@type': z.literal('PostgreSql'),
    timeout: duration().nullable().default(15000),
    useTls: bool().default(false),
    allowInvalidCerts: bool().default(false),
    poolMaxConnections: uint(1, 8192).nullable().default(10),
    poolRecyclingMethod: oneOf(['fast', 'verified', 'clean']).default('fast'),
    readReplicas: listOf(PostgreSqlSettings).default([]),
    ...pgSettings,
  });
  const MySqlStoreSchema = z.strictObject({
    '@type': z.literal('MySql'),
    timeout: duration().nullable().default(15000),
    useTls: bool().default(false),
    allowInvalidCerts: bool().default(false),
    maxAllowedPacket: uint(1024, 1073741824).nullable().default(null),
    poolMaxConnections: uint(1, 8192).nullable().default(10),
    poolMinConnections: uint(1, 8192).nullable().default(5),
    readReplicas: listOf(MySqlSettings).default([]),
    ...mySettings,
  });
  const SqliteStoreSchema = z.strictObject({
    '@type': z.literal('Sqlite'),
    path: requiredString('path'),
    poolWorkers: uint(1, 64).nullable().default(null),
    poolMaxConnections: uint(1, 8192).default(10),
  });
  const RedisStoreSchema = z.strictObject({
    '@type': z.literal('Redis'),
    url: requiredString('url').default('redis://127.0.0.1'),
    ...redisPool,
  });
  const RedisClusterStoreSchema = z.strictObject({
    '@type': z.literal('RedisCluster'),
    urls: setOfStrings().default(['redis://127.0.0.1']),
    authUsername: optionalString().default('stalwart'),
    authSecret: secret(),
    // The schema bounds retry waits to 1..1024 and the code compares milliseconds (Stalwart's registry schema).
    maxRetryWait: duration().max(1024, 'must be at most 1024').nullable().default(null),
    minRetryWait: duration().max(1024, 'must be at most 1024').nullable().default(null),
    maxRetries: uint(1, 1024).nullable().default(null),
    readFromReplicas: bool().default(true),
    protocolVersion: oneOf(['resp2', 'resp3']).default('resp2'),
    ...redisPool,
  });
  const RedisSentinelStoreSchema = z.strictObject({
    '@type': z.literal('RedisSentinel'),
    urls: setOfStrings().default(['redis://127.0.0.1:26379']),
    serviceName: requiredString('serviceName').default('mymaster'),
    authUsername: optionalString().default('stalwart'),
    authSecret: secret(),
    sentinelUsername: optionalString().default(null),
    sentinelSecret: secret(),
    protocolVersion: oneOf(['resp2', 'resp3']).default('resp2'),
    ...redisPool,
  });
  /** x:InMemoryStoreBase: the stores a `Sharded` store may hold. */
  const InMemoryStoreBaseSchema = z.discriminatedUnion('@type', [RedisStoreSchema, RedisClusterStoreSchema, RedisSentinelStoreSchema]);
  const ShardedStoreSchema = z.strictObject({
    '@type': z.literal('Sharded'),
    stores: listOf(InMemoryStoreBaseSchema).refine((a) => a.length >= 2, 'MinLength stores 2: a Sharded store needs at least 2 items'),
  });

  const LookupStoreConfigSchema = z.discriminatedUnion('@type', [
    PostgreSqlStoreSchema,
    MySqlStoreSchema,
    SqliteStoreSchema,
    RedisStoreSchema,
    RedisClusterStoreSchema,
    RedisSentinelStoreSchema,
    ShardedStoreSchema,
  ]);
  return { SecretKeyOptionalSchema, PostgreSqlSettings, MySqlSettings, PostgreSqlStoreSchema, MySqlStoreSchema, SqliteStoreSchema, RedisStoreSchema, RedisClusterStoreSchema, RedisSentinelStoreSchema, InMemoryStoreBaseSchema, ShardedStoreSchema, LookupStoreConfigSchema };
}

type Schemas = ReturnType<typeof buildSchemas>;
let schemas: Schemas | undefined;

export type SecretKeyOptional = z.output<Schemas['SecretKeyOptionalSchema']>;

export type PostgreSqlStoreConfig = z.output<Schemas['PostgreSqlStoreSchema']>;
export type PostgreSqlSettings = z.output<Schemas['PostgreSqlSettings']>;
export type MySqlStoreConfig = z.output<Schemas['MySqlStoreSchema']>;
export type MySqlSettings = z.output<Schemas['MySqlSettings']>;
export type SqliteStoreConfig = z.output<Schemas['SqliteStoreSchema']>;
export type RedisStoreConfig = z.output<Schemas['RedisStoreSchema']>;
export type RedisClusterStoreConfig = z.output<Schemas['RedisClusterStoreSchema']>;
export type RedisSentinelStoreConfig = z.output<Schemas['RedisSentinelStoreSchema']>;
export type InMemoryStoreBaseConfig = z.output<Schemas['InMemoryStoreBaseSchema']>;
export type ShardedStoreConfig = z.output<Schemas['ShardedStoreSchema']>;
/** A validated `x:LookupStore` with every default applied. */
export type LookupStoreConfig = z.output<Schemas['LookupStoreConfigSchema']>;
export type LookupStoreType = LookupStoreConfig['@type'];

export interface ConfigProblem {
  /** JSON pointer relative to the store object, e.g. `port`, `readReplicas/0/host`, `authSecret/value`. */
  path: string;
  message: string;
}

/**
 * Validates one `x:LookupStore` object (its `@type` picks the variant) and applies the schema defaults.
 * Never throws: problems come back with JSON-pointer paths relative to the store (`port`,
 * `readReplicas/0/host`, `stores`); an unknown property is reported at its own path.
 */
export function parseLookupStoreConfig(json: unknown): { ok: true; value: LookupStoreConfig } | { ok: false; errors: ConfigProblem[] } {
  const r = (schemas ??= buildSchemas()).LookupStoreConfigSchema.safeParse(json);
  if (r.success) return { ok: true, value: r.data };
  const errors: ConfigProblem[] = [];
  for (const issue of r.error.issues) {
    const base = issue.path.map((p) => pointerSegment(String(p)));
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) errors.push({ path: [...base, pointerSegment(k)].join('/'), message: `unknown property "${k}"` });
      continue;
    }
    let message = issue.message;
    if (issue.code === 'invalid_union' && base.length === 0) message = 'unknown or missing @type';
    // A required field left out: zod says "Invalid input: expected string, received undefined".
    else if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) message = `required: expected ${issue.expected}`;
    errors.push({ path: base.join('/') || '@type', message });
  }
  return { ok: false, errors };
}

/** Thrown by `createLookupStore` for a configuration that does not validate or whose secret cannot be read. */
export class LookupConfigError extends Error {
  constructor(
    readonly namespace: string,
    message: string,
    readonly problems: ConfigProblem[] = [],
  ) {
    super(`lookup store "${namespace}": ${message}`);
    this.name = 'LookupConfigError';
  }
}
