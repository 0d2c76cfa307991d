/**
 * Closure compiler (docs/compiler.md): the resolved tree is turned ONCE into nested
 * JavaScript closures, so evaluation runs no tree walk and no text. An expression without async
 * functions compiles to plain synchronous closures; one with a store/DNS call compiles its async
 * branches to `async` closures while every synchronous subtree stays synchronous.
 *
 * Evaluation order is Stalwart's: left to right, all arguments before the call, `&&`/`||`
 * short-circuiting and then returning the LEFT operand itself (spec §1.6), other operators strict.
 */
import { deepFreeze, FOLD_BUDGET, sizeOver } from './limits.js';
import { BINARY_OPS, opNeg, opNot } from './ops.js';
import { flattenChain, optimizeTree } from './optimize.js';
import { stackSafe } from './nesting.js';
import { resolveExpression, type Expr } from './resolve.js';
import { DEFAULT_REGEX_WORK_LIMIT, type RustRegex } from './regex.js';
import { isSyncTree, slotScopeFor, usesCaptures, type SlotScope } from './slots.js';
import { specializeKeyExists, specializeSyncCall, type AsyncFn, type Captures, type SyncFn } from './specialize.js';
import type { CompiledExpression, CompileOptions, EvalContext } from './types.js';
import { Float, intoArray, toBool, toStr, toUsize, type Value } from './value.js';

/**
 * `AsyncFn` is the closure of a subtree that calls an async function: it returns a Promise only
 * when it really had to wait, and a plain value otherwise (e.g. `$X && key_exists(…)` with `$X`
 * false), so no microtask is spent on the paths that never reach a store.
 */
export type { AsyncFn, Captures, SyncFn };
/** `lit` is set when the node is a compile-time constant (folded), so parents can specialise. */
/** What an async closure gets from a child: a value, or a promise only when the child awaited. */
type V = Value | Promise<Value>;

/** Applies `f` now to a value, or later to a promise's value. */
function then(v: V, f: (x: Value) => V): V {
  return v instanceof Promise ? v.then(f) : f(v);
}
/** `varName` is set when the node is a plain variable read, so parents can read it themselves. */
type Compiled =
  | { sync: true; f: SyncFn; lit?: { value: Value }; varName?: string }
  | { sync: false; f: AsyncFn; lit?: undefined; varName?: undefined };

const sync = (f: SyncFn): Compiled => ({ sync: true, f });
const literal = (value: Value): Compiled => ({ sync: true, f: () => value, lit: { value } });

/** A context for constant folding: pure nodes never read it, so any access is a bug. */
const NO_CONTEXT: EvalContext = {
  variable: () => {
    throw new Error('constant folding read a variable');
  },
  global: () => {
    throw new Error('constant folding read a global');
  },
};

/**
 * Constant folding: a pure node (operator, index, array, sync function; all pure per spec §4)
 * whose operands are all literals is evaluated once at compile time. A value over FOLD_BUDGET is
 * not kept (the node is evaluated per call, under the run-time size limits), so no parent folds
 * either and compiling never builds a huge value. Folded arrays are shared between evaluations, so
 * they are frozen deeply: freezing costs once per compile, where copying would cost per evaluation.
 */
function fold(c: Compiled, children: Compiled[]): Compiled {
  if (!c.sync || !children.every((x) => x.lit !== undefined)) return c;
  try {
    const v = c.f(NO_CONTEXT, []);
    return sizeOver(v, FOLD_BUDGET) > FOLD_BUDGET ? c : literal(deepFreeze(v));
  } catch {
    return c;
  }
}
const asyncC = (f: AsyncFn): Compiled => ({ sync: false, f });

/**
 * `$N` / system / metric / matches helpers shared with the interpreter.
 * `matches`: throws RegexWorkError (an ExprEvalError) for a search over the context's work limit
 * (`EvalContext.regexWorkLimit`, default DEFAULT_REGEX_WORK_LIMIT), before it starts; the capture
 * buffer is then left as it was.
 */
export function runMatches(regex: RustRegex, subject: Value, caps: Captures, ctx: EvalContext): Value {
  const s = toStr(subject);
  const m = regex.exec(s, ctx.regexWorkLimit ?? DEFAULT_REGEX_WORK_LIMIT);
  caps.length = 0;
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

/** What compilation of one tree shares: the variable slots, when the evaluation is synchronous. */
interface CompileEnv {
  scope: SlotScope | undefined;
}

function compileVariable(name: string, env: CompileEnv): Compiled {
  const scope = env.scope;
  if (scope === undefined || !scope.names.has(name)) return { sync: true, f: (c) => c.variable(name), varName: name };
  const slot = scope.slot(name);
  return sync((c) => {
    if (slot.epoch !== scope.epoch) {
      slot.value = c.variable(name);
      slot.epoch = scope.epoch;
    }
    return slot.value;
  });
}

function compileNode(e: Expr, env: CompileEnv): Compiled {
  switch (e.k) {
    case 'lit':
      return literal(deepFreeze(e.value));
    case 'var':
      return compileVariable(e.name, env);
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
    case 'array': {
      const items = e.items.map((x) => compileNode(x, env));
      return fold(compileArray(items), items);
    }
    case 'index': {
      const t = compileNode(e.target, env);
      const i = compileNode(e.index, env);
      if (t.sync && i.sync) {
        const tf = t.f;
        const xf = i.f;
        if (i.lit !== undefined) {
          const iv = i.lit.value;
          return fold(sync((c, k) => readIndex(tf(c, k), iv)), [t, i]);
        }
        return fold(sync((c, k) => readIndex(tf(c, k), xf(c, k))), [t, i]);
      }
      const tf = t.f;
      const xf = i.f;
      return asyncC((c, k) => then(tf(c, k), (t) => then(xf(c, k), (x) => readIndex(t, x))));
    }
    case 'unary': {
      const o = compileNode(e.operand, env);
      const op = e.op === '!' ? opNot : opNeg;
      if (o.sync) {
        const of = o.f;
        return fold(sync((c, k) => op(of(c, k))), [o]);
      }
      const of = o.f;
      return asyncC((c, k) => then(of(c, k), op));
    }
    case 'binary': {
      if (e.op === '&&' || e.op === '||') {
        const operands = flattenChain(e.op, e);
        // Tag logic (`$A && ($B || $C)`) is most of the public rule set: read the globals directly.
        if (operands.every((x) => x.k === 'global')) return compileGlobalChain(e.op, operands.map((x) => (x as { name: string }).name));
        const chain = operands.map((x) => compileNode(x, env));
        if (chain.every((x) => x.sync)) return fold(compileLogicalChain(e.op, chain.map((x) => x.f as SyncFn)), chain);
      }
      const l = compileNode(e.left, env);
      const r = compileNode(e.right, env);
      return fold(compileBinary(e.op, l, r), [l, r]);
    }
    case 'matches': {
      const s = compileNode(e.subject, env);
      const re = e.regex;
      if (s.sync) {
        const sf = s.f;
        return sync((c, k) => runMatches(re, sf(c, k), k, c));
      }
      const sf = s.f;
      return asyncC((c, k) => then(sf(c, k), (v) => runMatches(re, v, k, c)));
    }
    case 'call': {
      const args = e.args.map((x) => compileNode(x, env));
      return e.def.async ? compileCall(e, args) : fold(compileCall(e, args), args);
    }
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
  return asyncC((c, k) => evalList(fs, c, k));
}

/**
 * Evaluates closures left to right into a list, synchronously until one returns a promise; from
 * there on the rest waits for it (Stalwart evaluates arguments in order, `key_set` before `key_get`).
 */
function evalList(fs: AsyncFn[], c: EvalContext, k: Captures): Value[] | Promise<Value[]> {
  const out: Value[] = [];
  for (let i = 0; i < fs.length; i++) {
    const v = fs[i]!(c, k);
    if (v instanceof Promise) return finishList(fs, c, k, out, i, v);
    out.push(v);
  }
  return out;
}

async function finishList(fs: AsyncFn[], c: EvalContext, k: Captures, out: Value[], i: number, p: Promise<Value>): Promise<Value[]> {
  out.push(await p);
  for (let j = i + 1; j < fs.length; j++) {
    const v = fs[j]!(c, k);
    out.push(v instanceof Promise ? await v : v);
  }
  return out;
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
    if (r.lit !== undefined) {
      const rv = r.lit.value;
      // The commonest rule shape: `name_lower == 'x-mailer'`.
      if (typeof rv === 'string' && (op === '==' || op === '!=')) {
        const yes = op === '==' ? 1 : 0;
        const no = 1 - yes;
        const name = l.varName;
        if (name !== undefined) {
          return sync((c) => {
            const a = c.variable(name);
            return typeof a === 'string' ? (a === rv ? yes : no) : fn(a, rv);
          });
        }
        return sync((c, k) => {
          const a = lf(c, k);
          return typeof a === 'string' ? (a === rv ? yes : no) : fn(a, rv);
        });
      }
      return sync((c, k) => fn(lf(c, k), rv));
    }
    if (l.lit !== undefined) {
      const lv = l.lit.value;
      return sync((c, k) => fn(lv, rf(c, k)));
    }
    return sync((c, k) => {
      const a = lf(c, k);
      return fn(a, rf(c, k));
    });
  }
  const lf = l.f;
  const rf = r.f;
  if (op === '&&' || op === '||') {
    const stopOn = op === '||';
    return asyncC((c, k) => then(lf(c, k), (a) => (toBool(a) === stopOn ? a : then(rf(c, k), (b) => (toBool(b) ? 1 : 0)))));
  }
  const fn = BINARY_OPS[op]!;
  return asyncC((c, k) => then(lf(c, k), (a) => then(rf(c, k), (b) => fn(a, b))));
}

/**
 * A flattened `&&`/`||` chain with Stalwart's results: `((a || b) || c)` returns `a` itself when
 * `a` is truthy, otherwise Integer 1/0 from the first truthy later operand; `&&` mirrors it
 * (returns `a` when falsy, 0 at the first later falsy operand, else 1).
 */
function compileLogicalChain(op: string, fs: SyncFn[]): Compiled {
  const first = fs[0]!;
  const rest = fs.slice(1);
  const n = rest.length;
  if (n === 1) {
    // `a && b` / `a || b`, the commonest shape (most Header rules): no loop over a closure array.
    const second = rest[0]!;
    const stopOn = op === '||';
    return sync((c, k) => {
      const a = first(c, k);
      if (toBool(a) === stopOn) return a;
      return toBool(second(c, k)) ? 1 : 0;
    });
  }
  if (op === '||') {
    return sync((c, k) => {
      const a = first(c, k);
      if (toBool(a)) return a;
      for (let i = 0; i < n; i++) if (toBool(rest[i]!(c, k))) return 1;
      return 0;
    });
  }
  return sync((c, k) => {
    const a = first(c, k);
    if (!toBool(a)) return a;
    for (let i = 0; i < n; i++) if (!toBool(rest[i]!(c, k))) return 0;
    return 1;
  });
}

/** {@link compileLogicalChain} for operands that are all `$TAG` globals. */
function compileGlobalChain(op: string, names: string[]): Compiled {
  const first = names[0]!;
  const rest = names.slice(1);
  const n = rest.length;
  if (op === '||') {
    return sync((c) => {
      const a = c.global(first);
      if (toBool(a)) return a;
      for (let i = 0; i < n; i++) if (toBool(c.global(rest[i]!))) return 1;
      return 0;
    });
  }
  return sync((c) => {
    const a = c.global(first);
    if (!toBool(a)) return a;
    for (let i = 0; i < n; i++) if (!toBool(c.global(rest[i]!))) return 0;
    return 1;
  });
}

function compileCall(e: Extract<Expr, { k: 'call' }>, args: Compiled[]): Compiled {
  const def = e.def;
  const special = specializeSyncCall(e.name, def, args);
  if (special !== undefined) return sync(special);
  if (e.name === 'key_exists') {
    const ke = specializeKeyExists(def, args);
    if (ke !== undefined) return asyncC(ke);
  }
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
  const fn = def.fn as (args: Value[], ctx: EvalContext) => V;
  return asyncC((c, k) => {
    const vals = evalList(fs, c, k);
    return vals instanceof Promise ? vals.then((v) => fn(v, c)) : fn(vals, c);
  });
}

/**
 * A compiled expression with one more entry point than the contract: `evalMaybe` returns a plain
 * value when nothing had to wait and a Promise only when a store call did (if-blocks use it so a
 * rule whose store call is short-circuited away costs no promise).
 */
export interface MaybeAsyncExpression extends CompiledExpression {
  evalMaybe(ctx: EvalContext, captures?: Captures): Value | Promise<Value>;
  /** Set when the whole expression folded to a scalar constant (e.g. `false`, `'TAG'`). */
  readonly constant?: { readonly value: Value };
  /** Whether evaluation reads or writes the capture buffer (`matches`, `$N`). */
  readonly usesCaptures: boolean;
}

/**
 * How a compiled tree is wrapped: `scope` are its variable slots, `ownsEpoch` whether each call
 * of the wrapper starts a new evaluation of them (false when an if-block does that for all its
 * expressions), `captures` whether the tree touches the capture buffer at all.
 */
interface WrapOptions {
  scope: SlotScope | undefined;
  ownsEpoch: boolean;
  captures: boolean;
}

/** Wraps compiled closures into the {@link CompiledExpression} contract. */
function wrap(source: string, c: Compiled, w: WrapOptions): MaybeAsyncExpression {
  if (c.lit !== undefined && Array.isArray(c.lit.value)) {
    // A folded array handed to the caller is copied, so callers may keep or change their result.
    const v = c.lit.value;
    c = sync(() => v.slice());
  }
  // Both object literals below have the same property order, so all compiled expressions share one
  // hidden class and the if-block's calls through them stay monomorphic.
  const usesCaptures = w.captures;
  const constant = c.lit !== undefined && !Array.isArray(c.lit.value) ? { value: c.lit.value } : undefined;
  if (c.sync) {
    const f = c.f;
    const scope = w.ownsEpoch ? w.scope : undefined;
    let run: (ctx: EvalContext, captures?: Captures) => Value;
    if (scope !== undefined) {
      run = (ctx, captures) => {
        scope.begin();
        return f(ctx, captures ?? []);
      };
    } else if (!w.captures) {
      // Nothing reads the buffer, so the closure is the entry point itself (one call less).
      run = f as (ctx: EvalContext, captures?: Captures) => Value;
    } else {
      run = (ctx, captures) => f(ctx, captures ?? []);
    }
    return {
      source,
      isAsync: false,
      evalSync: run,
      evalMaybe: run,
      evalAsync: (ctx, captures) => {
        try {
          return Promise.resolve(run(ctx, captures));
        } catch (e) {
          return Promise.reject(e);
        }
      },
      constant,
      usesCaptures,
    };
  }
  const f = c.f;
  return {
    source,
    isAsync: true,
    evalSync: () => {
      throw new Error(`expression needs evalAsync (it calls a store or DNS function): ${source}`);
    },
    evalMaybe: (ctx, captures) => f(ctx, captures ?? []),
    evalAsync: (ctx, captures) => {
      try {
        return Promise.resolve(f(ctx, captures ?? []));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    constant,
    usesCaptures,
  };
}

/**
 * Compiles an already resolved tree (used by if-blocks and benchmarks). The tree is compiled as
 * given: callers run `optimizeTree` first (if-blocks do, with `boolean` for their `if`s).
 *
 * @param scope variable slots shared with other expressions (an if-block's); the caller then
 *   calls `scope.begin()` before each evaluation. Only for synchronous trees; when absent, a
 *   synchronous tree gets its own slots for the variables it reads more than once.
 */
export function compileResolved(source: string, tree: Expr, scope?: SlotScope): MaybeAsyncExpression {
  const syncTree = isSyncTree(tree);
  const own = scope === undefined;
  const s = !syncTree ? undefined : own ? slotScopeFor([tree]) : scope;
  return wrap(source, compileNode(tree, { scope: s }), { scope: s, ownsEpoch: own, captures: usesCaptures(tree) });
}

/**
 * Parses, resolves and compiles an expression into closures.
 *
 * @param source expression text (docs/expression-language.md)
 * @param opts allow-lists of the parse context (§3.3)
 * @returns a {@link CompiledExpression}: `evalSync` when `!isAsync`, `evalAsync` always
 * @throws ExprParseError with the problem and its `line:column` (README.md, deviation D6)
 */
export function compileExpression(source: string, opts: CompileOptions = {}): MaybeAsyncExpression {
  const r = resolveExpression(source, opts);
  return stackSafe(() => compileResolved(source, optimizeTree(r.tree, false)));
}
