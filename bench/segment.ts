/**
 * Japanese segmentation benchmark: the classifier's TinySegmenter (src/classifier/tiny-segmenter.ts, over the
 * package's own model) against the `tiny-segmenter` package's `segment`, on the runs of Japanese text in the
 * corpus's Japanese messages (the words the classifier hands the segmenter). Both give the same pieces
 * (test/classifier/tiny-segmenter.test.ts); this measures what that costs.
 *
 * Run: `npx tsx bench/segment.ts` (also exported as `runSegmentBench` for `bench/run.ts`).
 */
import { createRequire } from 'node:module';
import { Bench } from 'tinybench';
import { fastTinySegmenter, type TinySegmenterInstance } from '../src/classifier/tiny-segmenter.js';
import { japaneseRuns } from '../test/helpers/japanese.js';
import { printTable, stats } from './common.js';

export async function runSegmentBench(): Promise<void> {
  const TinySegmenter = createRequire(import.meta.url)('tiny-segmenter') as new () => TinySegmenterInstance;
  const pkg = new TinySegmenter();
  const t0 = performance.now();
  const fast = fastTinySegmenter(pkg);
  const buildMs = performance.now() - t0;
  if (fast === undefined) throw new Error('tiny-segmenter: this version\'s model is not the one tiny-segmenter.ts reads');
  const runs = await japaneseRuns();
  const chars = runs.reduce((n, r) => n + r.length, 0);
  const bench = new Bench({ time: 500 });
  bench.add('package', () => {
    for (const r of runs) pkg.segment(r);
  });
  bench.add('fast', () => {
    for (const r of runs) fast(r);
  });
  await bench.run();
  const p = stats(bench, 'package').meanMs;
  const f = stats(bench, 'fast').meanMs;
  printTable(`TinySegmenter on the corpus's Japanese text (${runs.length} runs, ${chars} characters); tables built in ${buildMs.toFixed(0)} ms`, [
    { segmenter: 'tiny-segmenter package', 'ms per pass': p.toFixed(2), 'µs per character': ((p * 1000) / chars).toFixed(2), 'package ÷ this': '1.0' },
    { segmenter: 'tiny-segmenter.ts', 'ms per pass': f.toFixed(2), 'µs per character': ((f * 1000) / chars).toFixed(2), 'package ÷ this': (p / f).toFixed(1) },
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) await runSegmentBench();
