/**
 * Classify throughput on the real corpus with Stalwart's public rule set: messages per second on
 * one core, against bare MIME parsing measured in the same run; the rules alone, with the header
 * modules, and with every built-in analysis module (DNS off); and the share of time in MIME
 * parsing, extraction, analysis and rule evaluation.
 */
import { Bench } from 'tinybench';
import { MODULE_NAMES } from '../src/analysis/index.js';
import { LookupMap } from '../src/lookup/index.js';
import { parseMimeTree } from '../src/message/mime-tree.js';
import { alternatingPasses, alternatingPerMessage, analysisEngine, loadCorpus, printTable, publicBundle, publicEngine, stats } from './common.js';

/** The header-side modules (session and top-level headers). */
const HEADER_MODULES = ['dmarc', 'ehlo', 'headers', 'received', 'messageid', 'date', 'subject', 'from', 'replyto', 'recipient'];

export async function runClassifyBench(opts: { timeMs?: number } = {}): Promise<void> {
  const corpus = loadCorpus();
  const bundle = publicBundle();
  const engine = publicEngine(bundle);
  const headerOnly = analysisEngine(bundle, Object.fromEntries(MODULE_NAMES.filter((m) => !HEADER_MODULES.includes(m)).map((m) => [m, false])));
  const full = analysisEngine(bundle);
  let i = 0;
  let j = 0;
  const bench = new Bench({ time: opts.timeMs ?? 3000, warmup: true, warmupTime: 500 });
  bench.add('MIME parse only (baseline)', () => {
    parseMimeTree(corpus[j++ % corpus.length]!.raw);
  });
  bench.add('classify, public rule set', async () => {
    await engine.classify(corpus[i++ % corpus.length]!.raw);
  });
  await bench.run();
  const parse = stats(bench, 'MIME parse only (baseline)');
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
    { task: 'MIME parse only (baseline)', 'msg/s': parse.hz.toFixed(0), 'mean µs': (parse.meanMs * 1000).toFixed(1), ratio: '1.00' },
    { task: 'classify, public rule set', 'msg/s': cls.hz.toFixed(0), 'mean µs': (cls.meanMs * 1000).toFixed(1), ratio: (cls.hz / parse.hz).toFixed(2) },
  ]);
  // The modules' cost from alternating passes over the same quarter of the corpus (median of the
  // per-pass ratios). Not tinybench: it runs one task after the other, which load on a shared
  // machine skews, and a time-boxed task sees only as much of the corpus as it has time for, so a
  // slower configuration is measured on fewer, different messages.
  const quarter = corpus.filter((_, n) => n % 4 === 0);
  const pass = (e: typeof engine) => async (): Promise<void> => {
    for (const m of quarter) await e.classify(m.raw);
  };
  // The modules' own cost is measured against the rules with the same session: in the mail path the
  // MTA gives both the session; the corpus's is read from each message's stored headers, which costs
  // something too and gives the rules more to evaluate (remote IP, HELO, envelope). That reading is
  // shown on its own against the rules without any session.
  const sameSession = publicEngine(bundle, new LookupMap(), false, true);
  const altHdr = await alternatingPasses(pass(headerOnly), pass(sameSession), 9);
  const altAll = await alternatingPasses(pass(full), pass(sameSession), 9);
  const altSession = await alternatingPasses(pass(sameSession), pass(engine), 9);
  const altHdrBare = await alternatingPasses(pass(headerOnly), pass(engine), 9);
  const row = (task: string, a: typeof altHdr, against: string): Record<string, string> => ({
    task,
    against,
    'time ratio': a.medianRatio.toFixed(2),
    'best pass ms': a.bestBaselineMs.toFixed(0),
    'baseline best pass ms': a.bestCandidateMs.toFixed(0),
  });
  printTable(`built-in analysis cost, alternating passes (${quarter.length} messages, median of 9 pass ratios)`, [
    row('classify + header modules (DNS off)', altHdr, 'rules only, same session'),
    row('classify + all modules (DNS off)', altAll, 'rules only, same session'),
    row('rules only, session read from the stored headers', altSession, 'rules only, no session'),
    row('classify + header modules (DNS off)', altHdrBare, 'rules only, no session'),
  ]);
  // The same comparison with the two engines alternating on every message (sums over all the
  // quarter, median of 5 rounds): steadier than whole passes when the machine's load changes
  // within a pass.
  const per = await alternatingPerMessage(quarter, (m) => headerOnly.classify(m.raw), (m) => sameSession.classify(m.raw));
  const perAll = await alternatingPerMessage(quarter, (m) => full.classify(m.raw), (m) => sameSession.classify(m.raw));
  const perRow = (task: string, a: typeof per): Record<string, string> => ({
    task,
    against: 'rules only, same session',
    'time ratio': a.medianRatio.toFixed(2),
    'µs/msg': (a.baselineMsPerItem * 1000).toFixed(0),
    'baseline µs/msg': (a.candidateMsPerItem * 1000).toFixed(0),
  });
  printTable(`built-in analysis cost, alternating per message (${quarter.length} messages, median of 5 rounds)`, [
    perRow('classify + header modules (DNS off)', per),
    perRow('classify + all modules (DNS off)', perAll),
  ]);
  // Where the analysis time goes: each module alone on a pass over a sample of the corpus.
  const sample = corpus.filter((_, n) => n % 6 === 0);
  const perModule: { module: string; 'µs/msg': string }[] = [];
  for (const name of MODULE_NAMES) {
    const e = analysisEngine(bundle, Object.fromEntries(MODULE_NAMES.map((m) => [m, m === name])));
    let ms = 0;
    for (const m of sample) ms += (await e.classify(m.raw)).timings.analysisMs;
    perModule.push({ module: name, 'µs/msg': ((ms * 1000) / sample.length).toFixed(1) });
  }
  printTable(`analysis time per module (${sample.length} messages, each module alone)`, perModule);
  const pct = (x: number): string => ((100 * x) / wall).toFixed(1) + '%';
  printTable('full corpus pass: where the time goes', [
    { phase: 'MIME parsing', ms: parseMs.toFixed(0), share: pct(parseMs) },
    { phase: 'extraction', ms: extractMs.toFixed(0), share: pct(extractMs) },
    { phase: 'rule evaluation', ms: rulesMs.toFixed(0), share: pct(rulesMs) },
    { phase: 'other (scoring, headers, loop)', ms: other.toFixed(0), share: pct(other) },
    { phase: 'total', ms: wall.toFixed(0), share: `${((corpus.length * 1000) / wall).toFixed(0)} msg/s, ${tags} rule hits` },
  ]);
}
