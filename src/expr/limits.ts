/**
 * Size limits of the expression language (docs/expression-language.md, "White space, errors,
 * limits"). They exist so that no rule text and no message can make one evaluation take seconds
 * or gigabytes; each is far above what a rule over real mail needs.
 */
import { ExprEvalError } from './types.js';

/** Deepest accepted nesting: the grammar's limit (grammar/parser.ts), re-exported with the others. */
export { MAX_NESTING } from '../../grammar/index.js';

/**
 * Longest string one operation may build at run time, in UTF-16 code units (64 Mi, 128 MB): more
 * than the whole text of a message at the server's default 50 MiB size limit, so `body.raw + 'x'`
 * still works. Enforced where a string can grow beyond its inputs: `+` and the CRLF join of an
 * array converted to a string.
 */
export const MAX_VALUE_CHARS = 64 * 1024 * 1024;

/**
 * Most elements one operation may build at run time (1 Mi). A 2 MB text body split on spaces has
 * about 300 Ki words; reaching the limit by the hostile `split(split(…, ''), '')` already costs
 * about a second, so it is not higher. Enforced by `+` on arrays and by `split`, `rsplit`, `split_n`,
 * `split_words` and `lines`.
 */
export const MAX_ARRAY_ELEMENTS = 1024 * 1024;

/**
 * Largest value constant folding keeps, in characters plus array elements (nested arrays
 * counted). A larger constant stays an expression evaluated per call (and subject to the run-time
 * limits above), so compiling never materialises a huge value.
 */
export const FOLD_BUDGET = 65536;

/**
 * Throws the error of a value over a run-time limit; the engine reports it as that rule's error.
 * @throws ExprEvalError always, e.g. `value too large: a string of 70000000 characters (limit 67108864)`
 */
export function tooLarge(what: string, size: number, limit: number): never {
  throw new ExprEvalError(`value too large: ${what} of ${size} ${what === 'a string' ? 'characters' : 'elements'} (limit ${limit})`);
}

/**
 * Returns `arr` unchanged when it has at most MAX_ARRAY_ELEMENTS elements.
 * @throws ExprEvalError (via {@link tooLarge}) otherwise
 */
export function checkedLength<T>(arr: T[]): T[] {
  if (arr.length > MAX_ARRAY_ELEMENTS) tooLarge('an array', arr.length, MAX_ARRAY_ELEMENTS);
  return arr;
}

/**
 * Size of a value in characters plus elements (nested arrays counted), stopping early once over
 * `budget`; returns a number > budget in that case.
 */
export function sizeOver(v: unknown, budget: number): number {
  let size = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0 && size <= budget) {
    const x = stack.pop();
    if (typeof x === 'string') size += x.length;
    else if (Array.isArray(x)) {
      size += x.length;
      for (const el of x) if (typeof el === 'string' || Array.isArray(el)) stack.push(el);
    }
  }
  return size;
}

/** Freezes an array and every array inside it, so a shared constant can never be changed. */
export function deepFreeze<T>(v: T): T {
  if (Array.isArray(v)) {
    for (const el of v) deepFreeze(el);
    Object.freeze(v);
  }
  return v;
}
