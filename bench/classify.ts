/**
 * Classify throughput on the real corpus with Stalwart's public rule set (issue 2 §6b): messages
 * per second on one core, against bare MIME parsing measured in the same run, and the share of
 * time in MIME parsing, extraction and rule evaluation.
 */
import PostalMime from 'postal-mime';
import { Bench } from 'tinybench';
import { loadCorpus, printTable, publicEngine, stats } from './common.js';

export async function runClassifyBench(opts: { timeMs?: number } = {}): Promise<void> {
  const corpus = loadCorpus();
  const engine = publicEngine();
  let i = 0;
  let j = 0;
  const bench = new Bench({ time: opts.timeMs ?? 3000, warmup: true, warmupTime: 500 });
  bench.add('postal-mime parse only (baseline)', async () => {
    await PostalMime.parse(corpus[j++ % corpus.length]!.raw);
  });
  bench.add('classify, public rule set', async () => {
    await engine.classify(corpus[i++ % corpus.length]!.raw);
  });
  await bench.run();
  const parse = stats(bench, 'postal-mime parse only (baseline)');
  const cls = stats(bench, 'classify, public rule set');

  // One full sequential pass over the whole corpus for the phase split and the total figure.
  let parseMs = 0;
  let extractMs = 0;
  let rulesMs = 0;
  let tags = 0;
  const t0 = performance.now();
  for (const m of corpus) {
    const r = await engine.classify(m.raw);
    parseMs += r.timings.parseMs;
    extractMs += r.timings.extractMs;
    rulesMs += r.timings.rulesMs;
    tags += r.matches.length;
  }
  const wall = performance.now() - t0;
  const other = Math.max(0, wall - parseMs - extractMs - rulesMs);
  printTable('classify throughput (one core, corpus of ' + corpus.length + ' messages)', [
    { task: 'postal-mime parse only (baseline)', 'msg/s': parse.hz.toFixed(0), 'mean µs': (parse.meanMs * 1000).toFixed(1), ratio: '1.00' },
    { task: 'classify, public rule set', 'msg/s': cls.hz.toFixed(0), 'mean µs': (cls.meanMs * 1000).toFixed(1), ratio: (cls.hz / parse.hz).toFixed(2) },
  ]);
  const pct = (x: number): string => ((100 * x) / wall).toFixed(1) + '%';
  printTable('full corpus pass: where the time goes', [
    { phase: 'MIME parsing', ms: parseMs.toFixed(0), share: pct(parseMs) },
    { phase: 'extraction', ms: extractMs.toFixed(0), share: pct(extractMs) },
    { phase: 'rule evaluation', ms: rulesMs.toFixed(0), share: pct(rulesMs) },
    { phase: 'other (scoring, headers, loop)', ms: other.toFixed(0), share: pct(other) },
    { phase: 'total', ms: wall.toFixed(0), share: `${((corpus.length * 1000) / wall).toFixed(0)} msg/s, ${tags} rule hits` },
  ]);
}
