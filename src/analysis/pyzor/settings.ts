/**
 * The Pyzor check's settings: Stalwart's `SpamPyzor` object (its public reference,
 * https://stalw.art/docs/ref/object/spam-pyzor), with the timeout in milliseconds. Stalwart's defaults and
 * bounds; unlike Stalwart, the check is off until configured (README, "Compatibility", A20). The circuit
 * breaker in front of the server (`breaker`) and the choice of digest (`digest`) are ours.
 */
import { timeoutMsProblem } from '../../util/index.js';
import { resolveStepBreaker, STEP_BREAKER_DEFAULTS, stepBreakerProblem, type ResolvedStepBreakerOptions, type StepBreakerOptions } from '../step-breaker.js';

/** The digest a Pyzor check sends: Stalwart's or pyzor 1.0.0's. */
export type PyzorDigestMode = 'stalwart' | 'pyzor';

/** The values of {@link PyzorSettings.digest}. */
export const PYZOR_DIGEST_MODES: readonly PyzorDigestMode[] = ['stalwart', 'pyzor'];

/** `AnalysisConfig.pyzor` as given: `true` for every default, or the fields to change. */
export interface PyzorSettings {
  /** The Pyzor server's host name or IP address (default `public.pyzor.org`), resolved by the system (`getaddrinfo`). */
  host?: string;
  /** Its UDP port (default 24441). */
  port?: number;
  /** Milliseconds the whole exchange (name lookup, request, answer) may take (default 5,000). */
  timeoutMs?: number;
  /** The digest must have been reported more than this many times (Stalwart's `blockCount`, 1–1,000, default 5). */
  blockCount?: number;
  /** …and whitelisted fewer than this many times (`allowCount`, 1–1,000, default 10)… */
  allowCount?: number;
  /** …or whitelisted less than this fraction of its reports (`ratio`, 0–1, default 0.2). */
  ratio?: number;
  /**
   * Which digest is sent (ours): `'stalwart'` (default), Stalwart's `pyzor_digest`, so that the server sees
   * the digests Stalwart servers send (src/analysis/pyzor/digest.ts); `'pyzor'`, pyzor 1.0.0's own
   * `DataDigester`, the digest the pyzor client and SpamAssassin's Pyzor plugin report to public servers such
   * as public.pyzor.org (src/analysis/pyzor/pyzor-mode.ts). docs/analysis.md ("pyzor") compares the two.
   */
  digest?: PyzorDigestMode;
  /**
   * The server's circuit breaker (ours; src/analysis/step-breaker.ts): after `failureThreshold` (3) failures in a
   * row, messages skip the check for `initialBackoffMs` (5,000), doubling per failed probe up to `maxBackoffMs`
   * (60,000); `{ enabled: false }` turns it off. Default: on.
   */
  breaker?: StepBreakerOptions;
}

/** The settings with every default filled in. */
export type ResolvedPyzorSettings = Required<Omit<PyzorSettings, 'breaker'>> & { breaker: Readonly<ResolvedStepBreakerOptions> };

/** Stalwart's `SpamPyzor` defaults. */
export const PYZOR_DEFAULTS: Readonly<ResolvedPyzorSettings> = Object.freeze({
  host: 'public.pyzor.org',
  port: 24441,
  timeoutMs: 5_000,
  blockCount: 5,
  allowCount: 10,
  ratio: 0.2,
  digest: 'stalwart',
  breaker: STEP_BREAKER_DEFAULTS,
});

const KEYS = Object.keys(PYZOR_DEFAULTS) as (keyof PyzorSettings)[];

function isInt(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * What is wrong with a `pyzor` setting (`false`, `true` or a {@link PyzorSettings} object), in words that
 * name the field, or `undefined` when it is usable. The one check of these settings, shared by
 * `new SpamEngine` (src/engine/options.ts) and `spamrule serve`'s configuration file (src/server/config.ts).
 */
export function pyzorSettingsProblem(v: unknown): string | undefined {
  if (v === undefined || typeof v === 'boolean') return undefined;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'expected true, false or an object ({ host, port, timeoutMs, blockCount, allowCount, ratio, digest, breaker })';
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!(KEYS as string[]).includes(k) && o[k] !== undefined) return `unknown field "${k}" (the fields are ${KEYS.join(', ')})`;
  }
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host.trim() === '')) return '"host" must be a non-empty string';
  if (o.port !== undefined && !isInt(o.port, 1, 65535)) return `"port" must be an integer from 1 to 65535, got ${JSON.stringify(o.port)}`;
  // At most what a timer can wait: a longer timeout fired after 1 ms (MAX_TIMER_MS).
  const timeout = timeoutMsProblem(o.timeoutMs);
  if (timeout !== undefined) return timeout;
  for (const k of ['blockCount', 'allowCount'] as const) {
    if (o[k] !== undefined && !isInt(o[k], 1, 1000)) return `"${k}" must be an integer from 1 to 1000, got ${JSON.stringify(o[k])}`;
  }
  if (o.ratio !== undefined && !(typeof o.ratio === 'number' && o.ratio >= 0 && o.ratio <= 1)) return `"ratio" must be a number from 0 to 1, got ${JSON.stringify(o.ratio)}`;
  if (o.digest !== undefined && !(PYZOR_DIGEST_MODES as unknown[]).includes(o.digest)) return `"digest" must be "stalwart" or "pyzor", got ${JSON.stringify(o.digest)}`;
  return stepBreakerProblem(o.breaker);
}

/** Resolved settings by the settings object they came from: the module resolves them once per engine, not per message. */
const resolved = new WeakMap<PyzorSettings, ResolvedPyzorSettings>();
let resolvedDefaults: ResolvedPyzorSettings | undefined;

/**
 * The settings in force for a `pyzor` setting, or `undefined` when the check is off (`false`, absent). The result
 * is shared by every call with the same `v` (frozen): an engine's settings are checked once and not changed after.
 */
export function resolvePyzorSettings(v: boolean | PyzorSettings | undefined): ResolvedPyzorSettings | undefined {
  if (v === undefined || v === false) return undefined;
  if (v === true) return (resolvedDefaults ??= Object.freeze({ ...PYZOR_DEFAULTS }));
  let out = resolved.get(v);
  if (out === undefined) {
    const o: ResolvedPyzorSettings = { ...PYZOR_DEFAULTS };
    for (const k of KEYS) if (v[k] !== undefined) (o as Record<string, unknown>)[k] = v[k];
    o.breaker = resolveStepBreaker(v.breaker);
    out = Object.freeze(o);
    resolved.set(v, out);
  }
  return out;
}

/**
 * Parses `HOST[:PORT]` (`[IPv6]:PORT` for an IPv6 address; a bare IPv6 address is a host without a port), as
 * the CLI's `--pyzor` takes it. Throws `Error` for anything else.
 */
export function parsePyzorServer(s: string): { host: string; port?: number } {
  const t = s.trim();
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(t) ?? /^([^:[\]]+)(?::(\d+))?$/.exec(t);
  if (m === null) {
    if (/^[0-9A-Fa-f:.]+$/.test(t) && t.split(':').length > 2) return { host: t }; // a bare IPv6 address
    throw new Error(`expected HOST[:PORT], got "${s}"`);
  }
  if (m[2] === undefined) return { host: m[1]! };
  const port = Number(m[2]);
  if (!isInt(port, 1, 65535)) throw new Error(`port must be from 1 to 65535, got "${m[2]}"`);
  return { host: m[1]!, port };
}
