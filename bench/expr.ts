/**
 * Expression benchmark: the closure compiler against the tree-walking reference interpreter
 * (`src/expr/interpret.ts`) on the conditions of Stalwart's public rule set (every synchronous
 * `if`/`then`/`else` expression, each evaluated against the same synthetic message variables).
 * compile-once closures (docs/compiler.md) are the design; the figure to watch is the speed-up ratio.
 *
 * Run: `npx tsx bench/expr.ts` (also exported as `runExprBench` for `bench/run.ts`).
 */
import { readFileSync } from 'node:fs';
import { Bench } from 'tinybench';
import {
  compileExpression, interpretExpression, type CompiledExpression, type InterpretedExpression, normalizeMatch, SPAM_RULE_VARIABLES, type EvalContext, type SpamRuleScope,
  type Value,
} from '../src/expr/index.js';
import { sharedPath } from '../test/helpers/shared-data.js';
import { alternatingPasses, printTable, stats } from './common.js';

interface Rule {
  '@type': SpamRuleScope;
  condition: { match?: Record<string, { if: string; then: string }>; else?: string };
}

/** Plausible values for the variables the rules read (strings, arrays, integers). */
function variables(): Map<string, Value> {
  const m = new Map<string, Value>();
  const s = (k: string, v: Value): void => void m.set(k, v);
  s('from', 'alice@example.com'); s('from.domain', 'example.com'); s('from.local', 'alice'); s('from.name', 'alice smith');
  s('env_from', 'bounce@mailer.example.net'); s('env_from.domain', 'mailer.example.net'); s('env_from.local', 'bounce');
  s('to', ['bob@example.org']); s('to.domain', ['example.org']); s('to.local', ['bob']); s('to.name', ['bob']);
  s('subject', 're: your invoice is ready'); s('subject.thread', 'your invoice is ready');
  s('subject.words', ['re', 'your', 'invoice', 'is', 'ready']); s('body', 'Hello Bob,\nplease find the invoice attached.');
  s('body.text', 'Hello Bob,\nplease find the invoice attached.'); s('value', 'example.com'); s('location', 'body_text');
  s('remote_ip', '192.0.2.10'); s('helo_domain', 'mail.example.com'); s('name', 'Subject'); s('name_lower', 'subject');
  s('raw', ' Re: your invoice'); s('url', 'https://example.com/invoice?id=1'); s('host', 'example.com'); s('sld', 'example.com');
  return m;
}

/** Loads every synchronous expression of the public rule set (async ones need stores). */
function expressions(): { source: string; scope: SpamRuleScope }[] {
  const bundle = JSON.parse(readFileSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), 'utf8')) as {
    SpamRule: Record<string, Rule> | Rule[];
  };
  const rules = Array.isArray(bundle.SpamRule) ? bundle.SpamRule : Object.values(bundle.SpamRule);
  const out: { source: string; scope: SpamRuleScope }[] = [];
  for (const r of rules) {
    const parts = normalizeMatch(r.condition.match).flatMap((m) => [m.if, m.then]);
    if (r.condition.else) parts.push(r.condition.else);
    for (const p of parts) out.push({ source: p, scope: r['@type'] });
  }
  return out;
}

export async function runExprBench(): Promise<void> {
  const vars = variables();
  const ctx: EvalContext = { variable: (n) => vars.get(n) ?? '', global: (n) => (n.length % 3 === 0 ? 1 : 0) };
  const compiled: CompiledExpression[] = [];
  const interpreted: InterpretedExpression[] = [];
  for (const e of expressions()) {
    const opts = { allowedVariables: SPAM_RULE_VARIABLES[e.scope] };
    const c = compileExpression(e.source, opts);
    if (c.isAsync) continue;
    compiled.push(c);
    interpreted.push(interpretExpression(e.source, opts));
  }
  const caps: string[] = [];
  let sink = 0;
  const bench = new Bench({ time: 1500, warmup: true });
  const runCompiled = (): void => {
    for (const c of compiled) if (c.evalSync(ctx, caps) !== '') sink++;
  };
  const runInterpreted = (): void => {
    for (const c of interpreted) if (c.evalSync(ctx, caps) !== '') sink++;
  };
  // One pass is ~10 µs: alternating passes of 200 repetitions each are long enough to time.
  const repeat = (f: () => void) => (): void => {
    for (let i = 0; i < 200; i++) f();
  };
  bench.add('closures', runCompiled);
  bench.add('interpreter', runInterpreted);
  const t0 = performance.now();
  for (const e of expressions()) {
    try {
      compileExpression(e.source, { allowedVariables: SPAM_RULE_VARIABLES[e.scope] });
    } catch {
      /* counted by lint, not here */
    }
  }
  const compileMs = performance.now() - t0;
  await bench.run();
  const c = stats(bench, 'closures');
  const i = stats(bench, 'interpreter');
  const alt = await alternatingPasses(repeat(runInterpreted), repeat(runCompiled));
  printTable(`Expressions: ${compiled.length} synchronous public-rule expressions per pass; compiling all ${compileMs.toFixed(1)} ms (sink ${sink > 0 ? 'ok' : '0'})`, [
    { engine: 'closures', 'passes/s': Math.round(c.hz), 'evals/s': Math.round(c.hz * compiled.length), 'mean ms': c.meanMs.toFixed(4) },
    { engine: 'interpreter', 'passes/s': Math.round(i.hz), 'evals/s': Math.round(i.hz * compiled.length), 'mean ms': i.meanMs.toFixed(4) },
    { engine: 'speed-up', 'passes/s': `${(c.hz / i.hz).toFixed(2)}×`, 'evals/s': '', 'mean ms': `${(i.meanMs / c.meanMs).toFixed(2)}×` },
  ]);
  process.stdout.write(
    `speed-up over 21 alternating passes: fastest ${(alt.bestBaselineMs / alt.bestCandidateMs).toFixed(2)}×, median per-pass ratio ${alt.medianRatio.toFixed(2)}×\n`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await runExprBench();
