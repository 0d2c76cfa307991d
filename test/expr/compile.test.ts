import { describe, expect, it } from 'vitest';
import {
  compileExpression, compileIfBlock, Constant, encodeValue, ExprEvalError, ExprParseError, Float, interpretExpression,
  type EvalContext, type Value,
} from '../../src/expr/index.js';
import { LookupMap, MemoryStore, StaticLookupList } from '../../src/lookup/index.js';

function ctx(vars: Record<string, Value> = {}, tags: string[] = [], extra: Partial<EvalContext> = {}): EvalContext {
  return { variable: (n) => vars[n] ?? '', global: (n) => (tags.includes(n) ? 1 : 0), ...extra };
}

function ev(src: string, vars: Record<string, Value> = {}, tags: string[] = []): unknown {
  const c = compileExpression(src);
  expect(c.isAsync).toBe(false);
  const v = c.evalSync(ctx(vars, tags));
  // The reference interpreter must agree on every expression tested here.
  expect(encodeValue(interpretExpression(src).evalSync(ctx(vars, tags)))).toEqual(encodeValue(v));
  return encodeValue(v);
}

function parseError(src: string, opts = {}): string {
  try {
    compileExpression(src, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(ExprParseError);
    return (e as Error).message;
  }
  throw new Error(`no parse error for ${src}`);
}

describe('compiled expressions: Stalwart value semantics', () => {
  it.each([
    ["'5' + 3", { str: '53' }],
    ["'5' - 3", { int: 2 }],
    ["'' + 5", { int: 5 }],
    ["7/2 + ''", { float: 3.5 }],
    ["'x' + 6/3", { str: 'x2' }],
    ["'x' + 1.5/10000000", { str: 'x0.00000015' }],
    ['relaxed + 1', { int: 1 }],
    ["relaxed + 'x'", { str: 'relaxedx' }],
    ["'' + relaxed", { const: 'relaxed' }],
    ['7 / 0', { float: 0 }],
    ['9223372036854775807 + 1', { int: 9223372036854775807 }],
    ['-9223372036854775807 - 10', { int: -9223372036854775808 }],
    ["'5' * '2'", { int: 10 }],
    ['[] * 5', { int: 5 }],
    ['-[]', { int: -1 }],
    ["-'abc'", { int: 0 }],
    ["'abc' == 0", { int: 1 }],
    ["'1.0' == 1", { int: 1 }],
    ['relaxed == relaxed', { int: 0 }],
    ['relaxed <= relaxed', { int: 1 }],
    ["[1,2] == [1,'2']", { int: 1 }],
    ["'B' < 'a'", { int: 1 }],
    ["10 < '9'", { int: 0 }],
    ["[1] > 'a'", { int: 1 }],
    ['5 < [1]', { int: 1 }],
    ["'foo' || 'bar'", { str: 'foo' }],
    ["'' && 'bar'", { str: '' }],
    ["0 || 'a'", { int: 1 }],
    ["'foo' && 'bar'", { int: 1 }],
    ['1 ^ 1', { int: 0 }],
    ['0 ^ 2', { int: 1 }],
    ['!-1', { int: 0 }],
    ['- -1', { int: 1 }],
    ['[-1]', { array: [{ int: -1 }] }],
    ['[!0]', { array: [{ int: 1 }] }],
    ['[(1), 2]', { array: [{ int: 1 }, { int: 2 }] }],
    ["('abc')[0]", { str: 'abc' }],
    ['[1,2,3][1.9]', { int: 2 }],
    ["[1,2,3]['2']", { int: 3 }],
    ['[1,2,3][5]', { str: '' }],
    ['()', { str: '' }],
    ['', { str: '' }],
    ['5d + 100ms', { int: 432000100 }],
    ['1 = 1', { int: 1 }],
    ["'a\\nb'", { str: 'a\nb' }],
    ["'\\S+@\\d'", { str: '\\S+@\\d' }],
  ])('%s → %j', (src, want) => {
    expect(ev(src)).toEqual(want);
  });

  it('reads variables, globals ($TAG as 1/0) and constants', () => {
    expect(ev('rcpt_domain = "example.org"', { rcpt_domain: 'example.org' })).toEqual({ int: 1 });
    expect(ev("remote_ip = 'A:B:C::D:E'", { remote_ip: 'a:b:c::d:e' })).toEqual({ int: 0 });
    expect(ev('$DMARC_POLICY_ALLOW && $SPF_FAIL', {}, ['DMARC_POLICY_ALLOW', 'SPF_FAIL'])).toEqual({ int: 1 });
    expect(ev('$DMARC_POLICY_ALLOW && $SPF_FAIL', {}, ['SPF_FAIL'])).toEqual({ int: 0 });
    expect(ev('recipients[1]', { recipients: ['a@x', 'b@y'] })).toEqual({ str: 'b@y' });
    expect(ev('rcpt[0]', { rcpt: 'abc' })).toEqual({ str: 'abc' });
    expect(ev('size * 2', { size: new Float(1.5) })).toEqual({ float: 3 });
  });

  it('runs flattened &&/|| chains with Stalwart results (left operand on short-circuit, else 0/1)', () => {
    expect(ev('$A || $B || $C', {}, ['B'])).toEqual({ int: 1 });
    expect(ev('$A || $B || $C', {}, [])).toEqual({ int: 0 });
    expect(ev('$A && $B && $C', {}, ['A', 'B', 'C'])).toEqual({ int: 1 });
    expect(ev('$A && $B && $C', {}, ['A', 'C'])).toEqual({ int: 0 });
    expect(ev('$A && $B && $C', {}, [])).toEqual({ int: 0 });
    expect(ev("'x' || $A || $B")).toEqual({ str: 'x' });
    expect(ev("0 || '' || 'y'")).toEqual({ int: 1 });
    expect(ev("'' && $A && 1", {}, ['A'])).toEqual({ str: '' });
    expect(ev("subject || 0 || 0", { subject: 'hi' })).toEqual({ str: 'hi' });
    expect(ev("subject && 'a' && ''", { subject: 'hi' })).toEqual({ int: 0 });
    expect(ev('!($A && $B) && ($A || $C)', {}, ['A'])).toEqual({ int: 1 });
  });

  it('folds constant subexpressions without sharing a returned array', () => {
    const c = compileExpression("[1, len('ab'), 2 * 3]");
    const a = c.evalSync(ctx()) as Value[];
    expect(encodeValue(a)).toEqual({ array: [{ int: 1 }, { int: 2 }, { int: 6 }] });
    a.push(7);
    expect((c.evalSync(ctx()) as Value[]).length).toBe(3);
    expect(ev("contains(['to', 'cc'], name_lower)", { name_lower: 'cc' })).toEqual({ int: 1 });
  });

  it('matches sets captures (group 0..n, "" for groups that did not take part) and clears them on failure', () => {
    expect(ev("matches('^([^.]+)@([^.]+)\\.(.+)$', rcpt) && $1 + '+' + $2 + '@' + $3", { rcpt: 'user@foo.example.org' })).toEqual({
      int: 1,
    });
    const c = compileExpression("matches('^(a)(x)?(b)$', value)");
    const caps: string[] = ['stale'];
    expect(c.evalSync(ctx({ value: 'ab' }), caps)).toBe(1);
    expect(caps).toEqual(['ab', 'a', '', 'b']);
    expect(c.evalSync(ctx({ value: 'zz' }), caps)).toBe(0);
    expect(caps).toEqual([]);
    expect(ev("matches('^1\\.0$', 2/2)")).toEqual({ int: 1 });
    expect(ev("matches('^1$', 2/2)")).toEqual({ int: 0 });
    expect(ev("matches('^a\\r\\nb$', ['a','b'])")).toEqual({ int: 1 });
  });

  it('calls functions with fixed arity', () => {
    expect(ev("len('é')")).toEqual({ int: 2 });
    expect(ev("len ('abc')")).toEqual({ int: 3 });
    expect(ev("!contains('abc','b')")).toEqual({ int: 0 });
    expect(ev("split('a,b', ',')[1]")).toEqual({ str: 'b' });
  });

  it('reads system() and metric() through the context', () => {
    const c = compileExpression("system('hostname') + ' ' + metric('queue.count')");
    const system = (n: string): Value => (n === 'hostname' ? 'mx.example.org' : n === 'metric:queue.count' ? 3 : '');
    expect(c.evalSync(ctx({}, [], { system }))).toBe('mx.example.org 3');
    expect(encodeValue(compileExpression("metric('queue.count')").evalSync(ctx()))).toEqual({ float: 0 });
    expect(compileExpression("system('node_id')").evalSync(ctx())).toBe('');
  });
});

describe('compiled expressions: sync and async closures', () => {
  it('compiles store calls to an async closure and evaluates left to right', async () => {
    const lookups = new LookupMap().set('sql', new MemoryStore('sql'));
    const src = "key_get('sql','hello') + '-' + key_exists('sql','hello') + '-' + key_set('sql','hello','world') + '-' + key_get('sql','hello')";
    const c = compileExpression(src);
    expect(c.isAsync).toBe(true);
    expect(() => c.evalSync(ctx())).toThrow(/evalAsync/);
    expect(await c.evalAsync(ctx({}, [], { lookups }))).toBe('-0-1-world');
    expect(await interpretExpression(src).evalAsync(ctx({}, [], { lookups: new LookupMap().set('sql', new MemoryStore('sql')) }))).toBe(
      '-0-1-world',
    );
  });

  it('short-circuits an async right operand', async () => {
    const lookups = new LookupMap().set('m', new MemoryStore('m'));
    const c = compileExpression("0 && key_set('m', 'k', 'v')");
    expect(await c.evalAsync(ctx({}, [], { lookups }))).toBe(0);
    expect(await lookups.get('m')!.keyGet('k')).toBe(null);
  });

  it('rejects with ExprEvalError when a store refuses', async () => {
    const lookups = new LookupMap().set('traps', new StaticLookupList('traps', ['a']));
    await expect(compileExpression("key_set('traps', 'a', 'b')").evalAsync(ctx({}, [], { lookups }))).rejects.toBeInstanceOf(
      ExprEvalError,
    );
  });

  it('returns plain values from evalMaybe when a store call is short-circuited away', async () => {
    const lookups = new LookupMap().set('m', new MemoryStore('m'));
    const c = compileExpression("$X && key_exists('m', from.domain)");
    expect(c.isAsync).toBe(true);
    expect(c.evalMaybe(ctx({}, [], { lookups }))).toBe(0);
    const p = c.evalMaybe(ctx({ 'from.domain': 'a' }, ['X'], { lookups }));
    expect(p).toBeInstanceOf(Promise);
    expect(await p).toBe(0);
    const { block } = compileIfBlock({ match: [{ if: "$X && key_exists('m', 'k')", then: "'T'" }], else: "'E'" });
    expect(block!.isAsync).toBe(true);
    expect((block as unknown as { evalMaybe(c: EvalContext): unknown }).evalMaybe(ctx({}, [], { lookups }))).toEqual({ value: 'E', branch: -1 });
    expect(await block!.evalAsync(ctx({}, ['X'], { lookups }))).toEqual({ value: 'E', branch: -1 });
    await lookups.get('m')!.keySet('k', '1');
    expect(await block!.evalAsync(ctx({}, ['X'], { lookups }))).toEqual({ value: 'T', branch: 0 });
  });

  it('keeps argument order across awaits (key_set before key_get)', async () => {
    const lookups = new LookupMap().set('m', new MemoryStore('m'));
    const c = compileExpression("[key_set('m', 'k', 'v'), key_get('m', 'k'), 1 + 1]");
    expect(encodeValue(await c.evalAsync(ctx({}, [], { lookups })))).toEqual({ array: [{ int: 1 }, { str: 'v' }, { int: 2 }] });
  });

  it('evalAsync of a sync expression resolves to the same value', async () => {
    expect(await compileExpression('1 + 1').evalAsync(ctx())).toBe(2);
  });
});

describe('compile errors name the problem and the position (D6)', () => {
  it.each([
    ['foo', 'unknown variable "foo" at 1:1'],
    ['1 +\n foo', 'unknown variable "foo" at 2:2'],
    ['Rcpt', 'unknown variable "Rcpt" at 1:1'],
    ['1e5', 'unknown variable "1e5" at 1:1'],
    ['5 d', 'missing operator before "d" at 1:3'],
    ['len', 'function "len" needs its arguments in parentheses at 1:1'],
    ['len(1, 2)', 'function "len" expects 1 argument, got 2 at 1:1'],
    ['len()', 'function "len" expects 1 argument, got 0 at 1:1'],
    ['foo(1)', 'unknown function "foo" at 1:1'],
    ['rcpt(1)', '"rcpt" is not a function (missing operator before "("?) at 1:5'],
    ["matches('x', rcpt, sender)", 'function "matches" expects 2 arguments, got 3 at 1:1'],
    ["matches ('x', rcpt)", 'no space allowed between "matches" and "(" at 1:1'],
    ['matches(rcpt, rcpt)', 'the first argument of "matches" must be a string literal at 1:9'],
    ["system('foo')", 'invalid system variable name "foo" at 1:8'],
    ["system('hostname', 1)", 'function "system" expects 1 argument, got 2 at 1:1'],
    ["metric('nope')", 'invalid metric name "nope" at 1:8'],
  ])('%j → %s', (src, msg) => {
    expect(parseError(src)).toBe(msg);
  });

  it('turns an invalid regex into a positioned parse error', () => {
    expect(parseError("1 + matches('(', rcpt)")).toMatch(/^invalid regular expression "\(": .* at 1:13$/);
  });

  it('accepts what Rust accepts, such as (a+)+, and refuses look-around and backreferences with their position', () => {
    expect(compileExpression("matches('^(a+)+$', rcpt)").evalSync(ctx({ rcpt: 'aaa' }))).toBe(1);
    expect(compileExpression("matches('(\\w+\\s?)*$', rcpt)").evalSync(ctx({ rcpt: 'ab cd' }))).toBe(1);
    expect(parseError("matches('a(?=b)', rcpt)")).toMatch(/^invalid regular expression "a\(\?=b\)": look-around .* at offset 1 in pattern at 1:9$/);
    expect(parseError("matches('(a)\\1', rcpt)")).toMatch(/^invalid regular expression .*backreferences are not supported.* at 1:9$/);
  });

  it('applies the allow-lists (empty list = all allowed)', () => {
    expect(parseError('sender', { allowedVariables: ['rcpt'] })).toBe('variable "sender" not allowed in this context at 1:1');
    expect(parseError('relaxed', { allowedConstants: ['strict'] })).toBe('constant "relaxed" not allowed in this context at 1:8'.replace('1:8', '1:1'));
    expect(compileExpression('sender', { allowedVariables: [] }).evalSync(ctx({ sender: 'a' }))).toBe('a');
    expect(compileExpression('relaxed', { allowedConstants: [] }).evalSync(ctx())).toBe(Constant.of('relaxed'));
  });

  it('carries the position object', () => {
    try {
      compileExpression('1 +\n\tfoo');
    } catch (e) {
      expect((e as ExprParseError).position).toEqual({ line: 2, column: 2, offset: 5 });
      return;
    }
    throw new Error('expected an error');
  });
});

describe('if-blocks (spec §5)', () => {
  it('returns the first truthy branch, else the else; with the branch index', () => {
    const { block, errors } = compileIfBlock({
      match: [
        { if: 'size > 10', then: "'BIG'" },
        { if: 'size > 5', then: "'MEDIUM'" },
      ],
      else: "'SMALL'",
    });
    expect(errors).toEqual([]);
    expect(block!.isAsync).toBe(false);
    expect(block!.evalSync(ctx({ size: 20 }))).toEqual({ value: 'BIG', branch: 0 });
    expect(block!.evalSync(ctx({ size: 7 }))).toEqual({ value: 'MEDIUM', branch: 1 });
    expect(block!.evalSync(ctx({ size: 1 }))).toEqual({ value: 'SMALL', branch: -1 });
  });

  it("accepts Stalwart's index-keyed match object, ordered by index", () => {
    const { block } = compileIfBlock({
      match: { '1': { if: '1', then: "'second'" }, '0': { if: 'value', then: "'first'" } },
      else: 'false',
    });
    expect(block!.evalSync(ctx({ value: 1 }))).toEqual({ value: 'first', branch: 0 });
    expect(block!.evalSync(ctx({ value: 0 }))).toEqual({ value: 'second', branch: 1 });
  });

  it('shares one capture buffer across the branches of one evaluation', () => {
    const { block } = compileIfBlock({
      match: [
        { if: "matches('^(a)(b)$', rcpt) && 0", then: "'never'" },
        { if: '1', then: '$2' },
      ],
      else: 'false',
    });
    expect(block!.evalSync(ctx({ rcpt: 'ab' }))).toEqual({ value: 'b', branch: 1 });
    expect(block!.evalSync(ctx({ rcpt: 'xx' }))).toEqual({ value: '', branch: 1 });
  });

  it('compiles the empty block, and reports missing else, empty if/then and branch errors with paths', () => {
    const empty = compileIfBlock({ match: [], else: '' });
    expect(empty.block!.isEmpty).toBe(true);
    expect(empty.block!.evalSync(ctx())).toBeUndefined();
    expect(compileIfBlock({ match: [{ if: '1', then: "'A'" }], else: '' }).errors.map((e) => e.path)).toEqual(['else']);
    expect(compileIfBlock({ match: [{ if: '', then: "'A'" }], else: 'false' }).errors.map((e) => e.path)).toEqual(['match/0/if']);
    expect(compileIfBlock({ match: [{ if: '1', then: ' ' }], else: 'false' }).errors.map((e) => e.path)).toEqual(['match/0/then']);
    const bad = compileIfBlock({ match: [{ if: '1', then: "'A'" }, { if: 'foo', then: "'B'" }], else: 'false' });
    expect(bad.block).toBeUndefined();
    expect(bad.errors).toEqual([
      {
        path: 'match/1/if',
        message: 'error in \'if\' expression of condition #2: unknown variable "foo" at 1:1',
        position: { line: 1, column: 1, offset: 0 },
      },
    ]);
    const elseFirst = compileIfBlock({ match: [{ if: 'foo', then: "'B'" }], else: 'bar' });
    expect(elseFirst.errors.map((e) => e.path)).toEqual(['else']);
    expect(compileIfBlock({ match: [{ if: '1', then: 'sender' }], else: 'false' }, { allowedVariables: ['rcpt'] }).errors[0]!.path).toBe(
      'match/0/then',
    );
  });

  it('evaluates async blocks and does not run later branches', async () => {
    const lookups = new LookupMap().set('m', new MemoryStore('m'));
    const { block } = compileIfBlock({
      match: [
        { if: "key_exists('m', 'k')", then: "'HAS'" },
        { if: '1', then: "key_set('m', 'k', 'v') + 0" },
      ],
      else: "key_set('m', 'else', 'x')",
    });
    expect(block!.isAsync).toBe(true);
    expect(() => block!.evalSync(ctx())).toThrow(/evalAsync/);
    expect(await block!.evalAsync(ctx({}, [], { lookups }))).toEqual({ value: 1, branch: 1 });
    expect(await block!.evalAsync(ctx({}, [], { lookups }))).toEqual({ value: 'HAS', branch: 0 });
    expect(await lookups.get('m')!.keyGet('else')).toBe(null);
  });
});
