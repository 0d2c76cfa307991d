/**
 * Character classes under `(?i)`, with negation, nesting and set operations, against JavaScript's
 * RegExp with the `v` and `i` flags, which folds each operand before it negates or combines them
 * (ECMA-262, MaybeSimpleCaseFolding) as Rust's regex-syntax does.
 */
import { describe, expect, it } from 'vitest';
import { compileRustRegex } from '../../src/expr/regex.js';
import { prng } from '../../src/util/index.js';

const ok = (pattern: string, subject: string): boolean => compileRustRegex(pattern).test(subject);

describe('compileRustRegex: case-insensitive classes fold each bracket before negating it', () => {
  it('gives Rust’s answers on negated, nested and combined classes', () => {
    expect(ok('(?i)[^a-z\\s]', 'a')).toBe(false);
    expect(ok('(?i)[^a-z\\s]', 'A')).toBe(false);
    expect(ok('(?i)[[^a]]', 'A')).toBe(false);
    expect(ok('(?i)[a-z--C]', 'c')).toBe(false);
    expect(ok('(?i)[a-z--C]', 'b')).toBe(true);
    expect(ok('(?i)[^k\\s]', '\u212a')).toBe(false);
    expect(ok('(?i)[\\P{Lu}\\s]', 'A')).toBe(false);
    expect(ok('(?i)\\P{Lu}', 'a')).toBe(false);
    expect(ok('(?i)[[:^lower:]]', 'A')).toBe(false);
    expect(compileRustRegex('(?i)[[b]&&[A-Z]]').exec('B')?.[0]).toBe('B');
    // Under a Unicode word boundary the marked subject is searched: its classes are computed too.
    expect(compileRustRegex('(?i)\\bx[^a]').exec('é xa xb')?.[0]).toBe('xb');
    expect(compileRustRegex('(?i)\\bx[^a]').exec('é xA xb')?.[0]).toBe('xb');
  });

  // Class members in Rust syntax and the same in JavaScript `v` syntax (Rust's \s \d \w are Unicode).
  const W = '[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]';
  const ITEMS: [string, string][] = [
    ['a', 'a'], ['A', 'A'], ['k', 'k'], ['K', 'K'], ['\u212a', '\u212a'], ['s', 's'], ['\u017f', '\u017f'], ['é', 'é'],
    ['É', 'É'], ['ß', 'ß'], ['\u1e9e', '\u1e9e'], ['σ', 'σ'], ['Σ', 'Σ'], ['ς', 'ς'], ['ı', 'ı'], ['İ', 'İ'], ['i', 'i'],
    ['ϑ', 'ϑ'], ['a-z', 'a-z'], ['A-F', 'A-F'], ['à-ö', 'à-ö'], ['α-ω', 'α-ω'], ['0-9', '0-9'], ['\\s', '\\p{White_Space}'],
    ['\\S', '\\P{White_Space}'], ['\\d', '\\p{Nd}'], ['\\w', W], ['\\W', `[^${W}]`], ['\\p{Lu}', '\\p{Lu}'],
    ['\\P{Lu}', '\\P{Lu}'], ['\\p{Ll}', '\\p{Ll}'], ['\\P{Ll}', '\\P{Ll}'], ['\\p{Greek}', '\\p{Script=Greek}'],
    ['\\P{Latin}', '\\P{Script=Latin}'], ['[:alpha:]', '[a-zA-Z]'], ['[:^lower:]', '[^a-z]'], ['[:upper:]', '[A-Z]'],
  ];
  const SUBJECTS = [...'aAbBcCkKsSzZ\u212a\u017fé\u00c9ßẞσςΣıİiIϑθΘ09 \t\u00a0-_!ÿŸǅǆǄ\u0345ι\u1fbeàÀ\u0301'];

  /** A random class: [Rust source, JavaScript `v` source], both bracketed. */
  function randomClass(rnd: (n: number) => number, depth: number): [string, string] {
    const members = (): [string, string] => {
      let rust = '';
      let js = '';
      for (let n = 1 + rnd(3); n > 0; n--) {
        if (depth < 2 && rnd(5) === 0) {
          const [r, j] = randomClass(rnd, depth + 1);
          rust += r;
          js += j;
        } else {
          const [r, j] = ITEMS[rnd(ITEMS.length)]!;
          rust += r;
          js += j;
        }
      }
      return [rust, js];
    };
    const neg = rnd(3) === 0 ? '^' : '';
    const [lr, lj] = members();
    const op = rnd(8);
    if (op >= 3) return [`[${neg}${lr}]`, `[${neg}${lj}]`];
    const [rr, rj] = members();
    if (op === 0) return [`[${neg}${lr}&&${rr}]`, `[${neg}[${lj}]&&[${rj}]]`];
    if (op === 1) return [`[${neg}${lr}--${rr}]`, `[${neg}[${lj}]--[${rj}]]`];
    return [`[${neg}${lr}~~${rr}]`, `[${neg}[[${lj}]--[${rj}]][[${rj}]--[${lj}]]]`];
  }

  it('agrees with RegExp /v and /vi on random classes, on ASCII and marked subjects', () => {
    const next = prng(20250611);
    const rnd = (n: number): number => Math.floor(next() * n);
    for (let i = 0; i < 250; i++) {
      const [rust, js] = randomClass(rnd, 0);
      for (const ci of [false, true]) {
        const ref = new RegExp(`^${js}$`, ci ? 'vi' : 'v');
        const plain = compileRustRegex(`${ci ? '(?i)' : ''}^${rust}$`);
        // After a non-ASCII letter and a word assertion: the marked subject's path.
        const marked = compileRustRegex(`${ci ? '(?i)' : ''}^é(?:\\b|\\B)${rust}$`);
        for (const s of SUBJECTS) {
          const want = ref.test(s);
          expect(plain.test(s), `${ci ? '(?i)' : ''}${rust} on ${JSON.stringify(s)}`).toBe(want);
          expect(marked.test(`é${s}`), `marked ${ci ? '(?i)' : ''}${rust} on ${JSON.stringify(s)}`).toBe(want);
        }
      }
    }
  });
});
