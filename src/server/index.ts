/**
 * The mail path (docs/deployment.md): spamrule behind the protocols MTAs already speak (rspamd
 * HTTP, milter, spamd), classification in a pool of worker threads, limits, metrics and logs.
 */
export { SpamEnginePool, ScanError, type SpamEnginePoolOptions, type ScanErrorReason, type StepBreakerChange, type StepBreakerStats, type StepBreakerStatus } from './pool.js';
export { buildEngineFromSpec, ruleSetSpecFromBundle, type RuleSetSpec } from './ruleset.js';
export { startScanServer, parseListenAddress, type ScanServer, type ScanServerOptions, type ListenAddress } from './server.js';
export { AbandonedError, BusyError, ScanGate, defaultLimits, parseSize, type ServerLimits } from './limits.js';
export { createLogger, type Logger, type LogOptions } from './log.js';
export { ServerMetrics, type Protocol } from './metrics.js';
export { MILTER_BUSY_ACTIONS, MILTER_ERROR_ACTIONS, type MilterBusyAction, type MilterErrorAction } from './milter-policy.js';
export { Scanner, SHUTTING_DOWN, type Classifier, type ScanOutcome, type UnscannedOutcome, type RepliedOutcome, type ScanRequest, type NotScanned, type OpenRequest } from './scan.js';
export { toRspamdReply, sessionFromHeaders, RSPAMD_ACTIONS, type RspamdReply } from './rspamd.js';
export { spamdReply } from './spamd.js';
