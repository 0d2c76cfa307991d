import { FUNCTIONS } from '../../../src/expr/functions/index.js';
import type { EvalContext } from '../../../src/expr/types.js';
import type { Value } from '../../../src/expr/value.js';

export const ctx: EvalContext = { variable: () => '', global: () => 0 };

/** Calls a synchronous built-in with already-built Values. */
export function call(name: string, ...args: Value[]): Value {
  const def = FUNCTIONS[name];
  if (def === undefined || def.async) throw new Error(`${name} is not a sync function`);
  if (def.arity !== args.length) throw new Error(`${name} takes ${def.arity} arguments`);
  return def.fn(args, ctx);
}

/** Calls an async built-in with a context. */
export async function callAsync(c: EvalContext, name: string, ...args: Value[]): Promise<Value> {
  const def = FUNCTIONS[name];
  if (def === undefined || !def.async) throw new Error(`${name} is not an async function`);
  if (def.arity !== args.length) throw new Error(`${name} takes ${def.arity} arguments`);
  return def.fn(args, c);
}
