/**
 * Rule evaluation cost (issue 2 §6a): ns per rule evaluation of the public rule set's conditions
 * over elements of real corpus messages, compiled closures against the tree-walking reference
 * interpreter of the same syntax tree, both measured in this run.
 */
import { Bench } from 'tinybench';
import { normalizeCondition } from '../src/engine/index.js';
import { compileExpression, interpretExpression, SPAM_RULE_VARIABLES, type CompiledExpression, type EvalContext } from '../src/expr/index.js';
import { analyzeMessage } from '../src/message/index.js';
import type { Scope } from '../src/message/types.js';
import { loadCorpus, printTable, publicBundle, publicEngine, stats } from './common.js';

type Runner = { ifs: CompiledExpression[]; thens: CompiledExpression[]; els: CompiledExpression };

/** Synchronous if-block runner for blocks without store calls. */
function runBlockSync(b: Runner, ctx: EvalContext): unknown {
  const caps: string[] = [];
  for (let i = 0; i < b.ifs.length; i++) {
    const v = b.ifs[i]!.evalSync(ctx, caps);
    if (v !== 0 && v !== '' && !(Array.isArray(v) && v.length === 0)) return b.thens[i]!.evalSync(ctx, caps);
  }
  return b.els.evalSync(ctx, caps);
}

type MaybeExpr = CompiledExpression & { evalMaybe?(ctx: EvalContext, caps: string[]): unknown };

/** Evaluates with `evalMaybe` where the engine has it (no promise unless a store waits). */
function evalOne(c: MaybeExpr, ctx: EvalContext, caps: string[]): unknown {
  if (!c.isAsync) return c.evalSync(ctx, caps);
  return c.evalMaybe ? c.evalMaybe(ctx, caps) : c.evalAsync(ctx, caps);
}

/** Runs an if-block made of separately compiled expressions (same semantics as §5.3). */
async function runBlock(b: Runner, ctx: EvalContext): Promise<unknown> {
  const caps: string[] = [];
  for (let i = 0; i < b.ifs.length; i++) {
    const c = b.ifs[i]!;
    let v = evalOne(c, ctx, caps);
    if (v instanceof Promise) v = await v;
    if (v !== 0 && v !== '' && !(Array.isArray(v) && v.length === 0)) {
      return evalOne(b.thens[i]!, ctx, caps);
    }
  }
  return evalOne(b.els, ctx, caps);
}

export async function runRulesBench(opts: { messages?: number; timeMs?: number } = {}): Promise<void> {
  const bundle = publicBundle();
  const engine = publicEngine(bundle);
  const build = (make: (src: string, scope: Scope) => CompiledExpression) =>
    bundle.rules.map((r) => {
      const c = normalizeCondition(r.condition);
      const scope = r['@type'];
      const b: Runner = { ifs: c.match.map((m) => make(m.if, scope)), thens: c.match.map((m) => make(m.then, scope)), els: make(c.else, scope) };
      const isAsync = [...b.ifs, ...b.thens, b.els].some((e) => e.isAsync);
      return { scope, b, isAsync };
    });
  const opt = (scope: Scope) => ({ allowedVariables: SPAM_RULE_VARIABLES[scope] });
  const compiled = build((s, scope) => compileExpression(s, opt(scope)));
  const interpreted = build((s, scope) => interpretExpression(s, opt(scope)) as CompiledExpression);

  // Workload: every (element × rule) pair of the rule's scope over a sample of corpus messages.
  const corpus = loadCorpus({ step: Math.max(1, Math.floor(6046 / (opts.messages ?? 300))) });
  const pairs: { ctx: EvalContext; rule: number }[] = [];
  for (const m of corpus) {
    const msg = await analyzeMessage(m.raw);
    const tags = new Set(msg.builtinTags);
    for (let ri = 0; ri < compiled.length; ri++) {
      for (const el of msg.elements(compiled[ri]!.scope)) {
        pairs.push({ ctx: { variable: (n) => el.variable(n), global: (n) => (tags.has(n) ? 1 : 0), lookups: engine.lookups }, rule: ri });
      }
    }
  }
  const runAll = async (set: typeof compiled): Promise<void> => {
    for (const p of pairs) {
      const r = set[p.rule]!;
      if (r.isAsync) {
        const v = runBlock(r.b, p.ctx);
        if (v instanceof Promise) await v;
      } else runBlockSync(r.b, p.ctx);
    }
  };
  await runAll(compiled); // fill per-message variable memos so both runs see the same state
  await runAll(interpreted);

  const bench = new Bench({ time: opts.timeMs ?? 3000, warmup: true });
  bench.add('tree-walking interpreter (baseline)', () => runAll(interpreted));
  bench.add('compiled closures', () => runAll(compiled));
  await bench.run();
  const base = stats(bench, 'tree-walking interpreter (baseline)');
  const comp = stats(bench, 'compiled closures');
  const ns = (ms: number): string => ((ms * 1e6) / pairs.length).toFixed(0);
  printTable(`rule evaluation: public rule set, ${pairs.length} (element × rule) evaluations from ${corpus.length} messages`, [
    { engine: 'tree-walking interpreter (baseline)', 'ns/eval': ns(base.meanMs), speedup: '1.00×' },
    { engine: 'compiled closures', 'ns/eval': ns(comp.meanMs), speedup: (base.meanMs / comp.meanMs).toFixed(2) + '×' },
  ]);
}
