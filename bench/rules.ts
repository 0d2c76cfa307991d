/**
 * Rule evaluation cost (issue 2 §6a): ns per rule evaluation of the public rule set's conditions
 * over elements of real corpus messages, in the engine's order (element-first per scope): each
 * condition compiled once into closures as an if-block (exactly what `SpamEngine` runs) against the reference interpreter walking the same syntax trees
 * branch by branch, both measured in this run after checking they give the same results.
 */
import { Bench } from 'tinybench';
import { compileCondition, normalizeCondition } from '../src/engine/rules.js';
import { interpretExpression, SPAM_RULE_VARIABLES, type CompiledExpression, type EvalContext } from '../src/expr/index.js';
import { analyzeMessage } from '../src/message/index.js';
import { SCOPE_ORDER, type Scope, type ScopeElement } from '../src/message/types.js';
import type { LookupMap } from '../src/lookup/index.js';
import type { Value } from '../src/expr/value.js';
import { alternatingPasses, loadCorpus, printTable, publicBundle, publicEngine, stats } from './common.js';

/** The evaluation context of one element, shaped as SpamEngine builds it (a class, no closures). */
class ElementCtx implements EvalContext {
  constructor(
    private readonly el: ScopeElement,
    private readonly tags: ReadonlySet<string>,
    readonly lookups: LookupMap,
  ) {}
  variable(name: string): Value {
    return this.el.variable(name);
  }
  global(name: string): number {
    return this.tags.has(name) ? 1 : 0;
  }
}

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

/** One expression of the baseline, awaited only when it calls a store. */
function evalOne(c: CompiledExpression, ctx: EvalContext, caps: string[]): Value | Promise<Value> {
  return c.isAsync ? c.evalAsync(ctx, caps) : c.evalSync(ctx, caps);
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
  const build = (make: (src: string, scope: Scope) => CompiledExpression): { scope: Scope; b: Runner; isAsync: boolean }[] =>
    bundle.rules.map((r) => {
      const c = normalizeCondition(r.condition);
      const scope = r['@type'];
      const b: Runner = { ifs: c.match.map((m) => make(m.if, scope)), thens: c.match.map((m) => make(m.then, scope)), els: make(c.else, scope) };
      const isAsync = [...b.ifs, ...b.thens, b.els].some((e) => e.isAsync);
      return { scope, b, isAsync };
    });
  const opt = (scope: Scope) => ({ allowedVariables: SPAM_RULE_VARIABLES[scope] });
  // The product: each rule's condition compiled once as an if-block (what SpamEngine runs).
  const compiled = bundle.rules.map((r) => {
    const { block, errors } = compileCondition(r['@type'], r.condition);
    if (block === undefined) throw new Error(`${r.name}: ${errors[0]?.message}`);
    return { scope: r['@type'], block };
  });
  // The baseline: the same syntax trees walked by the reference interpreter, branch by branch.
  const interpreted = build((s, scope) => interpretExpression(s, opt(scope)) as CompiledExpression);

  // Workload: every (element × rule) pair over a sample of corpus messages, in the order SpamEngine
  // runs them: scopes in Stalwart's order, element-first inside a scope, rules by ascending
  // priority (ties in load order), one context per element shared by that element's rules.
  const corpus = loadCorpus({ step: Math.max(1, Math.floor(6046 / (opts.messages ?? 300))) });
  const order = compiled.map((c, i) => ({ i, scope: c.scope, priority: bundle.rules[i]!.priority ?? 0 }));
  const byScope = SCOPE_ORDER.map((scope) => ({
    scope,
    rules: order.filter((r) => r.scope === scope).sort((a, b) => a.priority - b.priority || a.i - b.i),
  })).filter((s) => s.rules.length > 0);
  const pairs: { ctx: EvalContext; rule: number }[] = [];
  for (const m of corpus) {
    const msg = await analyzeMessage(m.raw);
    const tags = new Set(msg.builtinTags);
    for (const { scope, rules } of byScope) {
      for (const el of msg.elements(scope)) {
        const ctx = new ElementCtx(el, tags, engine.lookups);
        for (const r of rules) pairs.push({ ctx, rule: r.i });
      }
    }
  }
  const runInterpreted = async (): Promise<void> => {
    for (const p of pairs) {
      const r = interpreted[p.rule]!;
      if (r.isAsync) await runBlock(r.b, p.ctx);
      else runBlockSync(r.b, p.ctx);
    }
  };
  const runCompiled = async (): Promise<void> => {
    for (const p of pairs) {
      const v = compiled[p.rule]!.block.evalMaybe(p.ctx);
      if (v instanceof Promise) await v;
    }
  };
  // Same answers from both (and per-message variable memos filled, so both runs see the same state).
  for (const p of pairs) {
    const r = interpreted[p.rule]!;
    const want = r.isAsync ? await runBlock(r.b, p.ctx) : runBlockSync(r.b, p.ctx);
    let got = compiled[p.rule]!.block.evalMaybe(p.ctx);
    if (got instanceof Promise) got = await got;
    if (JSON.stringify(got?.value ?? '') !== JSON.stringify(want ?? '')) throw new Error(`compiled and interpreted results differ for rule #${p.rule}`);
  }

  const bench = new Bench({ time: opts.timeMs ?? 3000, warmup: true });
  bench.add('tree-walking interpreter (baseline)', runInterpreted);
  bench.add('compiled closures', runCompiled);
  await bench.run();
  const base = stats(bench, 'tree-walking interpreter (baseline)');
  const comp = stats(bench, 'compiled closures');
  const ns = (ms: number): string => ((ms * 1e6) / pairs.length).toFixed(0);

  const { bestBaselineMs: bestI, bestCandidateMs: bestC, medianRatio: median } = await alternatingPasses(runInterpreted, runCompiled);
  printTable(`rule evaluation: public rule set, ${pairs.length} (element × rule) evaluations from ${corpus.length} messages`, [
    { engine: 'tree-walking interpreter (baseline)', 'ns/eval (tinybench mean)': ns(base.meanMs), 'ns/eval (fastest of 21 alternating passes)': ns(bestI), speedup: '1.00×' },
    {
      engine: 'compiled closures',
      'ns/eval (tinybench mean)': ns(comp.meanMs),
      'ns/eval (fastest of 21 alternating passes)': ns(bestC),
      speedup: `${(bestI / bestC).toFixed(2)}× (median per-pass ratio ${median.toFixed(2)}×, tinybench ${(base.meanMs / comp.meanMs).toFixed(2)}×)`,
    },
  ]);
}
