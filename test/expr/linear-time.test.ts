/**
 * Regressions of the hostile-evaluation fuzz campaign (fuzz-hostile.test.ts): operations on
 * sender-controlled text that took time quadratic in it, or memory many times its size. Each case
 * is the campaign's input, sized so that the quadratic code took tens of seconds and the linear one
 * takes milliseconds; the time bound is far above the latter, for a shared machine.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { compileExpression, Float, interpretExpression, parseNumber, type EvalContext, type Value } from '../../src/expr/index.js';

const ctx = (vars: Record<string, Value>): EvalContext => ({ variable: (n) => vars[n] ?? '', global: () => 0 });

/** Evaluates with the compiler and the interpreter, asserting the time, and returns the value. */
function timed(src: string, vars: Record<string, Value>): Value {
  const t0 = performance.now();
  const v = compileExpression(src).evalSync(ctx(vars));
  expect(interpretExpression(src).evalSync(ctx(vars))).toEqual(v);
  expect(performance.now() - t0, src).toBeLessThan(2000);
  return v;
}

describe('numeric conversion of long digit runs (fuzz: body - \'a\' over "0"×190310 + …)', () => {
  // The f64 grammar's `[0-9]+\.?[0-9]*` let the digits split between two runs in n ways: 40,000
  // zeros and an `x` took 0.9 s, the campaign's 190,310 took 52 s.
  const digits = '0'.repeat(400_000) + 'x';

  it('parse_number rejects digits followed by a letter in linear time', () => {
    expect(timed("body - 'a'", { body: digits })).toBe(0);
    expect(timed('value > 5', { value: digits })).toBe(0);
    expect(timed('value == 0', { value: digits })).toBe(1); // a non-number parses as 0 (§2.4)
    expect(timed('-value', { value: '1'.repeat(400_000) + '.5e' })).toBe(0);
  });

  it('integer and index conversion of millions of digits do not hand them all to BigInt', () => {
    // BigInt's parse is superlinear: 4 Mi nines compared with a number took 2.4 s, as an index 2 s.
    const nines = '9'.repeat(1 << 22);
    expect(timed('value > 5', { value: nines })).toBe(1); // out of i64: an f64, +inf
    expect(timed('[1, 2][value]', { value: nines })).toBe(1); // out of usize: a failed parse is index 0 (§2.9)
    expect(timed('[1, 2][value]', { value: '0'.repeat(1 << 22) + '1' })).toBe(2);
    expect(timed('value == 7', { value: '+' + '0'.repeat(1 << 22) + '7' })).toBe(1);
    expect(parseNumber('-' + '0'.repeat(30) + '9223372036854775808')).toBe(-9223372036854775808);
    expect(parseNumber('0'.repeat(30) + '9223372036854775808')).toEqual(new Float(9223372036854775808));
  });

  it('keeps the f64 grammar: optional fraction, fraction alone, exponent, inf/nan', () => {
    const f = (s: string): unknown => {
      const n = parseNumber(s);
      return n instanceof Float ? n.value : n === 0 && s !== '0' ? 'int 0' : n;
    };
    expect(f('5.')).toBe(5);
    expect(f('.5')).toBe(0.5);
    expect(f('1.5e3')).toBe(1500);
    expect(f('1e3')).toBe(1000);
    expect(f('+1.5')).toBe(1.5);
    expect(f('-.5E-1')).toBe(-0.05);
    expect(f('Infinity')).toBe(Infinity);
    expect(f('NaN')).toBeNaN();
    expect(f('.')).toBe('int 0');
    expect(f('1.2.3')).toBe('int 0');
    expect(f('1e')).toBe('int 0');
    expect(f('e5')).toBe('int 0');
    expect(f('0'.repeat(100_000) + '1.25')).toBe(1.25);
  });
});

describe('searching a long separator from the right (fuzz: rsplit(body, subject) over "\\n"×353495)', () => {
  // V8's lastIndexOf compares backwards naively, in time text × separator: the campaign's subject (the
  // body's first half and a "!") took 18 s; rsplit and rsplit_once now search the mirrored text forwards.
  const body = '\n'.repeat(353_495);
  const subject = body.slice(0, body.length >> 1) + '!';

  it('rsplit and rsplit_once take linear time', () => {
    expect(timed('rsplit(body, subject)', { body, subject })).toEqual([body]);
    expect(timed('rsplit_once(body, subject)', { body, subject })).toBe('');
    const hit = body + '!' + body;
    expect(timed('count(rsplit(body, subject))', { body: hit, subject: body + '!' })).toBe(2);
    expect(timed('rsplit_once(body, subject)[0] == value', { body: hit, subject, value: body.slice(subject.length - 1) })).toBe(1);
  });

  it('keeps the parts and their order: rightmost match first, overlapping separators as Rust', () => {
    const f = (s: string, sep: string): Value => timed('rsplit(body, subject)', { body: s, subject: sep });
    expect(f('aaa', 'aa')).toEqual(['', 'a']);
    expect(f('aaaa', 'aa')).toEqual(['', '', '']);
    expect(f('a..b...c', '..')).toEqual(['c', 'b.', 'a']);
    expect(f('x😀y😀', '😀')).toEqual(['', 'y', 'x']); // a surrogate pair is a two-unit separator
    expect(f('ab😀cd😀', 'd😀')).toEqual(['', 'ab😀c']);
    expect(timed('rsplit_once(body, subject)', { body: 'a=>b=>c', subject: '=>' })).toEqual(['a=>b', 'c']);
    expect(timed('rsplit_once(body, subject)', { body: 'aaa', subject: 'aa' })).toEqual(['a', '']);
  });
});

describe('counting functions over a text at the size limit (count_spaces of 16 Mi spaces)', () => {
  it('count in bounded memory: a 100 MB heap is enough for a 16 Mi-character text', async () => {
    // `match` over the whole text built an array of every match (8 bytes each) and ran out of this heap.
    const script = `
      import { compileExpression } from './src/expr/index.ts';
      let body = ' '.repeat(1 << 20);
      for (let i = 0; i < 4; i++) body = body + body;
      const ctx = { variable: () => body, global: () => 0 };
      console.log(JSON.stringify(['count_spaces(body)', 'count_lowercase(body)'].map((s) => compileExpression(s).evalSync(ctx))));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=100', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
    });
    expect(JSON.parse(stdout)).toEqual([16 * 1024 * 1024, 0]);
  }, 60_000);

  it('counts a code point across the chunk boundary once, whole', () => {
    // U+1D400 (Alphabetic, Uppercase) is a surrogate pair; put one across every boundary near 65,536.
    for (const at of [65_534, 65_535, 65_536, 131_071]) {
      const body = 'a'.repeat(at) + '\u{1d400}' + 'B\u3000';
      expect(timed('count_uppercase(body)', { body })).toBe(2);
      expect(timed('count_lowercase(body)', { body })).toBe(at);
      expect(timed('count_spaces(body)', { body })).toBe(1);
    }
  });
});

describe('IP parsing of a huge non-address (is_ip_addr of "a:" × 8 Mi)', () => {
  it('refuses it in bounded memory: a 100 MB heap is enough', async () => {
    // The IPv6 reader split the whole text at every `:` (and kept a number per group) before seeing
    // that there were far more than 8 groups: 16 Mi characters ran out of this heap.
    const script = `
      import { compileExpression } from './src/expr/index.ts';
      let body = 'a:'.repeat(1 << 19);
      for (let i = 0; i < 4; i++) body = body + body;
      const ctx = { variable: () => body, global: () => 0 };
      const srcs = ['is_ip_addr(body)', 'is_ipv6_addr(body)', 'ip_reverse_name(body)', "is_ip_in_cidr('::1', body + '::/64')"];
      console.log(JSON.stringify(srcs.map((s) => compileExpression(s).evalSync(ctx))));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=100', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: process.cwd(),
    });
    expect(JSON.parse(stdout)).toEqual([0, 0, '', 0]);
  }, 60_000);

  it('still accepts the longest address text (45 characters) and refuses one character more', () => {
    const longest = '0000:0000:0000:0000:0000:0000:255.255.255.255';
    expect(longest).toHaveLength(45);
    expect(timed('is_ipv6_addr(value)', { value: longest })).toBe(1);
    expect(timed('ip_reverse_name(value)', { value: longest })).toBe(`f.f.f.f.f.f.f.f.${'0.'.repeat(23)}0`); // by nibbles
    expect(timed('is_ipv6_addr(value)', { value: longest + '5' })).toBe(0);
    expect(timed('is_ipv6_addr(value)', { value: '0' + longest })).toBe(0);
    expect(timed("is_ip_in_cidr(value, '::ffff:0:0/96')", { value: '0000:0000:0000:0000:0000:ffff:10.0.0.1' })).toBe(1);
  });
});
