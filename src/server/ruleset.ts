/**
 * The rule material a worker thread needs to build its own `SpamEngine`: plain data only (rules,
 * scores, thresholds, static lists, lookup-store configurations), because engines, compiled
 * closures and database connections cannot cross a thread boundary. Each worker compiles the rules
 * and opens its own store connections from this description.
 */
import { createResolver } from '../dns/index.js';
import { SpamEngine, type EngineOptions } from '../engine/engine.js';
import type { EnginePart } from '../engine/lifecycle.js';
import { bundleAnalysis, type RuleMaterial } from '../engine/from-bundle.js';
import type { SpamRuleInput, SpamTagInput, SpamThresholds } from '../engine/types.js';
import type { AnalysisConfig } from '../analysis/types.js';
import type { HttpLookupInput } from '../lookup/http-list.js';
import { buildLookupMap, type LookupSourceOptions, type PinnedHosts, type StaticEntry } from '../lookup/index.js';
import { liveClassifier } from '../classifier/index.js';

/** A rule set as data. Every field is structured-cloneable (it is posted to worker threads). */
export interface RuleSetSpec {
  rules: readonly SpamRuleInput[];
  /** SpamTag scores (`Score`, `Reject`, `Discard`). */
  tags?: readonly SpamTagInput[];
  thresholds?: SpamThresholds;
  /** Static lookup lists by namespace (MemoryLookupKey entries, `--list NS=FILE`). */
  lists?: ReadonlyMap<string, readonly StaticEntry[]> | readonly (readonly [string, readonly StaticEntry[]])[];
  /**
   * Remote lists (`HttpLookup`), served from their on-disk cache in `listCacheDir` (default: the
   * user's cache folder) and refreshed in the background when stale (each thread refreshes its own).
   */
  httpLookups?: readonly HttpLookupInput[];
  listCacheDir?: string;
  /**
   * Addresses or CIDR ranges the remote lists' downloads may connect to although they are not public
   * (an internal list server, `["10.20.0.0/16"]`); default none: public addresses only.
   */
  listAllowedNetworks?: readonly string[];
  /** Refresh stale remote lists in the background (default true); false serves the cache only. */
  refreshLists?: boolean;
  /**
   * Lookup stores by namespace: an `x:StoreLookup` `store` configuration (src/lookup/config.ts), and for one
   * written over JMAP the addresses its connections are pinned to (src/lookup/store-pins.ts). `notStarted`: the
   * StoreLookup could not be started, and why; `config` is then not read and every lookup of the namespace fails
   * with that reason (`NotStartedStore`).
   */
  stores?: readonly { namespace: string; config: unknown; pinned?: PinnedHosts; notStarted?: string }[];
  /** Values for `system('hostname')` etc. */
  system?: Record<string, string | number>;
  /** The statistical classifier's store (an `x:StoreLookup` `store` configuration; docs/classifier.md). */
  classifier?: unknown;
  /** DNS for the analysis modules, as a `--dns` spec (`system`, `system:SERVER`, `off`, `static:FILE`; src/dns). Default off. */
  dns?: string;
  /**
   * Further `SpamEngine` options, passed through unchanged; they must be structured-cloneable
   * (no functions, no store instances).
   */
  engine?: Omit<EngineOptions, 'rules' | 'tags' | 'thresholds' | 'lookups' | 'system' | 'dns'>;
}

/**
 * A loaded rule bundle (`loadRuleFile`) as the {@link RuleSetSpec} of a `SpamEnginePool`, as
 * `engineOptionsFromBundle` gives it for a `SpamEngine`: rules, scores, static and remote lists,
 * stores, and the DNSBL servers and file-extension table for the analysis (`analysis`: further
 * settings merged with those; `false` runs the rules alone). Add the rest (thresholds, `dns`, …):
 * `new SpamEnginePool({ ...ruleSetSpecFromBundle(bundle), workers: 2 })`.
 */
export function ruleSetSpecFromBundle(bundle: RuleMaterial, analysis: Omit<AnalysisConfig, 'dnsblServers' | 'fileExtensions'> | false = {}): RuleSetSpec {
  const spec: RuleSetSpec = { rules: bundle.rules ?? [], tags: bundle.tags ?? [] };
  if (bundle.lists !== undefined) spec.lists = [...bundle.lists].map(([ns, entries]) => [ns, entries.map((e) => (typeof e === 'string' ? { key: e } : e))] as const);
  if (bundle.httpLookups !== undefined) spec.httpLookups = bundle.httpLookups;
  if (bundle.stores !== undefined) spec.stores = bundle.stores;
  spec.engine = { analysis: bundleAnalysis(bundle, analysis) };
  return spec;
}

/**
 * Builds an engine from a spec. A store whose configuration is refused or cannot be created is
 * reported through `warn` and, as one marked `notStarted`, fails its lookups with the reason
 * (`NotStartedStore`, buildLookupMap).
 * Throws `DnsConfigError` for a bad `dns` spec.
 *
 * `previous`: the engine this one replaces (a rule-set change) and its spec. Its classifier is taken
 * over when the classifier's store configuration is the same, rather than opened again (a model
 * reload per JMAP change, and a first message waiting for it), and so is its DNS resolver (with its
 * cache) when the `dns` spec is the same and not a `static:` file, which may have been edited. Close
 * `previous.engine` with `keep: sharedParts(previous.engine, [engine])`, so that what was taken over
 * stays open.
 */
export function buildEngineFromSpec(spec: RuleSetSpec, warn: (msg: string) => void = () => {}, previous?: { spec: RuleSetSpec; engine: SpamEngine }): SpamEngine {
  const lookupOpts: LookupSourceOptions = { autoRefresh: spec.refreshLists ?? true, warn };
  if (spec.listCacheDir !== undefined) lookupOpts.cacheDir = spec.listCacheDir;
  if (spec.listAllowedNetworks !== undefined) lookupOpts.allowedNetworks = spec.listAllowedNetworks;
  // A store stops counting as up when the rules stop waiting for it (src/lookup/breaker.ts).
  if (spec.engine?.ruleWaitMs !== undefined) lookupOpts.slowCallMs = spec.engine.ruleWaitMs;
  const lookups = buildLookupMap(spec, lookupOpts);
  const sameDns = previous !== undefined && spec.dns !== undefined && spec.dns === previous.spec.dns && !spec.dns.trim().toLowerCase().startsWith('static:');
  const engine = new SpamEngine({
    ...spec.engine,
    rules: spec.rules,
    tags: spec.tags,
    thresholds: spec.thresholds,
    lookups,
    system: spec.system,
    ...(sameDns ? { dns: previous!.engine.dns } : spec.dns !== undefined ? { dns: createResolver(spec.dns) } : {}),
  });
  const kept = previous?.engine.classifier;
  if (spec.classifier !== undefined && kept !== undefined && JSON.stringify(spec.classifier) === JSON.stringify(previous!.spec.classifier)) {
    engine.classifier = kept;
  } else if (spec.classifier !== undefined) {
    try {
      // The engine owns it: engine.close() closes its model store.
      engine.classifier = liveClassifier(spec.classifier, {}, (e) => warn(`classifier: ${e.message}`));
    } catch (e) {
      warn(`classifier skipped: ${(e as Error).message}`);
    }
  }
  return engine;
}

/**
 * The parts of `engine` that one of `others` uses too (a resolver or classifier taken over by
 * {@link buildEngineFromSpec}): what `engine.close({ keep })` must leave open.
 */
export function sharedParts(engine: SpamEngine, others: Iterable<SpamEngine>): EnginePart[] {
  const keep = new Set<EnginePart>();
  for (const o of others) {
    if (o === engine) continue;
    if (o.dns === engine.dns) keep.add('dns');
    if (engine.classifier !== undefined && o.classifier === engine.classifier) keep.add('classifier');
    if (o.lookups === engine.lookups) keep.add('lookups');
  }
  return [...keep];
}
