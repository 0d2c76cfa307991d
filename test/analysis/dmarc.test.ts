/**
 * dmarc module: one tag per authentication family from the session's results (RFC 7208 SPF,
 * RFC 6376 DKIM, RFC 8617 ARC, RFC 7489 DMARC), as Stalwart's dmarc analysis maps them.
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { mail, runOne } from './module-harness.js';

const MSG = mail(['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: lunch']);

async function tags(session: SessionInput): Promise<string[]> {
  return (await runOne('dmarc', MSG, session)).tags;
}

describe('dmarc module', () => {
  it('gives the "no result" tag of every family when the session has none', async () => {
    expect(await tags({})).toEqual(['ARC_NA', 'DKIM2_NA', 'DKIM_NA', 'DMARC_NA', 'SPF_NA']);
  });

  it.each([
    ['pass', 'SPF_ALLOW'], ['fail', 'SPF_FAIL'], ['softfail', 'SPF_SOFTFAIL'], ['neutral', 'SPF_NEUTRAL'],
    ['temperror', 'SPF_DNSFAIL'], ['permerror', 'SPF_PERMFAIL'], ['none', 'SPF_NA'],
  ] as const)('maps SPF %s to %s and ignores the HELO identity', async (result, tag) => {
    const t = await tags({ spf: { mailFrom: result, ehlo: 'fail' } });
    expect(t.filter((x) => x.startsWith('SPF_'))).toEqual([tag]);
  });

  it.each([
    ['pass', 'DKIM_ALLOW'], ['fail', 'DKIM_REJECT'], ['permerror', 'DKIM_PERMFAIL'], ['temperror', 'DKIM_TEMPFAIL'],
    ['neutral', 'DKIM_NA'], ['none', 'DKIM_NA'],
  ] as const)('maps a DKIM %s signature to %s', async (result, tag) => {
    const t = await tags({ dkim: [{ result, domain: 'example.org' }] });
    expect(t.filter((x) => x.startsWith('DKIM_'))).toEqual([tag]);
  });

  it('takes the first passing DKIM signature, else the first one', async () => {
    const pass = await tags({ dkim: [{ result: 'fail', domain: 'a.example' }, { result: 'pass', domain: 'b.example' }] });
    expect(pass).toContain('DKIM_ALLOW');
    expect(pass).not.toContain('DKIM_REJECT');
    const first = await tags({ dkim: [{ result: 'temperror', domain: 'a.example' }, { result: 'fail', domain: 'b.example' }] });
    expect(first.filter((x) => x.startsWith('DKIM_'))).toEqual(['DKIM_TEMPFAIL']);
  });

  it.each([
    ['pass', 'ARC_ALLOW'], ['fail', 'ARC_REJECT'], ['permerror', 'ARC_INVALID'], ['temperror', 'ARC_DNSFAIL'],
    ['neutral', 'ARC_NA'], ['none', 'ARC_NA'],
  ] as const)('maps ARC %s to %s', async (result, tag) => {
    const t = await tags({ arc: { result } });
    expect(t.filter((x) => x.startsWith('ARC_'))).toEqual([tag]);
  });

  it.each([
    [{ result: 'pass' }, 'DMARC_POLICY_ALLOW'],
    [{ result: 'temperror' }, 'DMARC_DNSFAIL'],
    [{ result: 'permerror' }, 'DMARC_BAD_POLICY'],
    [{ result: 'none' }, 'DMARC_NA'],
    [{ result: 'fail', policy: 'quarantine' }, 'DMARC_POLICY_QUARANTINE'],
    [{ result: 'fail', policy: 'reject' }, 'DMARC_POLICY_REJECT'],
    [{ result: 'fail', policy: 'none' }, 'DMARC_POLICY_SOFTFAIL'],
    [{ result: 'fail', policy: 'unspecified' }, 'DMARC_POLICY_SOFTFAIL'],
    [{ result: 'fail' }, 'DMARC_POLICY_SOFTFAIL'],
  ] as const)('maps DMARC %j to %s', async (dmarc, tag) => {
    const t = await tags({ dmarc });
    expect(t.filter((x) => x.startsWith('DMARC_'))).toEqual([tag]);
  });
});
