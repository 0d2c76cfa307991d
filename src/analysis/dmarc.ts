/**
 * The `dmarc` module (Stalwart's dmarc analysis, docs/analysis.md): maps the authentication results
 * the MTA already has (SPF for MAIL FROM, DKIM, DKIM2, ARC, DMARC and the From domain's policy) to
 * exactly one tag per family. No DNS and no header reading: the results come from the session.
 */
import type { AnalysisContext, DkimResult, SpfResult } from './types.js';

const SPF_TAGS: Readonly<Record<SpfResult, string>> = {
  pass: 'SPF_ALLOW',
  fail: 'SPF_FAIL',
  softfail: 'SPF_SOFTFAIL',
  neutral: 'SPF_NEUTRAL',
  temperror: 'SPF_DNSFAIL',
  permerror: 'SPF_PERMFAIL',
  none: 'SPF_NA',
};

const DKIM_TAGS: Readonly<Record<DkimResult, string>> = {
  pass: 'DKIM_ALLOW',
  fail: 'DKIM_REJECT',
  permerror: 'DKIM_PERMFAIL',
  temperror: 'DKIM_TEMPFAIL',
  neutral: 'DKIM_NA',
  none: 'DKIM_NA',
};

const ARC_TAGS: Readonly<Record<DkimResult, string>> = {
  pass: 'ARC_ALLOW',
  fail: 'ARC_REJECT',
  permerror: 'ARC_INVALID',
  temperror: 'ARC_DNSFAIL',
  neutral: 'ARC_NA',
  none: 'ARC_NA',
};

/**
 * Sets one tag of each family: `SPF_*` (MAIL FROM result; the HELO identity's result is not read),
 * `DKIM_*` (the first passing signature, else the first signature, else "none"), `DKIM2_NA` (DKIM2
 * results are not an input here), `ARC_*` and `DMARC_*` (a DMARC fail is graded by the published
 * policy: quarantine, reject, else `DMARC_POLICY_SOFTFAIL`). Absent results give the `*_NA` tags.
 */
export function dmarc(ctx: AnalysisContext): void {
  const s = ctx.session;
  ctx.tag(SPF_TAGS[s.spf.mailFrom ?? 'none']);

  const dkim = s.dkim.find((d) => d.result === 'pass') ?? s.dkim[0];
  ctx.tag(DKIM_TAGS[dkim?.result ?? 'none']);

  // The session carries no DKIM2 result (no MTA reports one to us yet): always "no result".
  ctx.tag('DKIM2_NA');

  ctx.tag(ARC_TAGS[s.arc ?? 'none']);

  switch (s.dmarc.result) {
    case 'pass': ctx.tag('DMARC_POLICY_ALLOW'); break;
    case 'temperror': ctx.tag('DMARC_DNSFAIL'); break;
    case 'permerror': ctx.tag('DMARC_BAD_POLICY'); break;
    case 'fail':
      ctx.tag(s.dmarc.policy === 'quarantine' ? 'DMARC_POLICY_QUARANTINE'
        : s.dmarc.policy === 'reject' ? 'DMARC_POLICY_REJECT' : 'DMARC_POLICY_SOFTFAIL');
      break;
    default: ctx.tag('DMARC_NA');
  }
}
