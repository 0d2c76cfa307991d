/**
 * The one validation of the registry objects a rule set is made of (`SpamRule`, `SpamTag`,
 * `SpamDnsblServer`, `HttpLookup`, `SpamFileExtension`), shared by `spamrule lint`,
 * `loadRuleFile`, `spamrule import` and JMAP `/set`, so a file that lints clean imports clean.
 * Property names, defaults and bounds are Stalwart's registry schema's (its `x:SpamRule*`,
 * `x:SpamTag*` forms: priority an integer in −99999..99999, scores in −999999..999999); shapes
 * of the other three follow Stalwart's published `spam-filter-rules.json`. Lists are arrays or
 * Stalwart's index-keyed objects (`{"0": …}`), sets `{"value": true}` maps or arrays.
 * Problems carry JSON-pointer paths (`priority`, `condition/match/0/if`).
 */
import { createRequire } from 'node:module';
import type { z as Zod } from 'zod';
import { isObject, pointerSegment, unescapePointerSegment } from '../util/index.js';
import { MAX_TAG_SCORE } from './tags.js';

export interface Problem {
  /** JSON pointer relative to the object, e.g. `priority`, `condition/match/0/if`. */
  path: string;
  message: string;
}

export type RegistryType = 'SpamRule' | 'SpamTag' | 'SpamDnsblServer' | 'HttpLookup' | 'SpamFileExtension';

/** SpamRule scopes (`@type`), the schema's enum `SpamRuleType`. */
export const SPAM_RULE_SCOPES = ['Any', 'Url', 'Domain', 'Email', 'Ip', 'Header', 'Body'] as const;
/** Scopes a SpamDnsblServer can query (Stalwart's DNSBL variants). */
export const DNSBL_SCOPES = ['Ip', 'Domain', 'Email', 'Url', 'Header'] as const;

/** Stalwart normalises SpamRule names: upper-cased, then all (Unicode) white space removed; names are unique in this form. */
export function normalizeRuleName(name: string): string {
  return name.toUpperCase().replace(/\s+/gu, '');
}

const msg = (message: string) => ({ error: () => message });

/**
 * The schemas, built on first validation: zod is about 95 modules, which `spamrule classify` and
 * `import('spamrule')` would otherwise load at start-up without validating anything. Its CommonJS
 * build is loaded with `require`, so validation stays synchronous.
 */
function buildSchemas() {
  const { z } = createRequire(import.meta.url)('zod') as typeof import('zod');
  /** A list on input: an array, or an index-keyed object re-numbered in key order. */
  const listOf = <T extends Zod.ZodType>(item: T) =>
    z.preprocess((v, ctx) => {
      if (Array.isArray(v) || !isObject(v)) return v;
      const keys = Object.keys(v);
      const bad = keys.find((k) => !/^\d+$/.test(k));
      if (bad !== undefined) {
        ctx.issues.push({ code: 'custom', message: 'list keys must be decimal indices', input: v, path: [bad] });
        return z.NEVER;
      }
      return keys.sort((a, b) => Number(a) - Number(b)).map((k) => v[k]);
    }, z.array(item, msg('expected a list (array or index-keyed object)')));

  /** A set on input: `{"value": true}` map or an array of values; output is the map (false entries dropped). */
  const stringSet = z.preprocess(
    (v) => (Array.isArray(v) ? Object.fromEntries(v.map((x) => [x, true])) : v),
    z.record(z.string().min(1, msg('set entries must be non-empty strings')), z.boolean(msg('set values must be true or false')), msg('expected a set ({"value": true} map or array)')),
  ).transform((m) => Object.fromEntries(Object.entries(m).filter(([, on]) => on)) as Record<string, true>);

  const expr = z.string(msg('expected a non-empty expression')).refine((s) => s.trim() !== '', msg('expected a non-empty expression'));
  const nonEmpty = (what = 'expected a non-empty string') => z.string(msg(what)).refine((s) => s.trim() !== '', msg(what));
  const bool = (def: boolean) => z.boolean(msg('expected true or false')).default(def);
  const integer = (min: number, max: number, what: string) =>
    z.number(msg('expected an integer')).refine(Number.isSafeInteger, msg('expected an integer')).refine((n) => n >= min && n <= max, msg(what));

  /** `x:Expression`: `{match: [{if, then}], else}`; `match` may be index-keyed, and may be absent. */
  const ExpressionSchema = z.strictObject(
    {
      match: z.preprocess((v) => v ?? [], listOf(z.strictObject({ if: expr, then: expr }, msg('expected an object {"if", "then"}')))),
      else: expr,
    },
    msg('expected an object {"match", "else"}'),
  );

  const scopeEnum = <T extends readonly [string, ...string[]]>(values: T) =>
    z.enum(values, msg(`missing or invalid "@type" (expected one of ${values.join(', ')})`));

  const SpamRuleSchema = z.strictObject({
    '@type': scopeEnum(SPAM_RULE_SCOPES),
    name: z.string(msg('expected a non-empty string')).transform(normalizeRuleName).refine((s) => s !== '', msg('expected a non-empty string')),
    description: z.string(msg('expected a non-empty string or null')).min(1, msg('expected a non-empty string or null')).nullable().default(null),
    enable: bool(true),
    priority: integer(-99999, 99999, 'must be in -99999..99999').default(500),
    condition: ExpressionSchema,
  });

  const tagName = nonEmpty();
  const SpamTagSchema = z.discriminatedUnion(
    '@type',
    [
      z.strictObject({
        '@type': z.literal('Score'),
        tag: tagName,
        score: z.number(msg('expected a number')).refine((n) => Number.isFinite(n) && Math.abs(n) <= MAX_TAG_SCORE, msg(`must be in -${MAX_TAG_SCORE}..${MAX_TAG_SCORE}`)).default(0),
      }),
      z.strictObject({ '@type': z.literal('Reject'), tag: tagName }),
      z.strictObject({ '@type': z.literal('Discard'), tag: tagName }),
    ],
    msg('missing or invalid "@type" (expected one of Score, Reject, Discard)'),
  );

  const SpamDnsblServerSchema = z.strictObject({
    '@type': scopeEnum(DNSBL_SCOPES),
    name: nonEmpty(),
    enable: bool(true),
    zone: ExpressionSchema,
    tag: ExpressionSchema,
  });

  const uint = (min: number, max: number) => integer(min, max, `must be in ${min}..${max}`);
  const HttpLookupSchema = z.strictObject({
    namespace: nonEmpty(),
    url: z.string(msg('expected an http(s) URL')).refine((u) => /^https?:\/\/\S+$/i.test(u), msg('expected an http(s) URL')),
    format: z
      .discriminatedUnion(
        '@type',
        [
          z.strictObject({ '@type': z.literal('List') }),
          z.strictObject({
            '@type': z.literal('Csv'),
            indexKey: uint(0, 1024).default(0),
            indexValue: uint(0, 1024).nullable().default(null),
            separator: z.string(msg('expected one character')).length(1, msg('expected one character')).default(','),
            skipFirst: bool(false),
          }),
        ],
        msg('missing or invalid "@type" (expected one of List, Csv)'),
      )
      .default({ '@type': 'List' }),
    enable: bool(true),
    isGzipped: bool(false),
    maxSize: uint(1, 2 ** 40).default(104_857_600),
    maxEntries: uint(1, 100_000_000).default(900_000),
    maxEntrySize: uint(1, 1_048_576).default(512),
    refresh: uint(1, 2 ** 40).default(43_200_000),
    retry: uint(1, 2 ** 40).default(3_600_000),
    timeout: uint(1, 2 ** 40).default(30_000),
  });

  const SpamFileExtensionSchema = z.strictObject({
    extension: nonEmpty().transform((s) => s.trim().toLowerCase().replace(/^\./, '')),
    contentTypes: stringSet.default({}),
    isArchive: bool(false),
    isBad: bool(false),
    isNz: bool(false),
  });

  return {
    SpamRule: SpamRuleSchema,
    SpamTag: SpamTagSchema,
    SpamDnsblServer: SpamDnsblServerSchema,
    HttpLookup: HttpLookupSchema,
    SpamFileExtension: SpamFileExtensionSchema,
  } as const;
}

let schemas: ReturnType<typeof buildSchemas> | undefined;
/** The registry schemas by type (built on the first call). */
const registrySchemas = () => (schemas ??= buildSchemas());

export type RegistryObject<T extends RegistryType> = Zod.output<ReturnType<typeof buildSchemas>[T]>;

/** zod issues as Problems: one per unknown key, JSON-pointer paths. */
export function zodProblems(error: Zod.ZodError): Problem[] {
  const out: Problem[] = [];
  for (const issue of error.issues) {
    const base = issue.path.map((p) => pointerSegment(String(p)));
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) out.push({ path: [...base, pointerSegment(k)].join('/'), message: 'unknown property' });
      continue;
    }
    out.push({ path: base.join('/'), message: issue.message });
  }
  return out;
}

/** True when the parent of `path` exists in `input` but the last key is absent (or null at the top). */
function isMissing(input: unknown, path: string): boolean {
  if (path === '') return false;
  const keys = path.split('/').map(unescapePointerSegment);
  let cur: unknown = input;
  for (let i = 0; i < keys.length - 1; i++) {
    if (!isObject(cur) && !Array.isArray(cur)) return false;
    cur = (cur as Record<string, unknown>)[keys[i]!];
  }
  if (!isObject(cur)) return false;
  const last = cur[keys[keys.length - 1]!];
  return last === undefined || (keys.length === 1 && last === null);
}

/**
 * Validates one object of `type` and applies the schema defaults (SpamRule names normalised).
 * `null` for a top-level property means "its default", as in a JMAP PatchObject. `id` is refused
 * (set by the server). Never throws.
 */
export function validateRegistryObject<T extends RegistryType>(
  type: T,
  input: unknown,
): { ok: true; value: RegistryObject<T> } | { ok: false; problems: Problem[] } {
  const pre: Problem[] = [];
  let v = input;
  if (isObject(input)) {
    v = Object.fromEntries(Object.entries(input).filter(([k, x]) => x !== null && k !== 'id'));
    if (type === 'SpamRule' && input.description === null) (v as Record<string, unknown>).description = null;
    if (type === 'HttpLookup' && isObject(input.format) && input.format.indexValue === null) {
      (v as Record<string, unknown>).format = input.format;
    }
    if ('id' in input) pre.push({ path: 'id', message: 'id is set by the server' });
  }
  const schema = registrySchemas()[type] as Zod.ZodType;
  const r = schema.safeParse(v);
  const problems = [...pre, ...(r.success ? [] : zodProblems(r.error))];
  for (const p of problems) {
    // A missing property is "required", whatever zod's type message says.
    if (p.message !== 'unknown property' && p.path !== 'id' && !p.path.endsWith('@type') && isMissing(input, p.path)) p.message = 'required';
    if (p.path === '') p.message = 'expected an object';
  }
  const orderOf = Object.keys((schema as unknown as { shape?: Record<string, unknown> }).shape ?? {});
  const rank = (p: Problem) => {
    const i = orderOf.indexOf(p.path.split('/')[0]!);
    return p.message === 'unknown property' || p.path === 'id' ? -1 : i < 0 ? orderOf.length : i;
  };
  problems.sort((a, b) => rank(a) - rank(b));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: (r as { data: RegistryObject<T> }).data };
}
