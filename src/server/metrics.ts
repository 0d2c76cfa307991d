/**
 * Prometheus metrics of the scanning server (`/metrics`, prom-client). Each server has its own
 * registry, so several servers in one process (tests, embedding) do not collide.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ClassifyResult } from '../engine/types.js';
import type { RegexCacheStats } from '../expr/regex-cache.js';
import type { StepBreakerStats } from './pool.js';
import type { StatTotals } from './rspamd-reply.js';

export type Protocol = 'rspamd' | 'milter' | 'spamd';

/**
 * Listeners whose connections are capped (src/server/peers.ts): the mail-path protocols, the metrics
 * listener, and the JMAP API when `serve` runs it beside them.
 */
export type CappedListener = Protocol | 'metrics' | 'jmap';

/**
 * What became of a learn request: stored, already stored with that class, forgotten, not learned (a
 * forget of a message never learned), `refused` (learning is off on that listener: rspamd without
 * `--allow-learn`), over `limits.learnPerMinute`, or over `limits.maxLearnSize`.
 */
export type LearnOutcome = 'learned' | 'already' | 'forgotten' | 'not_learned' | 'refused' | 'rate_limited' | 'too_large';

export class ServerMetrics {
  readonly registry = new Registry();
  /** Scans by protocol and action (`allow`, `spam`, `reject`, `discard`, or why it was not scanned: `too_large`, `timeout`, `busy`, `session`, `error`, `closing`, `abandoned`, `buffer_full`; see `NotScanned` in scan.ts). */
  readonly scans = new Counter({
    name: 'spamrule_scans_total',
    help: 'Messages handled, by protocol and action (or the reason they were not scanned)',
    labelNames: ['protocol', 'action'] as const,
    registers: [this.registry],
  });
  readonly scanSeconds = new Histogram({
    name: 'spamrule_scan_duration_seconds',
    help: 'Time from a complete message to its verdict, in seconds, by protocol',
    labelNames: ['protocol'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  /**
   * Rules and modules that failed, by `reason`: `regex_work` (a `matches` search over the regex work limit,
   * `RegexWorkError`), `store` (their lookup store failed), `other`.
   */
  readonly ruleErrors = new Counter({
    name: 'spamrule_rule_errors_total',
    help: 'Rules and analysis modules that failed at run time (reported in the verdict, the rest still ran), by reason: regex_work (a matches search over the regex work limit), store (their lookup store failed), other',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'spamrule_store_errors_total',
    help: 'Rules that failed during scans because their lookup store did, by namespace',
    labelNames: ['namespace'] as const,
    registers: [this.registry],
  });
  readonly protocolErrors = new Counter({
    name: 'spamrule_protocol_errors_total',
    help: 'Malformed requests and broken connections, by protocol',
    labelNames: ['protocol'] as const,
    registers: [this.registry],
  });
  /** Connections closed because the client was too slow: `idle`, `head` or `request` (see `ServerLimits`). */
  readonly clientTimeouts = new Counter({
    name: 'spamrule_client_timeouts_total',
    help: 'Connections closed because the client was idle too long or too slow to send a request head or a whole request, by protocol and timeout',
    labelNames: ['protocol', 'timeout'] as const,
    registers: [this.registry],
  });
  private readonly depths: (() => number)[] = [];
  /** Read from the scanners when the metrics are collected ({@link watchQueueDepth}), not set per scan. */
  readonly queueDepth = new Gauge({
    name: 'spamrule_queue_depth',
    help: 'Scans running or waiting for a worker',
    registers: [this.registry],
    collect: () => {
      if (this.depths.length > 0) this.queueDepth.set(this.depths.reduce((n, f) => n + f(), 0));
    },
  });
  readonly connections = new Gauge({
    name: 'spamrule_connections',
    help: 'Open connections, by protocol',
    labelNames: ['protocol'] as const,
    registers: [this.registry],
  });
  /** Connections closed as soon as they were accepted: `max` (`maxConnections`) or `per_peer` (`maxConnectionsPerPeer`). */
  readonly connectionsRefused = new Counter({
    name: 'spamrule_connections_refused_total',
    help: 'Connections closed on accept because the listener (max) or the peer (per_peer) had as many open as allowed, by protocol and reason',
    labelNames: ['protocol', 'reason'] as const,
    registers: [this.registry],
  });
  private buffer: { used(): number; peak(): number; limit: number } | undefined;
  /** Read from the buffer budget when the metrics are collected ({@link watchBuffer}). */
  readonly bufferedBytes = this.gaugeOf(
    'spamrule_buffered_bytes',
    'Request bytes all listeners hold in memory now (messages received, waiting or being scanned)',
    () => this.buffer?.used(),
  );
  readonly bufferedBytesPeak = this.gaugeOf(
    'spamrule_buffered_bytes_peak',
    'The most request bytes held in memory at once since the server started',
    () => this.buffer?.peak(),
  );
  readonly bufferedBytesLimit = this.gaugeOf(
    'spamrule_buffered_bytes_limit',
    'The buffer budget (limits.maxBufferedBytes), in bytes',
    () => this.buffer?.limit,
  );
  /** Requests refused because their bytes did not fit in the buffer budget (`limits.maxBufferedBytes`). */
  readonly bufferRefusals = new Counter({
    name: 'spamrule_buffer_refusals_total',
    help: 'Requests (milter: packets) refused with a temporary failure because the buffer budget was full, by protocol',
    labelNames: ['protocol'] as const,
    registers: [this.registry],
  });

  private regexCache: (() => RegexCacheStats) | undefined;
  /** Read when the metrics are collected ({@link watchRegexCache}): the worker threads' regex DFA caches, summed. */
  readonly regexCacheBytes = this.gaugeOf(
    'spamrule_regex_cache_bytes',
    'Bytes the DFA caches of compiled matches() patterns hold, summed over the worker threads (as of each thread\'s last scan)',
    () => this.regexCache?.().bytes,
  );
  readonly regexCacheBudgetBytes = this.gaugeOf(
    'spamrule_regex_cache_budget_bytes',
    'The regex DFA cache budget of all worker threads together (each thread: --regex-cache, analysis.regexCacheBytes), in bytes',
    () => this.regexCache?.().budgetBytes,
  );
  readonly regexCachePrograms = this.gaugeOf(
    'spamrule_regex_cache_programs',
    'Compiled matches() patterns whose DFA cache holds something, summed over the worker threads',
    () => this.regexCache?.().warmPrograms,
  );
  readonly regexCacheUntracked = this.gaugeOf(
    'spamrule_regex_cache_untracked_programs',
    'Compiled patterns left out of the budget because their DFA lacks the fields it reads (another re2js version); 0 normally',
    () => this.regexCache?.().untracked,
  );
  readonly regexCacheEvictions = new Counter({
    name: 'spamrule_regex_cache_evictions_total',
    help: 'Regex DFA caches dropped to keep within the budget (rebuilt when next needed), summed over the worker threads',
    registers: [this.registry],
    collect: () => {
      if (this.regexCache === undefined) return;
      // A running total kept by the threads: the counter is set to it.
      this.regexCacheEvictions.reset();
      this.regexCacheEvictions.inc(this.regexCache().evictions);
    },
  });

  private stepBreakers: (() => StepBreakerStats) | undefined;
  /** Read when the metrics are collected ({@link watchStepBreakers}): worker threads whose LLM / Pyzor breaker is open. */
  readonly stepBreakerOpen = new Gauge({
    name: 'spamrule_step_breaker_open',
    help: 'Worker threads whose circuit breaker for the step (llm, pyzor) is open, so that messages skip it (as of each thread\'s last scan)',
    labelNames: ['step'] as const,
    registers: [this.registry],
    collect: () => {
      if (this.stepBreakers === undefined) return;
      const { open } = this.stepBreakers();
      for (const [step, n] of Object.entries(open)) this.stepBreakerOpen.set({ step }, n);
    },
  });
  readonly stepBreakerOpened = new Counter({
    name: 'spamrule_step_breaker_opened_total',
    help: 'Times a worker thread\'s circuit breaker for the step (llm, pyzor) was seen to open (closed to open; a failed probe that keeps it open is not counted)',
    labelNames: ['step'] as const,
    registers: [this.registry],
    collect: () => {
      if (this.stepBreakers === undefined) return;
      // A running total kept by the pool: the counter is set to it.
      this.stepBreakerOpened.reset();
      for (const [step, n] of Object.entries(this.stepBreakers().openedTotal)) this.stepBreakerOpened.inc({ step }, n);
    },
  });

  /** Learn requests over the mail-path protocols' learn commands, by outcome ({@link LearnOutcome}). */
  readonly learns = new Counter({
    name: 'spamrule_learns_total',
    help: 'Learn requests over the mail-path protocols (rspamd learnspam/learnham, spamd TELL), by protocol and outcome (learned, already, forgotten, not_learned, refused, rate_limited, too_large)',
    labelNames: ['protocol', 'outcome'] as const,
    registers: [this.registry],
  });

  /**
   * Plain running totals behind rspamd's controller `/stat` (rspamc stat), which must answer without
   * waiting for prom-client's collection. Since the server started.
   */
  readonly totals: StatTotals = { started: Date.now(), actions: { allow: 0, spam: 0, reject: 0, discard: 0 }, scanMs: 0, learned: 0, connections: 0 };

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'spamrule_' });
  }

  /** A gauge set, each time the metrics are collected, to what `read` answers (left as it is while that is undefined). */
  private gaugeOf(name: string, help: string, read: () => number | undefined): Gauge {
    const g: Gauge = new Gauge({
      name,
      help,
      registers: [this.registry],
      collect: () => {
        const v = read();
        if (v !== undefined) g.set(v);
      },
    });
    return g;
  }

  /** Counts a scanned message (its action and milliseconds). */
  countScan(protocol: Protocol, action: ClassifyResult['action'], ms: number): void {
    this.scans.inc({ protocol, action });
    this.scanSeconds.observe({ protocol }, ms / 1000);
    this.totals.actions[action]++;
    this.totals.scanMs += ms;
  }

  /** Counts a connection accepted on a listener; its gauge goes down when it closes. */
  countConnection(protocol: Protocol, socket: { once(event: 'close', f: () => void): unknown }): void {
    this.connections.inc({ protocol });
    this.totals.connections++;
    socket.once('close', () => this.connections.dec({ protocol }));
  }

  /** Counts a learn request's outcome. */
  countLearn(protocol: 'rspamd' | 'spamd', outcome: LearnOutcome): void {
    this.learns.inc({ protocol, outcome });
    if (outcome === 'learned') this.totals.learned++;
  }

  /** The `spamrule_buffered_bytes*` gauges read these when the metrics are collected. */
  watchBuffer(buffer: { used(): number; peak(): number; limit: number }): void {
    this.buffer = buffer;
  }

  /** The `spamrule_regex_cache_*` series read this when the metrics are collected (`SpamEnginePool.regexCacheStats`). */
  watchRegexCache(stats: () => RegexCacheStats): void {
    this.regexCache = stats;
  }

  /** The `spamrule_step_breaker_*` series read this when the metrics are collected (`SpamEnginePool.stepBreakerStats`). */
  watchStepBreakers(stats: () => StepBreakerStats): void {
    this.stepBreakers = stats;
  }

  /** `spamrule_queue_depth` is the sum of what these say when the metrics are collected. */
  watchQueueDepth(depth: () => number): void {
    this.depths.push(depth);
  }

  /**
   * Counts a verdict's errors: every failed rule or module in `spamrule_rule_errors_total{reason}`, and
   * those that failed because their store did also in `spamrule_store_errors_total{namespace}`.
   */
  countErrors(r: Pick<ClassifyResult, 'errors'>): void {
    for (const e of r.errors) {
      if (e.source === 'message') continue;
      this.ruleErrors.inc({ reason: e.kind === 'regex_work' ? 'regex_work' : e.store !== undefined ? 'store' : 'other' });
      if (e.store !== undefined) this.storeErrors.inc({ namespace: e.store });
    }
  }

  /** Text exposition format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
