/**
 * Rule-engine contracts: SpamRule / SpamTag objects in Stalwart's JSON shape, and the verdict.
 */
import type { LlmVerdict, ModuleMatch, SessionInput } from '../analysis/types.js';
import type { Resolver } from '../dns/types.js';
import type { Envelope, Location, Scope } from '../message/types.js';

/** `condition` as Stalwart writes it: `match` as an array or an index-keyed object (`{"0": {...}}`). */
export interface ConditionInput {
  match?: { if: string; then: string }[] | Record<string, { if: string; then: string }>;
  else?: string;
}

/** An `x:SpamRule` object (Stalwart's registry schema). `priority` default 500, `enable` default true. */
export interface SpamRuleInput {
  '@type': Scope;
  name: string;
  enable?: boolean;
  priority?: number;
  condition: ConditionInput;
  /** Server-set id when the rule comes from the JMAP store; ties in priority keep id/creation order. */
  id?: string;
}

/** An `x:SpamTag` object: `Score {tag, score}`, `Reject {tag}`, `Discard {tag}`. `tag` may be a glob. */
export type SpamTagInput =
  | { '@type': 'Score'; tag: string; score?: number }
  | { '@type': 'Reject'; tag: string }
  | { '@type': 'Discard'; tag: string };

/** Thresholds (`x:SpamSettings`): `scoreSpam` default 5.0; `scoreReject`/`scoreDiscard` 0 = off. */
export interface SpamThresholds {
  scoreSpam?: number;
  scoreReject?: number;
  scoreDiscard?: number;
}

/** A rule that failed to compile: which rule, which branch (`condition/match/0/if`), why and where. */
export interface RuleError {
  rule: string;
  path: string;
  message: string;
}

export interface RuleLoadReport {
  /** Enabled rules compiled and active. */
  loaded: number;
  /** Disabled rules (kept out of the run). */
  disabled: number;
  /** Rules refused because a branch does not compile (never silently dropped). */
  errors: RuleError[];
}

export type Action = 'allow' | 'spam' | 'reject' | 'discard';

export interface RuleMatch {
  rule: string;
  tag: string;
  scope: Scope;
  /** The element the rule fired on (URL, address, header name, IP, …); `""` for Any. */
  element: string;
  location: Location;
  /** Index of the `match` branch that produced the tag, -1 for `else`. */
  branch: number;
}

export interface ClassifyError {
  /** Rule name, `module:NAME`, `classifier`, `message` for parse problems, or `tags` for a refused upstream tag. */
  source: string;
  /** For a rule that failed because its lookup store did: the store's namespace. */
  store?: string;
  /**
   * Set for a rule that failed because a `matches` search was refused for its work
   * (`RegexWorkError`: pattern cost × subject length over `EngineOptions.regexWorkLimit`).
   */
  kind?: 'regex_work';
  message: string;
  scope?: Scope;
  element?: string;
}

export interface ClassifyResult {
  /** Every tag set (upstream, built-in and rule tags), in insertion order. */
  tags: string[];
  /** Sum of the scores of the tags (SpamTag `Score`), rounded to 2 decimals. */
  score: number;
  action: Action;
  /** Per-tag score, for `--explain`. */
  scores: Record<string, number>;
  matches: RuleMatch[];
  /** Tags set by the built-in analysis modules, with the module that set each (in order). */
  analysis: ModuleMatch[];
  errors: ClassifyError[];
  /** Problems with the message itself (malformed MIME, bad encodings); classification still ran. */
  warnings: string[];
  /**
   * `X-Spam-Result` and `X-Spam-Score` header values (Stalwart's spam filter), and between them, in this key
   * order, `X-Spam-LLM` (`<category> (<explanation>)`) when the LLM step recognised a category and the reply
   * had an explanation, as Stalwart writes it.
   */
  headers: { 'X-Spam-Result': string; 'X-Spam-LLM'?: string; 'X-Spam-Score': string };
  /**
   * The LLM step's reading of the model's reply (docs/analysis.md, "llm"), when it recognised a category:
   * `category` and `confidence` as in the `LLM_*` tag, `explanation` as in `X-Spam-LLM`.
   */
  llm?: LlmVerdict;
  /** Milliseconds spent per phase. */
  timings: { parseMs: number; extractMs: number; analysisMs: number; rulesMs: number; totalMs: number };
  /** Steps named in `ClassifyOptions.steps` that do not exist here (e.g. `pyzor`), in order. */
  skipped?: string[];
  /**
   * The statistical classifier's verdict (docs/classifier.md), when a model classified the message:
   * average spam confidence (0–1), its `PROB_*` tag (also in `tags`) and the model's generation.
   */
  classifier?: { confidence: number; tag: string; generation: number };
}

export interface ClassifyOptions {
  /** What the MTA knows about the SMTP session (validated; a bad field rejects with `SessionError`). */
  session?: SessionInput;
  /** The older form of `session` (remote IP, HELO, MAIL FROM, RCPT TO, …); ignored when `session` is given. */
  envelope?: Envelope;
  /** DNS for this message instead of the engine's resolver. */
  dns?: Resolver;
  /**
   * Advanced (conformance runs): the steps to run instead of the default pipeline, in order:
   * module names (`ehlo`, `message_id`, …), `rules`, `finalize`, `retain:GLOB` / `remove:GLOB`
   * (keep / drop tags matching a glob). Unknown steps are listed in the result's `skipped`.
   */
  steps?: readonly string[];
  /** Tags the MTA already set upstream (SPF_FAIL, DMARC_POLICY_ALLOW, RBL_*, …). */
  tags?: Iterable<string>;
}
