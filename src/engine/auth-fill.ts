/** Authentication results a session lacks, from trusted headers or verification (EngineOptions.authResults). */
import { mergeAuth, trustedAuthResults } from '../analysis/auth-results.js';
import { verifyIprev } from '../analysis/iprev.js';
import type { AnalysisRun } from '../analysis/run.js';
import { envelopeOf } from '../analysis/session.js';
import { verifyMessage } from '../analysis/verify.js';
import { errorMessage } from './run.js';

/**
 * Fills the session's missing authentication results (SPF, DKIM, DMARC, ARC, iprev) from the topmost
 * `Authentication-Results` header of a trusted authserv-id (RFC 8601), then, with `verify`, by verifying the
 * message with mailauth over the run's DNS (`EngineOptions.authResults`). A failed verification is a warning
 * in `warnings`, never an exception.
 */
export async function fillAuthResults(
  run: AnalysisRun, warnings: string[], authResults: { trustedAuthservIds?: readonly string[]; verify?: boolean },
): Promise<void> {
  const { trustedAuthservIds = [], verify = false } = authResults;
  const s = run.session;
  const missing = (): boolean => s.spf.mailFrom === null || s.dkim.length === 0 || s.dmarc.result === null || s.arc === null;
  if (trustedAuthservIds.length > 0 && missing()) {
    const f = trustedAuthResults(run.message.headers, trustedAuthservIds);
    if (f !== undefined) mergeAuth(s, f);
  }
  if (verify && missing()) {
    try {
      mergeAuth(s, await verifyMessage(run.message.raw, s, run.dns));
    } catch (e) {
      warnings.push(`authentication: verification failed: ${errorMessage(e)}`);
    }
  }
  if (verify && s.iprev === null) s.iprev = (await verifyIprev(s.remoteIp, run.dns)) ?? null;
  // The rules' `remote_ip.ptr` and the Domain set's `dkim_pass` domains read the envelope, which was
  // made before these results were known (the Domain and Ip sets are built later, on first use).
  const env = run.message.envelope;
  const now = envelopeOf(s);
  if (env.iprevPtr === undefined && now.iprevPtr !== undefined) env.iprevPtr = now.iprevPtr;
  if (env.dkimPassDomains === undefined && now.dkimPassDomains !== undefined) env.dkimPassDomains = now.dkimPassDomains;
}
