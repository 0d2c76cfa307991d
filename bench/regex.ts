/**
 * Regex benchmark: rule patterns on the linear-time engine `matches` uses (re2js, src/expr/regex.ts)
 * against V8's backtracking RegExp on the same ordinary patterns (what a linear engine costs), and the
 * hostile shapes of issue #11 on a 100 KB subject (which V8 takes seconds to minutes on).
 *
 * Run: `npx tsx bench/regex.ts` (also exported as `runRegexBench` for `bench/run.ts`).
 */
import { Bench } from 'tinybench';
import { compileRustRegex } from '../src/expr/regex.js';
import { printTable, stats } from './common.js';

/** Ordinary patterns that mean the same in Rust and JS syntax (so V8 runs the same search). */
const ORDINARY = ['(?i)viagra|cialis', '\\d{5}', 'invoice\\s+(\\d+)', '(\\w+)\\.com', '^Subject: (.*)$', '^\\S+@\\S+\\.\\S+$'];
const HIT = 'Subject: Re: Your invoice 12345 from example.com is ready, please click here to see viagra now '.repeat(3);
const MISS = 'Subject: Re: Your order from example.org is ready, please look at it when you have a minute '.repeat(3);
const HOSTILE = ['(a{1,10}){1,10}b', 'a*a*a*b', '.*.*x', '[a-z]+[a-z]+@', 'a{1,100}a{1,100}a{1,100}b', '.*x', '(a+)+b'];

/** V8's RegExp for a pattern that is also valid JS (inline `(?i)` becomes the `i` flag). */
function v8(pattern: string): RegExp {
  return pattern.startsWith('(?i)') ? new RegExp(pattern.slice(4), 'iu') : new RegExp(pattern, 'u');
}

export async function runRegexBench(): Promise<void> {
  const bench = new Bench({ time: 200 });
  for (const p of ORDINARY) {
    const lin = compileRustRegex(p);
    const bt = v8(p);
    for (const [label, subject] of [['hit', HIT], ['miss', MISS]] as const) {
      bench.add(`re2js ${label} ${p}`, () => void lin.exec(subject));
      bench.add(`v8 ${label} ${p}`, () => void bt.exec(subject));
    }
  }
  await bench.run();
  const rows = ORDINARY.flatMap((p) =>
    (['hit', 'miss'] as const).map((label) => {
      const l = stats(bench, `re2js ${label} ${p}`).meanMs * 1000;
      const b = stats(bench, `v8 ${label} ${p}`).meanMs * 1000;
      return { pattern: p, subject: label, 'linear µs': l.toFixed(2), 'V8 backtracking µs': b.toFixed(2), 'linear ÷ V8': (l / b).toFixed(1) };
    }),
  );
  printTable(`matches() on a ${HIT.length}-character subject: linear engine against V8 backtracking`, rows);

  const subject = 'a'.repeat(100_000);
  const hostile = HOSTILE.map((p) => {
    const re = compileRustRegex(p);
    const t0 = performance.now();
    re.test(subject);
    re.test(`${subject}!b@x`);
    return { pattern: p, 'linear ms (2 searches of 100 KB)': (performance.now() - t0).toFixed(1) };
  });
  printTable('hostile patterns on a 100 KB subject (V8 backtracking: 17 s to minutes each)', hostile);
}

if (import.meta.url === `file://${process.argv[1]}`) await runRegexBench();
