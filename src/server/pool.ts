/**
 * `SpamEnginePool`: `classify()` on a pool of worker threads (piscina), so that scanning a large
 * message never blocks the caller's event loop (an SMTP server, a milter, a Haraka plugin). Each
 * thread compiles the rule set itself; {@link SpamEnginePool.update} reaches every thread before
 * the next message is classified.
 *
 * ```ts
 * const pool = new SpamEnginePool({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS, workers: 2 });
 * const verdict = await pool.classify(raw, { envelope: { remoteIp: '203.0.113.7' } });
 * await pool.close();
 * ```
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { createResolver, type DnsConfigError } from '../dns/index.js';
import { compileRuleSet } from '../engine/rules.js';
import { checkEngineOptions } from '../engine/options.js';
import type { SpamRuleInput, ClassifyOptions, ClassifyResult, RuleLoadReport } from '../engine/types.js';
import { LookupConfigError, parseLookupStoreConfig } from '../lookup/config.js';
import { AddressPolicy } from '../net/index.js';
import { DEFAULT_REGEX_CACHE_BYTES, type RegexCacheStats } from '../expr/regex-cache.js';
import type { RuleSetSpec } from './ruleset.js';
import type { ReplyFormat } from './rspamd-reply.js';
import type { StepBreakerStatus } from '../analysis/step-breaker.js';
import type { ReplyVerdict, RuleSetUpdate, ScanReply, ScanTask, ThreadBreakers, ThreadLoaded, ThreadRegexStats, WorkerInit } from './worker.js';

export type { ReplyVerdict } from './worker.js';
export type { StepBreakerStatus } from '../analysis/step-breaker.js';

/** A worker thread's step breaker went from closed to open (`opened`) or back (`closed`), as its scan replies show. */
export interface StepBreakerChange {
  change: 'opened' | 'closed';
  /** The worker thread (`threadId`). */
  worker: number;
  /** The breaker as of that thread's last scan (`lastError`, `since` while open). */
  breaker: StepBreakerStatus;
}

/** The step breakers of the pool's threads: per step, threads whose breaker is open now and the openings seen since the pool started. */
export interface StepBreakerStats {
  open: Record<StepBreakerStatus['step'], number>;
  openedTotal: Record<StepBreakerStatus['step'], number>;
}

/** A worker's answer with a verdict (not stale, no error). */
type Scanned = Exclude<ScanReply, { stale: true } | { error: unknown }>;

export interface SpamEnginePoolOptions extends RuleSetSpec {
  /** Worker threads (default: the number of CPU cores). */
  workers?: number;
  /**
   * Per-message time limit in ms (default 0 = none). A scan that exceeds it is abandoned and its
   * thread restarted (a compiled rule cannot be interrupted any other way).
   */
  timeoutMs?: number;
  /**
   * Each thread's V8 young generation in MB (default {@link DEFAULT_YOUNG_GENERATION_MB}; 0 = V8's own).
   * Classification allocates many short-lived objects; a larger nursery means fewer scavenges, each
   * of which copies what is still alive, so less CPU per message (3–8% less than V8's default in
   * bench runs on the corpus; docs/deployment.md, sizing). Costs up to this much memory per thread.
   */
  youngGenerationMb?: number;
  /**
   * The threads' log level (pino's: `info`, `warn`, …). Given, a thread writes its warnings (a list
   * download that failed, a store it could not open) as JSON lines on stdout, as `spamrule serve`'s
   * own logger does; not given, as `spamrule worker: …` text on stderr.
   */
  logLevel?: string;
}

/** The worker threads' young generation (MB): fewer scavenges than V8's default for a worker. */
export const DEFAULT_YOUNG_GENERATION_MB = 64;

/** Why {@link SpamEnginePool.classify} could not produce a verdict (never the message's fault). */
export type ScanErrorReason = 'timeout' | 'worker' | 'closed' | 'session';

/** Thrown by {@link SpamEnginePool.classify} when no verdict could be computed. */
export class ScanError extends Error {
  constructor(
    readonly reason: ScanErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'ScanError';
  }
}

/**
 * Where the worker module is. Under the compiled package (`dist/`) it is `worker.js` next to this
 * file; when this file runs from TypeScript sources (tests, `tsx`), the worker is `worker.ts` and
 * worker-ts.mjs registers tsx's loader in the thread first.
 */
function workerEntry(): { filename: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    return { filename: fileURLToPath(new URL('./worker-ts.mjs', import.meta.url)), execArgv: [] };
  }
  const js = fileURLToPath(new URL('./worker.js', import.meta.url));
  if (!existsSync(js)) throw new Error(`spamrule worker module not found at ${js}`);
  return { filename: js, execArgv: [] };
}

let channelSeq = 0;

/** How long {@link SpamEnginePool.close} waits at most for threads still loading their module (ms). */
const CLOSE_LOAD_WAIT_MS = 10_000;

function snapshot(spec: RuleSetSpec): RuleSetSpec {
  // Lists may be a Map (cloneable as is) or entries; normalise to entries for a stable shape.
  return {
    rules: spec.rules,
    tags: spec.tags,
    thresholds: spec.thresholds,
    lists: spec.lists === undefined ? undefined : [...spec.lists],
    stores: spec.stores,
    httpLookups: spec.httpLookups,
    listCacheDir: spec.listCacheDir,
    listAllowedNetworks: spec.listAllowedNetworks,
    refreshLists: spec.refreshLists,
    system: spec.system,
    dns: spec.dns,
    classifier: spec.classifier,
    engine: spec.engine,
  };
}

/**
 * Checks, in the caller's thread, what each thread would otherwise only warn about at run time, so that
 * a mistake is refused where it is made rather than answered `""` by every lookup: the DNS spec and
 * the stores' configurations, the lists' allowed networks and the engine options. Throws {@link DnsConfigError},
 * {@link LookupConfigError} or `TypeError` (an allowed network that is no address or CIDR range, an engine
 * option `new SpamEngine` refuses: checkEngineOptions).
 */
function checkSpec(spec: RuleSetSpec): void {
  // The engine options each thread passes to `new SpamEngine`: refused there, they left every thread
  // without an engine while the server ran (an unknown module in `analysis.disabledModules`, `--no-module`).
  if (spec.engine !== undefined) checkEngineOptions(spec.engine);
  // The spec alone (kind, server addresses, the static file): the resolver made here is dropped.
  if (spec.dns !== undefined) createResolver(spec.dns);
  // Each list download would fail on it: throws TypeError naming the entry.
  if (spec.listAllowedNetworks !== undefined) new AddressPolicy(spec.listAllowedNetworks);
  for (const s of spec.stores ?? []) {
    if (s.notStarted !== undefined) continue; // no configuration to open
    const parsed = parseLookupStoreConfig(s.config);
    if (!parsed.ok) throw new LookupConfigError(s.namespace, `invalid configuration: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, parsed.errors);
  }
}

export class SpamEnginePool {
  private readonly piscina: Piscina;
  private readonly channel: BroadcastChannel;
  private spec: RuleSetSpec;
  private gen = 0;
  private readonly timeoutMs: number;
  private closed = false;
  private running = 0;
  private drained: (() => void) | undefined;
  /** Threads whose module has loaded (their {@link ThreadLoaded} message came), by `threadId`. */
  private readonly loaded = new Set<number>();
  private report: RuleLoadReport;
  /** Each thread's regex cache counters as of its last scan, by `threadId`. */
  private readonly regexStats = new Map<number, ThreadRegexStats>();
  /** Evictions counted by threads that have ended (replaced after a time-out), so the sum never goes back. */
  private retiredEvictions = 0;
  /** Each thread's step breakers as of its last scan, by `threadId`. */
  private readonly breakers = new Map<number, StepBreakerStatus[]>();
  private readonly openedTotal: StepBreakerStats['openedTotal'] = { llm: 0, pyzor: 0 };
  private readonly breakerListeners = new Set<(c: StepBreakerChange) => void>();

  /**
   * Starts the threads. Throws {@link DnsConfigError} for a bad `dns` spec, {@link LookupConfigError}
   * for a store configuration the threads could not open, and `Error` when the worker module cannot be
   * found. Rules that do not compile are not thrown: {@link loadReport} lists them.
   */
  constructor(opts: SpamEnginePoolOptions) {
    const { workers, timeoutMs, youngGenerationMb, logLevel, ...spec } = opts;
    const young = youngGenerationMb ?? DEFAULT_YOUNG_GENERATION_MB;
    checkSpec(spec);
    this.report = compileRuleSet(spec.rules ?? []).report;
    this.spec = snapshot(spec);
    this.timeoutMs = timeoutMs ?? 0;
    const threads = Math.max(1, Math.floor(workers ?? availableParallelism()));
    const name = `spamrule-pool-${process.pid}-${++channelSeq}-${Math.random().toString(36).slice(2)}`;
    this.channel = new BroadcastChannel(name);
    this.channel.onmessage = (ev: unknown) => {
      const m = (ev as { data: RuleSetUpdate | ThreadLoaded }).data;
      if ('loaded' in m) this.loaded.add(m.loaded);
    };
    // Listening must not keep the process alive: the threads do that while the pool is open.
    (this.channel as unknown as { unref(): void }).unref();
    const { filename, execArgv } = workerEntry();
    const workerData: WorkerInit = { channel: name, gen: 0, spec: this.spec, ...(logLevel !== undefined ? { logLevel } : {}) };
    this.piscina = new Piscina({
      filename,
      execArgv,
      workerData,
      ...(young > 0 ? { resourceLimits: { maxYoungGenerationSizeMb: young } } : {}),
      minThreads: threads,
      maxThreads: threads,
      // One message per thread at a time: a timeout ends the thread, which must not take other
      // messages with it; and classification is CPU-bound, so more would not be faster.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.MAX_SAFE_INTEGER,
      // Idle threads keep their event loop running (piscina's default blocks them in Atomics.wait
      // between tasks): remote-list downloads, classifier model refreshes, store reconnects and
      // rule-set updates then progress while no message is being scanned.
      atomics: 'disabled',
      // piscina's own run/wait-time histograms are read by nobody here (the listeners keep
      // prom-client metrics), and recording them costs the main thread clock reads per task.
      recordTiming: false,
    });
    // A thread that dies is replaced by piscina; its task is rejected and reported per scan.
    this.piscina.on('error', () => undefined);
  }

  /** Number of threads. */
  get workers(): number {
    return this.piscina.options.maxThreads;
  }

  /** Messages waiting for a free thread. */
  get queueSize(): number {
    return this.piscina.queueSize;
  }

  /** Threads that have loaded their module and built their engine (a thread restarted after a time-out counts again). */
  get threadsLoaded(): number {
    return this.loaded.size;
  }

  /** Messages being classified or waiting. */
  get pending(): number {
    return this.running;
  }

  /**
   * The DFA caches of compiled `matches` patterns (src/expr/regex-cache.ts), summed over the threads: each
   * thread has its own budget and caches, and reports them with every message it classifies, so the figures
   * are as of each thread's last message (a thread that has classified nothing counts its budget only).
   * `budgetBytes` is the budget of all threads together (bytes; `Infinity` when unbounded); `evictions` also
   * counts those of threads that have ended since.
   */
  regexCacheStats(): RegexCacheStats {
    const threads = this.piscina.threads.map((w) => w.threadId);
    for (const [id, s] of this.regexStats) {
      if (threads.includes(id)) continue;
      this.retiredEvictions += s.evictions;
      this.regexStats.delete(id);
    }
    const sum: RegexCacheStats = { budgetBytes: 0, bytes: 0, warmPrograms: 0, evictions: this.retiredEvictions, untracked: 0 };
    const configured = this.spec.engine?.regexCacheBytes ?? DEFAULT_REGEX_CACHE_BYTES;
    for (let i = 0; i < this.workers; i++) {
      const s = threads[i] !== undefined ? this.regexStats.get(threads[i]!) : undefined;
      sum.budgetBytes += s?.budgetBytes ?? configured;
      if (s === undefined) continue;
      sum.bytes += s.bytes;
      sum.warmPrograms += s.warmPrograms;
      sum.evictions += s.evictions;
      sum.untracked += s.untracked;
    }
    return sum;
  }

  /**
   * The step breakers (LLM, Pyzor: src/analysis/step-breaker.ts) of the threads, each as of the thread's last
   * scan (a breaker opens and closes during a scan, so that is when it changes): per step, the threads whose
   * breaker is open, and how many times one was seen to open since the pool started. A thread that has ended
   * (replaced after a time-out) no longer counts as open.
   */
  stepBreakerStats(): StepBreakerStats {
    const threads = this.piscina.threads.map((w) => w.threadId);
    const open = { llm: 0, pyzor: 0 };
    for (const [id, list] of this.breakers) {
      if (!threads.includes(id)) {
        this.breakers.delete(id);
        continue;
      }
      // One endpoint per step and rule set; a step counts a thread once.
      for (const step of ['llm', 'pyzor'] as const) if (list.some((b) => b.step === step && b.open)) open[step]++;
    }
    return { open, openedTotal: { ...this.openedTotal } };
  }

  /**
   * Calls `listener` whenever a thread's scan reply shows one of its step breakers open that its previous reply
   * showed closed (or did not list), or closed (or gone, after a rule-set change) that was open. Returns the
   * function that removes the listener. `spamrule serve` logs these (docs/deployment.md, "Logs").
   */
  onStepBreakerChange(listener: (c: StepBreakerChange) => void): () => void {
    this.breakerListeners.add(listener);
    return () => this.breakerListeners.delete(listener);
  }

  /** Compares a thread's step breakers with its last report: counts and tells the listeners of each change. */
  private noteBreakers(r: ThreadBreakers): void {
    const before = this.breakers.get(r.thread) ?? [];
    if (before.length === 0 && r.breakers.length === 0) return;
    this.breakers.set(r.thread, r.breakers);
    const key = (b: StepBreakerStatus): string => `${b.step} ${b.endpoint}`;
    const wasOpen = new Map(before.filter((b) => b.open).map((b) => [key(b), b]));
    const changes: StepBreakerChange[] = [];
    for (const b of r.breakers) {
      if (b.open && !wasOpen.has(key(b))) {
        this.openedTotal[b.step]++;
        changes.push({ change: 'opened', worker: r.thread, breaker: b });
      }
      if (!b.open && wasOpen.has(key(b))) changes.push({ change: 'closed', worker: r.thread, breaker: b });
      wasOpen.delete(key(b));
    }
    for (const b of wasOpen.values()) changes.push({ change: 'closed', worker: r.thread, breaker: { step: b.step, endpoint: b.endpoint, open: false, failures: 0 } });
    for (const c of changes)
      for (const l of this.breakerListeners) {
        try {
          l(c);
        } catch {
          // A listener's fault is not the scan's.
        }
      }
  }

  /** The rule set in force (the last one given to the constructor or {@link update}). */
  get ruleSet(): RuleSetSpec {
    return this.spec;
  }

  /**
   * The rules of the rule set in force that the threads compile and those they refuse (rule name,
   * branch path, parse error), as `SpamEngine.loadReport`: a refused rule is left out, as Stalwart
   * skips it, and the others run.
   */
  get loadReport(): RuleLoadReport {
    return this.report;
  }

  /**
   * Replaces parts of the rule set (fields left out keep their value). The change is posted to
   * every thread at once, and any `classify` called after `update` returns uses it. Returns the
   * rules' {@link loadReport}. Throws as the constructor for a bad `dns` spec or store configuration,
   * and the rule set in force then stays.
   */
  update(change: Partial<RuleSetSpec>): RuleLoadReport {
    const next = { ...this.spec, ...change };
    checkSpec(next);
    if (change.rules !== undefined) this.report = compileRuleSet(next.rules ?? []).report;
    this.spec = snapshot(next);
    this.gen++;
    const msg: RuleSetUpdate = { gen: this.gen, spec: this.spec };
    this.channel.postMessage(msg);
    return this.report;
  }

  /** Replaces the rules, as `SpamEngine.loadRules` (and for the JMAP facade); returns the {@link loadReport}. */
  loadRules(rules: readonly SpamRuleInput[]): RuleLoadReport {
    return this.update({ rules });
  }

  /**
   * Classifies one raw RFC 5322 message in a worker thread, as `SpamEngine.classify` does (same
   * arguments, same result; `opts` must be structured-cloneable). Never throws for a bad message.
   * Throws {@link ScanError}: `session` for unusable `opts.session` (the engine's `SessionError`),
   * `timeout` after `timeoutMs`, `worker` when the thread failed, `closed` after {@link close}.
   */
  async classify(raw: Uint8Array | string, opts: ClassifyOptions = {}): Promise<ClassifyResult> {
    const r = await this.scan(raw, opts);
    if (!('result' in r)) throw new ScanError('worker', 'the worker sent no verdict');
    return r.result;
  }

  /**
   * {@link classify} for a listener: the worker thread also serialises the protocol's reply, and
   * only that text (as UTF-8 bytes, moved to this thread without a copy) and the verdict's action,
   * score and errors come back, so that the listeners' shared main thread neither builds replies nor
   * deserialises the tag lists. Throws as `classify`.
   */
  async classifyWithReply(raw: Uint8Array | string, opts: ClassifyOptions, reply: ReplyFormat): Promise<{ verdict: ReplyVerdict; body: Uint8Array }> {
    const r = await this.scan(raw, opts, reply);
    if (!('body' in r)) throw new ScanError('worker', 'the worker sent no reply');
    return { verdict: r.verdict, body: r.body };
  }

  private async scan(raw: Uint8Array | string, opts: ClassifyOptions, reply?: ReplyFormat): Promise<Scanned> {
    if (this.closed) throw new ScanError('closed', 'the pool is closed');
    const o: ClassifyOptions = opts.tags === undefined || Array.isArray(opts.tags) ? opts : { ...opts, tags: [...opts.tags] };
    this.running++;
    try {
      const base: ScanTask = { gen: this.gen, raw, opts: o, ...(reply !== undefined ? { reply } : {}) };
      let r = await this.run(base);
      if (r.stale) r = await this.run({ ...base, gen: this.gen, spec: this.spec });
      if (r.stale) throw new ScanError('worker', 'the worker did not take the rule set');
      if ('error' in r) throw new ScanError(r.error.name === 'SessionError' ? 'session' : 'worker', r.error.message);
      this.regexStats.set(r.regex.thread, r.regex);
      this.noteBreakers(r.steps);
      return r;
    } finally {
      this.running--;
      if (this.running === 0) this.drained?.();
    }
  }

  private async run(task: ScanTask): Promise<ScanReply> {
    const signal = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined;
    try {
      return (await this.piscina.run(task, signal ? { signal } : {})) as ScanReply;
    } catch (e) {
      if (signal?.aborted) throw new ScanError('timeout', `scan timed out after ${this.timeoutMs} ms`);
      if (this.closed) throw new ScanError('closed', 'the pool is closed');
      throw new ScanError('worker', `worker failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /**
   * Waits for the scans in flight and for threads still loading their module (up to 10 s), then stops
   * the threads. A thread stopped while Node loads its module through `require` can abort the whole
   * process on Node 20 (a fatal error in `loadESMFromCJS`, seen when a pool was closed right after its
   * first message, before its other threads had loaded).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const until = Date.now() + CLOSE_LOAD_WAIT_MS;
    while (Date.now() < until && this.piscina.threads.some((w) => !this.loaded.has(w.threadId))) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.channel.close();
    await this.piscina.destroy();
  }
}
