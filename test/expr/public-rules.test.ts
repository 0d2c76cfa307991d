/**
 * Every expression of Stalwart's public rule set (spam-filter-rules.json) compiles under its
 * context's allow-list: SpamRule conditions by scope, DNSBL `zone` by scope and `tag` as SPAM_IP.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileIfBlock, DNSBL_TAG_VARIABLES, normalizeMatch, SPAM_RULE_VARIABLES, type SpamRuleScope } from '../../src/expr/index.js';
import { guardOf, optimizeTree } from '../../src/expr/optimize.js';
import { resolveExpression } from '../../src/expr/resolve.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

type Cond = { match?: Record<string, { if: string; then: string }>; else?: string };

describe.skipIf(!hasSharedData)('public rule set', () => {
  const bundle = hasSharedData
    ? (JSON.parse(readFileSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), 'utf8')) as {
        SpamRule: Record<string, { '@type': SpamRuleScope; name: string; condition: Cond }>;
        SpamDnsblServer: Record<string, { '@type': SpamRuleScope; name: string; zone: Cond; tag: Cond }>;
      })
    : { SpamRule: {}, SpamDnsblServer: {} };

  it('compiles every SpamRule condition in its scope', () => {
    const rules = Object.values(bundle.SpamRule);
    expect(rules).toHaveLength(66);
    const failures = rules.flatMap((r) => {
      const { errors, block } = compileIfBlock(r.condition, { allowedVariables: SPAM_RULE_VARIABLES[r['@type']] });
      return block === undefined || block.isEmpty ? [`${r.name}: ${JSON.stringify(errors)}`] : [];
    });
    expect(failures).toEqual([]);
  });

  it('answers every Header rule for an unrelated header from its name alone (optimize.ts cost ordering and guards)', () => {
    // Written order searches the value first in STWT_X_PHP_EVAL and STWT_HIDDEN_SOURCE_PHP; after
    // cost ordering every Header rule tests the name first, and that test is the block's guard.
    const header = Object.values(bundle.SpamRule).filter((r) => r['@type'] === 'Header');
    expect(header).toHaveLength(12);
    for (const r of header) {
      const { block } = compileIfBlock(r.condition, { allowedVariables: SPAM_RULE_VARIABLES.Header });
      const reads: string[] = [];
      const vars: Record<string, string> = { name: 'X-Unrelated', name_lower: 'x-unrelated', value: 'eval() ../ yes junk spam', value_lower: 'eval() ../ yes junk spam' };
      const ctx = { variable: (n: string) => (reads.push(n), vars[n] ?? ''), global: () => 0 };
      expect(block!.evalSync(ctx), r.name).toEqual({ value: 0, branch: -1 });
      expect(reads, r.name).toEqual(['name_lower']);
      const cond = normalizeMatch(r.condition.match)[0]!.if;
      expect(guardOf(optimizeTree(resolveExpression(cond).tree, true))?.name, r.name).toBe('name_lower');
    }
  });

  it('compiles every DNSBL zone and tag', () => {
    const servers = Object.values(bundle.SpamDnsblServer);
    expect(servers.length).toBeGreaterThan(0);
    for (const s of servers) {
      expect(compileIfBlock(s.zone, { allowedVariables: SPAM_RULE_VARIABLES[s['@type']] }).errors, s.name).toEqual([]);
      expect(compileIfBlock(s.tag, { allowedVariables: DNSBL_TAG_VARIABLES }).errors, s.name).toEqual([]);
    }
  });
});
