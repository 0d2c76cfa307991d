/**
 * The end of a `SpamEngine`'s life: what `close()` releases, and the error `classify` rejects with
 * afterwards (docs/library.md, "Closing an engine").
 *
 * Ownership: the engine's options hand their parts over to it, so `close()` releases what the engine
 * holds when it runs: every store in `engine.lookups` (the ones `engineOptionsFromBundle` or
 * `buildLookupMap` put in the map, the ones `setLookup` added, the map's default store), the
 * `classifier` (its `close()`, when it has one: `SpamClassifier` closes its model store), and the DNS
 * resolver's queries in flight (its `cancel()`, when it has one: `SystemResolver`; the resolver stays
 * usable). This is the rule the CLI, the pool's worker threads and `engineOptionsFromBundle` followed
 * before `close()` existed (each closed `engine.lookups`), and the engine opens nothing itself: a
 * rule that closed only what the engine opened would release nothing. A part shared with another
 * engine (a resolver and its cache kept across a rule reload) is named in `keep`.
 */
import type { EngineClassifier } from '../classifier/classifier.js';
import type { Resolver } from '../dns/types.js';
import type { LookupMap } from '../lookup/memory.js';

/** A part of an engine that `close()` releases unless it is in {@link CloseOptions.keep}. */
export type EnginePart = 'lookups' | 'classifier' | 'dns';

export interface CloseOptions {
  /**
   * Parts to leave as they are, because another engine uses them too: `'dns'` (no `cancel()`, which
   * would also fail that engine's queries in flight), `'classifier'`, `'lookups'` (the whole map).
   */
  keep?: readonly EnginePart[];
}

/**
 * Thrown by `SpamEngine.classify` (a rejection) and `SpamEngine.setLookup` once `close()` has been
 * called: the stores are closed or closing, so a verdict would be made without them.
 */
export class EngineClosedError extends Error {
  constructor(what: string) {
    super(`${what}: the engine is closed (SpamEngine.close() was called); build a new SpamEngine`);
    this.name = 'EngineClosedError';
  }
}

/** What an engine holds that outlives a message. */
export interface EngineParts {
  readonly lookups: LookupMap;
  readonly classifier: EngineClassifier | undefined;
  readonly dns: Resolver;
}

/**
 * Releases the parts not kept: cancels the resolver's queries, closes the stores and the classifier
 * (at once, each independently). Every part is attempted; then rejects with the classifier's error
 * if its `close()` failed (`LookupMap.close()` already settles every store, failed or not).
 */
export async function releaseParts(parts: EngineParts, keep: readonly EnginePart[] = []): Promise<void> {
  const kept = new Set<EnginePart>(keep);
  // First, so that nothing waits on c-ares retries (up to the resolver's timeoutMs) meanwhile.
  if (!kept.has('dns')) parts.dns.cancel?.();
  const closing: Promise<void>[] = [];
  if (!kept.has('lookups')) closing.push(parts.lookups.close());
  if (!kept.has('classifier') && parts.classifier?.close !== undefined) closing.push(parts.classifier.close());
  const failed = (await Promise.allSettled(closing)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
