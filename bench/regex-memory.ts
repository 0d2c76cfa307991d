/**
 * Memory of the regex DFA caches (src/expr/regex-cache.ts): a rule set of Body rules whose patterns
 * have exponentially many DFA states (`[ab]*a[ab]{16}c`: one per 16-letter history) classifies mail
 * whose text is random a/b, so that every new character can be a new state of every pattern: the
 * worst case of a rule set that is hostile, or merely has many patterns over varied mail. The same
 * messages run without a budget, then with the default one, in this process; the table gives the
 * heap after each (after a full collection), the caches' bytes by re2js's count, the caches dropped,
 * the time, and whether the tags are the same.
 *
 * Run: `npx tsx bench/regex-memory.ts [patterns] [messages]` (also `--only regex-memory`).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SpamEngine, type SpamRuleInput } from '../src/engine/index.js';
import { clearRegexCaches, DEFAULT_REGEX_CACHE_BYTES, regexCacheStats, setRegexCacheBudget } from '../src/expr/index.js';
import { prng } from '../src/util/index.js';
import { printTable } from './common.js';

/** A full collection, so that the heap figures hold what is live only. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function rules(count: number): SpamRuleInput[] {
  const out: SpamRuleInput[] = [];
  for (let i = 0; out.length < count; i++) {
    const [first, last] = [['a', 'b'][i % 2]!, 'cdefghijklmnopqrstuvwxyz'[Math.floor(i / 2) % 24]!];
    const pattern = `[ab]*${first}[ab]{${12 + (Math.floor(i / 48) % 5) * 2}}${last}`;
    out.push({ '@type': 'Body', name: `R${i}`, enable: true, priority: 600, condition: { match: [{ if: `matches('${pattern}', value)`, then: "'HIT'" }], else: 'false' } });
  }
  return out;
}

/** 16 KB of random a/b, with another letter every 200 (the literal each pattern's prefilter looks for). */
function messages(count: number): string[] {
  const next = prng(42);
  return Array.from({ length: count }, () => {
    let body = '';
    for (let j = 0; j < 16_384; j++) body += j % 200 === 199 ? 'cdefghijklmnopqrstuvwxyz'[Math.floor(next() * 24)]! : next() < 0.5 ? 'a' : 'b';
    return `From: a@example.com\r\nTo: b@example.com\r\nSubject: x\r\nContent-Type: text/plain\r\n\r\n${body.replace(/(.{76})/g, '$1\r\n')}\r\n`;
  });
}

export async function runRegexMemoryBench(patterns = 96, count = 6): Promise<void> {
  const gc = collector();
  const mail = messages(count);
  const rows: Record<string, string | number>[] = [];
  let first: string | undefined;
  for (const budget of [Infinity, DEFAULT_REGEX_CACHE_BYTES]) {
    setRegexCacheBudget(budget);
    clearRegexCaches();
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const evictions0 = regexCacheStats().evictions;
    const engine = new SpamEngine({ rules: rules(patterns), analysis: false, timeBudgetMs: 0 });
    const t0 = performance.now();
    const tags: string[] = [];
    for (const m of mail) tags.push((await engine.classify(m)).tags.join(' '));
    const ms = performance.now() - t0;
    gc();
    const s = regexCacheStats();
    const same = (first ??= tags.join('\n')) === tags.join('\n');
    rows.push({
      budget: budget === Infinity ? 'none' : `${budget / 2 ** 20} MiB`,
      'heap growth MB': ((process.memoryUsage().heapUsed - heap0) / 1e6).toFixed(1),
      'caches MiB (re2js count)': (s.bytes / 2 ** 20).toFixed(1),
      'patterns holding a cache': s.warmPrograms,
      'caches dropped': s.evictions - evictions0,
      'classify ms/message': (ms / count).toFixed(0),
      'same tags': same ? 'yes' : 'NO',
    });
  }
  setRegexCacheBudget(DEFAULT_REGEX_CACHE_BYTES);
  clearRegexCaches();
  printTable(`regex DFA caches: ${patterns} patterns with growing DFAs over ${count} messages of 16 KB`, rows);
}

if (import.meta.url === `file://${process.argv[1]}`) await runRegexMemoryBench(Number(process.argv[2] ?? 96), Number(process.argv[3] ?? 6));
