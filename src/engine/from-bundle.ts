/**
 * A loaded rule bundle (`loadRuleFile`, `parseRuleBundle`) as `SpamEngine` options: what `spamrule
 * classify --rules FILE` builds its engine from, so that a library user gets the same verdicts.
 */
import type { AnalysisConfig, FileExtensionInput } from '../analysis/types.js';
import type { HttpLookupInput } from '../lookup/http-list.js';
import type { StaticEntry } from '../lookup/memory.js';
import { buildLookupMap, type LookupSourceOptions } from '../lookup/sources.js';
import type { EngineOptions } from './engine.js';
import type { DnsblServerInput } from './load.js';
import type { SpamRuleInput, SpamTagInput } from './types.js';

/** Rule material: a {@link RuleBundle} (every field of `loadRuleFile`'s result), or parts of one. */
export interface RuleMaterial {
  rules?: readonly SpamRuleInput[];
  tags?: readonly SpamTagInput[];
  /** Static lists by namespace (`MemoryLookupKey`/`MemoryLookupKeyValue` entries, or plain keys). */
  lists?: Iterable<readonly [string, readonly (StaticEntry | string)[]]>;
  /** `SpamDnsblServer` definitions (the ip, domain and url modules query them). */
  dnsblServers?: readonly DnsblServerInput[];
  /** `HttpLookup` remote lists, served from their on-disk cache. */
  httpLookups?: readonly HttpLookupInput[];
  /** `SpamFileExtension` table (the mime module: `MIME_BAD_EXTENSION`, …). */
  fileExtensions?: readonly FileExtensionInput[];
  /** Lookup stores: namespace and `x:StoreLookup` `store` configuration (docs/lookup-stores.md). */
  stores?: readonly { namespace: string; config: unknown }[];
}

export interface BundleEngineOptions {
  /**
   * Further analysis settings (module switches, `allowedIps`, `followRedirects`, …), merged with the
   * bundle's DNSBL servers and file extensions; `false` runs the rules alone. Default: every module on.
   */
  analysis?: Omit<AnalysisConfig, 'dnsblServers' | 'fileExtensions'> | false;
  /** Folder of the remote lists' on-disk cache (`spamrule lists update --cache-dir`); default `~/.cache/spamrule/lists`. */
  listCacheDir?: string;
  /**
   * Refresh stale remote lists in the background over HTTP (a long-running server); default false:
   * the cache is only read, and a list never downloaded answers nothing.
   */
  refreshLists?: boolean;
  /**
   * Addresses or CIDR ranges those refreshes may connect to although they are not public (an internal
   * list server); default none: public addresses only.
   */
  listAllowedNetworks?: readonly string[];
  /**
   * `EngineOptions.ruleWaitMs` (ms; default 2,000, 0 = none), also the stores' circuit-breaker
   * `slowCallMs`, as the CLI sets both.
   */
  ruleWaitMs?: number;
  /**
   * Told of a store left out (a refused configuration, an unreadable secret), a remote list that
   * failed or was never downloaded. Default: `process.emitWarning`.
   */
  warn?: (message: string) => void;
}

/**
 * The analysis settings of a bundle: `extra` (module switches, `followRedirects`, …) with the bundle's DNSBL
 * servers and file-extension table; `false` (rules alone) when `extra` is `false`.
 */
export function bundleAnalysis(bundle: RuleMaterial, extra: Omit<AnalysisConfig, 'dnsblServers' | 'fileExtensions'> | false = {}): AnalysisConfig | false {
  if (extra === false) return false;
  const analysis: AnalysisConfig = { ...extra, dnsblServers: bundle.dnsblServers ?? [] };
  if (bundle.fileExtensions !== undefined) analysis.fileExtensions = bundle.fileExtensions;
  return analysis;
}

/** What {@link engineOptionsFromBundle} fills in. */
export type BundleEngineFields = Required<Pick<EngineOptions, 'rules' | 'tags' | 'lookups' | 'analysis'>> & Pick<EngineOptions, 'ruleWaitMs'>;

/**
 * The `SpamEngine` options of a rule bundle, as `spamrule classify --rules` uses them: the rules and
 * scores, one `LookupMap` of its static lists, remote lists and stores (nothing connects until a
 * lookup), and the DNSBL servers and file-extension table for the analysis. Spread it and add the
 * rest: `new SpamEngine({ ...engineOptionsFromBundle(bundle), thresholds, dns })`. The engine owns
 * the map: `engine.close()` closes its stores. Never throws: a store that cannot be created is told
 * to `warn` and gets a `NotStartedStore` (its lookups fail with the reason, buildLookupMap).
 */
export function engineOptionsFromBundle(bundle: RuleMaterial, opts: BundleEngineOptions = {}): BundleEngineFields {
  const warn = opts.warn ?? ((message: string) => process.emitWarning(message, 'SpamruleWarning'));
  const lookupOpts: LookupSourceOptions = { autoRefresh: opts.refreshLists ?? false, warn };
  if (opts.listCacheDir !== undefined) lookupOpts.cacheDir = opts.listCacheDir;
  if (opts.listAllowedNetworks !== undefined) lookupOpts.allowedNetworks = opts.listAllowedNetworks;
  if (opts.ruleWaitMs !== undefined) lookupOpts.slowCallMs = opts.ruleWaitMs;
  const out: BundleEngineFields = { rules: bundle.rules ?? [], tags: bundle.tags ?? [], lookups: buildLookupMap(bundle, lookupOpts), analysis: bundleAnalysis(bundle, opts.analysis) };
  if (opts.ruleWaitMs !== undefined) out.ruleWaitMs = opts.ruleWaitMs;
  return out;
}
