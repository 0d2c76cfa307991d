/**
 * Reference interpreter: walks the grammar's syntax tree on every evaluation, looking names and
 * functions up as it goes. It exists as the
 * baseline the closure compiler is measured against (`bench/`) and as an independent check that
 * the compiler gives identical results (`test/expr/compile.test.ts`; on generated expressions
 * `test/expr/fuzz.test.ts`). Not for production use.
 */
import { readIndex, readMetric, readSystem, runMatches, type Captures } from './compile.js';
import { BINARY_OPS, opNeg, opNot } from './ops.js';
import type { Node } from '../../grammar/index.js';
import { FUNCTIONS } from './functions/index.js';
import { compileRustRegex, type RustRegex } from './regex.js';
import { parseExpression, resolveExpression } from './resolve.js';
import type { CompileOptions, EvalContext } from './types.js';
import { Constant, Float, toBool, type Value } from './value.js';
import { isExpressionVariable } from './variables.js';

/** Per-parse data the walker needs: the regex of each `matches` call, compiled once. */
type Regexes = Map<Node, RustRegex>;

function nameValue(ctx: EvalContext, name: string): Value {
  // The resolver has already checked the name; variables win over constants (spec §3.1).
  if (isExpressionVariable(name)) return ctx.variable(name);
  return Constant.of(name)!;
}

function evalSync(n: Node, ctx: EvalContext, caps: Captures, rx: Regexes): Value {
  switch (n.type) {
    case 'Int':
      return n.value;
    case 'Float':
      return new Float(n.value);
    case 'Str':
      return n.value;
    case 'Empty':
      return '';
    case 'Name':
      return nameValue(ctx, n.name);
    case 'Global':
      return ctx.global(n.name);
    case 'Capture':
      return caps[n.index] ?? '';
    case 'Array':
      return n.items.map((i) => evalSync(i, ctx, caps, rx));
    case 'Index': {
      const t = evalSync(n.target, ctx, caps, rx);
      return readIndex(t, evalSync(n.index, ctx, caps, rx));
    }
    case 'Unary': {
      const v = evalSync(n.operand, ctx, caps, rx);
      return n.op === '!' ? opNot(v) : opNeg(v);
    }
    case 'Binary': {
      const a = evalSync(n.left, ctx, caps, rx);
      if (n.op === '&&' || n.op === '||') {
        if (toBool(a) === (n.op === '||')) return a;
        return toBool(evalSync(n.right, ctx, caps, rx)) ? 1 : 0;
      }
      return BINARY_OPS[n.op]!(a, evalSync(n.right, ctx, caps, rx));
    }
    case 'Call': {
      const lit = n.args[0];
      if (n.name === 'matches') return runMatches(rx.get(n)!, evalSync(n.args[1]!, ctx, caps, rx), caps, ctx);
      if (n.name === 'system') return readSystem(ctx, (lit as { value: string }).value);
      if (n.name === 'metric') return readMetric(ctx, (lit as { value: string }).value);
      const def = FUNCTIONS[n.name]!;
      const args = n.args.map((a) => evalSync(a, ctx, caps, rx));
      if (def.async) throw new Error('async function in synchronous interpretation');
      return def.fn(args, ctx);
    }
  }
}

async function evalAsync(n: Node, ctx: EvalContext, caps: Captures, rx: Regexes): Promise<Value> {
  switch (n.type) {
    case 'Array': {
      const out: Value[] = [];
      for (const i of n.items) out.push(await evalAsync(i, ctx, caps, rx));
      return out;
    }
    case 'Index': {
      const t = await evalAsync(n.target, ctx, caps, rx);
      return readIndex(t, await evalAsync(n.index, ctx, caps, rx));
    }
    case 'Unary': {
      const v = await evalAsync(n.operand, ctx, caps, rx);
      return n.op === '!' ? opNot(v) : opNeg(v);
    }
    case 'Binary': {
      const a = await evalAsync(n.left, ctx, caps, rx);
      if (n.op === '&&' || n.op === '||') {
        if (toBool(a) === (n.op === '||')) return a;
        return toBool(await evalAsync(n.right, ctx, caps, rx)) ? 1 : 0;
      }
      return BINARY_OPS[n.op]!(a, await evalAsync(n.right, ctx, caps, rx));
    }
    case 'Call': {
      if (n.name === 'matches') return runMatches(rx.get(n)!, await evalAsync(n.args[1]!, ctx, caps, rx), caps, ctx);
      if (n.name === 'system' || n.name === 'metric') return evalSync(n, ctx, caps, rx);
      const args: Value[] = [];
      for (const a of n.args) args.push(await evalAsync(a, ctx, caps, rx));
      return FUNCTIONS[n.name]!.fn(args, ctx);
    }
    default:
      return evalSync(n, ctx, caps, rx);
  }
}

/** Collects the compiled regex of every `matches` call (resolution already validated them). */
function collectRegexes(n: Node, out: Regexes): void {
  const stack: Node[] = [n];
  while (stack.length > 0) {
    const m = stack.pop()!;
    if (m.type === 'Call') {
      if (m.name === 'matches' && m.args[0]?.type === 'Str') out.set(m, compileRustRegex(m.args[0].value));
      stack.push(...m.args);
    } else if (m.type === 'Array') stack.push(...m.items);
    else if (m.type === 'Index') stack.push(m.target, m.index);
    else if (m.type === 'Unary') stack.push(m.operand);
    else if (m.type === 'Binary') stack.push(m.left, m.right);
  }
}

/** A tree ready for interpretation. */
export interface InterpretedExpression {
  readonly source: string;
  readonly isAsync: boolean;
  /** Walks the tree; throws if `isAsync`. */
  evalSync(ctx: EvalContext, captures?: Captures): Value;
  evalAsync(ctx: EvalContext, captures?: Captures): Promise<Value>;
}

/**
 * Parses and resolves like `compileExpression`, but evaluates by walking the tree each time.
 * @throws ExprParseError as `compileExpression` does
 */
export function interpretExpression(source: string, opts: CompileOptions = {}): InterpretedExpression {
  // Resolution runs for its checks (same errors as the compiler); evaluation walks the grammar tree.
  const r = resolveExpression(source, opts);
  const tree = parseExpression(source);
  const rx: Regexes = new Map();
  collectRegexes(tree, rx);
  return {
    source,
    isAsync: r.isAsync,
    evalSync: (ctx, caps) => {
      if (r.isAsync) throw new Error('expression needs evalAsync');
      return evalSync(tree, ctx, caps ?? [], rx);
    },
    evalAsync: (ctx, caps) => evalAsync(tree, ctx, caps ?? [], rx),
  };
}
