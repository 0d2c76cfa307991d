/**
 * `SpamEngine`: holds a compiled rule set, the SpamTag table, thresholds and lookup stores, and
 * classifies messages (DECISIONS.md §1, §4; spam-rules.md §2–4).
 */
import { setFlagsFromString } from 'node:v8';
import type { EvalContext, IfResult } from '../expr/types.js';
import type { Value } from '../expr/value.js';
import { LookupMap, StaticLookupList } from '../lookup/memory.js';
import type { LookupStore } from '../lookup/types.js';
import { analyzeMessage } from '../message/index.js';
import { SCOPE_ORDER, type ScopeElement } from '../message/types.js';
import { renderSpamHeaders } from './headers.js';
import { compileRuleSet, type CompiledRule, type RulesByScope } from './rules.js';
import { SpamTagTable } from './tags.js';
import type {
  Action,
  ClassifyError,
  ClassifyOptions,
  ClassifyResult,
  RuleLoadReport,
  RuleMatch,
  SpamRuleInput,
  SpamTagInput,
  SpamThresholds,
} from './types.js';

// Backstop against catastrophic regex backtracking: rule regexes are already screened at compile
// time (src/expr/regex.ts), but V8 can also fall back to its linear-time engine (anchors.md §1.5).
try {
  setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
} catch {
  /* flag unavailable on this V8: the compile-time screen still applies */
}

export interface EngineOptions {
  rules?: readonly SpamRuleInput[];
  tags?: readonly SpamTagInput[];
  thresholds?: SpamThresholds;
  /** Namespace → store (static lists, database adapters). The default store serves `""`/`"*"`. */
  lookups?: LookupMap;
  /** Values for `system('hostname')` etc. */
  system?: Record<string, string | number>;
}

/** The evaluation context of one element: a class, so the hot path allocates no closures. */
class ElementContext implements EvalContext {
  constructor(
    private readonly el: ScopeElement,
    private readonly tags: ReadonlySet<string>,
    readonly lookups: LookupMap,
    readonly system: (name: string) => string | number,
  ) {}
  variable(name: string): Value {
    return this.el.variable(name);
  }
  /** `$NAME`: 1 if the tag is already set (upstream, analysis, or an earlier rule), else 0. */
  global(name: string): number {
    return this.tags.has(name) ? 1 : 0;
  }
}

type Prefetched = IfResult | undefined | Promise<IfResult | undefined>;

const THRESHOLD_DEFAULTS: Required<SpamThresholds> = { scoreSpam: 5, scoreReject: 0, scoreDiscard: 0 };

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class SpamEngine {
  /** Lookup namespaces used by `key_*`, `counter_*` and `sql_query`; edit with `.set()`/`.delete()`. */
  readonly lookups: LookupMap;
  private byScope: RulesByScope;
  private report: RuleLoadReport;
  private tagTable = new SpamTagTable();
  private thresholds: Required<SpamThresholds>;
  private readonly system: Record<string, string | number>;

  constructor(opts: EngineOptions = {}) {
    this.lookups = opts.lookups ?? new LookupMap();
    const { byScope, report } = compileRuleSet(opts.rules ?? []);
    this.byScope = byScope;
    this.report = report;
    if (opts.tags) this.tagTable.add(opts.tags);
    this.thresholds = { ...THRESHOLD_DEFAULTS, ...opts.thresholds };
    this.system = opts.system ?? {};
  }

  /**
   * Replaces the rule set atomically (a `classify` already running keeps the set it started
   * with). Returns what was loaded, disabled and refused; refused rules never run.
   */
  loadRules(rules: readonly SpamRuleInput[]): RuleLoadReport {
    const { byScope, report } = compileRuleSet(rules);
    this.byScope = byScope;
    this.report = report;
    return report;
  }

  /** Replaces the SpamTag table. Throws `TypeError` for a tag object without a name. */
  loadTags(tags: readonly SpamTagInput[]): void {
    this.tagTable = new SpamTagTable().add(tags);
  }

  /** Sets thresholds; unspecified ones keep their current value. */
  setThresholds(t: SpamThresholds): void {
    this.thresholds = { ...this.thresholds, ...t };
  }

  /** Registers (or replaces) a lookup namespace. */
  setLookup(namespace: string, store: LookupStore): void {
    this.lookups.set(namespace, store);
  }

  /** The report of the last rule load. */
  get loadReport(): RuleLoadReport {
    return this.report;
  }

  /** Number of active rules per scope. */
  ruleCounts(): Record<string, number> {
    return Object.fromEntries(SCOPE_ORDER.map((s) => [s, this.byScope[s].length]));
  }

  /** The score table, for lint (tags without score). */
  get tags(): SpamTagTable {
    return this.tagTable;
  }

  /**
   * Classifies one raw RFC 5322 message. Never throws for a bad message: parse problems, rules
   * that fail at run time and stores that are down are reported in `errors`, and the rest still
   * runs. Tags from `opts.tags` (SPF/DKIM/DMARC/DNSBL results of the MTA) are visible as `$TAG`.
   */
  async classify(raw: Uint8Array | string, opts: ClassifyOptions = {}): Promise<ClassifyResult> {
    const t0 = performance.now();
    const byScope = this.byScope; // snapshot: a concurrent loadRules does not affect this run
    const tags = new Set<string>();
    const errors: ClassifyError[] = [];
    const matches: RuleMatch[] = [];
    for (const t of opts.tags ?? []) if (typeof t === 'string' && t !== '') tags.add(t);

    let msg;
    try {
      // Domains of trusted senders are not Domain-scope elements (spam-rules.md §1.5 step 5).
      const trusted = this.lookups.get('trusted-domains');
      msg = await analyzeMessage(raw, opts.envelope, trusted instanceof StaticLookupList ? { isTrustedDomain: (d) => trusted.hasSync(d) } : undefined);
    } catch (e) {
      // analyzeMessage is written never to throw; this is the last line of defence.
      errors.push({ source: 'message', message: `message analysis failed: ${errorMessage(e)}` });
      return this.finish(tags, matches, errors, [], t0, 0, 0, 0);
    }
    for (const t of msg.builtinTags) tags.add(t);

    const tRules = performance.now();
    // Extraction is lazy (per scope, and per generic variable on first read); the analysis
    // counts that time itself, and it is reported apart from rule evaluation.
    const extractBefore = msg.timings.extractMs;
    const system = (name: string): string | number => this.system[name] ?? '';
    for (const scope of SCOPE_ORDER) {
      const rules = byScope[scope];
      if (rules.length === 0) continue;
      let elements: readonly ScopeElement[];
      try {
        elements = msg.elements(scope);
      } catch (e) {
        errors.push({ source: 'message', scope, message: `extracting ${scope} elements failed: ${errorMessage(e)}` });
        continue;
      }
      const ctxs = elements.map((el): EvalContext => new ElementContext(el, tags, this.lookups, system));
      // Lookups of rules that cannot depend on other rules go out together (pipelined by the
      // store clients) instead of one round trip at a time; results are still applied in order.
      const prefetched = this.prefetch(rules, ctxs);
      for (let ei = 0; ei < elements.length; ei++) {
        const el = elements[ei]!;
        const ctx = ctxs[ei]!;
        for (let ri = 0; ri < rules.length; ri++) {
          const rule = rules[ri]!;
          let r: IfResult | undefined;
          try {
            const row = prefetched?.[ri];
            if (row !== undefined) {
              const p = row[ei];
              r = p instanceof Promise ? await p : p;
            } else {
              // Static lists answer synchronously, so most "async" rules never yield to the loop.
              const v = rule.block.evalMaybe(ctx);
              r = v instanceof Promise ? await v : v;
            }
          } catch (e) {
            errors.push({ source: rule.name, scope, element: el.label, message: errorMessage(e) });
            continue;
          }
          // Only a String result is a tag (expression-language.md §2.10, spam-rules.md §4.1).
          if (r !== undefined && typeof r.value === 'string') {
            tags.add(r.value);
            matches.push({ rule: rule.name, tag: r.value, scope, element: el.label, location: el.location, branch: r.branch });
          }
        }
      }
    }
    const extractMs = msg.timings.extractMs;
    const rulesMs = performance.now() - tRules - (extractMs - extractBefore);
    return this.finish(tags, matches, errors, msg.warnings, t0, msg.timings.parseMs, extractMs, rulesMs);
  }

  /**
   * Starts the evaluations of prefetchable rules for every element; `undefined` when there are
   * none. Each entry is a result, or a promise when a store really had to wait.
   */
  private prefetch(
    rules: readonly CompiledRule[],
    ctxs: EvalContext[],
  ): (Prefetched[] | undefined)[] | undefined {
    if (ctxs.length < 2 || !rules.some((r) => r.prefetchable)) return undefined;
    return rules.map((rule) => {
      if (!rule.prefetchable) return undefined;
      return ctxs.map((ctx): Prefetched => {
        let v: Prefetched;
        try {
          v = rule.block.evalMaybe(ctx);
        } catch (e) {
          v = Promise.reject(e);
        }
        if (v instanceof Promise) v.catch(() => {}); // awaited later in order; never unhandled meanwhile
        return v;
      });
    });
  }

  private finish(
    tags: Set<string>,
    matches: RuleMatch[],
    errors: ClassifyError[],
    warnings: readonly string[],
    t0: number,
    parseMs: number,
    extractMs: number,
    rulesMs: number,
  ): ClassifyResult {
    // Scoring (spam-rules.md §4.2). A Reject tag wins over a Discard tag so that the result does
    // not depend on set order (Stalwart: hash order); both end scoring without a score.
    let score = 0;
    let tagAction: Action | undefined;
    const scores: Record<string, number> = {};
    for (const tag of tags) {
      const a = this.tagTable.lookup(tag);
      if (a === undefined) scores[tag] = 0;
      else if (a.kind === 'score') {
        scores[tag] = a.score;
        score += a.score;
      } else if (a.kind === 'reject') tagAction = 'reject';
      else if (a.kind === 'discard' && tagAction === undefined) tagAction = 'discard';
    }
    score = Math.round(score * 100) / 100;
    const { scoreSpam, scoreReject, scoreDiscard } = this.thresholds;
    let action: Action;
    if (tagAction !== undefined) action = tagAction;
    else if (scoreReject > 0 && score >= scoreReject) action = 'reject';
    else if (scoreDiscard > 0 && score >= scoreDiscard) action = 'discard';
    else if (score >= scoreSpam) action = 'spam';
    else action = 'allow';
    const totalMs = performance.now() - t0;
    return {
      tags: [...tags],
      score,
      action,
      scores,
      matches,
      errors,
      warnings: [...warnings],
      headers: renderSpamHeaders(scores, score, action === 'spam' || action === 'reject' || action === 'discard'),
      timings: { parseMs, extractMs, rulesMs, totalMs },
    };
  }
}
