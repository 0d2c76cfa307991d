import { describe, expect, it } from 'vitest';
import { compileRustRegex, MAX_PATTERN_LENGTH, RegexError } from '../../src/expr/regex.js';
import { prng } from '../../src/util/index.js';

/** Rust `Regex::captures`-like: the groups of the first match, `""` for non-participating ones, or null. */
function caps(pattern: string, subject: string): string[] | null {
  const m = compileRustRegex(pattern).exec(subject);
  return m === null ? null : Array.from({ length: m.length }, (_, i) => m[i] ?? '');
}
const ok = (pattern: string, subject: string): boolean => compileRustRegex(pattern).test(subject);

describe('compileRustRegex: ordinary rule patterns', () => {
  it('matches addresses, case-insensitive words and captures as Rust does', () => {
    expect(ok('^\\S+@\\S+\\.\\S+$', 'user@example.org')).toBe(true);
    expect(ok('^\\S+@\\S+\\.\\S+$', 'user @example.org')).toBe(false);
    expect(ok('/^\\S+@\\S+\\.\\S+$/', 'mx.somedomain.com')).toBe(false); // slashes are literal
    expect(ok('(?i)viagra', 'Cheap VIAGRA now')).toBe(true);
    expect(caps('^([^.]+)@([^.]+)\\.(.+)$', 'user@foo.example.org')).toEqual(['user@foo.example.org', 'user', 'foo', 'example.org']);
    expect(ok('^([^.]+)@([^.]+)\\.(.+)$org', 'user@foo.example.org')).toBe(false);
    expect(caps('a(b)?c', 'xacx')).toEqual(['ac', '']);
    expect(caps('', 'abc')).toEqual(['']);
    expect(ok('^$', '')).toBe(true);
  });
  it('is stateless: exec and test can be repeated', () => {
    const re = compileRustRegex('b');
    expect(re.test('abc')).toBe(true);
    expect(re.test('abc')).toBe(true);
  });
});

describe('compileRustRegex: translations', () => {
  it('makes \\d \\w \\s \\b Unicode-aware', () => {
    expect(ok('^\\d$', '\u0663')).toBe(true);
    expect(ok('^\\w+$', 'héllo')).toBe(true);
    expect(ok('^\\s$', '\u00a0')).toBe(true);
    expect(ok('^\\s$', '\ufeff')).toBe(false); // not White_Space in Rust
    expect(ok('^\\D$', '\u0663')).toBe(false);
    expect(ok('^\\W$', 'é')).toBe(false);
    expect(ok('\\bfoo\\b', 'é foo')).toBe(true);
    expect(ok('\\bfoo\\b', 'xfoo')).toBe(false);
    expect(ok('\\Bfoo', 'xfoo')).toBe(true);
    expect(ok('\\<foo\\>', 'a foo b')).toBe(true);
    expect(ok('\\b{start}foo', 'xfoo')).toBe(false);
  });
  it('makes \\b \\B \\< \\> look at Unicode word characters, as Rust does', () => {
    expect(ok('(?i)\\bgratuit\\b', 'livraison gratuité')).toBe(false);
    expect(ok('(?i)\\bкредит\\b', 'быстрый кредит сегодня')).toBe(true);
    expect(ok('\\bcafé\\b', 'cafés')).toBe(false);
    expect(ok('\\bcafé\\b', 'un café.')).toBe(true);
    expect(ok('é\\B', 'éa')).toBe(true);
    expect(ok('\\bfoo', 'éfoo')).toBe(false);
    expect(ok('\\<foo\\>', 'x foo\u0301')).toBe(false); // a combining mark is a word character
    expect(ok('\\bx\\b', '😀x😀')).toBe(true);
    expect(ok('\\b{start}ñu\\b{end}', '(ñu)')).toBe(true);
    expect(ok('\\b{start-half}a', 'éa')).toBe(false);
    expect(ok('a\\b{end-half}', 'aé')).toBe(false);
    expect(ok('a\\b{end-half}', 'a!')).toBe(true);
    // Captures come back as in the subject.
    expect(caps('(\\w+)\\b\\s(\\w+)', 'héllo wörld 😀x')).toEqual(['héllo wörld', 'héllo', 'wörld']);
    expect(caps('.\\b(.)', '😀𝐀b')).toEqual(['😀𝐀', '𝐀']);
    expect(compileRustRegex('(?P<w>\\w+)\\b').exec('¿qué?')?.groups).toEqual({ w: 'qué' });
    expect(caps('(?i)\\b(viagra|cialis)\\b', 'Buy CIALIS now')).toEqual(['CIALIS', 'CIALIS']);
    // Empty haystack, anchors and consecutive assertions.
    expect(caps('^\\b$', '')).toBe(null);
    expect(caps('\\B', '')).toEqual(['']);
    expect(caps('\\b\\b\\B', 'a')).toBe(null);
    expect(caps('(?:\\b)+a', 'a')).toEqual(['a']);
    expect(caps('(?m)^\\bb$', 'a\nb')).toEqual(['b']);
    expect(caps('\\ba$', 'ba\na')).toEqual(['a']);
    expect(caps('\\Aa\\b', 'aé a')).toBe(null);
    expect(caps('(?m)a$\\n^\\bb\\z', 'a\nb')).toEqual(['a\nb']);
    // Under (?-u) the ASCII boundary: é is no word character.
    expect(ok('(?-u:\\b)é', 'é')).toBe(false);
    expect(ok('(?-u:\\B)é', 'é')).toBe(true);
    // Lone surrogates are not in Rust strings: U+FFFD, no word character.
    expect(caps('\\b.', '\ud800a')).toEqual(['a']);
  });
  it('keeps ASCII classes under (?-u)', () => {
    expect(ok('(?-u)^\\w$', 'é')).toBe(false);
    expect(ok('(?-u)^\\d$', '\u0663')).toBe(false);
    expect(ok('(?-u)^\\w\\d$', 'a1')).toBe(true);
  });
  it('makes . exclude only LF, or nothing under (?s), or CR too under (?R)', () => {
    expect(ok('^a.c$', 'a\nc')).toBe(false);
    expect(ok('^a.c$', 'a\rc')).toBe(true);
    expect(ok('^a.c$', 'a\u2028c')).toBe(true);
    expect(ok('(?s)^a.c$', 'a\nc')).toBe(true);
    expect(ok('(?R)^a.c$', 'a\rc')).toBe(false);
  });
  it('anchors ^ $ \\A \\z to the haystack unless (?m), where only LF breaks lines', () => {
    expect(ok('^b$', 'a\nb')).toBe(false);
    expect(ok('^a$', 'a\n')).toBe(false); // Rust `$` is not "before a final newline"
    expect(caps('(?m)^b$', 'a\nb\nc')).toEqual(['b']);
    expect(ok('(?m)^b$', 'a\rb\rc')).toBe(false);
    expect(ok('\\A\\d\\z', '5')).toBe(true);
    expect(ok('(?m)\\Ab', 'a\nb')).toBe(false);
  });
  it('maps inline and scoped case-insensitivity', () => {
    const whole = compileRustRegex('(?i)^ABC$');
    expect(whole.test('abc')).toBe(true);
    expect(ok('(?i)^[a-z]+é$', 'ABCÉ')).toBe(true);
    expect(ok('(?i)^\\p{Lu}+$', 'abc')).toBe(true);
    expect(ok('x(?i:AB)y', 'xaBy')).toBe(true);
    expect(ok('x(?i:AB)y', 'XABY')).toBe(false);
    expect(ok('(?i)a(?-i)b', 'Ab')).toBe(true);
    expect(ok('(?i)a(?-i)b', 'AB')).toBe(false);
    expect(ok('x(?i)[a-c]', 'xB')).toBe(true);
    expect(ok('(?i)k', '\u212a')).toBe(true); // Kelvin sign folds to k
  });
  it('strips whitespace and comments under (?x), keeping escaped spaces', () => {
    expect(ok('(?x) a b  # comment\n c', 'abc')).toBe(true);
    expect(ok('(?x)a\\ b', 'a b')).toBe(true);
    expect(ok('(?x)[a b]+$', 'ab')).toBe(true);
  });
  it('swaps greediness under (?U)', () => {
    expect(caps('a+', 'aaa')).toEqual(['aaa']);
    expect(caps('(?U)a+', 'aaa')).toEqual(['a']);
    expect(caps('(?U)a+?', 'aaa')).toEqual(['aaa']);
  });
  it('translates named groups (?P<n>…) and (?<n>…)', () => {
    const m = compileRustRegex('(?P<user>\\w+)@(?<host>\\w+)').exec('bob@example');
    expect(m?.groups).toEqual({ user: 'bob', host: 'example' });
    expect(caps('(?P<a.b>x)(y)', 'xy')).toEqual(['xy', 'x', 'y']); // a Rust-only name keeps its number
  });
  it('supports POSIX classes, Unicode classes and class set operations', () => {
    expect(caps('[[:alpha:]]+', 'abc1')).toEqual(['abc']);
    expect(caps('[[:^alpha:]]+', 'abc123')).toEqual(['123']);
    expect(caps('[[:digit:][:upper:]]+', 'aB1c')).toEqual(['B1']);
    expect(ok('^\\p{Greek}+$', 'αβγ')).toBe(true);
    // A bare script name is the Script property, as in Rust; the extensions only as scx=.
    expect(ok('[\\p{Greek}\\s]', '\u0301')).toBe(false);
    expect(ok('[\\p{Han}\\s]', '\u3001')).toBe(false);
    expect(ok('\\b\\p{Han}', '\u3001é')).toBe(false);
    expect(ok('\\p{Greek}', '\u0342')).toBe(false);
    expect(ok('\\p{sc=Greek}', '\u0342')).toBe(false);
    expect(ok('\\p{scx=Greek}', '\u0342')).toBe(true);
    expect(ok('[\\p{scx=Greek}\\s]', '\u0342')).toBe(true);
    expect(ok('\\P{scx=Greek}', '\u0342')).toBe(false);
    expect(ok('^\\pL$', 'x')).toBe(true);
    expect(ok('^\\p{Lu}$', 'x')).toBe(false);
    expect(ok('^\\p{gc=Lu}$', 'X')).toBe(true);
    expect(ok('^\\P{L}$', '1')).toBe(true);
    expect(ok('^\\p{^L}$', 'a')).toBe(false);
    expect(caps('[a-z&&[^aeiou]]+', 'hello')).toEqual(['h']);
    expect(caps('[a-z--[aeiou]]+', 'elxa')).toEqual(['lx']);
    expect(ok('^[a-c~~b-d]+$', 'ad')).toBe(true);
    expect(ok('^[a-c~~b-d]+$', 'b')).toBe(false);
    expect(ok('[]a]', ']')).toBe(true);
    expect(ok('^[a-]+$', '-a')).toBe(true);
    expect(ok('^[\\W]+$', '!?')).toBe(true);
  });
  it('reads Rust escapes', () => {
    expect(ok('^\\x41\\x{42}\\u0043\\u{44}\\U00000045$', 'ABCDE')).toBe(true);
    expect(ok('^a\\\nb$', 'a\nb')).toBe(true); // escaped LF is a literal LF (regex ≥ 1.8)
    expect(ok('^\\.\\*\\-\\#$', '.*-#')).toBe(true);
    expect(ok('^\\t\\a$', '\t\x07')).toBe(true);
  });
});

describe('compileRustRegex: refusals', () => {
  const refuse = (pattern: string): string => {
    try {
      compileRustRegex(pattern);
    } catch (e) {
      expect(e).toBeInstanceOf(RegexError);
      return (e as Error).message;
    }
    throw new Error(`${pattern} compiled`);
  };
  it('refuses backreferences and look-around, as Rust does', () => {
    expect(refuse('(a)\\1')).toBe('backreferences are not supported, as in Rust regex at offset 3 in pattern');
    expect(refuse('(?P<n>a)(?P=n)')).toMatch(/^backreferences are not supported/);
    expect(refuse('(?<n>a)\\k<n>')).toMatch(/^backreferences are not supported/);
    for (const p of ['(?=a)', '(?!a)', '(?<=a)b', '(?<!a)b']) expect(refuse(p)).toMatch(/^look-around .* is not supported/);
  });
  it('accepts nested repetition and overlapping alternation, which Rust accepts', () => {
    for (const p of ['(a+)+', '(a*)*', '(\\w+\\s?)*', '(?:x+y?)+$', '(a+){1,50}', '(a|aa)+', '(a|)+', '(.|b)+']) {
      expect(() => compileRustRegex(p)).not.toThrow();
    }
    expect(caps('^(a+)+b$', 'aaab')).toEqual(['aaab', 'aaa']);
    expect(caps('(a|ab)(c|bcd)(d*)', 'abcd')).toEqual(['abcd', 'a', 'bcd', '']); // leftmost-first, as Rust
    expect(ok('^(foo|bar)+$', 'foobar')).toBe(true);
    expect(ok('^(a|aa){2}$', 'aaa')).toBe(true);
    expect(caps('(?U)a{2,5}', 'aaaaa')).toEqual(['aa']);
    expect(caps('^a{20,30}$', 'a'.repeat(25))).toEqual(['a'.repeat(25)]);
  });
  it('matches astral code points as one character', () => {
    expect(caps('^.$', '😀')).toEqual(['😀']);
    expect(caps('[😀-😂]+', 'x😁😂y')).toEqual(['😁😂']);
    expect(caps('^[^a]$', '😀')).toEqual(['😀']);
  });
  it('refuses huge counts and long sources', () => {
    expect(refuse('a{1001}')).toBe('counted repetition {1001} exceeds the limit of 1000 at offset 1 in pattern');
    expect(refuse('a{1,5000}')).toMatch(/^counted repetition \{1,5000\} exceeds/);
    expect(ok('^a{400}$', 'a'.repeat(400))).toBe(true);
    // The count is within the limit, but the program is over MAX_PROGRAM_COST (regex.ts).
    expect(refuse('^a{1000}$')).toMatch(/^pattern too complex: its program costs \d+ \(limit 1000\)/);
    expect(MAX_PATTERN_LENGTH).toBe(32_768);
    expect(refuse('x'.repeat(MAX_PATTERN_LENGTH + 1))).toBe(`pattern is ${MAX_PATTERN_LENGTH + 1} characters long; the limit is 32768`);
  });
  it('refuses syntax Rust rejects', () => {
    expect(refuse('*a')).toBe('repetition operator missing expression at offset 0 in pattern');
    expect(refuse('(ab')).toBe('unclosed group at offset 0 in pattern');
    expect(refuse('ab)')).toBe('unopened group at offset 2 in pattern');
    expect(refuse('[ab')).toBe('unclosed character class at offset 0 in pattern');
    expect(refuse('[z-a]')).toMatch(/^invalid character class range/);
    expect(refuse('a{2,1}')).toMatch(/^invalid counted repetition/);
    expect(refuse('a{x}')).toBe('invalid counted repetition at offset 1 in pattern');
    expect(refuse('\\e')).toBe('unrecognized escape sequence \\e at offset 0 in pattern');
    expect(refuse('(?q)a')).toBe('unrecognized flag "q" at offset 0 in pattern');
    expect(refuse('\\p{NoSuchClass}')).toBe('unknown Unicode class \\p{NoSuchClass}');
    expect(refuse('[[:nope:]]')).toMatch(/^unknown POSIX class \[:nope:\]/);
  });
});

describe('compileRustRegex: linear time on hostile input', () => {
  // Each of these backtracks for many seconds (polynomially or exponentially) on a backtracking engine.
  const shapes = ['(a{1,10}){1,10}b', 'a*a*a*b', '.*.*x', '[a-z]+[a-z]+@', 'a{1,100}a{1,100}a{1,100}b', '.*x', '(a+)+b', '(?i)(a|aa)+$b', '(\\w+\\s?)*$x',
    '(\\b\\w+\\b\\s?)*$x', '(?:\\b\\w*)+\\B!'];
  const subject = 'a'.repeat(100_000);
  for (const p of shapes) {
    it(`${p} on a 100 KB subject finishes within 2 s`, () => {
      const re = compileRustRegex(p);
      const started = performance.now();
      expect(re.test(subject)).toBe(false);
      expect(re.exec(`${subject}c`)).toBe(null);
      re.test(`${subject}!b@x`); // the literal present: no prefilter shortcut
      expect(performance.now() - started).toBeLessThan(2000);
    });
  }
});

describe('compileRustRegex: Unicode word boundaries on ASCII and other subjects', () => {
  it('agree with a look-around reference, whichever way the subject is searched', () => {
    // ASCII subjects take the pattern without marks; others are first tested without the word
    // assertions (a subject that fails is ruled out), then searched marked (regex-marks.ts).
    const W = String.raw`[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]`;
    const b = `(?:(?<=${W})(?!${W})|(?<!${W})(?=${W}))`;
    const nb = `(?:(?<=${W})(?=${W})|(?<!${W})(?!${W}))`;
    const reference = (p: string): RegExp => new RegExp(p.replace(/\\b/g, b).replace(/\\B/g, nb), 'u');
    const patterns = [String.raw`\bab\b`, String.raw`\Bb`, String.raw`a\b`, String.raw`\bк`, String.raw`\b(?:a|é)+\b`, String.raw`é\B`, String.raw`\b1_`, String.raw`\B\B`, String.raw`x\b|\by`];
    const alphabet = ['a', 'b', 'x', 'y', ' ', 'é', 'к', '1', '_', '-', '\n', '\u0301'];
    const rnd = prng(20261202);
    for (const p of patterns) {
      const ours = compileRustRegex(p);
      const ref = reference(p);
      for (let i = 0; i < 400; i++) {
        const len = 1 + Math.floor(rnd() * 8);
        // Every other subject ASCII only.
        const pool = i % 2 === 0 ? alphabet.slice(0, 5).concat(['1', '_', '-', '\n']) : alphabet;
        const s = Array.from({ length: len }, () => pool[Math.floor(rnd() * pool.length)]!).join('');
        expect([p, s, ours.test(s)]).toEqual([p, s, ref.test(s)]);
        expect([p, s, ours.exec(s)?.[0] ?? null]).toEqual([p, s, ref.exec(s)?.[0] ?? null]);
      }
    }
  });
});
