/**
 * The facade's links to the rule engine and the lookup-store adapters. Both are loaded on demand so
 * the facade (and `classify --db`) works even where an adapter module is absent, and so `spamrule
 * token` never loads the engine.
 */
import type { Problem } from './schema.js';
import type { Data, ObjectType, Validators } from './objects.js';
import { compareIds } from './ids.js';

/** What the server needs from `SpamEngine` (src/engine): rule reload and the lookup namespace map. */
export interface EngineLike {
  loadRules(rules: Record<string, unknown>[]): unknown;
  lookups?: { set(namespace: string, store: unknown): unknown; delete(namespace: string): unknown; get?(namespace: string): unknown };
  /** Replaces the SpamTag table (`SpamEngine.loadTags`). */
  loadTags?(tags: Record<string, unknown>[]): unknown;
  /**
   * Replaces the remote lists (`HttpLookup` objects) the engine serves. `SpamEngine` has none of its
   * own (`classify --db` reads them with `loadManagedRuleSet`); the mail-path pool of `spamrule serve` does.
   */
  loadHttpLookups?(lists: Record<string, unknown>[]): unknown;
  /** The analysis configuration (`SpamEngine.analysis`): DNSBL servers and file extensions live there. */
  analysis?: Record<string, unknown> | undefined;
}

/** Stored objects of a type in engine input shape, in creation (id) order. */
export function objectsForEngine(objects: Map<string, Data>): Data[] {
  return [...objects].sort((a, b) => compareIds(a[0], b[0])).map(([, d]) => d);
}

/**
 * Hands a registry type's objects to the running engine: SpamTags become its score table, DNSBL
 * servers and file extensions its analysis configuration, HttpLookups its remote lists (when the
 * engine takes them: {@link EngineLike.loadHttpLookups}).
 */
export function applyRegistryObjects(engine: EngineLike, type: ObjectType, objects: Data[]): void {
  if (type === 'SpamTag') engine.loadTags?.(objects);
  else if (type === 'SpamDnsblServer' && engine.analysis !== undefined) engine.analysis = { ...engine.analysis, dnsblServers: objects };
  else if (type === 'SpamFileExtension' && engine.analysis !== undefined) engine.analysis = { ...engine.analysis, fileExtensions: objects };
  else if (type === 'HttpLookup') engine.loadHttpLookups?.(objects);
}

interface EngineModule {
  SpamEngine: new () => EngineLike;
  validateCondition(scope: string, condition: unknown): Problem[];
  validateDnsblTag(tag: unknown): Problem[];
}

interface LookupModule {
  parseLookupStoreConfig?: (json: unknown) => { ok: true } | { ok: false; errors: Problem[] };
  createLookupStore?: (namespace: string, config: unknown) => { close(): Promise<void> } | Promise<{ close(): Promise<void> }>;
}

// Variable specifiers keep TypeScript from type-checking (and tsc/vite from eagerly bundling) the
// engine into modules that only need the facade.
const ENGINE_SPEC = '../engine/index.js';
const LOOKUP_SPEC = '../lookup/index.js';

/** The engine module, or the reason it could not be loaded (the server then runs without one). */
export async function loadEngineModule(): Promise<EngineModule | Error> {
  try {
    return (await import(ENGINE_SPEC)) as EngineModule;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

export async function loadLookupModule(): Promise<LookupModule> {
  try {
    return (await import(LOOKUP_SPEC)) as LookupModule;
  } catch {
    return {};
  }
}

/**
 * The validators from the engine (Stalwart's compile-on-write): SpamRule conditions and SpamDnsblServer
 * tags. Without the engine, none: objects are then checked for shape only.
 */
export function engineValidators(engine: EngineModule | Error): Required<Pick<Validators, 'condition' | 'dnsblTag'>> {
  if (engine instanceof Error) return { condition: () => [], dnsblTag: () => [] };
  return { condition: (scope, condition) => engine.validateCondition(scope, condition), dnsblTag: (tag) => engine.validateDnsblTag(tag) };
}

/** Stored SpamRules in engine input shape, in creation (id) order, the engine's tie-breaker. */
export function rulesForEngine(objects: Map<string, Data>): Record<string, unknown>[] {
  return [...objects].sort((a, b) => compareIds(a[0], b[0])).map(([id, d]) => ({ id, ...d }));
}
