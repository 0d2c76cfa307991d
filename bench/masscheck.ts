/**
 * Mass-check (SpamAssassin's term): Stalwart's public rule set over the whole SpamAssassin corpus,
 * rules alone against rules plus every built-in analysis module (DNS off, no remote lists), with
 * spam and ham flag rates, the most frequent tags on each side, which public rules fire at least
 * once, and how many distinct module tags appear on spam. Accuracy figures, not timings.
 */
import { analysisEngine, loadCorpus, printTable, publicBundle, publicEngine } from './common.js';
import type { SpamEngine } from '../src/engine/index.js';

interface Tally {
  spam: number;
  ham: number;
  spamFlagged: number;
  hamFlagged: number;
  rules: Map<string, number>;
  /** Every tag set on any message (rule or module). */
  allTags: Set<string>;
  spamTags: Map<string, number>;
  hamTags: Map<string, number>;
  moduleTagsOnSpam: Set<string>;
}

async function tally(engine: SpamEngine, corpus: ReturnType<typeof loadCorpus>): Promise<Tally> {
  const t: Tally = { spam: 0, ham: 0, spamFlagged: 0, hamFlagged: 0, rules: new Map(), allTags: new Set(), spamTags: new Map(), hamTags: new Map(), moduleTagsOnSpam: new Set() };
  const inc = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
  for (const m of corpus) {
    const r = await engine.classify(m.raw);
    const flagged = r.action !== 'allow';
    if (m.isSpam) {
      t.spam++;
      if (flagged) t.spamFlagged++;
      for (const a of r.analysis) t.moduleTagsOnSpam.add(a.tag);
    } else {
      t.ham++;
      if (flagged) t.hamFlagged++;
    }
    for (const rule of new Set(r.matches.map((x) => x.rule))) inc(t.rules, rule);
    for (const tag of r.tags) {
      t.allTags.add(tag);
      if (!tag.startsWith('X_HDR_')) inc(m.isSpam ? t.spamTags : t.hamTags, tag);
    }
  }
  return t;
}

const pct = (a: number, b: number): string => `${((100 * a) / Math.max(b, 1)).toFixed(2)}%`;
const top = (m: Map<string, number>, n: number, total: number): string[] =>
  [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, n).map(([k, c]) => `${k} ${pct(c, total)}`);

export async function runMassCheck(): Promise<void> {
  const corpus = loadCorpus();
  const bundle = publicBundle();
  const rulesOnly = await tally(publicEngine(bundle), corpus);
  const full = await tally(analysisEngine(bundle), corpus);
  printTable(`mass-check: public rule set over ${corpus.length} messages (${rulesOnly.spam} spam, ${rulesOnly.ham} ham), DNS off`, [
    { run: 'rules only', 'spam flagged': pct(rulesOnly.spamFlagged, rulesOnly.spam), 'ham flagged': pct(rulesOnly.hamFlagged, rulesOnly.ham), 'public rules firing': `${rulesOnly.rules.size} of ${bundle.rules.length}` },
    { run: 'rules + all modules', 'spam flagged': pct(full.spamFlagged, full.spam), 'ham flagged': pct(full.hamFlagged, full.ham), 'public rules firing': `${full.rules.size} of ${bundle.rules.length}` },
  ]);
  const newly = [...full.rules.keys()].filter((r) => !rulesOnly.rules.has(r)).sort();
  process.stdout.write(`\nrules that fire only with the modules (${newly.length}): ${newly.join(', ')}\n`);
  process.stdout.write(`distinct module tags on spam: ${full.moduleTagsOnSpam.size}\n`);
  // Why the others stay silent: the tags each one reads that no message of the corpus got.
  const silent = bundle.rules.filter((r) => !full.rules.has(r.name));
  printTable(`public rules that never fire with the modules (${silent.length}): the tags they read that no corpus message has`, silent.map((r) => {
    const read = [...new Set([...JSON.stringify(r.condition).matchAll(/\$([A-Z0-9_]+)/g)].map((x) => x[1]!))];
    const absent = read.filter((t) => !full.allTags.has(t));
    return { rule: r.name, scope: r['@type'], 'tags read, never set on the corpus': read.length === 0 ? '(none read: its own condition matches no message)' : absent.length === 0 ? '(all occur, never together)' : absent.join(' ') };
  }));
  const s = top(full.spamTags, 20, full.spam);
  const h = top(full.hamTags, 20, full.ham);
  printTable('20 most frequent tags (rules + all modules; share of messages)', s.map((x, i) => ({ spam: x, ham: h[i] ?? '' })));
}
