/**
 * Property-based fuzzing of a full classify (README "Library": `classify` never throws for a bad message):
 * Stalwart's public rule set (../shared/data; the built-in default rules when it is missing) with every
 * built-in analysis module and DNS off, over mutated real mail and generated MIME trees. Invariants: classify
 * resolves, with a finite score, a duplicate-free tag list, a known action, and no error at all (no rule or module
 * failed, none was skipped for the 5 s time budget: these messages are under 200 KB);
 * and afterwards the engine still classifies an unmutated message exactly as it did before the fuzz.
 * Campaign (test/helpers/fuzz.ts; a campaign outgrows the 60 s test timeout):
 *   SPAMRULE_FUZZ_RUNS=4000 SPAMRULE_FUZZ_SEED=n npx vitest run test/engine/classify-fuzz.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_RULES, DEFAULT_TAGS, engineOptionsFromBundle, loadRuleFile, SpamEngine, type ClassifyResult } from '../../src/engine/index.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { applyMutations, mutationSample, mutationsArb, SCALING_PLACES, SCALING_SNIPPETS, scalingMessage } from '../helpers/mail-mutations.js';
import { assertVerdict } from '../helpers/message-invariants.js';
import { generatedMessageArb } from '../helpers/mime-gen.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

const SAMPLE = mutationSample();

const engine = new SpamEngine(
  hasSharedData
    ? { ...engineOptionsFromBundle(loadRuleFile(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')), {
        // No remote list is downloaded here (an empty cache, not ~/.cache): they answer nothing, silently.
        listCacheDir: mkdtempSync(join(tmpdir(), 'classify-fuzz-')),
        warn: () => {},
      }), thresholds: { scoreSpam: 5 } }
    : { rules: DEFAULT_RULES, tags: DEFAULT_TAGS },
);
afterAll(() => engine.close());

/** What a verdict must stay for the same message: everything but the timings. */
const stable = (r: ClassifyResult): unknown => ({ ...r, timings: undefined });

describe('classify fuzz', () => {
  const before = new Map<number, unknown>();

  it('classifies the unmutated sample without errors', async () => {
    // The first classify also warns once about namespaces no store provides; later ones do not repeat it.
    await engine.classify(SAMPLE[0]!.raw);
    for (const [i, c] of SAMPLE.entries()) {
      const res = await engine.classify(c.raw);
      assertVerdict(res);
      before.set(i, stable(res));
    }
    expect(before.size).toBe(SAMPLE.length);
  });

  it('mutated real mail: classify resolves with a well-formed verdict', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: SAMPLE.length - 1 }), mutationsArb, async (i, ms) => {
        assertVerdict(await engine.classify(applyMutations(SAMPLE[i]!.raw, ms)));
      }),
      fuzzParams(150),
    );
  });

  it('generated MIME trees: classify resolves with a well-formed verdict', async () => {
    await fc.assert(
      fc.asyncProperty(generatedMessageArb, async ({ raw }) => {
        assertVerdict(await engine.classify(raw));
      }),
      fuzzParams(150),
    );
  });

  it('repeating a snippet 8 times more costs a classify at most ~linear time more', async () => {
    // The analysis modules and rules read what analyzeMessage gives them: quadratic work would take ~64 times as long.
    const time = async (raw: Buffer): Promise<number> => {
      const t0 = performance.now();
      assertVerdict(await engine.classify(raw));
      return performance.now() - t0;
    };
    const best = async (raw: Buffer): Promise<number> => Math.min(await time(raw), await time(raw));
    for (const s of SCALING_SNIPPETS) {
      for (const where of SCALING_PLACES) {
        const small = await best(scalingMessage(s, where, 2_000));
        const large = await best(scalingMessage(s, where, 16_000));
        expect(large, `${where}: ${JSON.stringify(s)} x2000 ${small.toFixed(1)} ms, x16000 ${large.toFixed(1)} ms`).toBeLessThan(Math.max(800, 24 * small));
      }
    }
  });

  it('after the fuzz, the engine classifies the sample exactly as before', async () => {
    for (const [i, c] of SAMPLE.entries()) expect(stable(await engine.classify(c.raw)), c.file).toEqual(before.get(i));
  });
});
