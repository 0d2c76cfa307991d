/** Lookup stores: the interface the evaluator calls, in-memory lists, and (later) database adapters. */
export * from './types.js';
export { StaticLookupList, MemoryStore, LookupMap, type StaticEntry } from './memory.js';
export { Glob, isGlob } from './glob.js';
