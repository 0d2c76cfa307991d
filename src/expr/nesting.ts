/**
 * A last-resort conversion of a stack overflow into a parse error, behind the grammar's nesting
 * limit (MAX_NESTING, grammar/parser.ts), so that one over-deep expression can never take a whole
 * rule set down, even for a caller that is itself deep in the stack.
 */
import { isStackOverflow } from '../util/index.js';
import { ExprParseError } from './types.js';

/**
 * Runs `f`, turning a stack overflow into an ExprParseError.
 * @throws ExprParseError `expression nested too deeply (out of stack)` on RangeError; rethrows others
 */
export function stackSafe<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (isStackOverflow(e)) {
      throw new ExprParseError('expression nested too deeply (out of stack)');
    }
    throw e;
  }
}
