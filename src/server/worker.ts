/**
 * The worker-thread side of {@link SpamEnginePool} (pool.ts): one `SpamEngine` per thread, built
 * from a {@link RuleSetSpec}. Rule-set changes arrive on a `BroadcastChannel` (eagerly, so the
 * rebuild usually happens between messages) and every task carries the generation it must be
 * classified with: a worker that has not seen that generation yet answers `stale`, and the pool
 * resends the task with the rule set attached. So a change always applies to the next message,
 * also in a thread that was restarted after a timeout.
 */
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { listStepBreakers, type StepBreakerStatus } from '../analysis/step-breaker.js';
import type { SpamEngine } from '../engine/engine.js';
import type { ClassifyOptions, ClassifyResult } from '../engine/types.js';
import { regexCacheStats, type RegexCacheStats } from '../expr/regex-cache.js';
import { createLogger } from './log.js';
import { rspamdReplyIn, type ReplyFormat } from './rspamd-reply.js';
import { buildEngineFromSpec, sharedParts, type RuleSetSpec } from './ruleset.js';

/** `workerData` of every thread. */
export interface WorkerInit {
  channel: string;
  gen: number;
  spec: RuleSetSpec;
  /** The pool's `logLevel`: warnings as JSON log lines at this level (else text on stderr). */
  logLevel?: string;
}

/** A rule-set update on the channel. */
export interface RuleSetUpdate {
  gen: number;
  spec: RuleSetSpec;
}

/** What a thread posts on the channel once its module has loaded (its `threadId`). */
export interface ThreadLoaded {
  loaded: number;
}

export interface ScanTask {
  gen: number;
  raw: Uint8Array | string;
  opts: ClassifyOptions;
  /** Attached only when the pool resends a task that found this worker stale. */
  spec?: RuleSetSpec;
  /** Also serialise the protocol reply here (then `result` comes back without its tag lists). */
  reply?: ReplyFormat;
}

/** What a listener needs of a verdict whose reply the worker wrote: the action and score it logs and counts, the errors it counts. */
export type ReplyVerdict = Pick<ClassifyResult, 'action' | 'score' | 'errors'>;

/**
 * The regex DFA caches of the thread that scanned (src/expr/regex-cache.ts: a budget per thread), as of the
 * end of the scan, so that the pool can report them for all its threads (`SpamEnginePool.regexCacheStats`).
 */
export interface ThreadRegexStats extends RegexCacheStats {
  thread: number;
}

/**
 * The step breakers (src/analysis/step-breaker.ts) of the thread's current engine as of the end of the scan, so
 * that the pool can count the open ones and log when one opens or closes (`SpamEnginePool.stepBreakerStats`).
 */
export interface ThreadBreakers {
  thread: number;
  breakers: StepBreakerStatus[];
}

export type ScanReply =
  | { stale: true }
  | { stale: false; result: ClassifyResult; regex: ThreadRegexStats; steps: ThreadBreakers }
  /** The task asked for a reply: `body` is its UTF-8 text, in a buffer of its own that is moved (not copied) to the pool's thread. */
  | { stale: false; verdict: ReplyVerdict; body: Uint8Array; regex: ThreadRegexStats; steps: ThreadBreakers }
  /** `classify` rejected: `SessionError` for unusable session input; errors cannot cross threads as such. */
  | { stale: false; error: { name: string; message: string } };

interface Installed {
  gen: number;
  spec: RuleSetSpec;
  engine: SpamEngine;
}

const init = workerData as WorkerInit;

// Under `spamrule serve`, through a logger at the server's level (the pool's `logLevel`).
const logger = init.logLevel !== undefined ? createLogger({ level: init.logLevel }) : undefined;
const warn = (m: string): void => {
  if (logger !== undefined) logger.warn({ worker: threadId }, m);
  else process.stderr.write(`spamrule worker: ${m}\n`);
};
let current: Installed = { gen: init.gen, spec: init.spec, engine: buildEngineFromSpec(init.spec, warn) };
/** Engines installed and not yet closed: a retiring engine leaves open what one of them still uses. */
const live = new Set<SpamEngine>([current.engine]);

/**
 * Closes a replaced engine. Scans already running finish with the engine (and the store connections)
 * they started with: `close()` waits for them. The resolver and classifier taken over by a newer
 * engine, or still used by an older one that is finishing its scans, stay open.
 */
function retire(old: SpamEngine): void {
  void old
    .close({ keep: sharedParts(old, live) })
    .catch(() => undefined)
    .finally(() => live.delete(old));
}

function install(gen: number, spec: RuleSetSpec): void {
  if (gen <= current.gen) return;
  const old = current;
  let engine: SpamEngine;
  try {
    // The classifier and the DNS resolver (with their model and cache) carry over when unchanged.
    engine = buildEngineFromSpec(spec, warn, old);
  } catch (e) {
    // The pool's owner checks a rule set before handing it over; should one still fail here, the
    // thread keeps the engine it has (under the new generation, so that scans are not answered
    // stale for ever) rather than ending, which would cost every scan it holds.
    warn(`rule set ${gen} not installed (${(e as Error).message}); the previous one stays in use`);
    old.gen = gen;
    return;
  }
  current = { gen, spec, engine };
  live.add(engine);
  retire(old.engine);
}

const channel = new BroadcastChannel(init.channel);
channel.onmessage = (ev: unknown) => {
  const u = (ev as { data: RuleSetUpdate | ThreadLoaded }).data;
  if ('spec' in u) install(u.gen, u.spec);
};
// The channel must not keep a finished thread alive; piscina's own port does that while it runs.
(channel as unknown as { unref(): void }).unref();
// The pool does not stop a thread before this: see SpamEnginePool.close.
channel.postMessage({ loaded: threadId } satisfies ThreadLoaded);

const UTF8 = new TextEncoder();

/** The current engine's step breakers (its analysis settings object owns them: `SpamEngine.analysis`). */
const steps = (): ThreadBreakers => ({ thread: threadId, breakers: listStepBreakers(current.engine.analysis) });

/**
 * The verdict with its rspamd reply. The listener's main thread, which every connection shares, gets
 * only what it logs and counts (not the tag lists, headers, timings or warnings, which it would
 * deserialise for nothing) and the reply as UTF-8 bytes that it writes as they are: encoded here,
 * in a buffer that is transferred rather than copied, so the main thread neither copies nor
 * encodes the text.
 */
function withReply(result: ClassifyResult, reply: ReplyFormat, ms: number): ScanReply {
  const text = JSON.stringify(rspamdReplyIn(reply, result, ms));
  // Not Buffer.from: a small one is a slice of Node's shared pool, whose memory cannot be transferred;
  // TextEncoder gives an array with a buffer of its own.
  const body = UTF8.encode(text);
  const out: ScanReply = { stale: false, verdict: { action: result.action, score: result.score, errors: result.errors }, body, regex: { thread: threadId, ...regexCacheStats() }, steps: steps() };
  // piscina posts a movable's value with its transferables moved.
  return move({ [transferableSymbol]: [body.buffer], [valueSymbol]: out }) as unknown as ScanReply;
}

export default async function scan(task: ScanTask): Promise<ScanReply> {
  if (task.spec !== undefined) install(task.gen, task.spec);
  if (task.gen > current.gen) return { stale: true };
  try {
    const t0 = performance.now();
    // Called before any await, so the engine cannot have been retired (closed) in between.
    const result = await current.engine.classify(task.raw, task.opts);
    if (task.reply === undefined) return { stale: false, result, regex: { thread: threadId, ...regexCacheStats() }, steps: steps() };
    return withReply(result, task.reply, performance.now() - t0);
  } catch (e) {
    return { stale: false, error: { name: e instanceof Error ? e.name : 'Error', message: e instanceof Error ? e.message : String(e) } };
  }
}
