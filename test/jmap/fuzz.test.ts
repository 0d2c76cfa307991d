/**
 * Property-based fuzzing of the JMAP API (RFC 8620) against one started server (test/helpers/fuzz.ts
 * sets the seed and run counts; SPAMRULE_FUZZ_RUNS raises them for a campaign):
 *
 * 1. The Request envelope: any body gets either the RFC 8620 §3.6.1 request error a reference
 *    classifier expects (problem JSON, HTTP 400) or HTTP 200 with one response per call, in order,
 *    under its call id, each the method's own or a client-error method error: never a 500, never
 *    `serverFail`. A good request right after is answered as before.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzParams } from '../helpers/fuzz.js';
import { CLIENT_METHOD_ERRORS, CORE, envelopeBody, expectedRequestErrors, MGMT } from './fuzz-envelope.js';
import { rule, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  // Lookup stores are never started: the property is about the API, not about connecting to made-up hosts.
  h = await startHarness({ createLookupStore: () => ({ close: async () => undefined }) });
  await h.call([
    ['x:SpamRule/set', { create: { a: rule('A'), b: rule('B', { priority: 10 }) } }, '0'],
    ['x:StoreLookup/set', { create: { s: { namespace: 'seed', store: { '@type': 'Redis', url: 'redis://10.0.0.1' } } } }, '1'],
  ]);
});
afterAll(() => h.close());

/** A fixed good request; its answer is compared before and after each fuzzed one. */
const GOOD = JSON.stringify({
  using: [CORE, MGMT],
  methodCalls: [
    ['x:SpamRule/get', { ids: null }, 'g'],
    ['x:SpamRule/query', { sort: [{ property: 'name' }] }, 'q'],
    ['x:StoreLookup/get', { ids: null }, 's'],
  ],
});

/** Whether a response holds a `/set` that changed its type's state. */
const changedState = (responses: unknown): boolean =>
  Array.isArray(responses) && responses.some((r) => Array.isArray(r) && typeof r[0] === 'string' && r[0].endsWith('/set') && r[1]?.oldState !== r[1]?.newState);

describe('regressions found by the fuzz properties', () => {
  it('answers a Core/echo of arguments nested 20,000 deep with that call\'s invalidArguments, not a 500', async () => {
    // JSON.parse takes any depth; JSON.stringify of the Response overflowed the stack at about 10,000.
    const deep = '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000);
    const r = await h.post(`{"using":["${CORE}"],"methodCalls":[["Core/echo",{"deep":${deep}},"0"],["Core/echo",{"x":1},"1"]]}`);
    expect(r.status).toBe(200);
    expect(r.json.methodResponses).toEqual([
      ['error', { type: 'invalidArguments', description: 'arguments nested too deeply' }, '0'],
      ['Core/echo', { x: 1 }, '1'],
    ]);
    expect(r.json.sessionState).toBe('c0');
  });
});

describe('fuzz: the Request envelope (RFC 8620 §3.3–3.7)', () => {
  it('answers every body with the request error the reference expects, or one response per call; never a 500', async () => {
    let baseline = await h.post(GOOD);
    await fc.assert(
      fc.asyncProperty(envelopeBody, async ({ body }) => {
        const r = await h.post(body);
        const expected = expectedRequestErrors(body);
        if (expected.length > 0) {
          expect(r.status).toBe(400);
          expect(r.headers.get('content-type')).toBe('application/problem+json');
          expect(expected.map((t) => `urn:ietf:params:jmap:error:${t}`)).toContain(r.json.type);
          expect(r.json.status).toBe(400);
          if (r.json.type.endsWith(':limit')) expect(r.json.limit).toBe('maxCallsInRequest');
        } else {
          expect(r.status).toBe(200);
          const req = JSON.parse(body) as { methodCalls: [string, Record<string, unknown>, string][]; createdIds?: unknown };
          const out = r.json as { methodResponses: [string, any, string][]; sessionState: unknown; createdIds?: unknown };
          expect(typeof out.sessionState).toBe('string');
          expect('createdIds' in out).toBe(req.createdIds !== undefined);
          expect(out.methodResponses).toHaveLength(req.methodCalls.length);
          out.methodResponses.forEach(([name, result, id], i) => {
            const [callName, , callId] = req.methodCalls[i]!;
            expect(id).toBe(callId);
            if (name === 'error') {
              expect(CLIENT_METHOD_ERRORS, JSON.stringify(result)).toContain(result.type);
              expect(typeof result.description === 'string' || result.description === undefined).toBe(true);
            } else {
              expect(name).toBe(callName);
              expect(typeof result).toBe('object');
            }
          });
        }
        // The server still serves: the good request gets the answer it got before, unless a fuzzed
        // /set (a #destroy of a /query's ids, say) changed the objects.
        const after = await h.post(GOOD);
        expect(after.status).toBe(200);
        if (r.status === 200 && changedState(r.json.methodResponses)) baseline = after;
        else expect(after.json).toEqual(baseline.json);
      }),
      fuzzParams(300),
    );
  }, 120_000);
});
