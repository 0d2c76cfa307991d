/**
 * `SpamEngine`: holds a compiled rule set, the SpamTag table, thresholds and lookup stores, and
 * classifies messages (docs/compiler.md; docs/message-analysis.md).
 */
import { checkEngineOptions, DEFAULT_TIME_BUDGET_MS, type EngineOptions } from './options.js';
import { quoteTag, tagNameProblem, WaitClock } from '../util/index.js';
import { addUpstreamTags } from './upstream-tags.js';
import { fillAuthResults } from './auth-fill.js';
import { setFlagsFromString } from 'node:v8';
import { ExprEvalError, type DnsResolver, type EvalContext, type IfResult } from '../expr/types.js';
import { DEFAULT_REGEX_WORK_LIMIT, RegexWorkError } from '../expr/regex.js';
import { setRegexCacheBudget } from '../expr/regex-cache.js';
import { LookupMap, StaticLookupList } from '../lookup/memory.js';
import type { LookupStore } from '../lookup/types.js';
import type { ClassifierVerdict, EngineClassifier } from '../classifier/classifier.js';
import { resolveSession, sessionFromEnvelope, envelopeOf } from '../analysis/session.js';
import { completeFromParsedHeaders } from '../analysis/stored.js';
import { exprDnsResolver } from './expr-dns.js';
import { dnsFailureWarning, ElementContext, errorMessage, prefetchRules, RuleWaits, WAIT_EXCEEDED } from './run.js';
import { moduleEnabled, runModule, type AnalysisRun, type ModuleMatch } from '../analysis/run.js';
import { MODULE_NAMES } from '../analysis/index.js';
import type { AnalysisConfig, LlmVerdict, Session, SessionInput } from '../analysis/types.js';
import { withBudget, type DnsBudget } from '../dns/budget.js';
import { OffResolver } from '../dns/off.js';
import type { Resolver } from '../dns/types.js';
import { analyzeMessage, messageContextOf, type EnvelopeFromHeaders } from '../message/index.js';
import type { AnalyzedMessage, Envelope } from '../message/types.js';
import { Glob } from '../lookup/glob.js';
import { SCOPE_ORDER, type ScopeElement } from '../message/types.js';
import { renderSpamHeaders } from './headers.js';
import { scoreTags } from './scoring.js';
import { missingNamespaces } from './namespaces.js';
import { compileRuleSet, type RulesByScope } from './rules.js';
import { SpamTagTable } from './tags.js';
import { EngineClosedError, releaseParts, type CloseOptions } from './lifecycle.js';
import type {
  ClassifyError,
  ClassifyOptions,
  ClassifyResult,
  RuleLoadReport,
  RuleMatch,
  SpamRuleInput,
  SpamTagInput,
  SpamThresholds,
} from './types.js';

// Backstop against catastrophic backtracking in the project's own regexes (message parsing): V8
// falls back to its linear-time engine. Rule regexes run on re2js, linear already (src/expr/regex.ts).
try {
  setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
} catch {
  /* flag unavailable on this V8 */
}

export { DEFAULT_TIME_BUDGET_MS, type EngineOptions } from './options.js';

const THRESHOLD_DEFAULTS: Required<SpamThresholds> = { scoreSpam: 5, scoreReject: 0, scoreDiscard: 0 };

/**
 * A compiled rule set with its scores, thresholds, lookup stores, DNS resolver and classifier.
 * `classify` may run concurrently. `close()` (or `await using`) releases the stores, the
 * classifier and the DNS queries in flight; the engine owns what its options hand it
 * (src/engine/lifecycle.ts).
 */
export class SpamEngine {
  /**
   * Lookup namespaces used by `key_*`, `counter_*` and `sql_query`; edit with `.set()`/`.delete()`.
   * Owned by the engine: `close()` closes every store in it.
   */
  readonly lookups: LookupMap;
  private byScope: RulesByScope;
  private report: RuleLoadReport;
  private tagTable = new SpamTagTable();
  private thresholds: Required<SpamThresholds>;
  private readonly system: Record<string, string | number>;
  /**
   * Analysis configuration; `undefined` when analysis is off. The object also keys the engine's LLM and Pyzor
   * circuit breakers: `listStepBreakers(engine.analysis)` (src/analysis/step-breaker.ts) lists them, and a new
   * object assigned here starts with closed ones.
   */
  analysis: AnalysisConfig | undefined;
  /** DNS used by the analysis modules; `close()` cancels its queries in flight (`Resolver.cancel`). */
  dns: Resolver;
  private readonly dnsBudget: DnsBudget;
  private ruleInputs: readonly SpamRuleInput[] = [];
  /** Set once the first classify of the current rule set has checked the namespaces it reads. */
  private namespacesChecked = false;
  private readonly authResults: { trustedAuthservIds?: readonly string[]; verify?: boolean };
  private readonly trustReceived: boolean;
  private readonly timeBudgetMs: number;
  private readonly ruleWaitMs: number;
  private readonly regexWorkLimit: number;
  /**
   * The statistical classifier of the `classify` step (undefined: the step does nothing); `close()`
   * closes it (`EngineClassifier.close`).
   */
  classifier: EngineClassifier | undefined;
  /** `classify` calls under way, which `close()` waits for. */
  private inFlight = 0;
  private drained: (() => void) | undefined;
  /** Set by the first `close()`; every later call returns it. */
  private closing: Promise<void> | undefined;

  /** Throws `TypeError` for options it cannot use (an unknown key, a negative time, an unknown module). */
  constructor(opts: EngineOptions = {}) {
    checkEngineOptions(opts);
    this.classifier = opts.classifier;
    this.analysis = opts.analysis === false ? undefined : (opts.analysis ?? {});
    this.dns = opts.dns ?? new OffResolver();
    this.dnsBudget = { maxQueries: 256, deadlineMs: 5_000, ...opts.dnsBudget };
    this.authResults = opts.authResults ?? {};
    this.trustReceived = opts.trustReceived ?? false;
    this.timeBudgetMs = opts.timeBudgetMs === undefined ? DEFAULT_TIME_BUDGET_MS : opts.timeBudgetMs > 0 ? opts.timeBudgetMs : Infinity;
    this.ruleWaitMs = opts.ruleWaitMs === undefined ? 2_000 : opts.ruleWaitMs > 0 ? opts.ruleWaitMs : Infinity;
    this.regexWorkLimit = opts.regexWorkLimit === undefined ? DEFAULT_REGEX_WORK_LIMIT : opts.regexWorkLimit > 0 ? opts.regexWorkLimit : Infinity;
    // Before the rules compile, so that their programs get the cap of the new budget.
    if (opts.regexCacheBytes !== undefined) setRegexCacheBudget(opts.regexCacheBytes);
    this.lookups = opts.lookups ?? new LookupMap();
    const { byScope, report } = compileRuleSet(opts.rules ?? []);
    this.ruleInputs = opts.rules ?? [];
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
    this.ruleInputs = rules;
    this.namespacesChecked = false;
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

  /** The thresholds in force, defaults filled in (`scoreSpam` is SpamAssassin's `required_score`). */
  getThresholds(): Readonly<Required<SpamThresholds>> {
    return { ...this.thresholds };
  }

  /**
   * Registers (or replaces) a lookup namespace; the engine then owns the store (`close()` closes it).
   * Throws `EngineClosedError` once the engine is closed (the store would never be closed).
   */
  setLookup(namespace: string, store: LookupStore): void {
    if (this.closing !== undefined) throw new EngineClosedError('setLookup');
    this.lookups.set(namespace, store);
    this.namespacesChecked = false;
  }

  /**
   * Lookup namespaces the enabled rules read (with a literal name) that no store provides, with
   * the rules reading each; such lookups answer `""` (Stalwart behaviour for an unknown namespace).
   */
  missingNamespaces(): Map<string, string[]> {
    return missingNamespaces(this.ruleInputs, (ns) => this.lookups.get(ns) !== undefined);
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
   * Classifies one raw RFC 5322 message: parses it, runs the built-in analysis modules in
   * Stalwart's order, then the SpamRules, and scores the tags. Never throws for a bad message:
   * parse problems, modules and rules that fail at run time and stores that are down are reported
   * in `errors`/`warnings`, and the rest still runs. Tags from `opts.tags` (results the MTA
   * already has) are visible as `$TAG`.
   *
   * Rejects with `SessionError` (before the message is read) when `opts.session` is unusable, and
   * with `EngineClosedError` once `close()` has been called.
   */
  async classify(raw: Uint8Array | string, opts: ClassifyOptions = {}): Promise<ClassifyResult> {
    if (this.closing !== undefined) throw new EngineClosedError('classify');
    const input = opts.session ?? (opts.envelope !== undefined ? sessionFromEnvelope(opts.envelope) : {});
    const session = resolveSession(input); // the caller's fields are checked before anything is read from the message
    const steps = opts.steps ?? this.defaultSteps();
    this.inFlight++;
    try {
      // Stored mail: the session is completed from the headers of the message's own parse.
      return await this.runSteps(raw, session, opts, steps, this.trustReceived ? input : undefined);
    } finally {
      if (--this.inFlight === 0) this.drained?.();
    }
  }

  /** True once `close()` has been called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Stops the engine and releases what it owns: new `classify` calls reject with
   * `EngineClosedError` at once; the calls under way finish normally (each is bounded by its time
   * budget, its DNS deadline and its rule-wait budget); then the DNS resolver's queries still in
   * flight are cancelled (`Resolver.cancel`, e.g. `SystemResolver`'s: the resolver stays usable),
   * every store of `lookups` is closed (including stores passed in through `EngineOptions.lookups`
   * or `setLookup`) and the classifier is closed (`EngineClassifier.close`). `keep` leaves parts
   * another engine shares (a resolver kept across a reload for its cache) as they are.
   *
   * Idempotent: later calls return the first call's promise (their `keep` is not used). Rejects
   * only when the classifier's `close()` fails, after everything else has been released; a store
   * that fails to close does not make it reject.
   */
  close(opts: CloseOptions = {}): Promise<void> {
    this.closing ??= this.release(opts.keep);
    return this.closing;
  }

  /** `await using engine = new SpamEngine(…)`: `close()` at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async release(keep: CloseOptions['keep']): Promise<void> {
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await releaseParts(this, keep);
  }

  /** The default pipeline: every enabled module in Stalwart's order, then the rules. */
  private defaultSteps(): string[] {
    const a = this.analysis;
    if (a === undefined) return ['rules'];
    return [...MODULE_NAMES.filter((n) => moduleEnabled(a, n)), ...(this.classifier !== undefined ? ['classify'] : []), 'rules'];
  }

  /** `stored`: the caller's session input, to be completed from the message's headers (trustReceived). */
  private async runSteps(
    raw: Uint8Array | string, session: Session, opts: ClassifyOptions, steps: readonly string[], stored?: SessionInput,
  ): Promise<ClassifyResult> {
    const t0 = performance.now();
    const byScope = this.byScope; // snapshot: a concurrent loadRules does not affect this run
    const tags = new Set<string>();
    const errors: ClassifyError[] = [];
    const matches: RuleMatch[] = [];
    const analysisMatches: ModuleMatch[] = [];
    const skipped: string[] = [];
    addUpstreamTags(opts.tags, tags, errors);

    let msg: AnalyzedMessage;
    let sessionError: unknown;
    // Stored mail: the headers are split once, for the session and for everything else.
    const envelope: Envelope | EnvelopeFromHeaders = stored === undefined ? envelopeOf(session) : (headers) => {
      try {
        session = resolveSession(completeFromParsedHeaders(stored, headers));
      } catch (e) {
        sessionError = e ?? new Error('unusable session');
        throw e;
      }
      return envelopeOf(session);
    };
    try {
      // Domains of trusted senders are not Domain-scope elements (Stalwart's element extraction).
      const trusted = this.lookups.get('trusted-domains');
      msg = await analyzeMessage(raw, envelope, trusted instanceof StaticLookupList ? { isTrustedDomain: (d) => trusted.hasSync(d) } : undefined);
    } catch (e) {
      if (sessionError !== undefined) throw sessionError;
      // analyzeMessage is written never to throw; this is the last line of defence.
      errors.push({ source: 'message', message: `message analysis failed: ${errorMessage(e)}` });
      return this.finish(tags, matches, analysisMatches, errors, [], t0, 0, 0, 0, 0, skipped);
    }
    const warnings = msg.warnings as string[];
    // Rules alone (analysis off) still see the X_HDR_* header-presence tags, as before the modules existed.
    if (this.analysis === undefined) for (const t of msg.builtinTags) tags.add(t);
    if (!this.namespacesChecked) {
      // Once per rule set: a namespace nothing provides silently answers "" otherwise.
      this.namespacesChecked = true;
      for (const [ns, by] of this.missingNamespaces()) {
        warnings.push(`lookup namespace "${ns}" (read by ${by.join(', ')}) is provided by no store or list; its lookups answer ""`);
      }
    }
    const resolver = opts.dns ?? this.dns;
    // Off costs nothing and needs no budget; anything else is bounded per message.
    const budgeted = resolver instanceof OffResolver ? undefined : withBudget(resolver, this.dnsBudget);
    const dns = budgeted ?? resolver;
    const run: AnalysisRun = {
      session,
      message: messageContextOf(msg),
      dns,
      lists: this.lookups,
      config: this.analysis ?? {},
      tags,
      matches: analysisMatches,
      errors: [],
      warnings,
      waits: new WaitClock(),
    };
    let analysisMs = 0;
    let rulesMs = 0;
    let verdict: ClassifierVerdict | undefined;
    // Nothing to fill without a trusted authserv-id or verification: no await (a microtask turn) then.
    if (this.authResults.verify === true || (this.authResults.trustedAuthservIds?.length ?? 0) > 0) await fillAuthResults(run, warnings, this.authResults);
    // The time budget bounds the message's own work: the time it waits for DNS answers, redirect hops and
    // its rules for stores is not counted (the DNS budget's deadline and the rule-wait budget bound those), so a sender
    // whose DNS never answers, or a frozen store, cannot make every later module and rule be skipped, a
    // spam message then passing as clean.
    const waits = new RuleWaits(this.ruleWaitMs);
    // Likewise the classifier's wait for its first model (a long-running classifier waits up to 5 s for it
    // once) and for its `trusted-domains` store: the rules after it must not be skipped for that.
    let classifierWaitedMs = 0;
    const budgetEnd = (): number => t0 + this.timeBudgetMs + (budgeted?.waitedMs() ?? 0) + run.waits!.waitedMs() + waits.waitedMs + classifierWaitedMs;
    const overBudget = (): boolean => performance.now() > budgetEnd();
    const budgetSkip = (source: string): void => {
      errors.push({ source, message: `skipped: the classify time budget of ${this.timeBudgetMs} ms was exceeded` });
    };
    for (const step of steps) {
      if (step === 'rules') {
        const tr = performance.now();
        const ex = msg.timings.extractMs;
        await this.runRules(byScope, msg, tags, matches, errors, budgetEnd, waits, exprDnsResolver(run.dns));
        rulesMs += performance.now() - tr - (msg.timings.extractMs - ex);
      } else if (step.startsWith('retain:') || step.startsWith('remove:')) {
        const glob = new Glob(step.slice(7));
        const keep = step.startsWith('retain:');
        for (const t of [...tags]) if (glob.matches(t) !== keep) tags.delete(t);
      } else if (step === 'finalize') {
        // Scoring always happens at the end of a run.
      } else if (step === 'classify') {
        // Stalwart skips the classifier for a spam trap; no model yet gives no verdict.
        if (this.classifier === undefined || tags.has('SPAM_TRAP')) continue;
        if (overBudget()) {
          budgetSkip('classifier');
          continue;
        }
        const tc = performance.now();
        let waited = false;
        try {
          // A classifier that answers without a promise costs no microtask turn (as the modules above).
          const v = this.classifier.classify({ message: run.message, session, lists: this.lookups });
          waited = v !== undefined && 'then' in v;
          verdict = waited ? await v : (v as ClassifierVerdict | undefined);
        } catch (e) {
          errors.push({ source: 'classifier', message: errorMessage(e) });
        }
        const spent = performance.now() - tc;
        analysisMs += spent;
        // Its own work counts; waiting (for the first model, a store) does not.
        if (waited) classifierWaitedMs += spent;
      } else {
        // A hostile message can make a module slow (its work is bounded, not its time): what has not
        // run yet is skipped once the budget is spent, as the rules are.
        if (overBudget()) {
          budgetSkip(`module:${step}`);
          continue;
        }
        const ta = performance.now();
        // Most modules answer synchronously; awaiting a plain boolean would still cost a microtask
        // turn per module and message.
        let done = runModule(run, step);
        if (typeof done !== 'boolean') done = await done;
        analysisMs += performance.now() - ta;
        if (!done) skipped.push(step);
      }
    }
    for (const e of run.errors) errors.push({ source: `module:${e.module}`, message: e.message });
    // A failed query sets no tag (Stalwart), so say so, or a dead resolver would leave no trace in the result.
    const dnsStats = budgeted?.stats();
    if (dnsStats !== undefined && dnsStats.errors > 0) warnings.push(dnsFailureWarning(dnsStats));
    const extractMs = msg.timings.extractMs;
    if (verdict !== undefined) tags.add(verdict.tag);
    const result = this.finish(tags, matches, analysisMatches, errors, warnings, t0, msg.timings.parseMs, extractMs, analysisMs, rulesMs, skipped, run.llm);
    if (run.llm !== undefined) result.llm = run.llm;
    if (verdict !== undefined) result.classifier = { confidence: verdict.confidence, tag: verdict.tag, generation: verdict.generation };
    return result;
  }

  /** Runs the rule set over the message's elements, scope by scope (Stalwart's order). */
  private async runRules(
    byScope: RulesByScope, msg: AnalyzedMessage, tags: Set<string>, matches: RuleMatch[], errors: ClassifyError[], budgetEnd: () => number, waits: RuleWaits, dns: DnsResolver,
  ): Promise<void> {
    // A rule's name never reaches an inherited property (`system('constructor')` is '').
    const system = (name: string): string | number => (Object.hasOwn(this.system, name) ? this.system[name]! : '');
    const skipped = new Set<string>();
    const overBudget = (): boolean => performance.now() > budgetEnd();
    for (const scope of SCOPE_ORDER) {
      const rules = byScope[scope];
      if (rules.length === 0) continue;
      if (skipped.size > 0 || overBudget()) {
        for (const rule of rules) skipped.add(rule.name);
        continue;
      }
      let elements: readonly ScopeElement[];
      try {
        elements = msg.elements(scope);
      } catch (e) {
        errors.push({ source: 'message', scope, message: `extracting ${scope} elements failed: ${errorMessage(e)}` });
        continue;
      }
      const ctxs = elements.map((el): EvalContext => new ElementContext(el, tags, this.lookups, system, dns, this.regexWorkLimit));
      // Lookups of rules that cannot depend on other rules go out together (pipelined by the
      // store clients) instead of one round trip at a time; results are still applied in order.
      const prefetched = prefetchRules(rules, ctxs);
      for (let ei = 0; ei < elements.length; ei++) {
        const el = elements[ei]!;
        const ctx = ctxs[ei]!;
        for (let ri = 0; ri < rules.length; ri++) {
          const rule = rules[ri]!;
          if (skipped.size > 0 || overBudget()) {
            skipped.add(rule.name);
            continue;
          }
          let r: IfResult | undefined;
          try {
            const row = prefetched?.[ri];
            // Static lists answer synchronously, so most "async" rules never yield to the loop.
            const v = row !== undefined ? row[ei] : rule.block.evalMaybe(ctx);
            r = v instanceof Promise ? await waits.wait(v) : v;
          } catch (e) {
            const message = e === WAIT_EXCEEDED ? `no answer within the message's wait budget for stores and DNS (${waits.limitMs} ms in all); the rule was not applied` : errorMessage(e);
            const store = e instanceof ExprEvalError ? e.store : undefined;
            const failed: ClassifyError = store === undefined ? { source: rule.name, scope, element: el.label, message } : { source: rule.name, store, scope, element: el.label, message };
            if (e instanceof RegexWorkError) failed.kind = 'regex_work';
            errors.push(failed);
            continue;
          }
          // Only a String result is a tag (Stalwart: a non-string result sets nothing); one that would break
          // the verdict's header lines (a CR/LF from message text) is reported instead (README A21).
          if (r !== undefined && typeof r.value === 'string' && r.value !== '') {
            const problem = tagNameProblem(r.value);
            if (problem !== undefined) {
              errors.push({ source: rule.name, scope, element: el.label, message: `result ${quoteTag(r.value)} is not set as a tag: ${problem}` });
              continue;
            }
            tags.add(r.value);
            matches.push({ rule: rule.name, tag: r.value, scope, element: el.label, location: el.location, branch: r.branch });
          }
        }
      }
    }
    for (const name of skipped) {
      errors.push({ source: name, message: `skipped: the classify time budget of ${this.timeBudgetMs} ms was exceeded` });
    }
  }

  private finish(
    tags: Set<string>,
    matches: RuleMatch[],
    analysis: ModuleMatch[],
    errors: ClassifyError[],
    warnings: readonly string[],
    t0: number,
    parseMs: number,
    extractMs: number,
    analysisMs: number,
    rulesMs: number,
    skipped: string[],
    llm?: LlmVerdict,
  ): ClassifyResult {
    const { score, action, scores } = scoreTags(tags, this.tagTable, this.thresholds);
    const totalMs = performance.now() - t0;
    return {
      tags: [...tags],
      score,
      action,
      scores,
      matches,
      analysis,
      errors,
      warnings: [...warnings],
      headers: renderSpamHeaders(scores, score, action === 'spam' || action === 'reject' || action === 'discard', llm),
      timings: { parseMs, extractMs, analysisMs, rulesMs, totalMs },
      ...(skipped.length > 0 ? { skipped } : {}),
    };
  }
}
