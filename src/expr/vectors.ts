/**
 * Runs vectors in the format of `expr-vectors.json` (docs/expression-language.md): builds the
 * evaluation context from `vars`, `globals` and `store`, compiles with the vector's allow-lists,
 * evaluates, and encodes the result. Used by the conformance test and `spamrule eval --batch`.
 */
import { LookupMap, MemoryStore, StaticLookupList } from '../lookup/memory.js';
import { decodeValue, encodeValue, type EncodedResult } from './codec.js';
import { compileExpression } from './compile.js';
import { compileIfBlock, type IfBlockInput } from './if-block.js';
import { interpretExpression } from './interpret.js';
import { ExprEvalError, ExprParseError, type CompileOptions, type EvalContext } from './types.js';
import type { Value } from './value.js';

export interface ExprVector {
  id: string;
  kind?: 'expression' | 'ifBlock';
  expr: string | IfBlockInput;
  vars?: Record<string, unknown>;
  globals?: Record<string, unknown>;
  allowedVariables?: string[];
  allowedConstants?: string[];
  store?: Record<string, VectorStore>;
  expected?: EncodedResult;
}

/** A store description: writable (`keys`/`counters`), a static key set or map (`entries`), or `directory`. */
export interface VectorStore {
  kind?: string;
  keys?: Record<string, string>;
  counters?: Record<string, number>;
  entries?: string[] | Record<string, string>;
  domains?: string[];
  accounts?: string[];
}

/** Builds a fresh context for one vector (fresh stores: `key_set` must not leak between vectors). */
export async function vectorContext(v: Pick<ExprVector, 'vars' | 'globals' | 'store'>): Promise<EvalContext> {
  const vars = new Map<string, Value>(Object.entries(v.vars ?? {}).map(([k, x]) => [k, decodeValue(x)]));
  const globals = new Map<string, Value>(Object.entries(v.globals ?? {}).map(([k, x]) => [k, decodeValue(x)]));
  const lookups = new LookupMap();
  const ctx: EvalContext = {
    variable: (n) => vars.get(n) ?? '',
    global: (n) => globals.get(n) ?? 0,
    lookups,
  };
  for (const [ns, s] of Object.entries(v.store ?? {})) {
    if (ns === 'directory') {
      const domains = new Set(s.domains ?? []);
      const accounts = new Set(s.accounts ?? []);
      ctx.isLocalDomain = (d) => domains.has(d);
      ctx.isLocalAddress = (a) => accounts.has(a);
    } else if (s.entries !== undefined) {
      const entries = Array.isArray(s.entries) ? s.entries : Object.entries(s.entries).map(([key, value]) => ({ key, value }));
      lookups.set(ns, new StaticLookupList(ns, entries));
    } else {
      const m = new MemoryStore(ns);
      for (const [k, x] of Object.entries(s.keys ?? {})) await m.keySet(k, x);
      for (const [k, n] of Object.entries(s.counters ?? {})) await m.counterIncr(k, n);
      lookups.set(ns, m);
    }
  }
  return ctx;
}

function errorResult(e: unknown): EncodedResult {
  if (e instanceof ExprParseError) return { parseError: e.message };
  if (e instanceof ExprEvalError) return { evalError: e.message };
  throw e;
}

/**
 * Evaluates one vector with the closure compiler (or, for expressions, the reference interpreter
 * when `engine` is `'interpret'`) and returns the encoded result. Compile errors become
 * `{"parseError"}` (if-block errors as `path: message`), store failures `{"evalError"}`, and the
 * empty if-block, which yields no value (spec §5.3), `{"evalError": "empty if-block: no value"}`.
 * @throws TypeError for a vector whose `vars`/`globals` cannot be decoded
 */
export async function runVector(v: ExprVector, engine: 'compile' | 'interpret' = 'compile'): Promise<EncodedResult> {
  const opts: CompileOptions = { allowedVariables: v.allowedVariables, allowedConstants: v.allowedConstants };
  const ctx = await vectorContext(v);
  if (typeof v.expr === 'string') {
    try {
      const c = engine === 'compile' ? compileExpression(v.expr, opts) : interpretExpression(v.expr, opts);
      return encodeValue(c.isAsync ? await c.evalAsync(ctx) : c.evalSync(ctx));
    } catch (e) {
      return errorResult(e);
    }
  }
  const { block, errors } = compileIfBlock(v.expr, opts);
  if (block === undefined) return { parseError: errors.map((e) => `${e.path}: ${e.message}`).join('; ') };
  try {
    const r = await block.evalAsync(ctx);
    return r === undefined ? { evalError: 'empty if-block: no value' } : encodeValue(r.value);
  } catch (e) {
    return errorResult(e);
  }
}
