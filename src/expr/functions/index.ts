/** The built-in function table (expression-language.md §4). Placeholder until the library lands. */
import type { FunctionDef } from './types.js';
export type { FunctionDef, SyncFunctionDef, AsyncFunctionDef } from './types.js';

/** Name → definition for all 51 named functions (not the special forms `matches`/`system`/`metric`). */
export const FUNCTIONS: Readonly<Record<string, FunctionDef>> = {};
