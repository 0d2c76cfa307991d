/**
 * Reference interpreter: walks the resolved syntax tree on every evaluation. It exists as the
 * baseline the closure compiler is measured against (`bench/`) and as an independent check that
 * the compiler gives identical results (`test/expr/interpret.test.ts`). Not for production use.
 */
import { readIndex, readMetric, readSystem, runMatches, type Captures } from './compile.js';
import { BINARY_OPS, opNeg, opNot } from './ops.js';
import { resolveExpression, type Expr } from './resolve.js';
import type { CompileOptions, EvalContext } from './types.js';
import { toBool, type Value } from './value.js';

function evalSync(e: Expr, ctx: EvalContext, caps: Captures): Value {
  switch (e.k) {
    case 'lit':
      return e.value;
    case 'var':
      return ctx.variable(e.name);
    case 'global':
      return ctx.global(e.name);
    case 'capture':
      return caps[e.index] ?? '';
    case 'system':
      return readSystem(ctx, e.name);
    case 'metric':
      return readMetric(ctx, e.name);
    case 'array':
      return e.items.map((i) => evalSync(i, ctx, caps));
    case 'index': {
      const t = evalSync(e.target, ctx, caps);
      return readIndex(t, evalSync(e.index, ctx, caps));
    }
    case 'unary': {
      const v = evalSync(e.operand, ctx, caps);
      return e.op === '!' ? opNot(v) : opNeg(v);
    }
    case 'binary': {
      const a = evalSync(e.left, ctx, caps);
      if (e.op === '&&' || e.op === '||') {
        if (toBool(a) === (e.op === '||')) return a;
        return toBool(evalSync(e.right, ctx, caps)) ? 1 : 0;
      }
      return BINARY_OPS[e.op]!(a, evalSync(e.right, ctx, caps));
    }
    case 'matches':
      return runMatches(e.regex, evalSync(e.subject, ctx, caps), caps);
    case 'call': {
      const args = e.args.map((a) => evalSync(a, ctx, caps));
      if (e.def.async) throw new Error('async function in synchronous interpretation');
      return e.def.fn(args, ctx);
    }
  }
}

async function evalAsync(e: Expr, ctx: EvalContext, caps: Captures): Promise<Value> {
  switch (e.k) {
    case 'array': {
      const out: Value[] = [];
      for (const i of e.items) out.push(await evalAsync(i, ctx, caps));
      return out;
    }
    case 'index': {
      const t = await evalAsync(e.target, ctx, caps);
      return readIndex(t, await evalAsync(e.index, ctx, caps));
    }
    case 'unary': {
      const v = await evalAsync(e.operand, ctx, caps);
      return e.op === '!' ? opNot(v) : opNeg(v);
    }
    case 'binary': {
      const a = await evalAsync(e.left, ctx, caps);
      if (e.op === '&&' || e.op === '||') {
        if (toBool(a) === (e.op === '||')) return a;
        return toBool(await evalAsync(e.right, ctx, caps)) ? 1 : 0;
      }
      return BINARY_OPS[e.op]!(a, await evalAsync(e.right, ctx, caps));
    }
    case 'matches':
      return runMatches(e.regex, await evalAsync(e.subject, ctx, caps), caps);
    case 'call': {
      const args: Value[] = [];
      for (const a of e.args) args.push(await evalAsync(a, ctx, caps));
      return e.def.fn(args, ctx);
    }
    default:
      return evalSync(e, ctx, caps);
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
  const r = resolveExpression(source, opts);
  const tree = r.tree;
  return {
    source,
    isAsync: r.isAsync,
    evalSync: (ctx, caps) => {
      if (r.isAsync) throw new Error('expression needs evalAsync');
      return evalSync(tree, ctx, caps ?? []);
    },
    evalAsync: (ctx, caps) => evalAsync(tree, ctx, caps ?? []),
  };
}
