/**
 * Cross-validation of the statistical classifier on the SpamAssassin corpus: train on every other
 * message of each folder (a SQLite model file, as `spamrule learn` makes one), classify the other half
 * with Stalwart's public rules and every built-in module (DNS off), with and without the classifier.
 * Prints spam/ham flag rates and confusion tables (classifier alone: PROB_SPAM_LOW or above; rules and
 * modules alone; combined), the training time, and the classify cost with the model against without it
 * (the same messages, alternating per message in one run): on unseen mail, cold passes in this thread and
 * in fresh worker threads (model-cost.ts), then as many in fresh threads that classified the training half
 * first, both pooled; on seen mail, three passes over the held-out half again, then three in blocks of
 * messages per side, each with the median of its passes' ratios; and the cost on hostile megabyte bodies
 * (hostile-mail.ts).
 * Accuracy figures and same-run ratios.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClassifier, sqliteModelConfig } from '../src/classifier/index.js';
import { alternatingModelPasses, classifyBothSides, coldOrderName, coldPass, coldPassInThread, costRows, splitHalves, type ColdOrder, type CostPass } from './model-cost.js';
import { alternatingPerMessage, analysisEngine, loadCorpus, printTable, publicBundle, trustedDomains } from './common.js';
import { HOSTILE_PATTERNS, hostileMessage } from './hostile-mail.js';

interface Confusion {
  tp: number;
  fn: number;
  fp: number;
  tn: number;
}

const pct = (a: number, b: number): string => `${((100 * a) / Math.max(b, 1)).toFixed(2)}%`;

function row(name: string, c: Confusion): Record<string, string | number> {
  return {
    run: name,
    'spam flagged': pct(c.tp, c.tp + c.fn),
    'ham flagged': pct(c.fp, c.fp + c.tn),
    'spam→spam': c.tp,
    'spam→ham': c.fn,
    'ham→spam': c.fp,
    'ham→ham': c.tn,
  };
}

export async function runLearnBench(): Promise<void> {
  const { train, test } = splitHalves(loadCorpus());
  const bundle = publicBundle();
  const trusted = trustedDomains(bundle);
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-learn-bench-'));
  try {
    const modelFile = join(dir, 'model.sqlite');
    const classifier = await openClassifier(sqliteModelConfig(modelFile), { trustedDomains: trusted, refreshMs: 0, preload: true });
    const t0 = performance.now();
    for (const m of train) await classifier.learn(m.raw, m.isSpam);
    const t1 = performance.now();
    // CPU time, not only wall time: the machine may be shared.
    const cpu0 = process.cpuUsage();
    const report = await classifier.train({ seed: 1 });
    const t2 = performance.now();
    const cpu = process.cpuUsage(cpu0);
    printTable(`classifier training: ${train.length} messages (${train.filter((m) => m.isSpam).length} spam), SQLite model file`, [
      {
        'store samples (s)': ((t1 - t0) / 1000).toFixed(1),
        'training run (s)': ((t2 - t1) / 1000).toFixed(1),
        // This process's CPU and the training child's (process.cpuUsage does not count a child).
        'training CPU (s)': ((cpu.user + cpu.system) / 1e6 + (report.processCpuMs ?? 0) / 1000).toFixed(1),
        'samples trained': report.ham + report.spam + report.replayed,
        epochs: report.epochs,
        generation: report.generation ?? 'none',
      },
    ]);

    const engine = analysisEngine(bundle);
    const alone: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
    const aloneMedium: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
    const aloneHigh: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
    const base: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
    const combined: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
    const count = (c: Confusion, spam: boolean, flagged: boolean): void => {
      if (spam) flagged ? c.tp++ : c.fn++;
      else flagged ? c.fp++ : c.tn++;
    };
    // Ham that rules and modules alone score so high that even the classifier's most negative tag
    // (PROB_HAM_HIGH) cannot bring it under the spam threshold: a floor on the combined ham rate.
    const { scoreSpam } = engine.getThresholds();
    const probScores = bundle.tags.flatMap((t) => (t['@type'] === 'Score' && t.tag.startsWith('PROB_') ? [t.score ?? 0] : []));
    const mostNegative = Math.min(0, ...probScores);
    let hamOverFloor = 0;
    const cold = await coldPass(engine, classifier, test, (m, withModel, r) => {
      if (withModel) {
        count(combined, m.isSpam, r.action !== 'allow');
        const tag = r.classifier?.tag ?? '';
        count(alone, m.isSpam, tag === 'PROB_SPAM_LOW' || tag === 'PROB_SPAM_MEDIUM' || tag === 'PROB_SPAM_HIGH');
        count(aloneMedium, m.isSpam, tag === 'PROB_SPAM_MEDIUM' || tag === 'PROB_SPAM_HIGH');
        count(aloneHigh, m.isSpam, tag === 'PROB_SPAM_HIGH');
      } else {
        count(base, m.isSpam, r.action !== 'allow');
        if (!m.isSpam && r.score + mostNegative >= scoreSpam) hamOverFloor++;
      }
    });
    printTable(`cross-validation: ${test.length} held-out messages (${base.tp + base.fn} spam, ${base.fp + base.tn} ham), public rules + all modules, DNS off`, [
      row('classifier alone (PROB_SPAM_LOW or above, p ≥ 0.60)', alone),
      row('classifier alone (PROB_SPAM_MEDIUM or above, p ≥ 0.75)', aloneMedium),
      row('classifier alone (PROB_SPAM_HIGH, p ≥ 0.85)', aloneHigh),
      row('rules + modules, no classifier', base),
      row('rules + modules + classifier', combined),
    ]);
    const hamTotal = base.fp + base.tn;
    process.stdout.write(
      `\nfloor of the combined ham rate: ${hamOverFloor} of ${hamTotal} ham (${pct(hamOverFloor, hamTotal)}) score ≥ ${scoreSpam - mostNegative} ` +
        `from rules and modules alone, so stay flagged even with ${mostNegative} from the classifier (a perfect one).\n`,
    );
    // Unseen mail: the pass above, then more, each in a fresh worker thread (a cold pass cannot be
    // repeated in a process that has run one; one pass's ratio is a noisy sample). Pass k runs in order
    // k % 2, so an even number of passes has as many of each, and the figure pools them: one order alone
    // is biased by about ±0.015–0.02 on this corpus (see ColdOrder in model-cost.ts).
    const COLD_PASSES_PER_ORDER = 2;
    // Passes `from` to the last, each in a fresh worker thread; `primed`: see coldPassInThread.
    const threadPasses = async (from: number, primed: boolean): Promise<CostPass[]> => {
      const runs: CostPass[] = [];
      for (let k = from; k < 2 * COLD_PASSES_PER_ORDER; k++) {
        const order = (k % 2) as ColdOrder;
        runs.push({ pass: `fresh thread ${runs.length + 1} (${coldOrderName(order)})`, t: await coldPassInThread(modelFile, trusted, order, primed) });
      }
      return runs;
    };
    const coldRuns = [{ pass: `this thread (${coldOrderName(0)})`, t: cold }, ...(await threadPasses(1, false))];
    printTable('classify cost with the model on unseen mail (a process that has seen none of it: cold memos; both orders pooled)', costRows(coldRuns, 'pooled'));
    // New mail in a process that has run a while (a server's usual case): each fresh thread first
    // classifies the training half with both sides, so its memos (words, stems, interned tokens, host
    // names) hold other mail of the same kind, then runs the cold pass over the held-out half.
    const primedRuns = await threadPasses(0, true);
    printTable('classify cost with the model on unseen mail after the training half (a process that has classified other mail; both orders pooled)', costRows(primedRuns, 'pooled'));
    // Seen mail: both paths classify the training half once, then the held-out half is timed again the
    // same way. The memos now hold these very messages (from the cold pass above, which must stay first):
    // mail the process has classified before (a campaign's copies, a message scanned again), the
    // warmest bound.
    await classifyBothSides(engine, classifier, train);
    // Both seen-mail measures are repeated (ROUNDS passes over the held-out half each): this machine's
    // speed drifts by ±5% within a pass, so one pass's ratio is a noisy sample. Each pass is printed, and
    // the median of the passes' ratios.
    const ROUNDS = 3;
    const seen = await alternatingModelPasses(engine, classifier, test, ROUNDS);
    printTable('classify cost with the model on seen mail (the held-out half again, after the training half and one pass over it)', costRows(seen.map((t, k) => ({ pass: k + 1, t }))));
    // The same seen mail in blocks of 32 messages per side (alternating which side goes first): each
    // side then classifies message after message as a process that always, or never, uses the model does.
    // Per-message alternation above puts a classification of the other kind between any two of a side's,
    // which evicts both sides' caches alike; in blocks, the classifier's own footprint (code, tables,
    // memos) also slows the rest of the analysis of the side that runs it, as in a real process.
    const BLOCK = 32;
    const blocks: (typeof test)[] = [];
    for (let b0 = 0; b0 < test.length; b0 += BLOCK) blocks.push(test.slice(b0, b0 + BLOCK));
    const blockSide = (withModel: boolean) => async (block: typeof test): Promise<void> => {
      engine.classifier = withModel ? classifier : undefined;
      for (const m of block) await engine.classify(m.raw);
    };
    const { passes } = await alternatingPerMessage(blocks, blockSide(false), blockSide(true), ROUNDS);
    const blockRuns = passes.map((p, k) => ({ pass: k + 1, t: { withoutMs: p.baselineMs, withMs: p.candidateMs, messages: test.length } }));
    printTable(`classify cost with the model on seen mail in blocks of ${BLOCK} messages per side (as a process that always or never uses the model)`, costRows(blockRuns));
    // Hostile bodies: a megabyte in one span whose every word could start a composite token. Each side's
    // time is the median of three classifications, alternating sides.
    const hostileRows = [];
    for (const [pattern, unit] of Object.entries(HOSTILE_PATTERNS)) {
      const raw = hostileMessage(unit);
      const times: Record<'with' | 'without', number[]> = { with: [], without: [] };
      for (let k = 0; k < 3; k++) {
        for (const side of k % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
          engine.classifier = side === 'with' ? classifier : undefined;
          const t0 = performance.now();
          await engine.classify(raw);
          times[side].push(performance.now() - t0);
        }
      }
      const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[1]!;
      hostileRows.push({
        pattern,
        'without model (ms)': med(times.without).toFixed(0),
        'with model (ms)': med(times.with).toFixed(0),
        'ratio with/without': (med(times.with) / med(times.without)).toFixed(2),
      });
    }
    printTable('classify cost with the model on hostile 1 MB bodies (one span without white space; median of 3)', hostileRows);
    await classifier.store.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
