/** The expression grammar: lexer, parser and syntax-tree types (README.md, Layout: nothing else). */
export type * from './ast.js';
export { parse, unescapeString, MAX_SOURCE_LENGTH, MAX_NESTING, MAX_TREE_DEPTH } from './parser.js';
export { GrammarError, positionAt, type Position } from './errors.js';
export { WHITE_SPACE_CLASS } from './lexer.js';
