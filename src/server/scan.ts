/**
 * What every protocol listener shares: the size cap, the bound on concurrent scans, the worker
 * pool, metrics and the per-scan log line. A listener turns its wire format into a
 * {@link ScanRequest} and a {@link ScanOutcome} back into its own reply.
 */
import type { SessionInput } from '../analysis/types.js';
import type { ClassifyOptions, ClassifyResult } from '../engine/types.js';
import { BusyError, ScanGate, type ServerLimits } from './limits.js';
import type { Logger, ScanLogLine } from './log.js';
import type { Protocol, ServerMetrics } from './metrics.js';
import type { ReplyFormat } from './rspamd-reply.js';
import { ScanError } from './pool.js';

/** What classifies: a {@link SpamEnginePool} (or a `SpamEngine`, in-process). */
export interface Classifier {
  classify(raw: Uint8Array | string, opts?: ClassifyOptions): Promise<ClassifyResult>;
  /** A pool's: the reply text serialised in the worker thread too. */
  classifyWithReply?(raw: Uint8Array | string, opts: ClassifyOptions, reply?: ReplyFormat): Promise<{ result: ClassifyResult; body?: string }>;
}

export interface ScanRequest {
  protocol: Protocol;
  raw: Uint8Array;
  session: SessionInput;
  /** Tags the MTA already set upstream. */
  tags?: string[];
  queueId?: string;
}

/** Why a message got no verdict. */
export type NotScanned = 'too_large' | 'timeout' | 'busy' | 'session' | 'error' | 'closing';

export type ScanOutcome =
  /** `body`: the reply text, when the scan was asked for one and the classifier could build it. */
  | { ok: true; result: ClassifyResult; ms: number; body?: string }
  | { ok: false; reason: NotScanned; message: string; ms: number };

export class Scanner {
  private readonly gate: ScanGate;
  private inFlight = 0;
  private idle: (() => void)[] = [];
  private closing = false;

  constructor(
    readonly classifier: Classifier,
    readonly limits: ServerLimits,
    readonly metrics: ServerMetrics,
    readonly log: Logger,
  ) {
    this.gate = new ScanGate(limits.maxConcurrentScans, limits.maxWaitingScans);
  }

  /** Scans running or waiting. */
  get depth(): number {
    return this.gate.depth;
  }

  /** Classifies one message within the limits; `reply`: also serialise that reply. Never throws. */
  async scan(req: ScanRequest, reply?: ReplyFormat): Promise<ScanOutcome> {
    const t0 = performance.now();
    if (req.raw.length > this.limits.maxSize) return this.refuse(req.protocol, 'too_large', this.tooLargeMessage(), req.raw.length, req.queueId);
    if (this.closing) return this.refuse(req.protocol, 'closing', 'the server is shutting down', req.raw.length, req.queueId);
    this.inFlight++;
    let release: (() => void) | undefined;
    try {
      release = await this.gate.acquire();
      this.metrics.queueDepth.set(this.gate.depth);
      const opts: ClassifyOptions = { session: req.session };
      if (req.tags !== undefined && req.tags.length > 0) opts.tags = req.tags;
      let result: ClassifyResult;
      let body: string | undefined;
      if (reply !== undefined && this.classifier.classifyWithReply !== undefined) ({ result, body } = await this.classifier.classifyWithReply(req.raw, opts, reply));
      else result = await this.classifier.classify(req.raw, opts);
      const ms = performance.now() - t0;
      this.metrics.scans.inc({ protocol: req.protocol, action: result.action });
      this.metrics.scanSeconds.observe({ protocol: req.protocol }, ms / 1000);
      this.metrics.countErrors(result);
      this.line({ protocol: req.protocol, queueId: req.queueId, action: result.action, score: result.score, ms: round(ms), size: req.raw.length, remoteIp: req.session.remoteIp });
      return body !== undefined ? { ok: true, result, ms, body } : { ok: true, result, ms };
    } catch (e) {
      const reason: NotScanned = e instanceof BusyError ? 'busy' : e instanceof ScanError ? (e.reason === 'timeout' ? 'timeout' : e.reason === 'session' ? 'session' : e.reason === 'closed' ? 'closing' : 'error') : 'error';
      const message = e instanceof Error ? e.message : String(e);
      return this.refuse(req.protocol, reason, message, req.raw.length, req.queueId, performance.now() - t0);
    } finally {
      release?.();
      this.metrics.queueDepth.set(this.gate.depth);
      if (--this.inFlight === 0) for (const f of this.idle.splice(0)) f();
    }
  }

  /** The outcome (counted and logged) for a message that was not scanned, e.g. one refused before it was read. */
  refuse(protocol: Protocol, reason: NotScanned, message: string, size: number, queueId?: string, ms = 0): ScanOutcome {
    this.metrics.scans.inc({ protocol, action: reason });
    this.line({ protocol, queueId, action: reason, ms: round(ms), size, error: message });
    return { ok: false, reason, message, ms };
  }

  tooLargeMessage(): string {
    return `message larger than the ${this.limits.maxSize} bytes limit; not scanned`;
  }

  /** Refuses new scans and resolves once the scans in flight have finished. */
  drain(): Promise<void> {
    this.closing = true;
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private line(l: ScanLogLine): void {
    const fields = Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined));
    if (l.error !== undefined) this.log.warn(fields, 'scan');
    else this.log.info(fields, 'scan');
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Strips `<…>` around an SMTP path and lowercases nothing (the session does that). */
export function unbracket(s: string): string {
  const t = s.trim();
  return t.startsWith('<') && t.endsWith('>') ? t.slice(1, -1) : t;
}
