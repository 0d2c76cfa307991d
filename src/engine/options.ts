/**
 * `SpamEngine`'s options, and their check at construction, so that a mistake made from JavaScript
 * (where the types do not reach) is an error where it is made rather than a setting silently ignored:
 * `{ threshold: … }`, `timeBudgetMs: -5`, `analysis.modules.htlm`.
 */
import { MODULE_NAMES } from '../analysis/index.js';
import { llmSettingsProblem } from '../analysis/llm/settings.js';
import { pyzorSettingsProblem } from '../analysis/pyzor/settings.js';
import { parseNetwork } from '../net/address-policy.js';
import { followRedirectsProblem } from '../analysis/redirect.js';
import type { AnalysisConfig } from '../analysis/types.js';
import type { EngineClassifier } from '../classifier/classifier.js';
import type { DnsBudget } from '../dns/budget.js';
import { MIN_REGEX_CACHE_BYTES } from '../expr/regex-cache.js';
import type { Resolver } from '../dns/types.js';
import type { LookupMap } from '../lookup/memory.js';
import { closestName, isObject } from '../util/index.js';
import type { SpamRuleInput, SpamTagInput, SpamThresholds } from './types.js';

/** Default of `EngineOptions.timeBudgetMs`. */
export const DEFAULT_TIME_BUDGET_MS = 5_000;

export interface EngineOptions {
  rules?: readonly SpamRuleInput[];
  tags?: readonly SpamTagInput[];
  thresholds?: SpamThresholds;
  /** Namespace → store (static lists, database adapters). The default store serves `""`/`"*"`. */
  lookups?: LookupMap;
  /** Values for `system('hostname')` etc. */
  system?: Record<string, string | number>;
  /**
   * Built-in analysis (Stalwart's modules, docs/analysis.md): module switches, DNSBL servers, file
   * extensions, redirect following, the Pyzor server, the LLM endpoint. `false` runs the SpamRules alone.
   * Default: every module on (the network ones, redirects, Pyzor and the LLM, only once configured).
   */
  analysis?: AnalysisConfig | false;
  /** DNS for the analysis modules and DNSBLs (src/dns). Default: off (no query is made). */
  dns?: Resolver;
  /**
   * DNS budget per message: at most `maxQueries` queries (default 256: the DNSBL limits are 50
   * per scope), and no query answered later
   * than `deadlineMs` (default 5,000 ms) after the message's analysis starts; past either, queries
   * answer `error`, which sets no tag.
   */
  dnsBudget?: DnsBudget;
  /**
   * Where authentication results come from when the session has none (in this order):
   * `trustedAuthservIds`, the topmost `Authentication-Results` header (RFC 8601) of one of these
   * authserv-ids; `verify: true`, SPF/DKIM/ARC/DMARC verification with mailauth over `dns`.
   */
  authResults?: { trustedAuthservIds?: readonly string[]; verify?: boolean };
  /**
   * Complete each message's session from its own headers (stored mail, mass-checks): remote IP,
   * HELO, PTR, TLS and arrival time from the topmost `Received`, MAIL FROM from `Return-Path`,
   * RCPT TO from `Delivered-To`. Fields the caller gives win. Default off (an MTA passes the session).
   */
  trustReceived?: boolean;
  /**
   * Time budget of one `classify`, in ms from its start (default {@link DEFAULT_TIME_BUDGET_MS}),
   * not counting the time spent waiting for DNS answers (which `dnsBudget.deadlineMs` bounds) or the
   * rules' waits for stores (`ruleWaitMs`), so that a sender whose DNS is silent, or a frozen store,
   * cannot get the rules skipped: past it, the analysis modules and the classifier not yet run are
   * skipped (source `module:NAME`, `classifier`), the rules not yet evaluated too (source: the rule
   * name), each reported in `errors`. A module that has started runs to its end. `0` or `Infinity`:
   * no budget.
   */
  timeBudgetMs?: number;
  /**
   * Per message, how long its rules may wait for lookup stores and `dns_query` answers in all (ms,
   * default 2,000), not counted in `timeBudgetMs`: past it, a rule still waiting fails with an error
   * and the rules that need no wait run on. `0` or `Infinity`: no limit but each store's timeout.
   */
  ruleWaitMs?: number;
  /**
   * Stalwart's statistical classifier (src/classifier, docs/classifier.md): when set, the default
   * pipeline runs its `classify` step after the analysis modules and before the rules, and its
   * `PROB_*` tag joins the result after the rules (rules never see it, as in Stalwart).
   */
  classifier?: EngineClassifier;
  /**
   * Most steps one `matches` search of a rule may take (default 2^26,
   * `DEFAULT_REGEX_WORK_LIMIT` in src/expr/regex.ts): a search whose pattern cost × subject length (UTF-16 code units) is over it is not run,
   * and the rule fails with an error in `errors` (`RegexWorkError`), so that no rule can hold
   * `classify` for more than about a second in one search (docs/expression-language.md). `0` or
   * `Infinity`: no limit.
   */
  regexWorkLimit?: number;
  /**
   * Budget of the DFA caches of all the compiled `matches` patterns of this thread, in bytes
   * (default 64 MiB, `DEFAULT_REGEX_CACHE_BYTES`; at least 1 MiB; `Infinity`: none): past it,
   * the caches of the least recently used patterns are dropped (src/expr/regex-cache.ts). The budget
   * is the thread's, shared by its engines: given here, it replaces the thread's current one
   * (`setRegexCacheBudget`).
   */
  regexCacheBytes?: number;
}

const ENGINE_KEYS = [
  'rules', 'tags', 'thresholds', 'lookups', 'system', 'analysis', 'dns', 'dnsBudget', 'authResults', 'trustReceived', 'timeBudgetMs', 'ruleWaitMs', 'classifier',
  'regexWorkLimit', 'regexCacheBytes',
] as const;
const ANALYSIS_KEYS = ['dnsblServers', 'dnsblLimits', 'allowedIps', 'blockedIps', 'fileExtensions', 'followRedirects', 'pyzor', 'llm', 'testMode', 'modules'] as const;
const THRESHOLD_KEYS = ['scoreSpam', 'scoreReject', 'scoreDiscard'] as const;

function unknownKeys(where: string, v: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(v)) {
    if (known.includes(k) || v[k] === undefined) continue;
    const close = closestName(k, known);
    throw new TypeError(`${where}: unknown option "${k}"${close === undefined ? ` (the options are ${known.join(', ')})` : ` (did you mean "${close}"?)`}`);
  }
}

function milliseconds(where: string, v: unknown): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw new TypeError(`${where}: expected milliseconds (a number ≥ 0; 0 = none), got ${JSON.stringify(v)}`);
}

/**
 * Throws `TypeError` naming the option for an unknown key (with the one meant, when close), a wrong
 * type, a negative time or regex work limit, a regex cache budget under 1 MiB, a threshold that is
 * no number, an unknown analysis module, or unusable `analysis.pyzor`, `analysis.llm` or `analysis.followRedirects`
 * settings (an unknown field, a port out of range, an allowed network that is no address or CIDR range, …).
 */
export function checkEngineOptions(opts: unknown): void {
  if (opts === undefined) return;
  if (!isObject(opts)) throw new TypeError('SpamEngine: the options must be an object');
  unknownKeys('SpamEngine', opts, ENGINE_KEYS);
  for (const k of ['rules', 'tags'] as const) {
    if (opts[k] !== undefined && !Array.isArray(opts[k])) throw new TypeError(`SpamEngine: "${k}" must be an array`);
  }
  milliseconds('SpamEngine: "timeBudgetMs"', opts.timeBudgetMs);
  milliseconds('SpamEngine: "ruleWaitMs"', opts.ruleWaitMs);
  const w = opts.regexWorkLimit;
  if (w !== undefined && (typeof w !== 'number' || Number.isNaN(w) || w < 0)) throw new TypeError(`SpamEngine: "regexWorkLimit": expected steps (a number ≥ 0; 0 = none), got ${JSON.stringify(w)}`);
  const c = opts.regexCacheBytes;
  if (c !== undefined && (typeof c !== 'number' || Number.isNaN(c) || c < MIN_REGEX_CACHE_BYTES)) {
    throw new TypeError(`SpamEngine: "regexCacheBytes": expected bytes (a number ≥ ${MIN_REGEX_CACHE_BYTES}, or Infinity), got ${JSON.stringify(c)}`);
  }
  const t = opts.thresholds;
  if (t !== undefined) {
    if (!isObject(t)) throw new TypeError('SpamEngine: "thresholds" must be an object');
    unknownKeys('SpamEngine: thresholds', t, THRESHOLD_KEYS);
    for (const k of THRESHOLD_KEYS) {
      if (t[k] !== undefined && (typeof t[k] !== 'number' || !Number.isFinite(t[k]))) throw new TypeError(`SpamEngine: "thresholds.${k}" must be a number, got ${JSON.stringify(t[k])}`);
    }
  }
  const a = opts.analysis;
  if (a !== undefined && a !== false) {
    if (!isObject(a)) throw new TypeError('SpamEngine: "analysis" must be an object or false');
    unknownKeys('SpamEngine: analysis', a, ANALYSIS_KEYS);
    const pyzor = pyzorSettingsProblem(a.pyzor);
    if (pyzor !== undefined) throw new TypeError(`SpamEngine: analysis.pyzor: ${pyzor}`);
    const llm = llmSettingsProblem(a.llm);
    if (llm !== undefined) throw new TypeError(`SpamEngine: analysis.llm: ${llm}`);
    const follow = followRedirectsProblem(a.followRedirects);
    if (follow !== undefined) throw new TypeError(`SpamEngine: analysis.followRedirects: ${follow}`);
    for (const k of ['allowedIps', 'blockedIps'] as const) {
      const list = a[k];
      if (list === undefined) continue;
      if (!Array.isArray(list)) throw new TypeError(`SpamEngine: analysis.${k} must be an array of IP addresses and CIDR ranges`);
      // The strict reading serve's configuration uses: ipaddr.js alone would read "10.1" as 10.0.0.1.
      list.forEach((e: unknown, i) => {
        if (typeof e !== 'string' || parseNetwork(e) === undefined) throw new TypeError(`SpamEngine: analysis.${k}[${i}]: ${JSON.stringify(e)} is neither an IP address nor a CIDR range`);
      });
    }
    const m = a.modules;
    if (m !== undefined) {
      if (!isObject(m)) throw new TypeError('SpamEngine: "analysis.modules" must be an object ({ html: false })');
      for (const name of Object.keys(m)) {
        if (MODULE_NAMES.includes(name)) continue;
        const close = closestName(name, MODULE_NAMES);
        throw new TypeError(`SpamEngine: analysis.modules: unknown module "${name}"${close === undefined ? ` (the modules are ${MODULE_NAMES.join(', ')})` : ` (did you mean "${close}"?)`}`);
      }
    }
  }
}
