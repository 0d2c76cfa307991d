/**
 * Shared by `classify` and `lint`: turns `--rules`, `--scores`, `--list` (and the managed rule
 * set of `--db`/`--server`) into a ready {@link SpamEngine}.
 */
import { readFileSync } from 'node:fs';
import { numberArg } from '../util/index.js';
import {
  DEFAULT_RULES,
  DEFAULT_TAGS,
  engineOptionsFromBundle,
  loadRuleFile,
  loadScoresFile,
  parseListText,
  SpamEngine,
  type DnsblServerInput,
  type SpamRuleInput,
  type SpamTagInput,
  type SpamThresholds,
  type BundleEngineOptions,
} from '../engine/index.js';
import type { FileExtensionInput, FollowRedirects, LlmSettings, PyzorSettings } from '../analysis/types.js';
import { RuleBundleError, type BundleProblem } from '../engine/load.js';
import type { Resolver } from '../dns/types.js';
import type { HttpLookupInput } from '../lookup/http-list.js';
import type { EngineOptions } from '../engine/engine.js';
import type { StaticEntry } from '../lookup/index.js';

export interface RuleSetFlags {
  rules?: string[];
  scores?: string[];
  list?: string[];
  'score-spam'?: string;
  'score-reject'?: string;
  'score-discard'?: string;
  'cache-dir'?: string;
}

/** parseArgs option descriptors for the flags above. */
export const RULESET_OPTIONS = {
  rules: { type: 'string', multiple: true },
  scores: { type: 'string', multiple: true },
  list: { type: 'string', multiple: true },
  'score-spam': { type: 'string' },
  'score-reject': { type: 'string' },
  'score-discard': { type: 'string' },
  'cache-dir': { type: 'string' },
} as const;

/** Analysis switches for {@link buildEngine} (from the session flags). */
export interface AnalysisFlags {
  /** `false`: SpamRules only. */
  analysis?: boolean;
  /** Modules switched off. */
  disabled?: readonly string[];
  dns?: Resolver | undefined;
  trustedAuthservIds?: readonly string[];
  verify?: boolean;
  /** On-disk cache of the remote (`HttpLookup`) lists; default: the user's cache folder. */
  listCacheDir?: string;
  /** Refresh stale remote lists in the background (the server); default off (classify makes no HTTP request). */
  refreshLists?: boolean;
  /** Follow redirector URLs over HTTP (`AnalysisConfig.followRedirects`). */
  followRedirects?: FollowRedirects;
  /** The Pyzor check's settings (`AnalysisConfig.pyzor`); undefined: off. */
  pyzor?: PyzorSettings;
  /** The LLM step's settings (`AnalysisConfig.llm`); undefined: off. */
  llm?: LlmSettings;
  /** Complete sessions from each message's own Received/Return-Path headers. */
  trustReceived?: boolean;
  /** `EngineOptions.timeBudgetMs` (ms; 0 = none). */
  timeBudgetMs?: number;
  /** `EngineOptions.ruleWaitMs` (ms; 0 = no limit). */
  ruleWaitMs?: number;
  /** `EngineOptions.regexWorkLimit` (steps per `matches` search). */
  regexWorkLimit?: number;
  /** `EngineOptions.regexCacheBytes` (bytes; the thread's DFA cache budget). */
  regexCacheBytes?: number;
}

export interface LoadedRuleSet {
  rules: SpamRuleInput[];
  tags: SpamTagInput[];
  lists: Map<string, StaticEntry[]>;
  dnsblServers: DnsblServerInput[];
  /** `SpamFileExtension` objects for the mime module. */
  fileExtensions?: FileExtensionInput[];
  /** `HttpLookup` remote lists. */
  httpLookups?: HttpLookupInput[];
  /** Managed StoreLookups (`--db`/`--server`): namespace and `x:LookupStore` configuration. */
  stores?: { namespace: string; config: unknown }[];
  /** True when the built-in default rule set is used (no --rules). */
  isDefault: boolean;
  /** Objects that do not validate (with `{ lenient: true }`, for lint), each with its file. */
  problems?: (BundleProblem & { file: string })[];
}

/**
 * Reads the rule material named by the flags. Throws `Error` with a readable message, and
 * RuleBundleError for objects that do not validate unless `opts.lenient` (then in `problems`).
 */
export function readRuleSet(flags: RuleSetFlags, opts: { lenient?: boolean } = {}): LoadedRuleSet {
  const out: LoadedRuleSet = { rules: [], tags: [], lists: new Map(), dnsblServers: [], httpLookups: [], isDefault: false };
  if (!flags.rules || flags.rules.length === 0) {
    out.rules = [...DEFAULT_RULES];
    out.tags = [...DEFAULT_TAGS];
    out.isDefault = true;
  } else {
    for (const file of flags.rules) {
      const b = loadRuleFile(file, opts);
      for (const p of b.problems ?? []) (out.problems ??= []).push({ ...p, file });
      out.rules.push(...b.rules);
      out.tags.push(...b.tags);
      out.dnsblServers.push(...b.dnsblServers);
      (out.httpLookups ??= []).push(...b.httpLookups);
      (out.fileExtensions ??= []).push(...b.fileExtensions);
      for (const [ns, entries] of b.lists) out.lists.set(ns, [...(out.lists.get(ns) ?? []), ...entries]);
    }
  }
  for (const file of flags.scores ?? []) out.tags.push(...readScoresFile(file));
  for (const [ns, entries] of readLists(flags.list)) out.lists.set(ns, [...(out.lists.get(ns) ?? []), ...entries]);
  return out;
}

/**
 * Reads one `--scores` file (see `loadScoresFile`). Throws `Error` naming the file, as the rules
 * and list files do: `cannot read scores file F: ENOENT…`, `scores file F: line 2: expected…`,
 * `scores file F is not valid JSON: …` (the loader alone gives a bare ENOENT or `scores line 2`).
 */
export function readScoresFile(file: string): SpamTagInput[] {
  try {
    return loadScoresFile(file);
  } catch (e) {
    if (e instanceof RuleBundleError) throw e; // names the file already
    const message = (e as Error).message;
    if (typeof (e as NodeJS.ErrnoException).code === 'string') throw new Error(`cannot read scores file ${file}: ${message}`);
    if (e instanceof SyntaxError) throw new Error(`scores file ${file} is not valid JSON: ${message}`);
    throw new Error(`scores file ${file}: ${message.replace(/^scores line/, 'line')}`);
  }
}

/** Reads `--list NAMESPACE=FILE` specs into entries per namespace. Throws `Error` naming the file. */
export function readLists(specs: readonly string[] = []): Map<string, StaticEntry[]> {
  const lists = new Map<string, StaticEntry[]>();
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`--list expects NAMESPACE=FILE, got "${spec}"`);
    const ns = spec.slice(0, eq);
    const file = spec.slice(eq + 1);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new Error(`cannot read list file ${file}: ${(e as Error).message}`);
    }
    lists.set(ns, [...(lists.get(ns) ?? []), ...parseListText(text)]);
  }
  return lists;
}

function num(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = numberArg(v);
  if (!Number.isFinite(n)) throw new Error(`--${flag} expects a number, got "${v}"`);
  return n;
}

/** Thresholds from the flags (unset ones keep the engine defaults). */
export function thresholdsFrom(flags: RuleSetFlags): SpamThresholds {
  const t: SpamThresholds = {};
  const s = num('score-spam', flags['score-spam']);
  const r = num('score-reject', flags['score-reject']);
  const d = num('score-discard', flags['score-discard']);
  if (s !== undefined) t.scoreSpam = s;
  if (r !== undefined) t.scoreReject = r;
  if (d !== undefined) t.scoreDiscard = d;
  return t;
}

/**
 * Builds the engine: rules compiled, tags loaded, static lists and managed stores registered as
 * lookup namespaces. A managed store whose configuration is refused is reported through `warn`
 * and gets a `NotStartedStore` (its lookups fail with the reason, buildLookupMap).
 */
export function buildEngine(
  set: LoadedRuleSet,
  thresholds: SpamThresholds = {},
  warn: (msg: string) => void = () => {},
  analysis: AnalysisFlags = {},
): SpamEngine {
  // What the library's engineOptionsFromBundle gives (remote lists served from their on-disk cache,
  // which `spamrule lists update` fills), plus the flags that are not rule material.
  const modules: Record<string, boolean> = {};
  for (const m of analysis.disabled ?? []) modules[m] = false;
  const bundleOpts: BundleEngineOptions = {
    warn,
    refreshLists: analysis.refreshLists ?? false,
    analysis:
      analysis.analysis === false
        ? false
        : { modules, ...(analysis.followRedirects !== undefined && analysis.followRedirects !== false ? { followRedirects: analysis.followRedirects } : {}), ...(analysis.pyzor !== undefined ? { pyzor: analysis.pyzor } : {}), ...(analysis.llm !== undefined ? { llm: analysis.llm } : {}) },
  };
  if (analysis.listCacheDir !== undefined) bundleOpts.listCacheDir = analysis.listCacheDir;
  if (analysis.ruleWaitMs !== undefined) bundleOpts.ruleWaitMs = analysis.ruleWaitMs;
  const opts: EngineOptions = { ...engineOptionsFromBundle(set, bundleOpts), thresholds };
  if (analysis.dns !== undefined) opts.dns = analysis.dns;
  opts.authResults = { trustedAuthservIds: analysis.trustedAuthservIds ?? [], verify: analysis.verify ?? false };
  if (analysis.trustReceived) opts.trustReceived = true;
  if (analysis.timeBudgetMs !== undefined) opts.timeBudgetMs = analysis.timeBudgetMs;
  if (analysis.regexWorkLimit !== undefined) opts.regexWorkLimit = analysis.regexWorkLimit;
  if (analysis.regexCacheBytes !== undefined) opts.regexCacheBytes = analysis.regexCacheBytes;
  return new SpamEngine(opts);
}
