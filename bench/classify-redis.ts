/**
 * Classify throughput when the public rule set's `key_exists` lists (trusted-domains,
 * url-redirectors, surbl-hashbl) live in Redis instead of memory (issue 3 "Speed"), with and
 * without the LRU read cache, against the in-memory lists measured in the same run.
 */
import { Bench } from 'tinybench';
import { createLookupStore, LookupMap, type LookupStore } from '../src/lookup/index.js';
import { startRedis } from '../test/servers/index.js';
import { loadCorpus, printTable, publicBundle, publicEngine, stats } from './common.js';

export async function runClassifyRedisBench(opts: { timeMs?: number } = {}): Promise<void> {
  const bundle = publicBundle();
  const corpus = loadCorpus();
  const redis = await startRedis();
  const opened: LookupStore[] = [];
  try {
    const plainMap = new LookupMap();
    const cachedMap = new LookupMap();
    for (const [ns, entries] of bundle.lists) {
      const plain = createLookupStore(ns, { '@type': 'Redis', url: redis.url }, { cache: { enabled: false } });
      const cached = createLookupStore(ns, { '@type': 'Redis', url: redis.url }, { cache: { ttlMs: 60_000, max: 50_000 } });
      opened.push(plain, cached);
      // One Redis database serves all three lists; keys are disjoint domains, values "1".
      await Promise.all(entries.map((e) => plain.keySet(e.key, '1')));
      plainMap.set(ns, plain);
      cachedMap.set(ns, cached);
    }
    const engines = {
      'lists in memory (baseline)': publicEngine(bundle),
      'lists in Redis, no cache': publicEngine(bundle, plainMap),
      'lists in Redis, LRU cache': publicEngine(bundle, cachedMap),
    };
    const bench = new Bench({ time: opts.timeMs ?? 3000, warmup: true, warmupTime: 500 });
    for (const [name, engine] of Object.entries(engines)) {
      let i = 0;
      bench.add(name, async () => {
        const r = await engine.classify(corpus[i++ % corpus.length]!.raw);
        if (r.errors.length > 0) throw new Error(`${name}: ${r.errors[0]!.message}`);
      });
    }
    await bench.run();
    const base = stats(bench, 'lists in memory (baseline)');
    printTable('classify throughput: public rule set lists in memory vs Redis', Object.keys(engines).map((name) => {
      const s = stats(bench, name);
      return { lists: name, 'msg/s': s.hz.toFixed(0), 'mean µs': (s.meanMs * 1000).toFixed(0), ratio: (s.hz / base.hz).toFixed(2) };
    }));
  } finally {
    await Promise.allSettled(opened.map((s) => s.close()));
    await redis.stop();
  }
}
