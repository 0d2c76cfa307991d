/** Shared bench plumbing: corpus and rule-set loading, result table formatting. */
import { existsSync } from 'node:fs';
import { loadRuleFile, SpamEngine, type RuleBundle } from '../src/engine/index.js';
import type { AnalysisConfig } from '../src/analysis/types.js';
import { LookupMap, StaticLookupList } from '../src/lookup/index.js';
import { SHARED_DATA, sharedPath } from '../test/helpers/shared-data.js';
import type { Bench } from 'tinybench';

export { loadCorpus } from '../test/helpers/corpus.js';

/** Stalwart's public rule set, or a clear error naming where it was looked for. */
export function publicBundle(): RuleBundle {
  const file = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
  if (!existsSync(file)) throw new Error(`public rule set not found under ${SHARED_DATA} (set SPAMRULE_SHARED_DATA)`);
  return loadRuleFile(file);
}

/** The keys of the rule set's `trusted-domains` list (its entries are keys or key/value objects), for the classifier's trust check. */
export function trustedDomains(bundle: RuleBundle): string[] {
  return bundle.lists.get('trusted-domains')?.map((e) => (typeof e === 'string' ? e : e.key)) ?? [];
}

/**
 * An engine with the public rule set, its scores and its static lists in memory. `storedSession`:
 * read each message's session from its own Received/Return-Path headers (corpus mail is stored
 * mail; default: when analysis is on).
 */
export function publicEngine(bundle = publicBundle(), lookups = new LookupMap(), analysis: AnalysisConfig | false = false, storedSession = analysis !== false): SpamEngine {
  for (const [ns, entries] of bundle.lists) if (!lookups.get(ns)) lookups.set(ns, new StaticLookupList(ns, entries));
  return new SpamEngine({ rules: bundle.rules, tags: bundle.tags, lookups, analysis, trustReceived: storedSession });
}

/**
 * The public rule set with every built-in analysis module on (DNS off: `OffResolver`), its DNSBL
 * servers and file extensions; `modules` switches some off.
 */
export function analysisEngine(bundle = publicBundle(), modules: Record<string, boolean> = {}): SpamEngine {
  return publicEngine(bundle, new LookupMap(), { dnsblServers: bundle.dnsblServers, fileExtensions: bundle.fileExtensions, modules });
}

/** Mean latency (ms) and throughput (ops/s) of a finished tinybench task, across tinybench versions. */
export function stats(bench: Bench, name: string): { meanMs: number; hz: number; samples: number } {
  const t = bench.tasks.find((x) => x.name === name);
  const r = t?.result as unknown as Record<string, unknown> | undefined;
  if (!r) throw new Error(`bench task ${name} has no result`);
  const lat = r.latency as { mean: number; samples?: number[] } | undefined;
  const thr = r.throughput as { mean: number } | undefined;
  const meanMs = lat?.mean ?? (r.mean as number);
  const hz = thr?.mean ?? (r.hz as number) ?? 1000 / meanMs;
  const samples = (r.samples as number[] | undefined)?.length ?? lat?.samples?.length ?? 0;
  return { meanMs, hz, samples };
}

/** Prints a section title and a table. */
export function printTable(title: string, rows: Record<string, string | number>[]): void {
  process.stdout.write(`\n## ${title}\n`);
  console.table(rows);
}

/**
 * Alternates `rounds` passes of a baseline and a candidate and returns the fastest pass of each
 * (ms) and the median per-pass ratio baseline ÷ candidate. tinybench runs one task after the
 * other, so load that comes and goes on a shared machine skews its ratio; alternating short
 * passes and taking the median is robust to that.
 */
export async function alternatingPasses(
  baseline: () => unknown,
  candidate: () => unknown,
  rounds = 21,
): Promise<{ bestBaselineMs: number; bestCandidateMs: number; medianRatio: number }> {
  const ratios: number[] = [];
  let bestBaselineMs = Infinity;
  let bestCandidateMs = Infinity;
  for (let round = 0; round < rounds; round++) {
    const t0 = performance.now();
    await baseline();
    const t1 = performance.now();
    await candidate();
    const t2 = performance.now();
    ratios.push((t1 - t0) / (t2 - t1));
    bestBaselineMs = Math.min(bestBaselineMs, t1 - t0);
    bestCandidateMs = Math.min(bestCandidateMs, t2 - t1);
  }
  ratios.sort((a, b) => a - b);
  return { bestBaselineMs, bestCandidateMs, medianRatio: ratios[Math.floor(ratios.length / 2)]! };
}

/**
 * Times a baseline and a candidate on each message in turn (the order switching from one message to
 * the next), `rounds` times over the messages, and returns the median over rounds of the summed
 * baseline time ÷ summed candidate time, with each side's mean ms per message in the best round and
 * each round's summed times (ms) in `passes`.
 * Load that comes and goes within a pass hits both sides alike, which whole-pass alternation
 * cannot promise on a shared machine; each side's garbage may be collected during the other's
 * turn, but a young-generation collection costs by what survives, not by what was allocated.
 * In round r the baseline goes first on the items whose index i has i + r + `firstRound` even. The side
 * that goes first on an item pays what the process meets for the first time in it; a pass over mail the
 * process has not seen is therefore fair only when both orders are run (see bench/model-cost.ts).
 */
export async function alternatingPerMessage<T>(
  items: readonly T[],
  baseline: (item: T) => unknown,
  candidate: (item: T) => unknown,
  rounds = 5,
  firstRound = 0,
): Promise<{ medianRatio: number; baselineMsPerItem: number; candidateMsPerItem: number; passes: { baselineMs: number; candidateMs: number }[] }> {
  const ratios: number[] = [];
  const passes: { baselineMs: number; candidateMs: number }[] = [];
  let best = { b: Infinity, c: Infinity };
  for (let round = 0; round < rounds; round++) {
    let b = 0;
    let c = 0;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      const baselineFirst = (i + round + firstRound) % 2 === 0;
      const t0 = performance.now();
      await (baselineFirst ? baseline : candidate)(item);
      const t1 = performance.now();
      await (baselineFirst ? candidate : baseline)(item);
      const t2 = performance.now();
      b += baselineFirst ? t1 - t0 : t2 - t1;
      c += baselineFirst ? t2 - t1 : t1 - t0;
    }
    ratios.push(b / c);
    passes.push({ baselineMs: b, candidateMs: c });
    if (b + c < best.b + best.c) best = { b, c };
  }
  ratios.sort((x, y) => x - y);
  return { medianRatio: ratios[Math.floor(ratios.length / 2)]!, baselineMsPerItem: best.b / items.length, candidateMsPerItem: best.c / items.length, passes };
}
