/**
 * A circuit breaker in front of a network step's endpoint (the llm module's model endpoint, the pyzor module's
 * server), so that an endpoint that hangs or is down does not cost every message its `timeoutMs`: after
 * `failureThreshold` consecutive failures (no answer within `timeoutMs`, a refused connection, a reply that is
 * not an answer: the errors the step reports as a warning), the step is skipped at once, with a warning and no
 * tag, for a cool-down of `initialBackoffMs`. The first message after it is sent (the probe, half-open): an
 * answer closes the breaker, a failure opens it again for twice the previous cool-down, at most `maxBackoffMs`.
 * An answer is any reply the step reads (Pyzor's "not found", a model's reply naming no known category).
 *
 * The state machine is the lookup stores' (src/util/breaker.ts, src/lookup/breaker.ts: docs/lookup-stores.md,
 * "Faults"), with the store breaker's option names; the probe is a message here, not a background call (a
 * completion request costs the operator, and the step has its own `timeoutMs`, so there is no `slowCallMs`).
 *
 * Scope: one breaker per endpoint and engine (`AnalysisConfig` object): `spamrule serve` builds an engine per
 * worker thread, so each worker thread counts failures and probes on its own.
 */
import { maskUrlPassword } from '../lookup/secret.js';
import { BreakerState, isObject } from '../util/index.js';

/** `analysis.llm.breaker` / `analysis.pyzor.breaker` as given: the store breaker's option names (`BreakerOptions`). */
export interface StepBreakerOptions {
  /** `false` turns the breaker off (every message asks the endpoint). Default: on. */
  enabled?: boolean;
  /** Consecutive failures that open the breaker, 1–1,000. Default 3 (the store breaker's). */
  failureThreshold?: number;
  /**
   * The first cool-down once open, in ms (> 0); doubles after each failed probe. Default 5,000: longer than the
   * store breaker's 250 ms, since the probe here is a message that waits up to the step's `timeoutMs`.
   */
  initialBackoffMs?: number;
  /** The longest cool-down, in ms (≥ `initialBackoffMs`). Default 60,000. */
  maxBackoffMs?: number;
}

/** The options with every default filled in. */
export type ResolvedStepBreakerOptions = Required<StepBreakerOptions>;

/** Defaults of {@link StepBreakerOptions}. */
export const STEP_BREAKER_DEFAULTS: Readonly<ResolvedStepBreakerOptions> = Object.freeze({
  enabled: true,
  failureThreshold: 3,
  initialBackoffMs: 5_000,
  maxBackoffMs: 60_000,
});

const KEYS = Object.keys(STEP_BREAKER_DEFAULTS);

const ms = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v > 0;

/**
 * What is wrong with a step's `breaker` setting (absent or a {@link StepBreakerOptions} object), in words that
 * name the field, or `undefined` when it is usable. Called by `llmSettingsProblem` and `pyzorSettingsProblem`.
 */
export function stepBreakerProblem(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) return `"breaker" must be an object ({ enabled, failureThreshold, initialBackoffMs, maxBackoffMs })`;
  for (const k of Object.keys(v)) {
    if (!KEYS.includes(k) && v[k] !== undefined) return `"breaker": unknown field "${k}" (the fields are ${KEYS.join(', ')})`;
  }
  if (v.enabled !== undefined && typeof v.enabled !== 'boolean') return '"breaker.enabled" must be true or false';
  const n = v.failureThreshold;
  if (n !== undefined && !(typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 1000)) {
    return `"breaker.failureThreshold" must be an integer from 1 to 1000, got ${JSON.stringify(n)}`;
  }
  for (const k of ['initialBackoffMs', 'maxBackoffMs'] as const) {
    if (v[k] !== undefined && !ms(v[k])) return `"breaker.${k}" must be milliseconds (a number > 0), got ${JSON.stringify(v[k])}`;
  }
  const first = (v.initialBackoffMs as number | undefined) ?? STEP_BREAKER_DEFAULTS.initialBackoffMs;
  const longest = (v.maxBackoffMs as number | undefined) ?? STEP_BREAKER_DEFAULTS.maxBackoffMs;
  if (longest < first) return `"breaker.maxBackoffMs" (${longest}) must be at least "breaker.initialBackoffMs" (${first})`;
  return undefined;
}

/** The options in force for a `breaker` setting (defaults filled in). */
export function resolveStepBreaker(v: StepBreakerOptions | undefined): ResolvedStepBreakerOptions {
  const out = { ...STEP_BREAKER_DEFAULTS };
  if (v !== undefined) for (const k of KEYS as (keyof StepBreakerOptions)[]) if (v[k] !== undefined) (out as Record<string, unknown>)[k] = v[k];
  return out;
}

/** Breakers per engine (its analysis settings object), then per step and endpoint. */
const BREAKERS = new WeakMap<object, Map<string, BreakerState>>();

/**
 * The breaker of `endpoint` (a key naming the step and where it sends, e.g. `llm http://…`) for the engine whose
 * analysis settings are `owner`, made on first use with `opts`; `undefined` when `opts.enabled` is false.
 */
export function stepBreaker(owner: object, endpoint: string, opts: ResolvedStepBreakerOptions): BreakerState | undefined {
  if (!opts.enabled) return undefined;
  let map = BREAKERS.get(owner);
  if (map === undefined) BREAKERS.set(owner, (map = new Map()));
  let b = map.get(endpoint);
  if (b === undefined) map.set(endpoint, (b = new BreakerState(opts)));
  return b;
}

/**
 * One step breaker as {@link listStepBreakers} shows it (plain data: it crosses from a worker thread to the pool,
 * src/server/worker.ts, and feeds `/metrics` and serve's log, docs/deployment.md).
 */
export interface StepBreakerStatus {
  /** The step: `llm` (the model endpoint) or `pyzor` (the Pyzor server). */
  step: 'llm' | 'pyzor';
  /**
   * Where the step sends, as its warnings show it: the LLM endpoint URL with the password of its userinfo masked
   * and its query and fragment left out (some endpoints take the API key there); Pyzor's `host:port`.
   */
  endpoint: string;
  /** The breaker is open (messages skip the step, or one is probing it). */
  open: boolean;
  /** Consecutive failures (those while open included). */
  failures: number;
  /** When it opened (ms since the epoch); only while open. */
  since?: number;
  /** The last failure's message; only while open. */
  lastError?: string;
}

/** The LLM endpoint as shown: no query or fragment, the userinfo password masked (as the LLM client's errors). */
function shownEndpoint(step: string, where: string): string {
  if (step !== 'llm') return where;
  const end = where.search(/[?#]/);
  return maskUrlPassword(end < 0 ? where : where.slice(0, end));
}

/**
 * The step breakers of the engine whose analysis settings are `owner` (`SpamEngine.analysis`), in the order they
 * were first used; empty when no step has used one yet (or `owner` is `undefined`: analysis off). A snapshot.
 */
export function listStepBreakers(owner: object | undefined): StepBreakerStatus[] {
  const map = owner === undefined ? undefined : BREAKERS.get(owner);
  if (map === undefined) return [];
  const out: StepBreakerStatus[] = [];
  for (const [key, b] of map) {
    const sp = key.indexOf(' ');
    const step = key.slice(0, sp);
    if (step !== 'llm' && step !== 'pyzor') continue;
    const s: StepBreakerStatus = { step, endpoint: shownEndpoint(step, key.slice(sp + 1)), open: b.open !== undefined, failures: b.failures };
    if (b.open !== undefined) {
      s.since = b.open.since;
      s.lastError = b.open.lastError;
    }
    out.push(s);
  }
  return out;
}

/** Thrown by {@link viaBreaker} instead of calling while the breaker is open; the message says why and until when. */
export class StepSkippedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StepSkippedError';
  }
}

/** Milliseconds as the warning shows them: tenths of a second under 10 s, whole seconds above (rounded up). */
function seconds(msLeft: number): string {
  const v = Math.max(0, msLeft);
  return v < 10_000 ? `${Math.ceil(v / 100) / 10} s` : `${Math.ceil(v / 1000)} s`;
}

/**
 * Runs `call` through breaker `b` (none: just runs it). Closed: calls; an error `counts(e)` says is the
 * endpoint's counts towards opening, an answer starts the count again. Open: throws {@link StepSkippedError}
 * without calling (`"<what> skipped: 3 consecutive failures, retrying in 4.5 s (last error: …)"`), but once the
 * cool-down has passed lets one call through as the probe, whose answer closes the breaker and whose failure
 * opens it again. Errors of `call` are rethrown as they are.
 */
export async function viaBreaker<T>(b: BreakerState | undefined, what: string, call: () => Promise<T>, counts: (e: unknown) => boolean): Promise<T> {
  if (b === undefined) return call();
  const admission = b.admit();
  if (admission === 'skip') {
    const o = b.open!;
    const when = o.probing ? 'a message is retrying it now' : `retrying in ${seconds(o.retryAt - performance.now())}`;
    throw new StepSkippedError(`${what} skipped: ${b.failures} consecutive failures, ${when} (last error: ${o.lastError})`);
  }
  let value: T;
  try {
    value = await call();
  } catch (e) {
    if (!counts(e)) {
      if (admission === 'probe') b.probeAbandoned();
    } else {
      const message = e instanceof Error ? e.message : String(e);
      if (admission === 'probe') b.probeFailed(message);
      else if (b.failed()) b.trip(message);
    }
    throw e;
  }
  if (admission === 'probe') b.close();
  else b.answered();
  return value;
}
