/**
 * Hostile-evaluation fuzzing (fast-check, test/helpers/fuzz.ts): valid expressions that repeat,
 * concatenate, split and search huge sender-controlled inputs must stay inside the documented
 * limits (docs/expression-language.md, "White space, errors, limits" and "Regular expressions"):
 * each evaluation gives a value or fails with ExprEvalError (`value too large: …`, or a
 * RegexWorkError for a search over the work limit), never a RangeError or another exception, and
 * never runs for long: every operation is linear (or n log n) in its input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileExpression, ExprEvalError, interpretExpression, type EvalContext, type Value } from '../../src/expr/index.js';
import { fuzzParams } from '../helpers/fuzz.js';

/**
 * Longest one hostile evaluation may take. The slowest legitimate ones (a sort or split of about a
 * million elements, a regex search at the work limit) take about a second on a shared 2-core machine;
 * anything quadratic in a 1 MB input takes minutes.
 */
const EVAL_BUDGET_MS = 8000;

/** Building blocks of hostile inputs (sender-controlled text: body, subject, header values). */
const PIECES = [' ', 'a', 'x', '\t', '\u3000', '.', ',', '@', '\r\n', '\n', 'é', '😀', 'ß', '\ufb03', '0', '9', 'aa', ' x', 'a:', '1.'];

/** A huge input, shown in a failure report by its recipe (`"\u3000"×400000 + "xa "×2`) rather than its text. */
interface Big {
  text: string;
  [fc.toStringMethod](): string;
}

/** A long run of one unit (`'   …'`, `'a\r\na\r\n…'`). */
const longRun: fc.Arbitrary<[string, number]> = fc.tuple(
  fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 2 }).map((u) => u.join('')),
  fc.oneof(fc.constantFrom(1, 1_000, 100_000, 400_000), fc.integer({ min: 1, max: 400_000 })),
);
/** One to three runs (`'     …x'`: white space then text), at most 1 MB. */
const input: fc.Arbitrary<Big> = fc.array(longRun, { minLength: 1, maxLength: 3 }).map((runs) => ({
  text: runs.map(([u, n]) => u.repeat(n)).join('').slice(0, 1_000_000),
  [fc.toStringMethod]: () => runs.map(([u, n]) => `${JSON.stringify(u)}×${n}`).join(' + '),
}));

/**
 * Body and subject: independent, or the subject a near-copy of the body's first half (the worst case of
 * a substring search: a long needle that almost matches everywhere).
 */
const inputs: fc.Arbitrary<[Big, Big]> = fc.tuple(input, input, fc.boolean()).map(([body, other, derived]) => {
  if (!derived) return [body, other];
  const half = body.text.slice(0, body.text.length >> 1);
  return [body, { text: half + '!', [fc.toStringMethod]: () => `first half of body + "!"` }];
});

/** Hostile expression shapes over the variable `body` (`B` is replaced by an inner shape). */
const SHAPES = [
  'B', "split(B, '')", "split(B, ' ')", 'split_words(B)', 'lines(B)', "rsplit(B, 'a')", "split_n(B, '', 9223372036854775807)",
  "split_n(B, ' ', -1)", 'B + B', '[B, B] + B', 'to_uppercase(B)', 'to_lowercase(B)', 'trim(B)', 'trim_end(B)', 'trim_start(B)',
  "strip_prefix(B, ' ')", "strip_suffix(B, 'x')", "email_part(B, 'local')", 'sort(B, 1)', 'sort(B, 0)', 'dedup(B)', 'winnow(B)',
  'is_intersect(B, B)', 'B - B', "B - 'a'", "substring(B, 1, 9223372036854775807)", 'len(B)', 'count(B)', 'count_chars(B)',
  'count_spaces(B)', 'count_uppercase(B)', 'is_email(B)', 'ip_reverse_name(B)', 'is_ip_addr(B)', "hash(B, 'sha512')",
  "contains(B, 'zz')", "contains_ignore_case(B, 'ZZ')", 'B == B', 'B < B', "eq_ignore_case(B, B)", 'has_digits(B)',
  "matches('(\\w+)\\s+(\\w+)$', B)", "matches('(?:a*){400}b', B)", "matches('(?i)\\b(cheap|credit|casino)\\b', B)",
  "matches('^(.*)x(.*)y$', B)", "matches('(a|aa)*c', B)", "matches('[^@]+@[^@]+\\.[a-z]{2,}', B)", "B[0]", "B[999999]",
  // A second huge input as the separator, needle or other operand.
  'rsplit(B, subject)', 'rsplit_once(B, subject)', 'split(B, subject)', 'split_once(B, subject)', 'split_n(B, subject, 3)',
  'contains(B, subject)', 'contains_ignore_case(B, subject)', 'strip_prefix(B, subject)', 'strip_suffix(B, subject)',
  'starts_with(B, subject)', 'ends_with(B, subject)', 'is_intersect(B, subject)', 'B == subject', 'eq_ignore_case(B, subject)',
  'B - subject', 'B < subject', "is_ip_in_cidr(B, subject)",
  // Numeric conversions of a huge String (parse_number, to_usize).
  'B > 5', '-B', 'B * 2', '[1, 2][B]', "split_n(B, ',', subject)", "substring(B, subject, 5)",
];

const shape = fc.constantFrom(...SHAPES);
/** Two or three shapes nested (`split(to_uppercase(body), '')`), sometimes summed. */
const expression: fc.Arbitrary<string> = fc
  .tuple(fc.array(shape, { minLength: 1, maxLength: 3 }), fc.boolean())
  .map(([shapes, twice]) => {
    const e = shapes.reduce((inner, s) => s.replaceAll('B', () => (inner === 'body' ? inner : `(${inner})`)), 'body');
    return twice ? `${e} + ${e}` : e;
  });

function ctx(body: string, subject: string): EvalContext {
  return { variable: (n) => (n === 'body' ? body : n === 'subject' ? subject : ''), global: () => 0 };
}

/** Evaluates and returns the error (or undefined), asserting the time budget and the error class. */
function run(evaluate: () => Value, what: string): unknown {
  const t0 = performance.now();
  let error: unknown;
  try {
    evaluate();
  } catch (e) {
    error = e;
  }
  expect(performance.now() - t0, `time of ${what}`).toBeLessThan(EVAL_BUDGET_MS);
  if (error !== undefined) expect(error, `${what} threw ${String(error)}`).toBeInstanceOf(ExprEvalError);
  return error;
}

describe('fuzz: hostile evaluations stay inside the documented limits', () => {
  it('huge inputs through splits, concatenations, case maps, sorts and searches', () => {
    fc.assert(
      fc.property(expression, inputs, (src, [body, subject]) => {
        const what = `${src} over body ${fc.stringify(body)}, subject ${fc.stringify(subject)}`;
        const compiled = compileExpression(src);
        run(() => compiled.evalSync(ctx(body.text, subject.text)), what);
      }),
      fuzzParams(60),
    );
  });

  it('the interpreter keeps the same limits', () => {
    fc.assert(
      fc.property(expression, inputs, (src, [body, subject]) => {
        const what = `interpreted ${src} over body ${fc.stringify(body)}, subject ${fc.stringify(subject)}`;
        run(() => interpretExpression(src).evalSync(ctx(body.text, subject.text)), what);
      }),
      fuzzParams(20),
    );
  });
});
