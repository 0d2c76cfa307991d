/**
 * spamrule: a Stalwart-compatible SpamRule evaluation engine for Node.
 *
 * ```ts
 * import { SpamEngine, DEFAULT_RULES, DEFAULT_TAGS } from 'spamrule';
 * const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });
 * const verdict = await engine.classify(rawBytes, { envelope: { remoteIp: '203.0.113.7' }, tags: ['SPF_FAIL'] });
 * ```
 */
import { SpamEngine } from './engine/engine.js';
import { DEFAULT_RULES, DEFAULT_TAGS } from './engine/default-rules.js';
import type { ClassifyOptions, ClassifyResult } from './engine/types.js';

export * from './engine/index.js';
// The syntax tree of parseExpression (grammar/) is not a public shape: compileExpression checks and compiles.
export { compileExpression, compileIfBlock } from './expr/index.js';
export type { CompiledExpression, CompiledIfBlock, EvalContext, ExpressionObject } from './expr/types.js';
export { ExprParseError, ExprEvalError } from './expr/types.js';
// What one `matches` search may cost (RegexWorkError: over `regexWorkLimit`), and the thread's budget for the
// DFA caches of compiled patterns (`regexCacheBytes`), with its counters (docs/expression-language.md, "Work per
// search" and "Memory").
export {
  RegexWorkError, DEFAULT_REGEX_WORK_LIMIT, DEFAULT_REGEX_CACHE_BYTES, setRegexCacheBudget, regexCacheStats, clearRegexCaches,
  type RegexCacheStats,
} from './expr/index.js';
// `SpamEngine.classify` rejects with SessionError for an unusable `session` (before reading the message).
export { SessionError } from './analysis/session.js';
export type { SessionInput, SpfResult, DkimResult, DmarcResult, DmarcPolicy, IprevResult, PyzorSettings, PyzorDigestMode, LlmSettings, LlmHttpAuth, LlmSecret, LlmVerdict, StepBreakerOptions } from './analysis/types.js';
// DNS for the analysis modules and DNSBLs (docs/dns.md): `new SpamEngine({ dns: createResolver('system') })`.
// A bad spec (createResolver, SpamEnginePool's `dns`, `--dns`) is refused with DnsConfigError.
export {
  createResolver, SystemResolver, StaticResolver, OffResolver, DnsConfigError, withBudget, ipExists, mxExists, reverseName,
  ptrQueryName, stalwartTestErrors,
  type Resolver, type DnsAnswer, type DnsType, type DnsRecordMap, type MxRecord, type CreateResolverOptions,
  type SystemResolverOptions, type SystemResolverStats, type StaticResolverOptions, type StaticZone, type StaticRecords,
  type DnsBudget, type DnsBudgetStats, type BudgetedResolver,
} from './dns/index.js';
export * as values from './expr/value.js';
export { analyzeMessage } from './message/index.js';
export type { Envelope, Scope, ScopeElement, AnalyzedMessage, Location } from './message/types.js';
export { LookupMap, MemoryStore, StaticLookupList } from './lookup/index.js';
export type { LookupStore, LookupRegistry } from './lookup/types.js';
export {
  createLookupStore, parseLookupStoreConfig, CachedLookupStore, CircuitBreakerStore, NotStartedStore, resolveSecret, maskSecrets, shardOf, keySlot,
  type CreateLookupStoreOptions, type CacheOptions, type BreakerOptions, type PinnedHosts,
} from './lookup/index.js';
// Remote (`HttpLookup`) lists served from their on-disk cache, and the lookup map of a rule set's sources, as
// SpamEnginePool's workers and `spamrule classify` build it (engineOptionsFromBundle uses it).
export {
  HttpListStore, ListDownloadError, defaultListCacheDir, buildLookupMap,
  type HttpListOptions, type HttpLookupInput, type LookupSources, type LookupSourceOptions,
} from './lookup/index.js';
// Errors a caller can meet: bad store configurations and secrets, failed or unsupported lookups.
export { LookupConfigError, LookupStoreError, LookupNotSupportedError } from './lookup/index.js';
export { createJmapServer, loadManagedRuleSet, TokenStore, PERMISSIONS } from './jmap/index.js';
export { JmapClient, importRules, readStalwartBundle, formatSetError } from './client/index.js';
// Errors of the JMAP client: transport and HTTP problems, method errors, refused changes.
export { JmapError, JmapRequestError, JmapMethodError, JmapSetError } from './client/index.js';
// Classification on worker threads (src/server/pool.ts); the protocol listeners run under `spamrule serve`.
export { SpamEnginePool, ScanError, type SpamEnginePoolOptions, type ScanErrorReason, type StepBreakerChange, type StepBreakerStats } from './server/pool.js';
// The LLM and Pyzor circuit breakers of an engine (docs/analysis.md, "Circuit breaker"): `listStepBreakers(engine.analysis)`.
export { listStepBreakers, type StepBreakerStatus } from './analysis/step-breaker.js';
export { ruleSetSpecFromBundle, type RuleSetSpec } from './server/ruleset.js';
// Stalwart's statistical classifier (docs/classifier.md): samples and model in a lookup store, PROB_* tags.
export {
  SpamClassifier, ClassifierStore, DamagedRecordError, openClassifier, liveClassifier, sqliteModelConfig, train, probTag,
  type ClassifierVerdict, type EngineClassifier, type SpamClassifierOptions, type ClassifierSettings, type TrainReport,
} from './classifier/index.js';

// The named types the exports above use in their signatures, so that each can be imported by name
// (test/package/signature-types.test.ts keeps it so): options, results and the shapes they carry.
export type { IfResult, IfBlockError, SourcePosition, CompileOptions, DnsResolver } from './expr/types.js';
export type { MaybeAsyncExpression } from './expr/compile.js';
export type { Captures } from './expr/specialize.js';
export type { IfBlockInput } from './expr/if-block.js';
export type { AnalysisConfig, TestMode, ModuleMatch, Session, ExpressionInput, FileExtensionInput } from './analysis/types.js';
export type { PyzorResponse } from './analysis/pyzor/client.js';
export type { AnalysisTimings } from './message/types.js';
export type { AnalyzeOptions, MessageContext, Recipient } from './message/context.js';
export type { EnvelopeFromHeaders } from './message/analyze.js';
export type { RawHeader } from './message/headers.js';
export type { EmailAddress, Hostname } from './message/hostname.js';
export type { MimeMessage, MimePart, PartHeader, PartKind } from './message/mime-tree.js';
export type { ContentType } from './message/content-type.js';
export type { MimeView, TextPart, ParsedBody } from './message/text-parts.js';
export type { HtmlTokens, HtmlToken, HtmlStartTag, HtmlEndTag, HtmlComment, HtmlText, HtmlLinks } from './message/html-tokens.js';
export type { TextTokens } from './message/tokenizer.js';
export type { LookupValue, SqlParam } from './lookup/types.js';
export type { StaticEntry } from './lookup/memory.js';
export type { ConfigProblem } from './lookup/config.js';
export type { DownloadOptions } from './lookup/http-list.js';
export type { StoreHostResolver, StorePolicyOptions } from './lookup/store-policy.js';
export type { ConnectionRefusal } from './net/connection-caps.js';
export type { JmapServer, JmapServerOptions } from './jmap/server.js';
export type { ManagedRuleSet } from './jmap/index.js';
export type { Limits } from './jmap/methods.js';
export type { EngineLike } from './jmap/bridge.js';
export type { ObjectType, Data, TrainingSampleSink } from './jmap/kind.js';
export type { PushOptions } from './jmap/push.js';
export type { ObjectRepository, Snapshot, Mutation } from './jmap/repo.js';
export type { ChangeLog, ChangeRow } from './jmap/changes.js';
export type { TokenInfo } from './jmap/auth.js';
export type { JmapClientOptions, CoreLimits, ManagedType } from './client/client.js';
export type {
  JmapSession, Invocation, GetResponse, QueryOptions, Filter, QueryResponse, SetRequest, SetResponse, SetError, SpamRule, SpamRuleScope,
  ExpressionMatch, StoreLookup,
} from './client/types.js';
export type { RuleInput, StalwartBundle } from './client/bundle.js';
export type { ImportOptions, ImportReport } from './client/import.js';
export type { ReplyFormat } from './server/rspamd-reply.js';
export type { ReplyVerdict } from './server/worker.js';
export type { ClassifierInput, ProbTag } from './classifier/classifier.js';
export type { TokenFacts, TrustCheck } from './classifier/features.js';
export type { ClassifierModel, Features, FtrlParameters, FtrlTrainer } from './classifier/model.js';
export type { Sample, SampleMeta, SampleState, PendingSample, Reservoir, TrainerState, CommitResult } from './classifier/store.js';
export type { TrainOptions } from './classifier/train.js';

let defaultEngine: SpamEngine | undefined;

/**
 * Classifies a raw RFC 5322 message with spamrule's built-in default rule set (docs/default-rules.md).
 * For your own rules, create a {@link SpamEngine}. Never throws for a bad message.
 */
export function classify(message: Uint8Array | string, opts?: ClassifyOptions): Promise<ClassifyResult> {
  defaultEngine ??= new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });
  return defaultEngine.classify(message, opts);
}
