/**
 * Limits found by the expression fuzz campaign: nesting (F1), value sizes and constant folding
 * (F2), regex program cost (F3), linear dedup/is_intersect (F4), usize overflow (F5), indexing a
 * constant (F7), shared folded arrays (F8), U+FEFF as an else (if-blocks).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { compileRuleSet } from '../../src/engine/rules.js';
import {
  compileExpression, compileIfBlock, Constant, ExprEvalError, ExprParseError, Float, FUNCTIONS, interpretExpression,
  looseEq, MAX_ARRAY_ELEMENTS, MAX_NESTING, MAX_VALUE_CHARS, type EvalContext, type Value,
} from '../../src/expr/index.js';
import { stackSafe } from '../../src/expr/nesting.js';
import { compileRustRegex, MAX_PROGRAM_COST, RegexError } from '../../src/expr/regex.js';
import { prng } from '../../src/util/index.js';

const ctx = (vars: Record<string, Value> = {}): EvalContext => ({ variable: (n) => vars[n] ?? '', global: () => 0 });

/** [open, close, nesting units per repetition]; the operand goes in the middle. */
const CONSTRUCTS: [string, string, number][] = [
  ['len(', ')', 1], ['[', ']', 1], ['(', ')', 1], ['-', '', 1], ['!', '', 1], ['to[', ']', 1], ['1+(', ')', 1],
  ['[1,', ']', 1], ['len(1+', ')', 1], ['if_then(1,2,', ')', 1], ["matches('a',", ')', 1], ['if_then(', ',1,2)', 1],
  ['-[', ']', 2], ['!len(', ')', 2], ['[-', ']', 2], ['len(-', ')', 2], ['if_then(1,2,-', ')', 2],
  ["matches('a',-", ')', 2], ['!(', ')', 2], ['len(1*-', ')', 2], ['-!-[', ']', 4],
];
const nest = (open: string, close: string, n: number): string => open.repeat(n) + '1' + close.repeat(n);

describe('F1: nesting limit', () => {
  it('is 64 levels, counted cumulatively over brackets and open unary operators', () => {
    expect(MAX_NESTING).toBe(64);
  });
  for (const [open, close, units] of CONSTRUCTS) {
    const n = Math.floor(MAX_NESTING / units);
    it(`accepts ${open}…${close} at the limit (${n}) and refuses it one deeper`, () => {
      expect(() => compileExpression(nest(open, close, n))).not.toThrow();
      expect(() => interpretExpression(nest(open, close, n))).not.toThrow();
      expect(() => compileExpression(nest(open, close, n + 1))).toThrow(ExprParseError);
      expect(() => compileExpression(nest(open, close, n + 1))).toThrow(/^expression nested too deeply \(more than 64 levels\) at 1:\d+$/);
    });
  }
  it('does not count binary minus or operands at one level as nesting', () => {
    expect(compileExpression(Array.from({ length: 500 }, () => '-1').join(' - ')).evalSync(ctx())).toBe(-1 + 499);
    expect(() => compileExpression('len(' + 'subject - 1 - '.repeat(200) + '1)')).not.toThrow();
    // A unary run ends at a comma or binary operator: 64 of these are each one level deep.
    expect(() => compileExpression('[' + Array.from({ length: 200 }, () => '-!-1').join(', ') + ']')).not.toThrow();
  });
  it('holds every construct at the limit in a fresh process (where the stack is cold)', async () => {
    // Each process compiles first one of the constructs that used the most stack per level before
    // the limit (the first compilation of a process runs unoptimised code, with the largest frames),
    // then all the others.
    const run = promisify(execFile);
    const script = `
      import { compileExpression, compileIfBlock } from './src/expr/index.ts';
      const out = [];
      for (const [open, close, n] of JSON.parse(process.argv[1])) {
        const src = open.repeat(n) + '1' + close.repeat(n);
        try {
          const r = compileIfBlock({ match: [{ if: src, then: "'T'" }], else: src });
          compileExpression(src).evalSync({ variable: () => '', global: () => 0 });
          out.push(r.errors.length === 0 ? 'ok' : JSON.stringify(r.errors));
        } catch (e) {
          out.push(String(e));
        }
      }
      console.log(JSON.stringify(out));`;
    const all = CONSTRUCTS.map(([open, close, units]) => [open, close, Math.floor(MAX_NESTING / units)]);
    const firsts = ['len(1+', 'if_then(1,2,-', 'len(1*-', '!len(', "matches('a',-"];
    const results = await Promise.all(
      firsts.map(async (first) => {
        const order = [...all.filter((c) => c[0] === first), ...all.filter((c) => c[0] !== first)];
        const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(order)], { cwd: process.cwd() });
        return JSON.parse(stdout) as string[];
      }),
    );
    for (const r of results) expect(r).toEqual(all.map(() => 'ok'));
  }, 60_000);
  it('turns a stack overflow into a parse error (the safety net behind the limit)', () => {
    const endless = (n: number): number => endless(n + 1) + 1;
    expect(() => stackSafe(() => endless(0))).toThrow(ExprParseError);
    expect(() => stackSafe(() => endless(0))).toThrow('expression nested too deeply (out of stack)');
    expect(() => stackSafe(() => { throw new RangeError('Invalid array length'); })).toThrow(RangeError);
  });
  it('loads the other rules of a rule set when one is nested too deeply', () => {
    for (const n of [65, 220, 300]) {
      const deep = 'len('.repeat(n) + 'subject' + ')'.repeat(n) + ' > 0';
      const rules = [
        { '@type': 'Any', name: 'OK_RULE', priority: 1, enable: true, condition: { match: [{ if: "contains(subject, 'x')", then: "'OK'" }], else: 'false' } },
        { '@type': 'Any', name: 'DEEP_RULE', priority: 2, enable: true, condition: { match: [{ if: deep, then: "'DEEP'" }], else: 'false' } },
      ];
      const { report } = compileRuleSet(rules as never);
      expect(report.loaded).toBe(1);
      expect(report.errors).toHaveLength(1);
      expect(report.errors[0]!.rule).toBe('DEEP_RULE');
      expect(report.errors[0]!.message).toMatch(/nested too deeply/);
    }
  });
});

describe('F2: value sizes', () => {
  const splits = (inner: string, d: number): string => 'split('.repeat(d) + inner + ", '')".repeat(d);
  it('keeps a small constant folded', () => {
    expect(compileExpression(splits("'ab'", 2)).constant).toBeUndefined(); // an array: copied per call
    expect(compileExpression("len(split('ab', ''))").constant).toEqual({ value: 4 });
  });
  it('does not fold a constant that grows past the fold budget, and fails its evaluation at the run-time limit', () => {
    const c = compileExpression(splits("'ab'", 30)); // 3× per level: ~10^14 characters unlimited
    expect(c.constant).toBeUndefined();
    expect(() => c.evalSync(ctx())).toThrow(ExprEvalError);
    expect(() => c.evalSync(ctx())).toThrow(/^value too large: an array of \d+ elements \(limit 1048576\)$/);
  });
  it('fails an evaluation on sender data that grows past the limits', () => {
    const c = compileExpression(splits('subject', 30));
    expect(() => c.evalSync(ctx({ subject: 'ab' }))).toThrow(/^value too large/);
    const three = splits('subject', 3);
    expect(compileExpression(three).evalSync(ctx({ subject: 'ab' }))).toEqual(interpretExpression(three).evalSync(ctx({ subject: 'ab' })));
  });
  it('caps strings built by + and by joining arrays', () => {
    const half = 'x'.repeat(MAX_VALUE_CHARS / 2 + 1);
    expect(() => compileExpression('body + body').evalSync(ctx({ body: half }))).toThrow(/^value too large: a string of \d+ characters \(limit 67108864\)$/);
    expect(() => compileExpression('count_chars([body, body])').evalSync(ctx({ body: half }))).toThrow(/^value too large: a string/);
    expect(compileExpression("len(body + '')").evalSync(ctx({ body: half }))).toBe(half.length);
  });
  it('caps arrays built by + and by the splitting functions', () => {
    const many = Array.from({ length: MAX_ARRAY_ELEMENTS }, () => 'w');
    expect(() => compileExpression('body + 1').evalSync(ctx({ body: many }))).toThrow(/^value too large: an array of 1048577 elements/);
    const words = 'w '.repeat(MAX_ARRAY_ELEMENTS);
    expect(() => compileExpression("split(body, ' ')").evalSync(ctx({ body: words }))).toThrow(/^value too large: an array/);
    expect(() => compileExpression('split_words(body)').evalSync(ctx({ body: words }))).toThrow(/^value too large: an array/);
    expect(() => compileExpression("split_n(body, ' ', -1)").evalSync(ctx({ body: words }))).toThrow(/^value too large: an array/);
    expect(() => compileExpression('lines(body)').evalSync(ctx({ body: 'w\n'.repeat(MAX_ARRAY_ELEMENTS + 1) }))).toThrow(/^value too large: an array/);
    expect(compileExpression('count(lines(body))').evalSync(ctx({ body: 'w\n'.repeat(MAX_ARRAY_ELEMENTS) }))).toBe(MAX_ARRAY_ELEMENTS);
    expect(compileExpression("count(split(body, ''))").evalSync(ctx({ body: 'w'.repeat(MAX_ARRAY_ELEMENTS - 2) }))).toBe(MAX_ARRAY_ELEMENTS);
    expect(() => compileExpression("split(body, '')").evalSync(ctx({ body: 'w'.repeat(MAX_ARRAY_ELEMENTS - 1) }))).toThrow(/^value too large/);
  });
});

describe('F3: regex program cost', () => {
  it('refuses the hostile patterns of the fuzz campaign with a clear error', () => {
    for (const p of ['(?:(a)|b){1000}!', '(?:\\<a\\>)'.repeat(450), '(?:a*)'.repeat(680), '(?:([a-z]+)\\.){1,100}com']) {
      expect(() => compileRustRegex(p), p.slice(0, 30)).toThrow(/^pattern too complex: its program costs \d+ \(limit 1000\)/);
      const src = `matches('${p.replace(/\\/g, '\\\\')}', subject)`;
      expect(() => compileExpression(src)).toThrow(ExprParseError);
      expect(() => compileExpression(src)).toThrow(/invalid regular expression .*pattern too complex/);
    }
    expect(MAX_PROGRAM_COST).toBe(1000);
  });
  it('accepts realistic patterns with a wide margin', () => {
    for (const p of [
      '(?i)\\b(act now|urgent(ly)? (reply|response)|verify your account)\\b', '[$€£]\\s?[0-9]{1,3}(,[0-9]{3}){2,}',
      '^([^.]+)@([^.]+)\\.(.+)$', '(?i)^[a-z0-9._%+-]{1,64}@[a-z0-9.-]{1,100}\\.[a-z]{2,24}$', '\\<word\\>', 'a{900}',
    ]) {
      expect(() => compileRustRegex(p), p).not.toThrow();
    }
  });
});

describe('F3: keyword lists', () => {
  // Pseudo-words of 5–9 letters, distinct, from a fixed seed: like a rule's keyword list.
  const wordList = (n: number): string[] => {
    let seed = 12345;
    const out = new Set<string>();
    while (out.size < n) {
      let w = '';
      const len = 5 + ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 5);
      for (let i = 0; i < len; i++) w += String.fromCharCode(97 + ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % 26));
      out.add(w);
    }
    return [...out];
  };
  it('accepts a plain alternation of words: its cost is its trie width, not its length', () => {
    const words = wordList(130);
    const src = `matches('(?i)(${words.join('|')})', subject)`;
    expect(src.length).toBeGreaterThan(1000);
    const e = compileExpression(src);
    expect(e.evalSync(ctx({ subject: `Re: ${words[77]!.toUpperCase()}!` }))).toBe(1);
    expect(e.evalSync(ctx({ subject: 'nothing here' }))).toBe(0);
  });
  it('runs a 1,000-word list (about 8,000 characters) on a 100 KB subject within a second', () => {
    const words = wordList(1000);
    const pattern = `(?i)\\b(${words.join('|')})\\b`;
    expect(pattern.length).toBeGreaterThan(7000);
    const e = compileExpression(`if_then(matches('${pattern}', subject), $1, '-')`);
    let subject = '';
    for (let i = 0; subject.length < 100_000; i++) subject += `${String(i)}${words[i % 1000]} `;
    const started = performance.now();
    expect(e.evalSync(ctx({ subject }))).toBe('-');
    expect(e.evalSync(ctx({ subject: `${subject}x ${words[999]}` }))).toBe(words[999]);
    expect(performance.now() - started).toBeLessThan(1000);
  });
  it('keeps leftmost-first priority when it factors the words into a trie', () => {
    const first = (p: string, s: string): string | undefined => compileRustRegex(p).exec(s)?.[0] ?? undefined;
    expect(first('foo|foobar', 'foobar')).toBe('foo');
    expect(first('foobar|foo', 'foobar')).toBe('foobar');
    expect(first('ab|x|a|ac', 'ac')).toBe('a');
    expect(first('ab|x|ac', 'ac')).toBe('ac');
    expect(first('a||ab', 'ab')).toBe('a');
    expect(first('ab||ac', 'ac')).toBe(''); // the empty branch comes before ac
    expect(first('x|a|(?i:A)b', 'Ab')).toBe('Ab');
    expect(first('(?i)sa|ſb', 'SB')).toBe('SB');
    expect(first('(?i)k|\u{212a}x', '\u212ax')).toBe('\u212a');
    expect(first('(?i:é)a|Éb', 'Éb')).toBe('Éb');
  });
  it('counts the branches that can be under way at once, which the trie could not merge', () => {
    // A plain and a case-insensitive first letter overlap without being equal: the trie keeps them
    // apart (priority), and both kinds of branches run side by side. 300 such branches took 11 s
    // (test) and 22 s (exec) on 20 KB when they were costed as one branch per depth.
    const alt = (a: string, b: string): string => `(?:${Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? a : b)).join('|')})`;
    const tail = `${'a'.repeat(99)}x`;
    for (const p of [alt(`a${tail}`, `(?i:a)${tail}`), alt(`é${tail}`, `(?i:é)${tail}`), alt(`k${tail}`, `\u{212a}${tail}`)]) {
      expect(() => compileRustRegex(p), p.slice(0, 30)).toThrow(/^pattern too complex: its program costs \d+ \(limit 1000\)/);
    }
  });
  it('factors case-insensitive non-ASCII keywords, and a long shared prefix in one step', () => {
    const next = prng(99);
    const words = new Set<string>();
    while (words.size < 1000) words.add(Array.from({ length: 4 + Math.floor(next() * 6) }, () => String.fromCodePoint(0x430 + Math.floor(next() * 32))).join(''));
    const list = [...words];
    const re = compileRustRegex(`(?i)\\b(?:${list.join('|')})\\b`);
    expect(re.exec(`да ${list[500]!.toUpperCase()} нет`)?.[0]).toBe(list[500]!.toUpperCase());
    // a{900}b|a{900}c: Rust accepts it; a trie level per shared letter overflowed the stack.
    const long = compileRustRegex(`${'a'.repeat(900)}b|${'a'.repeat(900)}c`);
    expect(long.exec(`${'a'.repeat(901)}c`)?.[0]).toBe(`${'a'.repeat(900)}c`);
    expect(long.test('a'.repeat(1000))).toBe(false);
    // Branches nested deeper than the trie factors stay a plain alternation (costed as such): an error, not a RangeError.
    const deep = Array.from({ length: 200 }, (_, i) => `${'a'.repeat(i)}b`).join('|');
    expect(() => compileRustRegex(deep)).toThrow(RegexError);
    expect(compileRustRegex(Array.from({ length: 60 }, (_, i) => `${'a'.repeat(i)}b`).join('|')).exec('aaab')?.[0]).toBe('aaab');
  });
  it('keeps leftmost-first priority on random alternations of overlapping words', () => {
    const next = prng(4242);
    const rnd = (n: number): number => Math.floor(next() * n);
    const letters = ['a', 'A', '(?i:a)', 'b', 'k', 'K', '\\u{212a}', '(?i:k)', 'é', '(?i:É)'];
    const chars = ['a', 'A', 'b', 'k', 'K', '\u212a', 'é', 'É'];
    for (let i = 0; i < 300; i++) {
      const words = Array.from({ length: 2 + rnd(7) }, () => Array.from({ length: rnd(5) }, () => letters[rnd(letters.length)]!).join(''));
      const factored = compileRustRegex(words.join('|'));
      const plain = compileRustRegex(words.map((w) => `${w}()`).join('|')); // a capture group: not a plain word
      for (let j = 0; j < 10; j++) {
        const s = Array.from({ length: rnd(6) }, () => chars[rnd(chars.length)]!).join('');
        expect(factored.exec(s)?.[0], `${words.join('|')} on ${s}`).toBe(plain.exec(s)?.[0]);
      }
    }
  });
  it('still bounds the search of a pattern with word boundaries', () => {
    expect(() => compileRustRegex('(?:\\b\\w*)'.repeat(72))).toThrow(/^pattern too complex/);
    const re = compileRustRegex('(?:\\b\\w*)'.repeat(20));
    const started = performance.now();
    re.exec(`${'a '.repeat(50_000)}!`);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('F4: dedup and is_intersect', () => {
  // The quadratic definitions they replace: the reference for equal results.
  const oldDedup = (arr: Value[]): Value[] => {
    const out: Value[] = [];
    for (const el of arr) if (!out.some((x) => looseEq(x, el))) out.push(el);
    return out;
  };
  const oldIntersect = (a: Value[], b: Value[]): number => (a.some((x) => b.some((y) => looseEq(y, x))) ? 1 : 0);
  const relaxed = Constant.of('relaxed')!;
  const pool: Value[] = ['', '1', '1.0', ' 1', '01', 'a', 'A', 'nan', 'NaN', 'inf', '-0', '0', 0, 1, 2, -1, new Float(1), new Float(0), new Float(-0), new Float(NaN), new Float(Infinity), [], [1], ['1'], [[]], relaxed, 'b', '2', '1e0', '+1'];
  let seed = 7;
  const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  const sample = (len: number): Value[] => Array.from({ length: len }, () => pool[rnd(pool.length)]!);
  it('give the results of the quadratic definitions on mixed inputs', () => {
    const dedup = FUNCTIONS.dedup!;
    const inter = FUNCTIONS.is_intersect!;
    for (let i = 0; i < 300; i++) {
      const a = sample(rnd(60));
      const b = sample(rnd(60));
      expect(dedup.fn([a], ctx()) as Value[]).toEqual(oldDedup(a));
      expect(inter.fn([a, b], ctx())).toBe(oldIntersect(a, b));
    }
    const words = Array.from({ length: 400 }, (_, i) => `w${i % 97}`);
    expect(dedup.fn([words], ctx())).toEqual(oldDedup(words));
    expect(inter.fn([words, ['x', 'w5']], ctx())).toBe(1);
  });
  it('dedup of a large word list keeps first occurrences in order', () => {
    const body = Array.from({ length: 60_000 }, (_, i) => `w${i % 5000}`).join(' ');
    const v = compileExpression("dedup(split(body, ' '))").evalSync(ctx({ body })) as string[];
    expect(v).toHaveLength(5000);
    expect(v.slice(0, 3)).toEqual(['w0', 'w1', 'w2']);
    expect(compileExpression("dedup(split(body, ' ') + [1, 'w1'])").evalSync(ctx({ body }))).toHaveLength(5001);
    expect(compileExpression("is_intersect(split(body, ' '), split(subject, ' '))").evalSync(ctx({ body, subject: body.replace(/w/g, 'v') + ' w4999' }))).toBe(1);
  });
});

describe('F5: indexes that overflow usize', () => {
  it('parse to 0 (spec §2.9: a failed parse::<usize> is index 0)', () => {
    expect(compileExpression("to['99999999999999999999']").evalSync(ctx({ to: ['x', 'y'] }))).toBe('x');
    expect(compileExpression("substring('abcdef', '99999999999999999999', 2)").evalSync(ctx())).toBe('ab');
    expect(compileExpression("to['18446744073709551615']").evalSync(ctx({ to: ['x'] }))).toBe('');
    expect(compileExpression("to['18446744073709551616']").evalSync(ctx({ to: ['x'] }))).toBe('x');
    expect(compileExpression("to['0000000000000000000001']").evalSync(ctx({ to: ['x', 'y'] }))).toBe('y');
  });
});

describe('F7: indexing a constant', () => {
  it('is refused, as spec §1.6 allows an index only after a variable, ")" or "]"', () => {
    expect(() => compileExpression('relaxed[0]')).toThrow(ExprParseError);
    expect(() => compileExpression('relaxed[0]')).toThrow('the constant "relaxed" cannot be indexed (only a variable, ")" or "]" can) at 1:8');
    expect(compileExpression('(relaxed)[0]').evalSync(ctx())).toBe(Constant.of('relaxed'));
    expect(compileExpression('to[0]').evalSync(ctx({ to: ['x'] }))).toBe('x');
  });
});

describe('F8: folded arrays', () => {
  it('are never shared mutably between evaluations', () => {
    for (const src of ['if_then(subject, [1, 2], 0)', '[[1, 2]]', "lines(if_then(subject, ['a'], 0))", '[1, 2]']) {
      const c = compileExpression(src);
      const first = c.evalSync(ctx({ subject: 'x' })) as Value[];
      const inner = (Array.isArray(first[0]) ? first[0] : first) as Value[];
      try {
        inner.push(99);
      } catch (e) {
        expect(e).toBeInstanceOf(TypeError); // frozen: a shared constant cannot be changed
      }
      expect(c.evalSync(ctx({ subject: 'x' }))).toEqual(src === '[[1, 2]]' ? [[1, 2]] : src.includes("'a'") ? ['a'] : [1, 2]);
    }
  });
});

describe('if-block white space', () => {
  it('refuses an else of U+FEFF (not white space in the grammar) instead of giving the empty block', () => {
    const r = compileIfBlock({ match: [], else: '\ufeff' });
    expect(r.block).toBeUndefined();
    expect(r.errors[0]!.path).toBe('else');
    expect(compileIfBlock({ match: [], else: ' \t\n' }).block?.isEmpty).toBe(true);
  });
});
