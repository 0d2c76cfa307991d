/**
 * Robustness fuzzing of the expression parser (fast-check, test/helpers/fuzz.ts): any text (random
 * Unicode, lone surrogates, soup of the language's own tokens, unbalanced quotes and brackets, deep
 * nesting, huge literals) either compiles or is refused with an ExprParseError that names a
 * position inside the source (README.md, D6); never another exception, never a stack overflow,
 * never a long stall (the limits of docs/expression-language.md: 64 KiB of source, nesting 64,
 * tree depth 1,024). What compiles also evaluates without any error but the documented ExprEvalError.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileExpression, compileIfBlock, ExprEvalError, ExprParseError, interpretExpression, MAX_SOURCE_LENGTH, resolveExpression,
} from '../../src/expr/index.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { contextFor, SAFE_PATTERNS, strLit } from './fuzz-gen.js';

/** Longest a parse of at most 64 KiB may take; real parses take well under 100 ms (2 shared cores). */
const PARSE_BUDGET_MS = 3000;

/**
 * Parses, resolves, compiles and interprets `src`, asserting the error contract, and evaluates
 * what compiles. Returns whether it compiled.
 */
function check(src: string): boolean {
  const t0 = performance.now();
  let parsed: boolean;
  try {
    resolveExpression(src);
    parsed = true;
  } catch (e) {
    expect(e, `${JSON.stringify(src.slice(0, 200))} threw ${String(e)}`).toBeInstanceOf(ExprParseError);
    const pe = e as ExprParseError;
    expect(pe.position, pe.message).toBeDefined();
    const { line, column, offset } = pe.position!;
    expect(offset).toBeGreaterThanOrEqual(0);
    expect(offset).toBeLessThanOrEqual(Math.max(src.length, MAX_SOURCE_LENGTH));
    expect(pe.message.endsWith(` at ${line}:${column}`), pe.message).toBe(true);
    parsed = false;
  }
  expect(performance.now() - t0, `parse time of ${JSON.stringify(src.slice(0, 100))}`).toBeLessThan(PARSE_BUDGET_MS);
  // The compiler, the interpreter and the if-block compiler accept exactly the same sources.
  for (const build of [compileExpression, interpretExpression]) {
    try {
      const c = build(src);
      expect(parsed, `${build.name} accepted what resolveExpression refused: ${JSON.stringify(src)}`).toBe(true);
      if (!c.isAsync) {
        try {
          c.evalSync(contextFor({ vars: {}, tags: [] }));
        } catch (e) {
          expect(e, `evaluating ${JSON.stringify(src)}`).toBeInstanceOf(ExprEvalError);
        }
      }
    } catch (e) {
      if (parsed) throw e;
      expect(e).toBeInstanceOf(ExprParseError);
    }
  }
  const { block, errors } = compileIfBlock({ match: [{ if: src, then: '1' }], else: '0' });
  if (src.trim() === '' || /^[\s\u0085]*\}/.test(src)) return parsed; // a blank `if` is its own error
  if (parsed) expect(errors).toEqual([]);
  else {
    expect(block).toBeUndefined();
    expect(errors[0]!.message).not.toMatch(/internal error/);
    expect(errors[0]!.position).toBeDefined();
  }
  return parsed;
}

/** The language's own tokens, valid and not, for token soup. */
const TOKENS = [
  'subject', 'from.domain', 'recipients', 'value', 'len', 'contains', 'split', 'matches', 'system', 'metric', 'key_get', 'if_then',
  'relaxed', 'nope', '$TAG', '$1', '$', '$99999999999', '0', '1', '007', '1.5', '.5', '5.', '1.2.3', '1e5', '5d', '100ms', '5x',
  '9223372036854775807', '9223372036854775808', 'true', 'false', "'a'", '"b"', "'", '"', "'\\'", "'a\\'b'", '\\', '+', '-', '*',
  '/', '&', '&&', '|', '||', '^', '!', '!=', '=', '==', '===', '<', '<=', '>', '>=', '<>', '=>', '(', ')', '[', ']', ',', '}', '{',
  '#', ';', '@', '%', '?', '~', '`', ':', ' ', '\t', '\n', '\r\n', '\u00a0', '\u2028', '\u3000', '\ufeff', 'é', '😀', '\ud800',
  '\u0000', "'hostname'", "'queue.count'", "'(\\w+)@'", "'('", "'\\b{start}'",
];
const token = fc.constantFrom(...TOKENS);
const soup = fc.array(fc.oneof(token, fc.constantFrom('', ' ')), { maxLength: 40 }).map((ts) => ts.join(''));
/** Structured soup: calls with wrong arities, special forms with bad literals. */
const shaped = fc.oneof(
  fc.tuple(fc.constantFrom('len', 'contains', 'substring', 'matches', 'system', 'metric', 'key_get'), fc.array(soup, { maxLength: 4 })).map(
    ([f, as]) => `${f}(${as.join(', ')})`,
  ),
  fc.tuple(fc.constantFrom(...SAFE_PATTERNS, '(', 'a{1001}', '(?<=a)b', '\\1', '[z-a]', '(?:a*){999}'), soup).map(([p, s]) => `matches(${strLit(p)}, ${s})`),
);

const NEST_OPEN = ['(', '[', '-', '!', 'len(', '-(', '![', '((', 'contains(subject, ', '[1, '];
const NEST_CLOSE: Record<string, string> = { '(': ')', '[': ']', '-': '', '!': '', 'len(': ')', '-(': ')', '![': ']', '((': '))', 'contains(subject, ': ')', '[1, ': ']' };
/** Deep nesting around a core, balanced or cut short or over-closed. */
const deep = fc
  .tuple(fc.array(fc.constantFrom(...NEST_OPEN), { minLength: 1, maxLength: 300 }), fc.constantFrom('1', 'subject', '', "'x'"), fc.integer({ min: -3, max: 3 }))
  .map(([opens, core, skew]) => {
    const closes = opens.map((o) => NEST_CLOSE[o]!).reverse().join('');
    const cut = skew < 0 ? closes.slice(0, Math.max(0, closes.length + skew)) : closes + ')]'.slice(0, skew);
    return opens.join('') + core + cut;
  });

/** Huge literals and long flat sequences, up to and over MAX_SOURCE_LENGTH. */
const huge = fc
  .tuple(fc.constantFrom('digits', 'float', 'string', 'word', 'chain', 'logic', 'unary-chain', 'array', 'unterminated', 'comment'), fc.integer({ min: 1, max: 70_000 }))
  .map(([kind, n]) => {
    switch (kind) {
      case 'digits':
        return '9'.repeat(n);
      case 'float':
        return '1'.repeat(n) + '.' + '5'.repeat(n % 1000);
      case 'string':
        return `'${'x'.repeat(n)}'`;
      case 'word':
        return 'a'.repeat(n);
      case 'chain':
        return '1' + ' + 1'.repeat(Math.floor(n / 4));
      case 'logic':
        return '$A' + ' && $B'.repeat(Math.floor(n / 6));
      case 'unary-chain':
        return '-1' + ' - -1'.repeat(Math.floor(n / 5));
      case 'array':
        return '[' + '1,'.repeat(Math.floor(n / 2)) + '1]';
      case 'unterminated':
        return "'" + '\\'.repeat(n);
      default:
        return '1 }' + '('.repeat(n);
    }
  });

describe('fuzz: the parser refuses bad input with a positioned ExprParseError, never anything else', () => {
  it('random Unicode text, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 60 })), (s) => {
        check(s);
      }),
      fuzzParams(2000),
    );
  });

  it('token soup of the language, unbalanced quotes and brackets', () => {
    fc.assert(fc.property(fc.oneof(soup, shaped), (s) => void check(s)), fuzzParams(3000));
  });

  it('deep nesting, balanced or not, never overflows the stack', () => {
    fc.assert(fc.property(deep, (s) => void check(s)), fuzzParams(300));
  });

  it('huge literals and long flat sequences stay within the limits', () => {
    fc.assert(fc.property(huge, (s) => void check(s)), fuzzParams(100));
  });
});
