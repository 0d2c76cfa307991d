/**
 * JSON logs (pino): one line per scan (protocol, queue id, action, score, ms, size) plus lifecycle
 * and error lines. Written to stdout unless another destination is given.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LogOptions {
  /** `trace`…`fatal`, or `silent` (default `info`). */
  level?: string;
  /** Where lines go (default stdout). */
  destination?: DestinationStream;
}

/** A pino logger writing JSON lines (to stdout unless `opts.destination`), with `service: "spamrule"`. */
export function createLogger(opts: LogOptions = {}): Logger {
  const base = { level: opts.level ?? 'info', base: { service: 'spamrule' }, timestamp: pino.stdTimeFunctions.isoTime };
  return opts.destination ? pino(base, opts.destination) : pino(base);
}

/** The fields of the per-scan line. */
export interface ScanLogLine {
  protocol: string;
  /** The MTA's queue id when it sent one (`Queue-Id`, milter macro `i`). */
  queueId?: string;
  /** The verdict's action, or why no verdict: `too_large`, `timeout`, `busy`, `error`. */
  action: string;
  score?: number;
  /** Milliseconds from the complete message to the verdict. */
  ms: number;
  /** Message size in bytes. */
  size: number;
  remoteIp?: string;
  error?: string;
}
