/**
 * The JMAP Request object (RFC 8620 §3.3–3.7): shape checks, `using`, call limits, result
 * references, dispatch to `x:SpamRule/*`, `x:StoreLookup/*`, `x:SpamTag/*`, `x:SpamDnsblServer/*`,
 * `x:HttpLookup/*`, `x:SpamFileExtension/*` and `x:SpamTrainingSample/*`, and the Response object.
 */
import { MethodError, RequestError } from './errors.js';
import { changesMethodOf, getMethod, queryChangesMethodOf, queryMethod, setMethod, type MethodContext } from './methods.js';
import { KINDS, type ObjectType } from './objects.js';
import { evaluatePath } from './pointer.js';
import { isObject, isStackOverflow } from '../util/index.js';

export const CORE_CAPABILITY = 'urn:ietf:params:jmap:core';

type Invocation = [string, Record<string, unknown>, string];

/**
 * Checks the Request shape; throws `RequestError` (notRequest, unknownCapability, limit).
 * `using` may be omitted (Stalwart treats it as empty for `x:` methods, Stalwart's registry schema).
 */
export function parseRequest(
  body: unknown,
  capabilities: readonly string[],
  maxCallsInRequest: number,
): { methodCalls: Invocation[]; createdIds?: Record<string, string> } {
  if (!isObject(body)) throw new RequestError('notRequest', 400, 'the request must be a JSON object with "using" and "methodCalls"');
  const using = body.using ?? [];
  if (!Array.isArray(using) || using.some((u) => typeof u !== 'string')) throw new RequestError('notRequest', 400, '"using" must be an array of strings');
  const unknown = (using as string[]).filter((u) => !capabilities.includes(u));
  if (unknown.length > 0) throw new RequestError('unknownCapability', 400, `unknown capabilities: ${unknown.join(', ')}`);
  const calls = body.methodCalls;
  if (!Array.isArray(calls)) throw new RequestError('notRequest', 400, '"methodCalls" must be an array');
  for (const c of calls)
    if (!Array.isArray(c) || c.length !== 3 || typeof c[0] !== 'string' || !isObject(c[1]) || typeof c[2] !== 'string')
      throw new RequestError('notRequest', 400, 'each method call must be [name, arguments object, call id]');
  if (calls.length > maxCallsInRequest)
    throw new RequestError('limit', 400, `${calls.length} method calls exceed maxCallsInRequest (${maxCallsInRequest})`, 'maxCallsInRequest');
  let createdIds: Record<string, string> | undefined;
  if (body.createdIds !== undefined) {
    if (!isObject(body.createdIds) || Object.values(body.createdIds).some((v) => typeof v !== 'string'))
      throw new RequestError('notRequest', 400, '"createdIds" must map creation ids to ids');
    createdIds = body.createdIds as Record<string, string>;
  }
  return { methodCalls: calls as Invocation[], createdIds };
}

/** Replaces `#arg` ResultReferences with the values they point at (RFC 8620 §3.7). */
function resolveReferences(args: Record<string, unknown>, responses: Invocation[]): Record<string, unknown> {
  // No prototype: an argument named "__proto__" is an argument like any other, not the map's prototype.
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(args)) {
    if (!k.startsWith('#')) {
      out[k] = v;
      continue;
    }
    const name = k.slice(1);
    if (Object.hasOwn(args, name)) throw new MethodError('invalidArguments', `both "${name}" and "${k}" given`);
    if (!isObject(v) || typeof v.resultOf !== 'string' || typeof v.name !== 'string' || typeof v.path !== 'string')
      throw new MethodError('invalidResultReference', `"${k}" must be a ResultReference {resultOf, name, path}`);
    const target = responses.find((r) => r[2] === v.resultOf);
    if (target === undefined || target[0] !== v.name)
      throw new MethodError('invalidResultReference', `no earlier ${v.name} response with call id "${v.resultOf}"`);
    out[name] = evaluatePath(target[1], v.path);
  }
  return out;
}

const METHODS: Record<string, (t: ObjectType, args: Record<string, unknown>, ctx: MethodContext) => unknown> = {
  get: (t, a, c) => getMethod(KINDS[t], a, c),
  set: (t, a, c) => setMethod(KINDS[t], a, c),
  query: (t, a, c) => queryMethod(KINDS[t], a, c),
  changes: (t, a, c) => changesMethodOf(KINDS[t], a, c),
  queryChanges: (t, a, c) => queryChangesMethodOf(KINDS[t], a, c),
};

/**
 * The Response object (RFC 8620 §3.4) as JSON text: `{"methodResponses": [...], ...rest}`. Each method
 * response is serialized on its own, so that one nested deeper than `JSON.stringify` can follow (a
 * `Core/echo` of arguments nested 20,000 deep: `JSON.parse` takes any depth) becomes that call's
 * `invalidArguments` error, as arguments too deep for any other method are, instead of failing the
 * whole request with a 500. `rest` holds the server's own members (sessionState, createdIds).
 */
export function responseText(methodResponses: readonly Invocation[], rest: Record<string, unknown>): string {
  const calls = methodResponses.map((r) => {
    try {
      return JSON.stringify(r);
    } catch (e) {
      if (!isStackOverflow(e)) throw e;
      return JSON.stringify(['error', new MethodError('invalidArguments', 'arguments nested too deeply').toJSON(), r[2]]);
    }
  });
  const members = JSON.stringify(rest);
  return `{"methodResponses":[${calls.join(',')}]${members === '{}' ? '' : `,${members.slice(1, -1)}`}}`;
}

/** Runs the calls in order; a method error never stops later calls (RFC 8620 §3.5). */
export async function runMethodCalls(
  calls: Invocation[],
  ctx: MethodContext,
  onInternalError: (e: unknown) => void,
): Promise<Invocation[]> {
  const responses: Invocation[] = [];
  for (const [name, rawArgs, callId] of calls) {
    try {
      // RFC 8620 §4: Core/echo returns its arguments as they are (a client's connectivity test).
      const echo = name === 'Core/echo';
      const m = echo ? null : /^x:(SpamRule|StoreLookup|SpamTag|SpamDnsblServer|HttpLookup|SpamFileExtension|SpamTrainingSample)\/(get|set|query|changes|queryChanges)$/.exec(name);
      if (!echo && m === null) throw new MethodError('unknownMethod', `unknown method ${name}`);
      const args = resolveReferences(rawArgs, responses);
      if (m === null) {
        responses.push([name, args, callId]);
        continue;
      }
      const result = await METHODS[m[2]!]!(m[1] as ObjectType, args, ctx);
      responses.push([name, result as Record<string, unknown>, callId]);
    } catch (e) {
      if (e instanceof MethodError) responses.push(['error', e.toJSON(), callId]);
      else if (isStackOverflow(e)) {
        // Only arguments nested deeper than the stack can take (a patch value, a filter) get here: the
        // client's mistake (RFC 8620 §3.6.2), not the server's.
        responses.push(['error', new MethodError('invalidArguments', 'arguments nested too deeply').toJSON(), callId]);
      } else {
        onInternalError(e);
        responses.push(['error', { type: 'serverFail', description: e instanceof Error ? e.message : String(e) }, callId]);
      }
    }
  }
  return responses;
}
