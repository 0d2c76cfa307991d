/**
 * Stalwart's Pyzor step (`stalwart:crates/spam-filter/src/analysis/pyzor.rs`, `spam_filter_analyze_pyzor`):
 * when `analysis.pyzor` is set, the message's Pyzor digest is checked against a Pyzor server over UDP
 * (src/analysis/pyzor/client.ts), and **PYZOR** is set when the server answers code 200 with a report count
 * above `blockCount` and a whitelist count below `allowCount` or below `ratio` × the report count.
 *
 * The digest is Stalwart's (`digest: 'stalwart'`, src/analysis/pyzor/digest.ts; a message without a `text/*`
 * part is not checked) or pyzor 1.0.0's (`digest: 'pyzor'`, ours, src/analysis/pyzor/pyzor-mode.ts; a message
 * of which pyzor hashes no line is not checked, since the digest of nothing is every such message's, nor, with
 * a warning, one pyzor itself fails on). No answer (a timeout, a network error, a reply that does not parse)
 * sets nothing, as in Stalwart, and is reported in the result's warnings. The wait is a network wait: the classify time budget leaves it out, as it does
 * DNS waits; `timeoutMs` bounds it. After `breaker.failureThreshold` such failures in a row the server's
 * circuit breaker opens (src/analysis/step-breaker.ts): messages then skip the check at once, with a warning
 * and no tag, until a probe after the cool-down gets an answer. "Not found" (counts of 0) is an answer.
 *
 * `testMode.pyzor` (conformance runs) answers the digests it lists without any network, and every other
 * digest gets no answer, as Stalwart's test build answers three fixed digests (its harness cannot reach
 * the public server).
 */
import { mimeView } from '../message/text-parts.js';
import { pyzorCheck, PyzorError, type PyzorResponse } from './pyzor/client.js';
import { pyzorDigest } from './pyzor/digest.js';
import { pyzorModeDigest } from './pyzor/pyzor-mode.js';
import { resolvePyzorSettings, type ResolvedPyzorSettings } from './pyzor/settings.js';
import { stepBreaker, StepSkippedError, viaBreaker } from './step-breaker.js';
import type { AnalysisContext } from './types.js';

/**
 * Stalwart's verdict on an answer: code 200, more than `blockCount` reports, and fewer than `allowCount`
 * whitelistings or a whitelist share (`wlCount / count`) under `ratio`.
 */
export function pyzorIsSpam(r: PyzorResponse, s: Pick<ResolvedPyzorSettings, 'blockCount' | 'allowCount' | 'ratio'>): boolean {
  return r.code === 200 && r.count > s.blockCount && (r.wlCount < s.allowCount || r.wlCount / r.count < s.ratio);
}

/** The module: nothing when `config.pyzor` is off, a promise when it waits for the server. Never throws. */
export function pyzor(ctx: AnalysisContext): void | Promise<void> {
  const settings = resolvePyzorSettings(ctx.config.pyzor);
  // Training reads the message, it does not judge it: no request (as the other network checks).
  if (settings === undefined || ctx.session.train) return;
  const digest = settings.digest === 'pyzor' ? pyzorMode(ctx) : pyzorDigest(mimeView(ctx.message).message);
  if (digest === undefined) return;
  const canned = ctx.config.testMode?.pyzor;
  if (canned !== undefined) {
    const r = canned.find((c) => c.digest === digest);
    if (r !== undefined && pyzorIsSpam(r, settings)) ctx.tag('PYZOR');
    return;
  }
  return check(ctx, digest, settings);
}

/** pyzor 1.0.0's digest of the message; `undefined` (not checked) when no line counts or pyzor cannot digest it. */
function pyzorMode(ctx: AnalysisContext): string | undefined {
  const r = pyzorModeDigest(ctx.message.raw);
  if ('error' in r) {
    ctx.warn(`no pyzor digest (${r.error}); PYZOR not checked`);
    return undefined;
  }
  return r.lines === 0 ? undefined : r.digest;
}

async function check(ctx: AnalysisContext, digest: string, settings: ResolvedPyzorSettings): Promise<void> {
  let r: PyzorResponse;
  try {
    const breaker = stepBreaker(ctx.config, `pyzor ${settings.host}:${settings.port}`, settings.breaker);
    r = await viaBreaker(breaker, 'server', () => ctx.networkWait(pyzorCheck(digest, settings)), () => true);
  } catch (e) {
    ctx.warn(`${e instanceof PyzorError || e instanceof StepSkippedError ? e.message : `check failed: ${String(e)}`}; PYZOR not checked`);
    return;
  }
  if (pyzorIsSpam(r, settings)) ctx.tag('PYZOR');
}
