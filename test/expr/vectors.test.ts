/**
 * Conformance: every vector of `expr-vectors.json` (543) must give Stalwart's result bit for bit
 * (type and value), except the vectors a deliberate deviation (README, "Compatibility with Stalwart", D1–D6) changes:
 * for those, the table below records OUR result, which is asserted instead. Parse errors match
 * when both sides are parse errors (D6: the message is ours).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runVector, sameEncoded, type EncodedResult, type ExprVector } from '../../src/expr/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

type Deviation = 'D1' | 'D2' | 'D3' | 'D4' | 'D5' | 'D6';
const PE = { parseError: '' } as const;

/** id → the deviation and our encoded result. */
const DEVIATIONS: Record<string, { deviation: Deviation; ours: EncodedResult; why: string }> = {
  'derived-013': { deviation: 'D2', ours: { int: 1 }, why: '`1=1`: single = compares and swallows nothing' },
  'derived-014': { deviation: 'D2', ours: PE, why: '`2 => 1`: `=` does not turn `=>` into >=' },
  'derived-015': { deviation: 'D2', ours: PE, why: '`1 =< 2`: `=` does not turn `=<` into <=' },
  'derived-020': { deviation: 'D2', ours: { int: 1 }, why: '`rcpt=sender` compares the two variables' },
  'derived-527': { deviation: 'D2', ours: PE, why: '`1 === 1`: == followed by a stray =' },
  'derived-066': { deviation: 'D1', ours: { str: 'a\nb' }, why: '\\n is a line feed' },
  'derived-067': { deviation: 'D1', ours: { str: 'a\tb' }, why: '\\t is a tab' },
  'derived-068': { deviation: 'D1', ours: { str: 'a\rb' }, why: '\\r is a carriage return' },
  'derived-069': { deviation: 'D1', ours: { str: 'a\\b' }, why: '\\\\ is one backslash' },
  'derived-071': { deviation: 'D1', ours: { str: "a'b" }, why: "\\' is a quote" },
  'derived-072': { deviation: 'D1', ours: { str: 'a\\' }, why: "'a\\\\' is a complete string (escaped backslash)" },
  'derived-074': { deviation: 'D1', ours: { str: "couldn't be" }, why: "\\' is a quote" },
  'derived-448': { deviation: 'D1', ours: { int: 1 }, why: "'couldn\\'t be' now matches the real subject" },
  'derived-449': { deviation: 'D1', ours: { int: 0 }, why: 'the subject with a literal backslash no longer matches' },
  'derived-103': { deviation: 'D4', ours: PE, why: 'missing comma between arguments' },
  'derived-104': { deviation: 'D4', ours: PE, why: 'top-level `1, 2`' },
  'derived-105': { deviation: 'D4', ours: PE, why: '`5 6` juxtaposition' },
  'derived-135': { deviation: 'D4', ours: PE, why: '`$TAG[0]`: an array literal right after an operand' },
  'derived-514': { deviation: 'D4', ours: PE, why: "`'a''b'` juxtaposition" },
  'derived-537': { deviation: 'D4', ours: PE, why: '`1 <> 2`: two operators with no operand between them' },
  'derived-572': { deviation: 'D4', ours: PE, why: '`rcpt(1)`: a variable followed by an operand' },
  'derived-125': { deviation: 'D5', ours: { str: '' }, why: '`[1,2,3][-1]`: index −1 wraps to out of range' },
  'derived-127': { deviation: 'D5', ours: { int: 1 }, why: '`[1,2][-1.0]`: −1.0 truncates to index 0' },
  'derived-142': { deviation: 'D5', ours: { array: [{ int: 1 }] }, why: '`[!0]` is [1]' },
  'derived-540': { deviation: 'D5', ours: { int: 1 }, why: '`- -1` is 1' },
  'derived-541': { deviation: 'D5', ours: { int: 1 }, why: '`--1` is 1' },
};

const vectors: ExprVector[] = hasSharedData
  ? (JSON.parse(readFileSync(sharedPath('expr-vectors.json'), 'utf8')) as ExprVector[])
  : [];

describe.skipIf(!hasSharedData)('expr-vectors.json', () => {
  it('holds the 543 vectors of expr-vectors.json', () => {
    expect(vectors).toHaveLength(543);
    for (const id of Object.keys(DEVIATIONS)) expect(vectors.some((v) => v.id === id), id).toBe(true);
  });

  it.each(vectors.map((v) => [v.id, v] as const))('%s', async (id, v) => {
    const got = await runVector(v);
    const dev = DEVIATIONS[id];
    if (dev !== undefined) {
      // The deviation really changes the outcome, and ours is exactly the recorded one.
      expect(sameEncoded(got, v.expected!), `${id} should differ from Stalwart (${dev.deviation})`).toBe(false);
      expect(sameEncoded(got, dev.ours), `${id}: ${JSON.stringify(got)}`).toBe(true);
      if (!('parseError' in dev.ours)) expect(got).toEqual(dev.ours);
      return;
    }
    expect(sameEncoded(got, v.expected!), `${id}: ${JSON.stringify(v.expr)} gave ${JSON.stringify(got)}`).toBe(true);
    if (!('parseError' in v.expected!) && !('evalError' in v.expected!)) expect(got).toEqual(v.expected);
  });

  it('the interpreter gives the same result as the compiler on every expression vector', async () => {
    let compared = 0;
    for (const v of vectors) {
      if (typeof v.expr !== 'string') continue;
      const a = await runVector(v, 'compile');
      const b = await runVector(v, 'interpret');
      expect(sameEncoded(a, b), v.id).toBe(true);
      compared++;
    }
    expect(compared).toBe(516);
  });
});
