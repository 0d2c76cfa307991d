/**
 * The worker-thread side of {@link SpamEnginePool} (pool.ts): one `SpamEngine` per thread, built
 * from a {@link RuleSetSpec}. Rule-set changes arrive on a `BroadcastChannel` (eagerly, so the
 * rebuild usually happens between messages) and every task carries the generation it must be
 * classified with: a worker that has not seen that generation yet answers `stale`, and the pool
 * resends the task with the rule set attached. So a change always applies to the next message,
 * also in a thread that was restarted after a timeout.
 */
import { BroadcastChannel, workerData } from 'node:worker_threads';
import type { SpamEngine } from '../engine/engine.js';
import type { ClassifyOptions, ClassifyResult } from '../engine/types.js';
import { toRspamdReply, type ReplyFormat } from './rspamd-reply.js';
import { buildEngineFromSpec, type RuleSetSpec } from './ruleset.js';

/** `workerData` of every thread. */
export interface WorkerInit {
  channel: string;
  gen: number;
  spec: RuleSetSpec;
}

/** A rule-set update on the channel. */
export interface RuleSetUpdate {
  gen: number;
  spec: RuleSetSpec;
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

export type ScanReply =
  | { stale: true }
  | { stale: false; result: ClassifyResult; body?: string }
  /** `classify` rejected: `SessionError` for unusable session input; errors cannot cross threads as such. */
  | { stale: false; error: { name: string; message: string } };

interface Installed {
  gen: number;
  engine: SpamEngine;
  inFlight: number;
  retired: boolean;
}

const warn = (m: string): void => {
  process.stderr.write(`spamrule worker: ${m}\n`);
};

const init = workerData as WorkerInit;
let current: Installed = { gen: init.gen, engine: buildEngineFromSpec(init.spec, warn), inFlight: 0, retired: false };

function closeWhenIdle(old: Installed): void {
  old.retired = true;
  if (old.inFlight === 0) void old.engine.lookups.close().catch(() => undefined);
}

function install(gen: number, spec: RuleSetSpec): void {
  if (gen <= current.gen) return;
  const old = current;
  current = { gen, engine: buildEngineFromSpec(spec, warn), inFlight: 0, retired: false };
  // Scans already running keep the engine (and the store connections) they started with.
  closeWhenIdle(old);
}

const channel = new BroadcastChannel(init.channel);
channel.onmessage = (ev: unknown) => {
  const u = (ev as { data: RuleSetUpdate }).data;
  install(u.gen, u.spec);
};
// The channel must not keep a finished thread alive; piscina's own port does that while it runs.
(channel as unknown as { unref(): void }).unref();

export default async function scan(task: ScanTask): Promise<ScanReply> {
  if (task.spec !== undefined) install(task.gen, task.spec);
  if (task.gen > current.gen) return { stale: true };
  const mine = current;
  mine.inFlight++;
  try {
    const t0 = performance.now();
    const result = await mine.engine.classify(task.raw, task.opts);
    if (task.reply === undefined) return { stale: false, result };
    // The listener needs only the text and the verdict's action, score and errors: the tag lists
    // (tags, scores, matches, module tags) and warnings are not sent back to be copied again on the
    // main thread that every connection shares.
    const body = JSON.stringify(toRspamdReply(result, task.reply.requiredScore, performance.now() - t0));
    return { stale: false, result: { ...result, tags: [], scores: {}, matches: [], analysis: [], warnings: [] }, body };
  } catch (e) {
    return { stale: false, error: { name: e instanceof Error ? e.name : 'Error', message: e instanceof Error ? e.message : String(e) } };
  } finally {
    mine.inFlight--;
    if (mine.retired && mine.inFlight === 0) void mine.engine.lookups.close().catch(() => undefined);
  }
}
