import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from '../../grammar/index.js';
import { compileIfBlock, parseExpression } from '../../src/expr/index.js';
import { DEFAULT_RULES } from '../../src/engine/default-rules.js';
import { SpamEngine, DEFAULT_TAGS } from '../../src/index.js';
import { DEFAULT_TREES_FILE, defaultRuleSources, renderDefaultTrees } from './default-trees.gen.js';

describe('prebuilt syntax trees of the default rules', () => {
  it('src/expr/default-trees.ts is what the generator renders from today\'s rules and grammar', () => {
    // When this fails: npx tsx test/expr/default-trees.gen.ts
    expect(readFileSync(DEFAULT_TREES_FILE, 'utf8')).toBe(renderDefaultTrees());
  });

  it('parseExpression returns the parser\'s tree for every default-rule expression, a fresh copy each call', () => {
    const sources = defaultRuleSources();
    expect(sources.length).toBeGreaterThan(30);
    for (const s of sources) expect(parseExpression(s)).toStrictEqual(parse(s));
    const s = DEFAULT_RULES[0]!.condition.else!;
    const a = parseExpression(s);
    (a as { start: number }).start = 99;
    expect(parseExpression(s)).toStrictEqual(parse(s));
  });

  it('other expressions and errors go through the parser as before', () => {
    expect(parseExpression('1 +  2')).toStrictEqual(parse('1 +  2'));
    expect(() => parseExpression('1 +')).toThrow(/1:4|line 1/);
    const { errors } = compileIfBlock({ match: [{ if: 'is_empty(', then: "'X'" }], else: 'false' });
    expect(errors.length).toBe(1);
  });

  it('the default engine classifies with the prebuilt trees', async () => {
    const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });
    const r = await engine.classify('From: a@example.com\r\nTo: b@example.org\r\nSubject: \r\n\r\nYou have won the lottery!\r\n');
    expect(r.tags).toEqual(expect.arrayContaining(['LOTTERY_WORDS']));
  });

  it('classifying with the default rules loads no parser (Chevrotain) and no zod; compiling another expression loads the parser', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-trees-'));
    try {
      const probe = join(dir, 'probe.mjs');
      const index = pathToFileURL(join(import.meta.dirname, '..', '..', 'src', 'index.ts')).href;
      writeFileSync(probe, `
        import { createRequire } from 'node:module';
        const require = createRequire(import.meta.url);
        const parser = () => Object.keys(require.cache).some((k) => k.includes('/chevrotain/'));
        const zod = () => Object.keys(require.cache).some((k) => k.includes('/zod/'));
        const sr = await import(${JSON.stringify(index)});
        await sr.classify('Subject: hi\\r\\n\\r\\nYou have won the lottery\\r\\n');
        const afterClassify = parser();
        const zodAfterClassify = zod();
        sr.compileExpression("contains(subject, 'not a default rule')");
        console.log(JSON.stringify({ afterClassify, zodAfterClassify, afterCompile: parser() }));
      `);
      const r = spawnSync(process.execPath, ['--import', 'tsx', probe], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
      expect({ status: r.status, err: r.status === 0 ? '' : r.stderr }).toEqual({ status: 0, err: '' });
      expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toEqual({ afterClassify: false, zodAfterClassify: false, afterCompile: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
