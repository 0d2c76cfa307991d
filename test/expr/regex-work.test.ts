/**
 * The work limit of one `matches` search (src/expr/regex.ts, DEFAULT_REGEX_WORK_LIMIT): a search
 * whose pattern cost × subject length is over it is refused before it starts, with an error naming
 * the figures, whatever the subject holds; below it, searches run as before.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RULES } from '../../src/engine/default-rules.js';
import { compileExpression, ExprEvalError, interpretExpression, type EvalContext, type Value } from '../../src/expr/index.js';
import { compileRustRegex, DEFAULT_REGEX_WORK_LIMIT, RegexWorkError } from '../../src/expr/regex.js';

const HOSTILE = '(?:a*)'.repeat(499);
const MB = 'a'.repeat(1024 * 1024);
const ctx = (vars: Record<string, Value>, regexWorkLimit?: number): EvalContext => ({
  variable: (n) => vars[n] ?? '', global: () => 0, ...(regexWorkLimit === undefined ? {} : { regexWorkLimit }),
});

describe('regex work limit', () => {
  it('is 2^26 steps by default', () => {
    expect(DEFAULT_REGEX_WORK_LIMIT).toBe(67_108_864);
  });

  it('refuses the hostile (?:a*)×499 on 1 MB before searching, naming cost, length and limit', () => {
    const re = compileRustRegex(HOSTILE);
    expect(re.cost).toBe(998);
    for (const search of [() => re.exec(MB, DEFAULT_REGEX_WORK_LIMIT), () => re.test(MB, DEFAULT_REGEX_WORK_LIMIT)]) {
      let err: unknown;
      try {
        search();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RegexWorkError);
      expect(err).toBeInstanceOf(ExprEvalError);
      expect(err).toMatchObject({ cost: 998, length: 1_048_576, limit: 67_108_864, pattern: HOSTILE });
      expect((err as Error).message).toBe(
        'regular expression "(?:a*)(?:a*)(?:a*)(?:a*)(?:a*)(?:a*)(?:a*)(?:a*)(?:a*)(?:..." not run: a search of 1048576 characters at cost 998 could take 1046478848 steps, over the limit of 67108864 (regexWorkLimit)',
      );
    }
  });

  it('decides on cost × length alone: at the limit the search runs, one character more it does not', () => {
    const re = compileRustRegex('a[bc]+d'); // cost 4
    expect(re.cost).toBe(4);
    expect(re.test('x'.repeat(25), 100)).toBe(false);
    expect(re.exec(`${'x'.repeat(22)}abd`, 100)?.[0]).toBe('abd');
    expect(() => re.test('x'.repeat(26), 100)).toThrow(RegexWorkError);
    expect(() => re.exec(`${'x'.repeat(23)}abd`, 100)).toThrow(RegexWorkError);
    expect(re.exec('x'.repeat(1000) + 'abd')?.[0]).toBe('abd'); // no limit given: none
  });

  it('bounds a pattern with Unicode word boundaries by what each of its passes costs', () => {
    const re = compileRustRegex('\\bcafé\\b|\\bbar\\b');
    // 68 steps a character on the marked subject; 12 without the marks: on an ASCII subject (where ASCII \b gives
    // the same answers) and for the quick test without word boundaries that comes first on another subject.
    expect(re.cost).toBe(68);
    const n = 100;
    const ascii = `${'x '.repeat(n / 2 - 2)}bar`.padEnd(n);
    expect(re.test(ascii, 12 * n)).toBe(true);
    expect(() => re.test(ascii, 12 * n - 1)).toThrow(RegexWorkError);
    const noCandidate = 'é '.repeat(n / 2); // neither word: the quick test says no, nothing is marked
    expect(re.test(noCandidate, 12 * n)).toBe(false);
    const candidate = `${'é '.repeat(n / 2 - 3)}café`.padEnd(n);
    expect(() => re.test(candidate, 12 * n)).toThrow(/at cost 68 /);
    expect(re.test(candidate, 68 * n)).toBe(true);
  });

  it('`matches` fails the evaluation with that error, in compiled and interpreted expressions, and leaves the captures', () => {
    const source = `matches('${HOSTILE}', value)`;
    for (const expr of [compileExpression(source), interpretExpression(source)]) {
      expect(() => expr.evalSync(ctx({ value: MB }))).toThrow(RegexWorkError);
      expect(expr.evalSync(ctx({ value: 'aaa' }))).toBe(1);
    }
    // The context's limit: lower, or none.
    const cheap = compileExpression("matches('(\\w+)@', value)");
    const caps = ['kept'];
    expect(() => cheap.evalSync(ctx({ value: 'x'.repeat(1000) }, 100), caps)).toThrow(/over the limit of 100 \(regexWorkLimit\)/);
    expect(caps).toEqual(['kept']);
    const over = `${'x'.repeat(Math.ceil(DEFAULT_REGEX_WORK_LIMIT / compileRustRegex('(\\w+)@').cost))} me@`;
    expect(() => cheap.evalSync(ctx({ value: over }))).toThrow(RegexWorkError);
    expect(cheap.evalSync(ctx({ value: over }, Infinity))).toBe(1);
  });

  it('leaves the shipped rules alone on text parts far larger than the corpus holds', () => {
    const conditions = DEFAULT_RULES.flatMap((r) => (r.condition as { match: { if: string }[] }).match.map((m) => m.if));
    const patterns = conditions.flatMap((c) => [...c.matchAll(/matches\('((?:[^'\\]|\\.)*)'/g)].map((x) => x[1]!));
    expect(patterns).toHaveLength(3);
    for (const p of patterns) {
      const re = compileRustRegex(p);
      // 615,000 ASCII characters; 170,000 others, with a candidate for the quick test (the largest text part of
      // the SpamAssassin corpus has 195,000 characters).
      expect(() => re.test(`${'lottery act now urgent reply $ 1,000,000 '.repeat(15_000)}`, DEFAULT_REGEX_WORK_LIMIT)).not.toThrow();
      expect(() => re.test(`é ${'lottery act now urgent reply $ 1,000,000 '.repeat(4_000)}`, DEFAULT_REGEX_WORK_LIMIT)).not.toThrow();
    }
  });
});
