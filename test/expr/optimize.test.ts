/**
 * Static rewrites before compilation (src/expr/optimize.ts): what they rewrite, what they leave
 * alone, that they change no result (against the reference interpreter, which walks the
 * unrewritten tree), and what they save (variables a reordered test never reads).
 */
import { describe, expect, it } from 'vitest';
import {
  compileExpression, compileIfBlock, encodeValue, Float, interpretExpression, type EvalContext, type Value,
} from '../../src/expr/index.js';
import { estimateCost, guardOf, isPureTotal, optimizeTree } from '../../src/expr/optimize.js';
import { resolveExpression, type Expr } from '../../src/expr/resolve.js';
import { LookupMap, StaticLookupList } from '../../src/lookup/index.js';

/** A context that records every variable it is asked for. */
function recording(vars: Record<string, Value>, tags: string[] = []): EvalContext & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    variable: (n) => {
      reads.push(n);
      return vars[n] ?? '';
    },
    global: (n) => (tags.includes(n) ? 1 : 0),
  };
}

/** The rewritten tree, printed back as source-like text. */
function show(e: Expr): string {
  switch (e.k) {
    case 'lit':
      return Array.isArray(e.value) ? `[${e.value.map((v) => JSON.stringify(v)).join(', ')}]` : JSON.stringify(e.value);
    case 'var':
      return e.name;
    case 'global':
      return `$${e.name}`;
    case 'capture':
      return `$${e.index}`;
    case 'binary':
      return `(${show(e.left)} ${e.op} ${show(e.right)})`;
    case 'unary':
      return `${e.op}${show(e.operand)}`;
    case 'call':
      return `${e.name}(${e.args.map(show).join(', ')})`;
    case 'matches':
      return `matches(${JSON.stringify(e.source)}, ${show(e.subject)})`;
    case 'array':
      return `[${e.items.map(show).join(', ')}]`;
    case 'index':
      return `${show(e.target)}[${show(e.index)}]`;
    default:
      return e.k;
  }
}

const rewrite = (src: string, boolean: boolean): string => show(optimizeTree(resolveExpression(src).tree, boolean));

describe('equality sets: x == a || x == b → contains([a, b], x)', () => {
  it('merges a run of String equalities on one variable, in any context', () => {
    expect(rewrite("name_lower == 'user_agent' || name_lower == 'x-mailer'", false)).toBe(
      'contains(["user_agent", "x-mailer"], name_lower)',
    );
    expect(rewrite("'a' == subject || subject == 'b' || subject == 'c'", false)).toBe('contains(["a", "b", "c"], subject)');
  });

  it('merges only consecutive tests of the same variable, and never across &&, != or non-literals', () => {
    expect(rewrite("subject == 'a' || from == 'b' || subject == 'c'", false)).toBe('(((subject == "a") || (from == "b")) || (subject == "c"))');
    expect(rewrite("subject == 'a' && subject == 'b'", false)).toBe('((subject == "a") && (subject == "b"))');
    expect(rewrite("subject != 'a' || subject != 'b'", false)).toBe('((subject != "a") || (subject != "b"))');
    expect(rewrite("subject == from || subject == 'b'", false)).toBe('((subject == from) || (subject == "b"))');
    expect(rewrite("subject == 1 || subject == 2", false)).toBe('((subject == 1) || (subject == 2))');
  });

  it.each<[string, Value]>([
    ['a', 'a'],
    ['c', 'c'],
    ['number equal to a numeric literal', 7],
    ['Float', new Float(7)],
    ['numeric string', '7'],
    ['zero against non-numeric literals', 0],
    ['empty string', ''],
    ['array', ['a']],
  ])('gives the interpreter\'s value for subject = %s', (_label, subject) => {
    const src = "subject == 'a' || subject == 'b' || subject == '7' || from";
    const vars = { subject, from: 'tail' };
    const compiled = compileExpression(src).evalSync(recording(vars));
    const interpreted = interpretExpression(src).evalSync(recording(vars));
    expect(encodeValue(compiled)).toEqual(encodeValue(interpreted));
  });
});

describe('cost-ordered tests in boolean contexts', () => {
  const PHP_EVAL = "contains(value_lower, 'eval()') && contains(['x-php-originating-script', 'x-php-script'], name_lower)";

  it('moves the cheap header-name test before the search of the header value', () => {
    expect(rewrite(PHP_EVAL, true)).toBe(
      '(contains(["x-php-originating-script", "x-php-script"], name_lower) && contains(value_lower, "eval()"))',
    );
  });

  it('keeps the order where the value of the chain is read', () => {
    expect(rewrite(PHP_EVAL, false)).toBe(
      '(contains(value_lower, "eval()") && contains(["x-php-originating-script", "x-php-script"], name_lower))',
    );
    // …but the operand of `!` and the later operands of a chain are boolean contexts.
    expect(rewrite(`!(${PHP_EVAL})`, false)).toContain('!(contains(["x-php-originating-script"');
    expect(rewrite(`subject || (${PHP_EVAL})`, false)).toBe(
      '(subject || (contains(["x-php-originating-script", "x-php-script"], name_lower) && contains(value_lower, "eval()")))',
    );
  });

  it('never moves an operand across matches, a capture or a store call', () => {
    expect(rewrite("contains(body, 'x') && matches('a(b)', subject) && $1 == 'b' && $T", true)).toBe(
      '(((contains(body, "x") && matches("a(b)", subject)) && ($1 == "b")) && $T)',
    );
    expect(rewrite("contains(body, 'x') && key_exists('ns', from) && $T", true)).toBe(
      '((contains(body, "x") && key_exists("ns", from)) && $T)',
    );
    // Pure operands on either side of a barrier are still ordered among themselves.
    expect(rewrite("contains(body, 'x') && $A && key_exists('ns', from) && contains(body, 'y') && $B", true)).toBe(
      '(((($A && contains(body, "x")) && key_exists("ns", from)) && $B) && contains(body, "y"))',
    );
  });

  it('classifies purity and cost as documented', () => {
    const tree = (s: string): Expr => resolveExpression(s).tree;
    expect(isPureTotal(tree("contains(to_lowercase(subject), 'x') && !is_empty(from)"))).toBe(true);
    expect(isPureTotal(tree("matches('x', subject)"))).toBe(false);
    expect(isPureTotal(tree("$1 == 'x'"))).toBe(false);
    expect(isPureTotal(tree("key_get('ns', from) == 'x'"))).toBe(false);
    expect(estimateCost(tree('$A'))).toBeLessThan(estimateCost(tree("name_lower == 'x'")));
    expect(estimateCost(tree("name_lower == 'x'"))).toBeLessThan(estimateCost(tree("contains(value_lower, 'x')")));
    expect(estimateCost(tree("contains(value_lower, 'x')"))).toBeLessThan(estimateCost(tree("matches('x', value_lower)")));
  });

  it('spares the read of the header value when the header name does not match', () => {
    const { block } = compileIfBlock({ match: [{ if: PHP_EVAL, then: "'X_PHP_EVAL'" }], else: 'false' });
    const other = recording({ name_lower: 'subject', value_lower: 'eval() here' });
    expect(block!.evalSync(other)).toEqual({ value: 0, branch: -1 });
    expect(other.reads).toEqual(['name_lower']);
    const php = recording({ name_lower: 'x-php-script', value_lower: 'eval() here' });
    expect(block!.evalSync(php)).toEqual({ value: 'X_PHP_EVAL', branch: 0 });
  });
});

describe('guards: a membership test the condition is falsy without', () => {
  const guard = (src: string): { name: string; values: string[] } | undefined => {
    const g = guardOf(optimizeTree(resolveExpression(src).tree, true));
    return g && { name: g.name, values: [...g.values] };
  };

  it('is the condition itself or the first operand of its && chain, after the rewrites', () => {
    expect(guard("name_lower == 'x-mailer'")).toEqual({ name: 'name_lower', values: ['x-mailer'] });
    expect(guard("name_lower == 'x-mailer' && name != 'X-Mailer'")).toEqual({ name: 'name_lower', values: ['x-mailer'] });
    expect(guard("(name_lower == 'user_agent' || name_lower == 'x-mailer') && !is_empty(value)")).toEqual({
      name: 'name_lower',
      values: ['user_agent', 'x-mailer'],
    });
    // Reordered first: the name test moves before the value search.
    expect(guard("contains(value_lower, 'eval()') && contains(['x-php-script'], name_lower)")).toEqual({
      name: 'name_lower',
      values: ['x-php-script'],
    });
  });

  it('is absent when the condition can be truthy without it', () => {
    expect(guard("name_lower == 'a' || $T")).toBeUndefined();
    expect(guard("$T && name_lower == 'a'")).toBeUndefined(); // $T is cheaper, so it stays first
    expect(guard("name_lower != 'a' && $T")).toBeUndefined();
    expect(guard("contains(['a', 1], name_lower) && $T")).toBeUndefined();
    expect(guard("contains(name_lower, 'a')")).toBeUndefined(); // a substring test, not membership
  });

  it('skips the condition only for a String outside the set; other values are compared loosely', () => {
    const { block } = compileIfBlock({ match: [{ if: "value == 'abc' && contains(body, 'x')", then: "'HIT'" }], else: 'false' });
    const miss = recording({ value: 'zzz', body: 'x' });
    expect(block!.evalSync(miss)).toEqual({ value: 0, branch: -1 });
    expect(miss.reads).toEqual(['value']);
    expect(block!.evalSync(recording({ value: 'abc', body: 'x' }))).toEqual({ value: 'HIT', branch: 0 });
    // Integer 0 == 'abc' (a non-numeric String parses as 0): the guard must not answer for it.
    expect(block!.evalSync(recording({ value: 0, body: 'x' }))).toEqual({ value: 'HIT', branch: 0 });
    expect(encodeValue(interpretExpression("value == 'abc'").evalSync(recording({ value: 0 })))).toEqual({ int: 1 });
  });
});

describe('if-blocks of one constant branch', () => {
  it('start a new evaluation of their variable slots each time', () => {
    // `name_lower` is read twice, so the block keeps it in a slot: a second context must not see
    // the first one's value.
    const { block } = compileIfBlock({ match: [{ if: "name_lower == 'to' || contains(name_lower, 'x-')", then: "'HIT'" }], else: 'false' });
    expect(block!.evalSync(recording({ name_lower: 'to' }))).toEqual({ value: 'HIT', branch: 0 });
    expect(block!.evalSync(recording({ name_lower: 'subject' }))).toEqual({ value: 0, branch: -1 });
    expect(block!.evalSync(recording({ name_lower: 'x-mailer' }))).toEqual({ value: 'HIT', branch: 0 });
  });

  it('answer the same through evalSync, evalMaybe and evalAsync', async () => {
    const { block } = compileIfBlock({ match: [{ if: '$A && !$B', then: "'T'" }], else: "'E'" });
    const c = recording({}, ['A']);
    expect(block!.evalSync(c)).toEqual({ value: 'T', branch: 0 });
    expect(block!.evalMaybe(c)).toEqual({ value: 'T', branch: 0 });
    expect(await block!.evalAsync(recording({}, ['A', 'B']))).toEqual({ value: 'E', branch: -1 });
  });
});

describe('rewrites change no result (random expressions against the interpreter)', () => {
  // A small deterministic generator over the shapes the rewrites touch.
  let seed = 0x2545f491;
  const rnd = (n: number): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const VARS = ['subject', 'from', 'to'];
  const LITS = ["'x'", "'y'", "'7'", "''", '0', '7', '1.5'];
  const leaf = (): string => {
    switch (rnd(6)) {
      case 0:
        return `${VARS[rnd(3)]} == ${LITS[rnd(LITS.length)]}`;
      case 1:
        return `contains(${VARS[rnd(3)]}, ${LITS[rnd(LITS.length)]})`;
      case 2:
        return `$${['T', 'U'][rnd(2)]}`;
      case 3:
        return VARS[rnd(3)]!;
      case 4:
        return `key_exists('list', ${VARS[rnd(3)]})`;
      default:
        return LITS[rnd(LITS.length)]!;
    }
  };
  const gen = (depth: number): string => {
    if (depth === 0 || rnd(3) === 0) return leaf();
    const parts = Array.from({ length: 2 + rnd(3) }, () => gen(depth - 1));
    const op = rnd(2) === 0 ? ' && ' : ' || ';
    return `${rnd(4) === 0 ? '!' : ''}(${parts.join(op)})`;
  };
  const VALUES: Value[] = ['x', 'y', '7', '', 0, 7, new Float(1.5), ['x', 7], []];
  const lookups = new LookupMap();
  lookups.set('list', new StaticLookupList('list', ['x', '7']));

  it('as expressions (value) and as if-block conditions (truthiness), on 400 expressions', async () => {
    for (let i = 0; i < 400; i++) {
      const src = gen(3);
      const vars = { subject: VALUES[rnd(VALUES.length)]!, from: VALUES[rnd(VALUES.length)]!, to: VALUES[rnd(VALUES.length)]! };
      const tags = ['T', 'U'].filter(() => rnd(2) === 0);
      const c = { ...recording(vars, tags), lookups };
      const want = await interpretExpression(src).evalAsync(c);
      const got = await compileExpression(src).evalAsync(c);
      expect(encodeValue(got), src).toEqual(encodeValue(want));
      const { block } = compileIfBlock({ match: [{ if: src, then: "'HIT'" }], else: 'false' });
      const r = await block!.evalAsync(c);
      const truthy = want !== 0 && want !== '' && !(Array.isArray(want) && want.length === 0);
      expect(r, src).toEqual(truthy ? { value: 'HIT', branch: 0 } : { value: 0, branch: -1 });
    }
  });
});
