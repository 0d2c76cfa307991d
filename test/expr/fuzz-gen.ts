/**
 * fast-check arbitraries for the expression-language fuzz tests (fuzz*.test.ts): valid expression
 * sources built from the grammar (docs/expression-language.md), variable contexts to evaluate them
 * in, and the token soup of the parser robustness property.
 *
 * An expression is generated as {@link Gen}: its source written twice, once with the fewest
 * parentheses the precedence table allows (`m`) and once with every operation parenthesised (`f`),
 * so a property can check that the parser applies precedence and associativity as documented.
 */
import fc from 'fast-check';
import { LookupMap, MemoryStore, StaticLookupList } from '../../src/lookup/index.js';
import { Constant, Float, type EvalContext, type Value } from '../../src/expr/index.js';

/** A generated expression: minimal source, fully parenthesised source, precedence, indexable. */
export interface Gen {
  /** Source with the fewest parentheses: relies on precedence and left associativity. */
  m: string;
  /** The same expression with every unary and binary operation in parentheses. */
  f: string;
  /** 10 atom/postfix, 8 unary, 1–7 binary (spec §1.6). */
  p: number;
  /** Whether `[i]` may follow directly (a variable, a call, an array, an index or parentheses). */
  idx: boolean;
}

const atom = (s: string, idx = false): Gen => ({ m: s, f: s, p: 10, idx });

const PRECEDENCE: Record<string, number> = {
  '||': 1, '&&': 2, '^': 3, '==': 4, '!=': 4, '<': 5, '<=': 5, '>': 5, '>=': 5, '+': 6, '-': 6, '*': 7, '/': 7,
};
/** Spellings of the binary operators: `&`, `|` and `=` are aliases (D2). */
const OP_SPELLING: Record<string, string[]> = { '&&': ['&&', '&'], '||': ['||', '|'], '==': ['==', '='] };

function binary(op: string, l: Gen, r: Gen, spelling = op): Gen {
  const p = PRECEDENCE[op]!;
  const lm = l.p < p ? `(${l.m})` : l.m;
  const rm = r.p <= p ? `(${r.m})` : r.m; // left-associative: an equal right operand needs parentheses
  return { m: `${lm} ${spelling} ${rm}`, f: `(${l.f} ${spelling} ${r.f})`, p, idx: false };
}

function unary(op: '!' | '-', e: Gen): Gen {
  const m = e.p < 8 ? `(${e.m})` : e.m;
  // `- -1` and `--1` lex the same; a space sometimes, to exercise both.
  return { m: `${op}${m}`, f: `(${op}${e.f})`, p: 8, idx: false };
}

function call(name: string, args: Gen[]): Gen {
  return { m: `${name}(${args.map((a) => a.m).join(', ')})`, f: `${name}(${args.map((a) => a.f).join(', ')})`, p: 10, idx: true };
}

function array(items: Gen[]): Gen {
  return { m: `[${items.map((a) => a.m).join(', ')}]`, f: `[${items.map((a) => a.f).join(', ')}]`, p: 10, idx: true };
}

function paren(e: Gen): Gen {
  return { m: `(${e.m})`, f: `(${e.f})`, p: 10, idx: true };
}

function index(t: Gen, i: Gen): Gen {
  const tt = t.idx ? t : paren(t);
  return { m: `${tt.m}[${i.m}]`, f: `${tt.f}[${i.f}]`, p: 10, idx: true };
}

/** String variables of the generated contexts (their values may be of any type, though). */
export const STR_VARS = ['subject', 'from', 'name_lower', 'value', 'body.text', 'sender', 'remote_ip', 'from.domain'];
/** Array variables. */
export const ARR_VARS = ['recipients', 'body.words', 'subject.words', 'headers'];
/** Number variables. */
export const NUM_VARS = ['size', 'priority', 'port', 'is_tls'];
export const ALL_VARS = [...STR_VARS, ...ARR_VARS, ...NUM_VARS];
export const TAGS = ['SPF_FAIL', 'DKIM_ALLOW', 'X', 'BULK'];

/** Characters strings are made of: ASCII letters of both cases, digits, separators, specials. */
const TEXT_CHARS = [
  'a', 'b', 'c', 'A', 'B', 'x', 'é', 'É', 'ß', 'İ', '😀', 'к', '0', '1', '9', '.', ',', ' ', '\t', '\n', '\r', '@', '-',
  '+', 'e', '_', "'", '"', '\\', '/', ':', 'ǅ', '\u00a0', '\u0085', '\u200b', 'K', '\u212a',
];
const textChar = fc.constantFrom(...TEXT_CHARS);
/** Strings that mean something to a conversion: numbers, addresses, IPs, hash names, `''`. */
const SPECIAL_TEXT = [
  '', '0', '1', '10', '-1', '+5', ' 1', '1.0', '1.5', '.5', '5.', '1e3', 'nan', 'NaN', 'inf', '-inf', 'infinity', '9223372036854775807',
  '9223372036854775808', '-9223372036854775808', '0x10', 'abc', 'a@b.c', 'user@example.com', 'x@[1.2.3.4]', '1.2.3.4', '10.0.0.1',
  '::1', '2001:db8::1', '10.0.0.0/8', '2001:db8::/32', 'md5', 'sha1', 'sha256', 'sha512', 'local', 'domain', 'a.b.c', 'a,b,,c',
  'Hello World', 'UPPER', 'lower', 'a\r\nb', 'a\nb\n', '  padded  ', 'relaxed',
];
/** A small vocabulary, so that needles, set members and variable values often coincide (or differ by case). */
const VOCABULARY = ['a', 'A', 'ab', 'AB', '1', '01', 'x@y.z', 'X@Y.Z', ''];
export const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...VOCABULARY) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_TEXT) },
  { weight: 3, arbitrary: fc.array(textChar, { maxLength: 8 }).map((a) => a.join('')) },
);

/** A string literal for `s`, with D1 escapes (`\\`, `\'`, `\n`…) or kept backslashes. */
export function strLit(s: string, dq = false): string {
  const q = dq ? '"' : "'";
  let out = q;
  for (const c of s) {
    if (c === '\\') out += '\\\\';
    else if (c === q) out += '\\' + q;
    else if (c === '\n') out += '\\n';
    else out += c;
  }
  return out + q;
}

const strLiteral: fc.Arbitrary<Gen> = fc.tuple(text, fc.boolean()).map(([s, dq]) => atom(strLit(s, dq)));
const intLiteral: fc.Arbitrary<Gen> = fc.oneof(
  fc.integer({ min: 0, max: 20 }).map((n) => atom(String(n))),
  fc.constantFrom('true', 'false', '007', '5d', '2h', '1m', '3s', '100ms', '9223372036854775807', '4294967296', '9007199254740993').map((s) => atom(s)),
  fc.bigInt({ min: 0n, max: 9223372036854775807n }).map((n) => atom(String(n))),
);
const floatLiteral: fc.Arbitrary<Gen> = fc.oneof(
  fc.constantFrom('1.5', '.5', '5.', '0.0', '2.0', '0.1', '100000000000000000000.0', '0.00000015', '3.').map((s) => atom(s)),
  fc.tuple(fc.nat(1000), fc.nat(999)).map(([a, b]) => atom(`${a}.${b}`)),
);
const constName = fc.constantFrom(...Constant.NAMES.slice(0, 6)).map((s) => atom(s));
const capture = fc.constantFrom('$0', '$1', '$2', '$9').map((s) => atom(s));
const global = fc.constantFrom(...TAGS, 'UNSET').map((s) => atom('$' + s));
const strVar = fc.constantFrom(...STR_VARS).map((s) => atom(s, true));
const arrVar = fc.constantFrom(...ARR_VARS).map((s) => atom(s, true));
const numVar = fc.constantFrom(...NUM_VARS).map((s) => atom(s, true));

/**
 * Small patterns that are cheap on any subject (cost well under the limit) but exercise groups,
 * classes, alternation, anchors, flags, boundaries and empty matches.
 */
export const SAFE_PATTERNS = [
  '^a', 'b$', '(\\w+)@(\\w+)', '(?i)hello', '\\d+', '^$', '(a|b)*c', '[a-z]+\\.com$', '\\bfoo\\b', '(?m)^x', '.', '(a*)',
  '^(.*?)\\.(.*)$', '[^a-z]', '\\s', '(?i)(cheap|credit|casino)', '(?-u)\\w+', '\\p{Lu}', 'é', '^\\S+@\\S+$', '(x)?(y)?',
  '[0-9]{1,3}\\.[0-9]{1,3}', '(?s).+', '\\B', 'a{2,}', '(?U)a+', '\\$', '(?P<user>[^@]+)@',
];
const pattern = fc.constantFrom(...SAFE_PATTERNS);

type Arb = fc.Arbitrary<Gen>;
const pick = <T>(...xs: T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);

/** Sync functions by the type of their result, with plausible argument generators. */
function calls(n: number, s: (n: number) => Arb, x: (n: number) => Arb, a: (n: number) => Arb, any: (n: number) => Arb) {
  const c = (name: string, ...args: Arb[]): Arb => fc.tuple(...args).map((g) => call(name, g));
  const lit = (...xs: string[]): Arb => pick(...xs).map((v) => atom(strLit(v)));
  const sa = (): Arb => fc.oneof(s(n), a(n));
  const str: Arb[] = [
    c('trim', sa()), c('trim_start', s(n)), c('trim_end', s(n)), c('to_lowercase', sa()), c('to_uppercase', s(n)),
    c('substring', s(n), x(n), x(n)), c('strip_prefix', sa(), fc.oneof(strLiteral, s(n))), c('strip_suffix', s(n), strLiteral),
    c('email_part', sa(), lit('local', 'domain', 'other')), c('ip_reverse_name', s(n)), c('hash', s(n), lit('md5', 'sha1', 'sha256', 'sha512', 'crc')),
    c('if_then', any(n), s(n), s(n)),
  ];
  const num: Arb[] = [
    c('len', any(n)), c('count', any(n)), c('is_empty', any(n)), c('is_number', any(n)), c('has_digits', s(n)),
    c('is_uppercase', s(n)), c('is_lowercase', s(n)), c('count_spaces', s(n)), c('count_uppercase', s(n)), c('count_lowercase', s(n)),
    c('count_chars', s(n)), c('contains', fc.oneof(s(n), a(n)), fc.oneof(strLiteral, s(n), x(n))),
    c('contains', a(n), fc.oneof(strVar, numVar, s(n))), c('contains_ignore_case', fc.oneof(s(n), a(n)), fc.oneof(strLiteral, s(n))),
    c('eq_ignore_case', s(n), s(n)), c('starts_with', fc.oneof(s(n), a(n)), fc.oneof(strLiteral, s(n))),
    c('ends_with', s(n), fc.oneof(strLiteral, s(n))), c('is_email', s(n)), c('is_ip_addr', s(n)), c('is_ipv4_addr', s(n)),
    c('is_ipv6_addr', s(n)), c('is_ip_in_cidr', s(n), fc.oneof(lit('10.0.0.0/8', '2001:db8::/32', '0.0.0.0/0', '1.2.3.4/33'), s(n))),
    c('is_intersect', a(n), fc.oneof(a(n), s(n))),
    fc.tuple(pattern, s(n)).map(([p, v]) => call('matches', [atom(strLit(p)), v])),
  ];
  const arr: Arb[] = [
    c('split', s(n), fc.oneof(lit(',', '.', '', ' ', 'aa', '\r\n'), s(n))), c('rsplit', s(n), lit(',', '.', '', 'aa')),
    c('split_once', s(n), lit(',', '@', '')), c('rsplit_once', s(n), lit('.', '@')), c('split_n', s(n), lit(',', '.', ''), x(n)),
    c('split_words', s(n)), c('lines', s(n)), c('sort', fc.oneof(a(n), s(n)), x(n)), c('dedup', a(n)), c('winnow', any(n)),
  ];
  return { str, num, arr };
}

/** Async calls (stores, directory): read-only and writing, evaluated in order. */
function asyncCalls(n: number, s: (n: number) => Arb, x: (n: number) => Arb): Arb[] {
  const c = (name: string, ...args: Arb[]): Arb => fc.tuple(...args).map((g) => call(name, g));
  const ns = (...xs: string[]): Arb => pick(...xs).map((v) => atom(strLit(v)));
  return [
    c('key_exists', ns('trusted', 'kv', 'nope'), s(n)), c('key_get', ns('kv', 'trusted', 'nope'), s(n)),
    c('key_set', ns('kv'), s(n), s(n)), c('counter_get', ns('kv'), s(n)), c('counter_incr', ns('kv'), s(n), x(n)),
    c('is_local_domain', s(n)), c('is_local_address', s(n)),
  ];
}

export interface ExprArbs {
  any: (n: number) => Arb;
  str: (n: number) => Arb;
  num: (n: number) => Arb;
  arr: (n: number) => Arb;
}

/**
 * Expression arbitraries of depth at most `n`, typed by their usual result (a hint for plausible
 * arguments; every function is total, so any value is valid anywhere). `withAsync` adds store and
 * directory calls.
 */
export function exprArbs(withAsync: boolean): ExprArbs {
  const arbs: ExprArbs = {
    any: fc.memo((n) => (n <= 0 ? anyLeaf : fc.oneof(arbs.str(n), arbs.num(n), arbs.arr(n), misc(n)))),
    str: fc.memo((n) => {
      if (n <= 0) return fc.oneof(strLiteral, strVar);
      const k = calls(n - 1, arbs.str, arbs.num, arbs.arr, arbs.any);
      return fc.oneof(
        { weight: 4, arbitrary: fc.oneof(strLiteral, strVar, capture) },
        { weight: 3, arbitrary: fc.oneof(...k.str) },
        { weight: 1, arbitrary: fc.tuple(arbs.str(n - 1), arbs.any(n - 1)).map(([l, r]) => binary('+', l, r)) },
        { weight: 1, arbitrary: fc.tuple(arbs.arr(n - 1), arbs.num(n - 1)).map(([t, i]) => index(t, i)) },
        { weight: 1, arbitrary: fc.tuple(strVar, fc.constantFrom('0', '1', '5', "'1'", '1.9', '-1')).map(([t, i]) => index(t, atom(i))) },
        { weight: 1, arbitrary: pick('hostname', 'domain', 'node_id').map((v) => call('system', [atom(strLit(v))])) },
        ...(withAsync ? [{ weight: 1, arbitrary: fc.oneof(...asyncCalls(n - 1, arbs.str, arbs.num)) }] : []),
      );
    }),
    num: fc.memo((n) => {
      if (n <= 0) return fc.oneof(intLiteral, floatLiteral, numVar, global);
      const k = calls(n - 1, arbs.str, arbs.num, arbs.arr, arbs.any);
      const ops = Object.keys(PRECEDENCE);
      return fc.oneof(
        { weight: 3, arbitrary: fc.oneof(intLiteral, floatLiteral, numVar, global) },
        { weight: 3, arbitrary: fc.oneof(...k.num) },
        {
          weight: 4,
          arbitrary: fc
            .tuple(pick(...ops), arbs.any(n - 1), arbs.any(n - 1), fc.nat(1))
            .map(([op, l, r, sp]) => binary(op, l, r, OP_SPELLING[op]?.[sp] ?? op)),
        },
        { weight: 2, arbitrary: fc.tuple(pick<'!' | '-'>('!', '-'), arbs.any(n - 1)).map(([op, e]) => unary(op, e)) },
        { weight: 1, arbitrary: pick('queue.count', 'server.memory').map((v) => call('metric', [atom(strLit(v))])) },
      );
    }),
    arr: fc.memo((n) => {
      if (n <= 0) return fc.oneof(arrVar, fc.constant(array([])));
      const k = calls(n - 1, arbs.str, arbs.num, arbs.arr, arbs.any);
      return fc.oneof(
        { weight: 3, arbitrary: fc.oneof(arrVar, fc.array(arbs.any(n - 1), { maxLength: 4 }).map(array)) },
        { weight: 3, arbitrary: fc.oneof(...k.arr) },
        { weight: 1, arbitrary: fc.tuple(arbs.arr(n - 1), arbs.any(n - 1)).map(([l, r]) => binary('+', l, r)) },
        { weight: 1, arbitrary: fc.tuple(arbs.any(n - 1), arbs.arr(n - 1)).map(([l, r]) => binary('+', l, r)) },
        { weight: 1, arbitrary: fc.tuple(arbs.arr(n - 1), arbs.any(n - 1)).map(([l, r]) => binary('-', l, r)) },
      );
    }),
  };
  const anyLeaf = fc.oneof(strLiteral, intLiteral, floatLiteral, strVar, arrVar, numVar, constName, global, capture, fc.constant(atom('()')));
  const misc = (n: number): Arb =>
    fc.oneof(
      constName,
      fc.constant(atom('()')),
      arbs.any(n - 1).map(paren),
      fc.tuple(pick<'&&' | '||'>('&&', '||'), fc.array(arbs.any(n - 1), { minLength: 2, maxLength: 5 })).map(([op, xs]) =>
        xs.slice(1).reduce((acc, x) => binary(op, acc, x), xs[0]!),
      ),
      // Equality runs over one variable: the optimizer's `contains([...], x)` rewrite.
      fc.tuple(strVar, fc.array(strLiteral, { minLength: 2, maxLength: 4 })).map(([v, ls]) =>
        ls.slice(1).reduce((acc, l) => binary('||', acc, binary('==', v, l)), binary('==', v, ls[0]!)),
      ),
    );
  return arbs;
}

/** Any expression value: Strings (often numeric), Integers, Floats (NaN, ±0, ±inf), Arrays, Constants. */
export const valueArb: fc.Arbitrary<Value> = fc.letrec<{ v: Value }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: text },
    { weight: 2, arbitrary: fc.oneof(fc.integer({ min: -5, max: 20 }), fc.constantFrom(9223372036854775807, -9223372036854775808)) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(fc.double({ noDefaultInfinity: false }), fc.constantFrom(0, -0, NaN, Infinity, 1.5, 2))
        .map((x) => new Float(x)),
    },
    { weight: 2, arbitrary: fc.array(tie('v'), { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.constantFrom(...Constant.NAMES.slice(0, 4)).map((c) => Constant.of(c)!) },
  ),
})).v;

/** Values of the variables of one evaluation: mostly the usual type for each, sometimes any. */
export const varsArb: fc.Arbitrary<Record<string, Value>> = fc.record(
  Object.fromEntries([
    ...STR_VARS.map((v) => [v, fc.oneof({ weight: 4, arbitrary: text }, { weight: 1, arbitrary: valueArb })] as const),
    ...ARR_VARS.map((v) => [v, fc.oneof({ weight: 4, arbitrary: fc.array(text, { maxLength: 6 }) }, { weight: 1, arbitrary: valueArb })] as const),
    ...NUM_VARS.map((v) => [v, fc.oneof({ weight: 4, arbitrary: fc.integer({ min: -3, max: 100 }) }, { weight: 1, arbitrary: valueArb })] as const),
  ]),
);

/** The tags set on the message. */
export const tagsArb: fc.Arbitrary<string[]> = fc.subarray(TAGS);

export interface Scenario {
  vars: Record<string, Value>;
  tags: string[];
}

/** A memory store that records every operation, so the engines' side effects can be compared. */
class LoggingStore extends MemoryStore {
  constructor(
    namespace: string,
    readonly log: string[],
  ) {
    super(namespace);
  }
  override keyGet(key: string): Promise<string | null> {
    this.log.push(`get ${key}`);
    return super.keyGet(key);
  }
  override keySet(key: string, value: string, ttlMs?: number): Promise<void> {
    this.log.push(`set ${key}=${value}`);
    return super.keySet(key, value, ttlMs);
  }
  override counterGet(key: string): Promise<number> {
    this.log.push(`counter ${key}`);
    return super.counterGet(key);
  }
  override counterIncr(key: string, by: number): Promise<number> {
    this.log.push(`incr ${key} ${by}`);
    return super.counterIncr(key, by);
  }
}

/** An evaluation context plus the log of the store and directory calls made through it. */
export type LoggedContext = EvalContext & { log: string[] };

/**
 * A fresh evaluation context for a scenario: every evaluation gets its own stores, so a `key_set`
 * of one engine cannot be seen by the other; `log` lists the store and directory calls in order.
 */
export function contextFor(sc: Scenario): LoggedContext {
  const log: string[] = [];
  const lookups = new LookupMap()
    .set('trusted', new StaticLookupList('trusted', ['example.com', 'a', 'user@example.com', '1']))
    .set('kv', new LoggingStore('kv', log));
  return {
    log,
    variable: (n) => sc.vars[n] ?? '',
    global: (n) => (sc.tags.includes(n) ? 1 : 0),
    lookups,
    system: (n) => (n === 'hostname' ? 'mx.example.com' : n === 'metric:queue.count' ? 3 : n === 'domain' ? 'example.com' : undefined) as Value,
    isLocalDomain: (d) => {
      log.push(`domain ${d}`);
      return d === 'example.com';
    },
    isLocalAddress: (a) => {
      log.push(`address ${a}`);
      return a === 'user@example.com';
    },
  };
}
