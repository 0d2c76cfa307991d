/**
 * Fuzzing the validation of `x:LookupStore` configurations (the config file's `stores`, StoreLookups over
 * JMAP): documented examples (docs/lookup-stores.md) with a field set to a value of any shape, an unknown
 * field, or a required one removed.
 *
 * Invariants: parseLookupStoreConfig never throws; for the numeric fields the schema bounds (ports
 * 1..65535, pool sizes 1..8192, durations whole ms from 1 to what a timer can wait) a small model says
 * whether the value is taken; a refusal names paths inside the object, each with a message that shows
 * no "undefined" or "[object Object]"; a value taken keeps its `@type` and the field as given.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseLookupStoreConfig } from '../../src/lookup/config.js';
import { MAX_TIMER_MS } from '../../src/util/index.js';
import { fuzzParams } from '../helpers/fuzz.js';

const EXAMPLES: Record<string, unknown>[] = [
  { '@type': 'Redis', url: 'redis://127.0.0.1:6379' },
  { '@type': 'Sqlite', path: '/var/lib/spamrule/lookup.sqlite3' },
  { '@type': 'PostgreSql', host: 'db.internal', authSecret: { '@type': 'EnvironmentVariable', variableName: 'PGPASSWORD' } },
  { '@type': 'MySql', host: 'db.internal', port: 3306 },
  { '@type': 'RedisCluster', urls: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379'] },
  { '@type': 'RedisSentinel', urls: { 'redis://10.0.0.1:26379': true }, serviceName: 'mymaster' },
];

const isInt = (v: unknown, min: number, max: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
/** Fields with a numeric bound, the types that have them, and whether null is allowed there. */
const NUMERIC: { field: string; types: string[]; min: number; max: number; nullable: string[] }[] = [
  { field: 'port', types: ['PostgreSql', 'MySql'], min: 1, max: 65535, nullable: [] },
  { field: 'poolMaxConnections', types: ['Sqlite', 'PostgreSql', 'MySql', 'Redis', 'RedisCluster', 'RedisSentinel'], min: 1, max: 8192, nullable: ['PostgreSql', 'MySql'] },
  { field: 'timeout', types: ['PostgreSql', 'MySql', 'Redis', 'RedisCluster', 'RedisSentinel'], min: 1, max: MAX_TIMER_MS, nullable: ['PostgreSql', 'MySql'] },
  { field: 'poolTimeoutWait', types: ['Redis', 'RedisCluster', 'RedisSentinel'], min: 1, max: MAX_TIMER_MS, nullable: ['Redis', 'RedisCluster', 'RedisSentinel'] },
];

const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(0, 1, -1, 0.5, 5432, 65535, 65536, 8192, 8193, MAX_TIMER_MS, MAX_TIMER_MS + 1, 3e9, 1e308, Number.MAX_SAFE_INTEGER + 2),
  fc.constantFrom(null, '', ' ', '10s', '5432', true, [], {}, [1], { a: 1 }, { '@type': 'None' }, 'é'),
  fc.jsonValue({ maxDepth: 3 }),
);

type Mutation = { kind: 'set'; field: string; value: unknown } | { kind: 'unknown'; key: string; value: unknown } | { kind: 'delete'; field: string };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), field: fc.constantFrom(...NUMERIC.map((n) => n.field), 'url', 'path', 'host', 'urls', 'authSecret', 'useTls', 'readReplicas', 'stores'), value }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unknown' as const), key: fc.oneof(fc.constantFrom('Port', 'hostname', '__proto__', '', 'ü'), fc.string({ minLength: 1, maxLength: 5 })), value }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), field: fc.constantFrom('@type', 'url', 'path', 'host', 'urls') }) },
);

describe('generated lookup store configurations', () => {
  it('never throw; bounded numbers are judged as the model says; refusals name paths and say why', () => {
    fc.assert(
      fc.property(fc.constantFrom(...EXAMPLES), mutation, (example, m) => {
        const input: Record<string, unknown> = JSON.parse(JSON.stringify(example));
        if (m.kind === 'set') input[m.field] = m.value;
        else if (m.kind === 'unknown') Object.defineProperty(input, m.key, { value: m.value, enumerable: true, configurable: true, writable: true });
        else delete input[m.field];
        const ctx = JSON.stringify(input);
        const r = parseLookupStoreConfig(JSON.parse(ctx));
        const type = String(input['@type']);
        if (m.kind === 'set') {
          const bound = NUMERIC.find((n) => n.field === m.field && n.types.includes(type));
          if (bound !== undefined) {
            const ok = isInt(m.value, bound.min, bound.max) || (m.value === null && bound.nullable.includes(type));
            expect(r.ok, `${ctx} → ${JSON.stringify(r)}`).toBe(ok);
          }
        }
        if (m.kind === 'unknown' && Object.hasOwn(input, m.key) && !Object.hasOwn(example, m.key) && m.key !== '@type') {
          // An unknown field is refused (unless it happens to be a field of the type).
          const known = r.ok && Object.hasOwn(r.value, m.key);
          if (!known) expect(r.ok, ctx).toBe(false);
        }
        if (r.ok) {
          expect(r.value['@type'], ctx).toBe(type);
          if (m.kind === 'set' && NUMERIC.some((n) => n.field === m.field) && Object.hasOwn(r.value, m.field)) expect((r.value as Record<string, unknown>)[m.field], ctx).toEqual(m.value);
        } else {
          expect(r.errors.length, ctx).toBeGreaterThan(0);
          for (const e of r.errors) {
            expect(e.message, ctx).not.toMatch(/\bundefined\b|\[object Object\]|^$/);
            // (A field named "" has the empty pointer segment as its path.)
            if (e.path === '') expect(Object.hasOwn(input, ''), ctx).toBe(true);
          }
        }
      }),
      fuzzParams(1000),
    );
  });
});

describe('a required field left out', () => {
  // {"@type": "Sqlite"} was refused with zod's "Invalid input: expected string, received undefined".
  it.each([
    [{ '@type': 'Sqlite' }, 'path', 'required: expected string'],
    [{ '@type': 'PostgreSql' }, 'host', 'required: expected string'],
    [{ '@type': 'Sharded' }, 'stores', 'required: expected array'],
  ])('%j', (config, path, message) => {
    expect(parseLookupStoreConfig(config)).toEqual({ ok: false, errors: [{ path, message }] });
  });
});
