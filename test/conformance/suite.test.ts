/**
 * Stalwart's own spam-filter test cases (the public part of stalwart-antispam-suite/v1, read from
 * ../shared/data at run time) through the conformance runner: every case of the files whose
 * modules spamrule builds must give exactly Stalwart's tag set (or X-Spam-* header text).
 */
import { describe, expect, it } from 'vitest';
import { runSuite, type CaseOutcome } from '../../src/conformance/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

/** Suite files whose every public case must pass (issues #8 and #9). */
const FILES = [
  'dmarc', 'helo', 'headers', 'received', 'messageid', 'date', 'subject', 'from', 'replyto', 'recipient',
  'url', 'html', 'mime', 'bounce', 'rbl', 'ip', 'spamtrap', 'pyzor', 'combined',
];

/** Cases known not to pass yet, with the reason (kept empty when everything passes). */
const KNOWN: Record<string, string> = {};

const SUITE = sharedPath('stalwart-antispam-suite', 'cases.json');

describe.skipIf(!hasSharedData)('stalwart-antispam-suite (public cases)', async () => {
  const outcomes: CaseOutcome[] = hasSharedData ? await runSuite(SUITE, { files: FILES }) : [];

  it('runs every public case of the files in scope', () => {
    const files = new Set(outcomes.map((o) => o.id.split('#')[0]));
    for (const f of FILES) expect(files.has(f), `no case of ${f}`).toBe(true);
    expect(outcomes.length).toBeGreaterThan(130);
    // Every step these files name is built, but the LLM step (which `combined` names): spam_trap and pyzor are.
    expect(outcomes.flatMap((o) => o.skipped ?? []).filter((s) => s !== 'llm')).toEqual([]);
  });

  for (const o of outcomes) {
    const known = KNOWN[o.id];
    it(`${o.id}${known ? ` (known: ${known})` : ''}`, () => {
      if (known !== undefined) {
        expect(o.pass, `${o.id} passes now: remove it from KNOWN`).toBe(false);
        return;
      }
      if (o.header !== undefined) expect(o.header).toBe(o.expectedHeader ?? o.header);
      else expect({ missing: o.missing ?? [], extra: o.extra ?? [] }).toEqual({ missing: [], extra: [] });
      expect(o.pass).toBe(true);
    });
  }
});
