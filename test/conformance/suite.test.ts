/**
 * Stalwart's own spam-filter test cases (the public part of stalwart-antispam-suite/v1, read from
 * ../shared/data at run time) through the conformance runner: every case of the files whose
 * modules spamrule builds must give exactly Stalwart's tag set (or X-Spam-* header text).
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseRuleBundle } from '../../src/engine/load.js';
import { parseSuite, runCase, runSuite, startLlmMock, suiteEngine, suiteLlmSettings, type CaseOutcome } from '../../src/conformance/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

/** Suite files whose every public case must pass (issues #8 and #9). */
const FILES = [
  'dmarc', 'helo', 'headers', 'received', 'messageid', 'date', 'subject', 'from', 'replyto', 'recipient',
  'url', 'html', 'mime', 'bounce', 'rbl', 'ip', 'spamtrap', 'pyzor', 'llm', 'combined',
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
    // Every step these files name is built: spam_trap, pyzor and llm included.
    expect(outcomes.flatMap((o) => o.skipped ?? [])).toEqual([]);
  });

  it('asks the mock LLM over HTTP in the llm and combined cases, with the harness prompt', async () => {
    const suite = parseSuite(JSON.parse(readFileSync(SUITE, 'utf8')), SUITE);
    const rulesFile = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
    const rulesJson = JSON.parse(readFileSync(rulesFile, 'utf8')) as Record<string, unknown>;
    const mock = await startLlmMock();
    try {
      const engine = suiteEngine(suite, parseRuleBundle(rulesJson, rulesFile), [], suiteLlmSettings(suite, mock.url));
      const llm3 = suite.cases.find((c) => c.id === 'llm#3')!;
      expect((await runCase(engine, suite, llm3)).pass).toBe(true);
      const prompt = (suite.testMode!.llm as { prompt: string }).prompt;
      expect(mock.prompts).toEqual([`${prompt}\n\nSubject: Legitimate,High,Test\n\nTest\r\n`]);
      // The full pipeline (Stalwart's enterprise build) asks too; the mock's echo of a subject is no category.
      for (const c of suite.cases.filter((x) => x.file === 'combined')) {
        const before = mock.prompts.length;
        expect((await runCase(engine, suite, c)).pass).toBe(true);
        expect(mock.prompts.length).toBe(before + 1);
      }
      await engine.close();
    } finally {
      await mock.close();
    }
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
