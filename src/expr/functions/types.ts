/**
 * Contract of the built-in function library (docs/expression-language.md). The compiler checks
 * arity at parse time and calls `fn` with the evaluated arguments, left to right.
 */
import type { EvalContext } from '../types.js';
import type { Value } from '../value.js';

export interface SyncFunctionDef {
  readonly arity: number;
  readonly async: false;
  /**
   * Pure: never throws for any argument values, except the ExprEvalError of a result over the size
   * limits of limits.ts (the splitting functions, and any function converting a huge array to text).
   */
  fn(args: Value[], ctx: EvalContext): Value;
}

export interface AsyncFunctionDef {
  readonly arity: number;
  readonly async: true;
  /** Store/DNS/directory functions; rejects with ExprEvalError on failure. */
  fn(args: Value[], ctx: EvalContext): Promise<Value>;
}

export type FunctionDef = SyncFunctionDef | AsyncFunctionDef;
