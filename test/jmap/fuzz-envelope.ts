/**
 * Generators and a reference classifier for fuzzing the JMAP Request envelope (RFC 8620 §3.3–3.7):
 * bodies that are JSON, near-JSON or not JSON at all; Request objects with wrong-typed, missing or
 * extra members; method calls with bad names, duplicate call ids, and ResultReferences (`#arg`) that
 * point nowhere, at later calls, at themselves or at paths that do not resolve. test/jmap/fuzz.test.ts
 * runs them against one server.
 */
import fc from 'fast-check';

export const CORE = 'urn:ietf:params:jmap:core';
export const MGMT = 'urn:stalwart:jmap';
/** The server's default `maxCallsInRequest`. */
export const MAX_CALLS = 16;

const CALL_IDS = ['0', '1', 'a', 'b', '', 'c0'];
const callId = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...CALL_IDS) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) });

const GOOD_METHODS = [
  'x:SpamRule/get',
  'x:SpamRule/query',
  'x:SpamRule/changes',
  'x:SpamRule/queryChanges',
  'x:SpamRule/set',
  'x:StoreLookup/get',
  'x:StoreLookup/query',
  'x:StoreLookup/set',
  'x:SpamTag/get',
  'x:HttpLookup/query',
  'Core/echo',
];
const BAD_METHODS = ['x:SpamRule/nope', 'SpamRule/get', 'x:Nope/get', '', 'x:SpamRule/get ', 'x:spamrule/get', 'x:SpamRule/GET', 'x:SpamRule/get/x', 'x:SpamRule/constructor', 'x:__proto__/get', 'Core/echo2', 'error'];
const methodName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...GOOD_METHODS) },
  { weight: 2, arbitrary: fc.constantFrom(...BAD_METHODS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
);

const PATHS = ['/ids', '/list/*/id', '/created/*/id', '/notFound', '', '*', '/ids/0', '/list/0', '/list/0/id', '/nope', '/ids/99', 'ids', '/list/*/*', '/*', '/__proto__', '/constructor', '/ids/*', '/list/*/name', '/~1', '/total'];
/** A ResultReference, sound in shape or not. */
const resultReference = fc.oneof(
  { weight: 6, arbitrary: fc.record({ resultOf: callId, name: methodName, path: fc.oneof(fc.constantFrom(...PATHS), fc.string({ maxLength: 10 })) }) },
  { weight: 1, arbitrary: fc.record({ resultOf: fc.jsonValue({ maxDepth: 1 }), name: fc.jsonValue({ maxDepth: 1 }), path: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

const ARG_NAMES = ['ids', 'properties', 'accountId', 'filter', 'sort', 'position', 'anchor', 'anchorOffset', 'limit', 'calculateTotal', 'sinceState', 'sinceQueryState', 'maxChanges', 'create', 'update', 'destroy', 'ifInState'];
const argValue = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: fc.constantFrom(null, [], {}, 'a', 's0', 's1', -1, 0, 1.5, 1e300, ['a'], [1], { name: 'A' }, { operator: 'NOT', conditions: [] }, [{ property: 'name' }]) },
  // Huge arrays and maps: over maxObjectsInGet/maxObjectsInSet (500), and far over.
  { weight: 1, arbitrary: fc.constantFrom(501, 5_000, 100_000).map((n) => Array.from({ length: n }, (_, i) => `i${i % 1000}`)) },
  { weight: 1, arbitrary: fc.constantFrom(501, 5_000).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, {}]))) },
);
/** A method's arguments: known names with any value, `#name` references, and other keys. */
const args = fc.dictionary(
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ARG_NAMES) },
    { weight: 2, arbitrary: fc.constantFrom(...ARG_NAMES.map((a) => `#${a}`)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  ),
  argValue,
  { maxKeys: 4 },
).chain((d) =>
  // A `#name` key gets a ResultReference (most of the time) rather than any value.
  fc.tuple(...Object.keys(d).map((k) => (k.startsWith('#') ? fc.oneof(resultReference, fc.constant(d[k])) : fc.constant(d[k])))).map((vals) =>
    Object.fromEntries(Object.keys(d).map((k, i) => [k, vals[i]])),
  ),
);

const invocation = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(methodName, args, callId) },
  // Wrong shapes: too short, too long, wrong element types.
  { weight: 1, arbitrary: fc.oneof(fc.tuple(methodName, args), fc.tuple(methodName, args, callId, fc.jsonValue({ maxDepth: 1 })), fc.tuple(fc.jsonValue({ maxDepth: 1 }), fc.jsonValue({ maxDepth: 1 }), fc.jsonValue({ maxDepth: 1 }))) },
);

const using = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom([CORE, MGMT], [CORE], [], [MGMT]) },
  { weight: 2, arbitrary: fc.array(fc.oneof(fc.constantFrom(CORE, MGMT, 'urn:ietf:params:jmap:mail', 'urn:nope', ''), fc.string({ maxLength: 8 })), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(1_000, 100_000).map((n) => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? CORE : MGMT))) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

/** A Request object: each member sound, wrong-typed, missing, or joined by extra members. */
const requestObject = fc
  .record(
    {
      using,
      methodCalls: fc.oneof(
        { weight: 8, arbitrary: fc.array(invocation, { maxLength: 5 }) },
        // Over maxCallsInRequest.
        { weight: 1, arbitrary: fc.integer({ min: MAX_CALLS + 1, max: 200 }).map((n) => Array.from({ length: n }, (_, i) => ['x:SpamRule/get', { ids: [] }, String(i)])) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
      ),
      createdIds: fc.oneof(fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 3 }), fc.jsonValue({ maxDepth: 2 })),
      extra: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  )
  .map((r) => {
    const out: Record<string, unknown> = {};
    if ('using' in r) out.using = r.using;
    if ('methodCalls' in r) out.methodCalls = r.methodCalls;
    if ('createdIds' in r) out.createdIds = r.createdIds;
    if ('extra' in r) out.extra = r.extra;
    return out;
  });

/** `depth` nested arrays or objects around `inner`, written as text (deeper than JSON.stringify would go). */
function nested(depth: number, kind: 'array' | 'object', inner = '1'): string {
  return kind === 'array' ? '['.repeat(depth) + inner + ']'.repeat(depth) : '{"a":'.repeat(depth) + inner + '}'.repeat(depth);
}

/** Deep nesting where a method's arguments are: in Core/echo, /get ids, a /query filter, a /set create. */
const deepCase = fc
  .record({
    depth: fc.constantFrom(100, 3_000, 20_000, 200_000),
    kind: fc.constantFrom<'array' | 'object'>('array', 'object'),
    where: fc.constantFrom('echo', 'ids', 'filter', 'create', 'body', 'createdIds'),
  })
  .map(({ depth, kind, where }) => {
    const v = nested(depth, kind);
    const req = (call: string) => `{"using":["${CORE}","${MGMT}"],"methodCalls":[${call}]}`;
    switch (where) {
      case 'echo':
        return req(`["Core/echo",{"deep":${v}},"0"]`);
      case 'ids':
        return req(`["x:SpamRule/get",{"ids":${v}},"0"]`);
      case 'filter':
        return req(`["x:SpamRule/query",{"filter":${v}},"0"]`);
      case 'create':
        return req(`["x:SpamRule/set",{"create":{"k":{"description":${v}}}},"0"]`);
      case 'createdIds':
        return `{"using":[],"methodCalls":[],"createdIds":${v}}`;
      default:
        return v;
    }
  });

/** Text that is almost JSON: a sound Request cut short, with a byte changed, or with garbage around it. */
const nearJson = fc
  .record({ req: requestObject, cut: fc.nat(), ch: fc.constantFrom('', ',', '}', ']', '"', '\\', '\u0000', 'x', ' '), mode: fc.constantFrom('cut', 'insert', 'replace', 'wrap') })
  .map(({ req, cut, ch, mode }) => {
    const s = JSON.stringify(req);
    const at = cut % (s.length + 1);
    if (mode === 'cut') return s.slice(0, at);
    if (mode === 'insert') return s.slice(0, at) + ch + s.slice(at);
    if (mode === 'replace') return s.slice(0, at) + ch + s.slice(at + 1);
    return `${ch}${s}${ch}`;
  });

/**
 * `value` printed at most 300 characters long in a counterexample (a body nested 200,000 deep would
 * fill the report).
 */
export function shortPrinted<T extends object>(value: T): T {
  return Object.assign(value, {
    [fc.toStringMethod]: () => {
      const s = JSON.stringify(value);
      return s.length > 300 ? `${s.slice(0, 300)}… (${s.length} characters)` : s;
    },
  });
}

/** Every kind of body the envelope property sends. */
const anyBody: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: requestObject.map((r) => JSON.stringify(r)) },
  { weight: 2, arbitrary: nearJson },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: deepCase },
);
/** {@link anyBody} as `{body}`, printed short. */
export const envelopeBody: fc.Arbitrary<{ body: string }> = anyBody.map((body) => shortPrinted({ body }));

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The request-level errors RFC 8620 §3.6.1 allows for `body` (any one of them, when several apply:
 * the RFC fixes no order), or `[]` when the Request is sound and must be answered 200.
 */
export function expectedRequestErrors(body: string): string[] {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return ['notJSON'];
  }
  if (!isObj(v)) return ['notRequest'];
  const errors: string[] = [];
  const using = v.using ?? [];
  if (!Array.isArray(using) || using.some((u) => typeof u !== 'string')) errors.push('notRequest');
  else if (using.some((u) => u !== CORE && u !== MGMT)) errors.push('unknownCapability');
  const calls = v.methodCalls;
  if (!Array.isArray(calls)) errors.push('notRequest');
  else {
    if (calls.some((c) => !Array.isArray(c) || c.length !== 3 || typeof c[0] !== 'string' || !isObj(c[1]) || typeof c[2] !== 'string')) errors.push('notRequest');
    if (calls.length > MAX_CALLS) errors.push('limit');
  }
  if (v.createdIds !== undefined && (!isObj(v.createdIds) || Object.values(v.createdIds).some((x) => typeof x !== 'string'))) errors.push('notRequest');
  return errors;
}

/** Method-level error types (RFC 8620 §3.6.2, §5.x) a malformed call may get; never `serverFail`. */
export const CLIENT_METHOD_ERRORS = new Set([
  'unknownMethod',
  'invalidArguments',
  'invalidResultReference',
  'requestTooLarge',
  'accountNotFound',
  'unsupportedFilter',
  'unsupportedSort',
  'anchorNotFound',
  'cannotCalculateChanges',
  'tooManyChanges',
  'stateMismatch',
]);
