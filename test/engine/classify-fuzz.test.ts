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
import { DEFAULT_RULES, DEFAULT_TAGS, engineOptionsFromBundle, loadRuleFile, SpamEngine, type ClassifyResult, type EngineOptions } from '../../src/engine/index.js';
import type { DkimResult, DmarcPolicy, DmarcResult, IprevResult, SessionInput, SpfResult } from '../../src/analysis/types.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { applyMutations, mutationSample, mutationsArb, SCALING_PLACES, SCALING_SNIPPETS, scalingMessage } from '../helpers/mail-mutations.js';
import { assertVerdict } from '../helpers/message-invariants.js';
import { generatedMessageArb } from '../helpers/mime-gen.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

const SAMPLE = mutationSample();

/** An engine with the public rule set (the built-in default rules without the shared data), `extra` options on top. */
function makeEngine(extra: Partial<EngineOptions> = {}): SpamEngine {
  return new SpamEngine({
    ...(hasSharedData
      ? {
          ...engineOptionsFromBundle(loadRuleFile(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')), {
            // No remote list is downloaded here (an empty cache, not ~/.cache): they answer nothing, silently.
            listCacheDir: mkdtempSync(join(tmpdir(), 'classify-fuzz-')),
            warn: () => {},
          }),
          thresholds: { scoreSpam: 5 },
        }
      : { rules: DEFAULT_RULES, tags: DEFAULT_TAGS }),
    ...extra,
  });
}
const engine = makeEngine();
/** Stored mail: the session read from the message's own Received, Return-Path and Authentication-Results. */
const fromHeaders = makeEngine({ trustReceived: true, authResults: { trustedAuthservIds: ['mx.example.org', 'spamassassin.taint.org', 'example.com'] } });
afterAll(async () => {
  await engine.close();
  await fromHeaders.close();
});

const spf = fc.constantFrom<SpfResult>('pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror');
const dkimResult = fc.constantFrom<DkimResult>('pass', 'fail', 'permerror', 'temperror', 'neutral', 'none');
const domain = fc.constantFrom('example.com', 'gmail.com', 'sub.example.co.uk', 'xn--caf-dma.example', 'localhost', 'a-b.example.org');
const address = fc.oneof(fc.constant(''), fc.tuple(fc.constantFrom('a', 'bounce+x', 'Info', 'x.y', '\u00e9'), domain).map(([l, d]) => `${l}@${d}`), fc.constant('user@[192.0.2.1]'));

/** Valid SMTP sessions (every field optional), as an MTA would describe them. */
const sessionArb: fc.Arbitrary<SessionInput> = fc.record(
  {
    remoteIp: fc.constantFrom('203.0.113.7', '127.0.0.1', '10.1.2.3', '2001:db8::1', '::1', '192.0.2.255', '::ffff:198.51.100.4'),
    localIp: fc.constantFrom('127.0.0.1', '192.0.2.1'),
    hostname: fc.constantFrom('mx.example.org', 'localhost'),
    heloDomain: fc.constantFrom('', 'mail.example.com', '[192.0.2.1]', 'localhost', 'x', 'gmail.com', 'EXAMPLE.COM', '203.0.113.7'),
    mailFrom: address,
    smtputf8: fc.boolean(),
    eightBitMime: fc.boolean(),
    rcptTo: fc.array(address.filter((a) => a !== ''), { maxLength: 4 }),
    tls: fc.constantFrom<string | false>('TLSv1.3', 'TLSv1.2', false),
    iprev: fc.record({ result: fc.constantFrom<IprevResult>('pass', 'fail', 'temperror', 'permerror', 'none'), ptr: fc.array(fc.constantFrom('mail.example.com.', 'host-1-2-3-4.dyn.example.net', 'localhost'), { maxLength: 2 }) }),
    spf: fc.record({ mailFrom: spf, ehlo: spf }, { requiredKeys: [] }),
    dkim: fc.array(fc.record({ result: dkimResult, domain }), { maxLength: 3 }),
    arc: fc.record({ result: dkimResult }),
    dmarc: fc.record({ result: fc.constantFrom<DmarcResult>('pass', 'fail', 'temperror', 'permerror', 'none'), policy: fc.constantFrom<DmarcPolicy>('none', 'quarantine', 'reject', 'unspecified') }, { requiredKeys: [] }),
    asn: fc.nat({ max: 4_000_000 }),
    country: fc.constantFrom('US', 'DE', 'CN', 'RU'),
    now: fc.constantFrom(Date.UTC(2024, 0, 1), Date.UTC(2002, 8, 1), '2030-06-01T00:00:00Z'),
  },
  { requiredKeys: [] },
);

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

  it('mutated real mail with a generated SMTP session: classify resolves with a well-formed verdict', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: SAMPLE.length - 1 }), mutationsArb, sessionArb, async (i, ms, session) => {
        assertVerdict(await engine.classify(applyMutations(SAMPLE[i]!.raw, ms), { session }));
      }),
      fuzzParams(100),
    );
  });

  it('mutated real mail, its session read from its own headers: classify resolves with a well-formed verdict', async () => {
    const authResults = fc.constantFrom(
      'Authentication-Results: mx.example.org; spf=pass smtp.mailfrom=a@example.com; dkim=pass header.d=example.com; dmarc=pass header.from=example.com',
      'Authentication-Results: mx.example.org; spf=fail (reason) smtp.mailfrom=<>; dkim=fail; dmarc=fail (p=reject) header.from=',
      'Authentication-Results: example.com; none',
      'Authentication-Results: mx.example.org; arc=pass; iprev=pass policy.iprev=203.0.113.7 (mail.example.com)',
    );
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: SAMPLE.length - 1 }), authResults, mutationsArb, async (i, ar, ms) => {
        const raw = applyMutations(Buffer.concat([Buffer.from(ar + '\r\n'), SAMPLE[i]!.raw]), ms);
        assertVerdict(await fromHeaders.classify(raw));
      }),
      fuzzParams(100),
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
