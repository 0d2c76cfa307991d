/**
 * Public face of the expression language: parse, compile (to closures), interpret (reference),
 * if-blocks, the name tables, the value model and the vectors' typed JSON.
 */
export { MAX_SOURCE_LENGTH, MAX_TREE_DEPTH } from '../../grammar/index.js';
// MAX_NESTING is the grammar's (grammar/parser.ts), re-exported with the other size limits.
export { MAX_NESTING, MAX_VALUE_CHARS, MAX_ARRAY_ELEMENTS, FOLD_BUDGET } from './limits.js';
export type { Node as ExprNode } from '../../grammar/index.js';
export { compileExpression, compileResolved, type Captures } from './compile.js';
export { parseExpression, resolveExpression, type Expr, type ResolvedExpression } from './resolve.js';
export { compileIfBlock, normalizeMatch, type IfBlockInput, type MatchInput } from './if-block.js';
export { interpretExpression, type InterpretedExpression } from './interpret.js';
export * from './types.js';
export * from './value.js';
export * from './variables.js';
export { BINARY_OPS, opAdd, opSub, opMul, opDiv, opNeg, opNot } from './ops.js';
export { encodeValue, decodeValue, sameEncoded, type EncodedValue, type EncodedResult } from './codec.js';
export { runVector, vectorContext, type ExprVector, type VectorStore } from './vectors.js';
export { FUNCTIONS } from './functions/index.js';
export { RegexError, RegexWorkError, DEFAULT_REGEX_WORK_LIMIT, MAX_PROGRAM_COST } from './regex.js';
export {
  DEFAULT_REGEX_CACHE_BYTES, MIN_REGEX_CACHE_BYTES, setRegexCacheBudget, regexCacheStats, clearRegexCaches, type RegexCacheStats,
} from './regex-cache.js';
