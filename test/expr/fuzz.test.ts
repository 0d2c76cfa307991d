/**
 * Differential fuzzing of the expression compiler (fast-check, test/helpers/fuzz.ts): valid
 * expressions from the grammar (test/expr/fuzz-gen.ts) evaluated over generated variable contexts
 * must give, bit for bit (codec `sameEncoded`), what the reference tree-walking interpreter gives,
 * or both must throw an error of the same class. Checked for every way the compiler is entered:
 * `compileExpression` (optimizer on), `compileResolved` of the plain resolved tree (optimizer off),
 * the tree optimised for a boolean context (compared on truthiness), and if-blocks (one capture
 * buffer across the branches). The call specialisations (specialize.ts) have no switch: they are
 * always on, and the interpreter calls the library functions directly, so every comparison checks them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileExpression, compileIfBlock, compileResolved, encodeValue, interpretExpression, resolveExpression, sameEncoded, toBool,
  type EncodedResult, type EvalContext, type Value,
} from '../../src/expr/index.js';
import { optimizeTree } from '../../src/expr/optimize.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { contextFor, exprArbs, tagsArb, varsArb, type Scenario } from './fuzz-gen.js';

/** A result or the class of the error thrown, plus the store calls made, comparable across engines. */
type Outcome = ({ ok: EncodedResult } | { error: string; message: string }) & { log?: string[] };

function outcome(f: () => Value): Outcome {
  try {
    return { ok: encodeValue(f()) };
  } catch (e) {
    return { error: (e as Error).constructor.name, message: (e as Error).message };
  }
}

async function outcomeAsync(f: () => Promise<Value>): Promise<Outcome> {
  try {
    return { ok: encodeValue(await f()) };
  } catch (e) {
    return { error: (e as Error).constructor.name, message: (e as Error).message };
  }
}

function same(a: Outcome, b: Outcome): boolean {
  if (JSON.stringify(a.log ?? []) !== JSON.stringify(b.log ?? [])) return false;
  if ('ok' in a && 'ok' in b) return sameEncoded(a.ok, b.ok);
  if ('error' in a && 'error' in b) return a.error === b.error;
  return false;
}

const show = (o: Outcome): string => JSON.stringify(o);

/** Evaluates an engine's compiled form the way its `isAsync` asks. */
function evalWith(e: { isAsync: boolean; evalSync(c: EvalContext, k?: string[]): Value; evalAsync(c: EvalContext, k?: string[]): Promise<Value> }, sc: Scenario, caps?: string[]): Promise<Outcome> {
  const ctx = contextFor(sc);
  const o = e.isAsync ? outcomeAsync(() => e.evalAsync(ctx, caps)) : Promise.resolve(outcome(() => e.evalSync(ctx, caps)));
  return o.then((x) => ({ ...x, log: ctx.log }));
}

const syncArbs = exprArbs(false);
const asyncArbs = exprArbs(true);
const scenario: fc.Arbitrary<Scenario> = fc.record({ vars: varsArb, tags: tagsArb });

/**
 * Checks one source against the interpreter, with the optimizer on, off, and in a boolean context.
 * Returns a description of the first disagreement, or undefined.
 */
async function disagreement(src: string, scs: Scenario[]): Promise<string | undefined> {
  const interpreted = interpretExpression(src);
  const optimized = compileExpression(src);
  const r = resolveExpression(src);
  const plain = compileResolved(src, r.tree);
  const bool = compileResolved(src, optimizeTree(r.tree, true));
  const truth = (o: Outcome): Outcome => ('ok' in o ? { ok: { int: toBool(decodeOk(o.ok)) ? 1 : 0 }, log: o.log } : o);
  // The same compiled objects serve every scenario in turn: nothing of one evaluation may leak into the next.
  for (const [i, sc] of scs.entries()) {
    const ref = await evalWith(interpreted, sc);
    const o = await evalWith(optimized, sc);
    if (!same(ref, o)) return `compileExpression(${JSON.stringify(src)}) gave ${show(o)}, interpreter ${show(ref)} (scenario ${i})`;
    const p = await evalWith(plain, sc);
    if (!same(ref, p)) return `compileResolved (no optimizer) of ${JSON.stringify(src)} gave ${show(p)}, interpreter ${show(ref)} (scenario ${i})`;
    const b = await evalWith(bool, sc);
    if (!same(truth(ref), truth(b))) return `boolean-context tree of ${JSON.stringify(src)} gave ${show(b)}, interpreter ${show(ref)} (scenario ${i})`;
  }
  return undefined;
}

/** Truthiness of an encoded value (only the shape matters). */
function decodeOk(v: EncodedResult): Value {
  if ('str' in v) return v.str;
  if ('int' in v) return v.int;
  if ('float' in v) return v.float === 0 ? 0 : 1; // NaN and ±inf are truthy
  if ('array' in v) return v.array.length === 0 ? [] : [1];
  return 1; // a Constant
}

describe('fuzz: compiled closures agree with the reference interpreter', () => {
  it('on synchronous expressions (optimizer on and off, boolean context)', async () => {
    await fc.assert(
      fc.asyncProperty(syncArbs.any(4), scenario, scenario, async (g, sc1, sc2) => {
        const why = await disagreement(g.m, [sc1, sc2]);
        expect(why).toBeUndefined();
      }),
      fuzzParams(1500),
    );
  });

  it('on expressions with store and directory calls (evaluation order, promise paths)', async () => {
    await fc.assert(
      fc.asyncProperty(asyncArbs.any(3), scenario, scenario, async (g, sc1, sc2) => {
        const why = await disagreement(g.m, [sc1, sc2]);
        expect(why).toBeUndefined();
      }),
      fuzzParams(600),
    );
  });

  it('on if-blocks: first truthy branch, one capture buffer shared by all branches', async () => {
    // Rules mostly tag with a literal and end in `else: false` (the block's fast paths): favour that shape.
    const result = fc.oneof(syncArbs.any(2), fc.constantFrom("'TAG'", 'false', '0', "''", '1.5', 'relaxed', '[1]').map((m) => ({ m })));
    const branch = fc.tuple(syncArbs.num(3), result);
    await fc.assert(
      fc.asyncProperty(fc.array(branch, { minLength: 1, maxLength: 3 }), result, scenario, scenario, async (bs, otherwise, sc1, sc2) => {
        const input = { match: bs.map(([c, t]) => ({ if: c.m, then: t.m })), else: otherwise.m };
        const { block, errors } = compileIfBlock(input);
        expect(errors).toEqual([]);
        const ifs = bs.map(([c]) => interpretExpression(c.m));
        const thens = bs.map(([, t]) => interpretExpression(t.m));
        const els = interpretExpression(otherwise.m);
        // The same block evaluates both scenarios: nothing may leak from one evaluation into the next.
        for (const sc of [sc1, sc2]) {
          const got = outcome(() => {
            const r = block!.evalSync(contextFor(sc))!;
            return [r.branch, r.value];
          });
          // Reference: the interpreter, branch by branch, with one capture buffer.
          const ctx = contextFor(sc);
          const caps: string[] = [];
          const want = outcome(() => {
            for (let i = 0; i < bs.length; i++) if (toBool(ifs[i]!.evalSync(ctx, caps))) return [i, thens[i]!.evalSync(ctx, caps)];
            return [-1, els.evalSync(ctx, caps)];
          });
          expect(same(got, want), `${JSON.stringify(input)}: ${show(got)} vs ${show(want)}`).toBe(true);
        }
      }),
      fuzzParams(600),
    );
  });

  it('precedence and associativity: the fewest parentheses mean what full parentheses say', async () => {
    await fc.assert(
      fc.asyncProperty(syncArbs.num(4), scenario, async (g, sc) => {
        const minimal = await evalWith(compileExpression(g.m), sc);
        const full = await evalWith(compileExpression(g.f), sc);
        expect(same(minimal, full), `${g.m} gave ${show(minimal)}, ${g.f} gave ${show(full)}`).toBe(true);
        const refMinimal = await evalWith(interpretExpression(g.m), sc);
        expect(same(refMinimal, full)).toBe(true);
      }),
      fuzzParams(800),
    );
  });
});
