/**
 * Closure compiler (DECISIONS.md §1 "Compile"): the resolved tree is turned ONCE into nested
 * JavaScript closures, so evaluation runs no tree walk and no text. An expression without async
 * functions compiles to plain synchronous closures; one with a store/DNS call compiles its async
 * branches to `async` closures while every synchronous subtree stays synchronous.
 *
 * Evaluation order is Stalwart's: left to right, all arguments before the call, `&&`/`||`
 * short-circuiting and then returning the LEFT operand itself (spec §1.6), other operators strict.
 */
import { BINARY_OPS, opNeg, opNot } from './ops.js';
import { resolveExpression, type Expr } from './resolve.js';
import type { CompiledExpression, CompileOptions, EvalContext } from './types.js';
import { Float, intoArray, toBool, toStr, toUsize, type Value } from './value.js';

/** The capture buffer: group 0..n of the last `matches` (spec §4.4). */
export type Captures = string[];
export type SyncFn = (ctx: EvalContext, caps: Captures) => Value;
export type AsyncFn = (ctx: EvalContext, caps: Captures) => Promise<Value>;
type Compiled = { sync: true; f: SyncFn } | { sync: false; f: AsyncFn };

const sync = (f: SyncFn): Compiled => ({ sync: true, f });
const asyncC = (f: AsyncFn): Compiled => ({ sync: false, f });

/** `$N` / system / metric / matches helpers shared with the interpreter. */
export function runMatches(regex: RegExp, subject: Value, caps: Captures): Value {
  const s = toStr(subject);
  caps.length = 0;
  const m = regex.exec(s);
  if (m === null) return 0;
  for (let i = 0; i < m.length; i++) caps.push(m[i] ?? '');
  return 1;
}

export function readIndex(target: Value, index: Value): Value {
  const arr = intoArray(target);
  const i = toUsize(index);
  return i < arr.length ? arr[i]! : '';
}

/** `system('name')` through the context; `""` when the host supplies nothing. */
export function readSystem(ctx: EvalContext, name: string): Value {
  return ctx.system?.(name) ?? '';
}

/** `metric('name')`: asked of `ctx.system` as `metric:<name>`; Float 0.0 when unknown. */
export function readMetric(ctx: EvalContext, name: string): Value {
  const v = ctx.system?.(`metric:${name}`);
  if (v === undefined || v === '') return new Float(0);
  return typeof v === 'number' ? new Float(v) : v;
}

function compileNode(e: Expr): Compiled {
  switch (e.k) {
    case 'lit': {
      const v = e.value;
      return sync(() => v);
    }
    case 'var': {
      const name = e.name;
      return sync((c) => c.variable(name));
    }
    case 'global': {
      const name = e.name;
      return sync((c) => c.global(name));
    }
    case 'capture': {
      const i = e.index;
      return sync((_c, k) => k[i] ?? '');
    }
    case 'system': {
      const name = e.name;
      return sync((c) => readSystem(c, name));
    }
    case 'metric': {
      const name = e.name;
      return sync((c) => readMetric(c, name));
    }
    case 'array':
      return compileArray(e.items.map(compileNode));
    case 'index': {
      const t = compileNode(e.target);
      const i = compileNode(e.index);
      if (t.sync && i.sync) {
        const tf = t.f;
        const xf = i.f;
        return sync((c, k) => readIndex(tf(c, k), xf(c, k)));
      }
      const tf = t.f;
      const xf = i.f;
      return asyncC(async (c, k) => readIndex(await tf(c, k), await xf(c, k)));
    }
    case 'unary': {
      const o = compileNode(e.operand);
      const op = e.op === '!' ? opNot : opNeg;
      if (o.sync) {
        const of = o.f;
        return sync((c, k) => op(of(c, k)));
      }
      const of = o.f;
      return asyncC(async (c, k) => op(await of(c, k)));
    }
    case 'binary':
      return compileBinary(e.op, compileNode(e.left), compileNode(e.right));
    case 'matches': {
      const s = compileNode(e.subject);
      const re = e.regex;
      if (s.sync) {
        const sf = s.f;
        return sync((c, k) => runMatches(re, sf(c, k), k));
      }
      const sf = s.f;
      return asyncC(async (c, k) => runMatches(re, await sf(c, k), k));
    }
    case 'call':
      return compileCall(e, e.args.map(compileNode));
  }
}

function compileArray(items: Compiled[]): Compiled {
  if (items.every((i) => i.sync)) {
    const fs = items.map((i) => i.f as SyncFn);
    if (fs.length === 0) return sync(() => []);
    return sync((c, k) => {
      const out: Value[] = new Array<Value>(fs.length);
      for (let i = 0; i < fs.length; i++) out[i] = fs[i]!(c, k);
      return out;
    });
  }
  const fs = items.map((i) => i.f);
  return asyncC(async (c, k) => {
    const out: Value[] = [];
    for (const f of fs) out.push(await f(c, k));
    return out;
  });
}

function compileBinary(op: string, l: Compiled, r: Compiled): Compiled {
  if (l.sync && r.sync) {
    const lf = l.f;
    const rf = r.f;
    if (op === '&&') {
      return sync((c, k) => {
        const a = lf(c, k);
        if (!toBool(a)) return a;
        return toBool(rf(c, k)) ? 1 : 0;
      });
    }
    if (op === '||') {
      return sync((c, k) => {
        const a = lf(c, k);
        if (toBool(a)) return a;
        return toBool(rf(c, k)) ? 1 : 0;
      });
    }
    const fn = BINARY_OPS[op]!;
    return sync((c, k) => {
      const a = lf(c, k);
      return fn(a, rf(c, k));
    });
  }
  const lf = l.f;
  const rf = r.f;
  if (op === '&&' || op === '||') {
    const stopOn = op === '||';
    return asyncC(async (c, k) => {
      const a = await lf(c, k);
      if (toBool(a) === stopOn) return a;
      return toBool(await rf(c, k)) ? 1 : 0;
    });
  }
  const fn = BINARY_OPS[op]!;
  return asyncC(async (c, k) => {
    const a = await lf(c, k);
    return fn(a, await rf(c, k));
  });
}

function compileCall(e: Extract<Expr, { k: 'call' }>, args: Compiled[]): Compiled {
  const def = e.def;
  if (!def.async && args.every((a) => a.sync)) {
    const fn = def.fn;
    const fs = args.map((a) => a.f as SyncFn);
    // Fixed-arity fast paths avoid a per-call map closure.
    if (fs.length === 1) {
      const a0 = fs[0]!;
      return sync((c, k) => fn([a0(c, k)], c));
    }
    if (fs.length === 2) {
      const a0 = fs[0]!;
      const a1 = fs[1]!;
      return sync((c, k) => {
        const x = a0(c, k);
        return fn([x, a1(c, k)], c);
      });
    }
    return sync((c, k) => {
      const vals: Value[] = [];
      for (const f of fs) vals.push(f(c, k));
      return fn(vals, c);
    });
  }
  const fs = args.map((a) => a.f);
  return asyncC(async (c, k) => {
    const vals: Value[] = [];
    for (const f of fs) vals.push(await f(c, k));
    return def.fn(vals, c);
  });
}

/** Wraps compiled closures into the {@link CompiledExpression} contract. */
function wrap(source: string, c: Compiled): CompiledExpression {
  if (c.sync) {
    const f = c.f;
    return {
      source,
      isAsync: false,
      evalSync: (ctx, captures) => f(ctx, captures ?? []),
      evalAsync: (ctx, captures) => {
        try {
          return Promise.resolve(f(ctx, captures ?? []));
        } catch (e) {
          return Promise.reject(e);
        }
      },
    };
  }
  const f = c.f;
  return {
    source,
    isAsync: true,
    evalSync: () => {
      throw new Error(`expression needs evalAsync (it calls a store or DNS function): ${source}`);
    },
    evalAsync: (ctx, captures) => f(ctx, captures ?? []),
  };
}

/** Compiles an already resolved tree (used by if-blocks and benchmarks). */
export function compileResolved(source: string, tree: Expr): CompiledExpression {
  return wrap(source, compileNode(tree));
}

/**
 * Parses, resolves and compiles an expression into closures.
 *
 * @param source expression text (expression-language.md §1)
 * @param opts allow-lists of the parse context (§3.3)
 * @returns a {@link CompiledExpression}: `evalSync` when `!isAsync`, `evalAsync` always
 * @throws ExprParseError with the problem and its `line:column` (DECISIONS.md D6)
 */
export function compileExpression(source: string, opts: CompileOptions = {}): CompiledExpression {
  const r = resolveExpression(source, opts);
  return compileResolved(source, r.tree);
}
