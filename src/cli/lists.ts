/**
 * `spamrule lists`: the rule set's lookup lists. `update` downloads the remote (`HttpLookup`)
 * lists into the on-disk cache now; `show NAME KEY` answers a lookup as the rules would; `status`
 * lists every namespace with its size and age.
 */
import { parseArgs } from 'node:util';
import { defaultListCacheDir, HttpListStore, type HttpListOptions } from '../lookup/http-list.js';
import { StaticLookupList } from '../lookup/memory.js';
import { readRuleSet, RULESET_OPTIONS, type LoadedRuleSet } from './ruleset.js';

const HELP = `usage: spamrule lists update|status|show NAME KEY [--rules FILE]... [--list NS=FILE]... [--cache-dir DIR]

  update          download the remote (HttpLookup) lists of the rule set into the cache now
                  (timeout, size cap and format of each list as the rule set says); exit 1 if one fails
  status          every namespace: kind, entries, last download, stale or not
  show NAME KEY   does KEY exist in namespace NAME? (exit 0 found, 1 not found, 2 unknown namespace)

  --rules FILE    the rule set (e.g. Stalwart's spam-filter-rules.json: its HttpLookup and MemoryLookupKey lists)
  --cache-dir DIR the on-disk cache (default ${defaultListCacheDir()})
  --json          JSON output
`;

function stores(set: LoadedRuleSet, cacheDir: string | undefined): Map<string, HttpListStore> {
  const out = new Map<string, HttpListStore>();
  for (const h of set.httpLookups ?? []) {
    if (h.enable === false) continue;
    const o: HttpListOptions = {};
    if (cacheDir !== undefined) o.cacheDir = cacheDir;
    out.set(h.namespace, new HttpListStore(h, o));
  }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({ args: argv, allowPositionals: true, options: { ...RULESET_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    process.stderr.write(`spamrule lists: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  const v = args.values;
  const [sub, ...rest] = args.positionals;
  if (v.help || sub === undefined) {
    (v.help ? process.stdout : process.stderr).write(HELP);
    return v.help ? 0 : 2;
  }
  let set: LoadedRuleSet;
  try {
    set = readRuleSet(v);
  } catch (e) {
    process.stderr.write(`spamrule lists: ${(e as Error).message}\n`);
    return 2;
  }
  const remote = stores(set, v['cache-dir']);
  const out = process.stdout;
  switch (sub) {
    case 'update': {
      if (remote.size === 0) {
        process.stderr.write('spamrule lists: the rule set has no enabled HttpLookup lists (use --rules FILE)\n');
        return 0;
      }
      let failed = 0;
      const rows: object[] = [];
      await Promise.all(
        [...remote].map(async ([ns, s]) => {
          const t0 = performance.now();
          try {
            const r = await s.update();
            const ms = Math.round(performance.now() - t0);
            rows.push({ namespace: ns, ok: true, entries: r.entries, capped: r.capped, ms });
            if (!v.json) out.write(`${ns}: ${r.entries} entries${r.capped ? ' (capped at maxEntries)' : ''} in ${ms} ms\n`);
          } catch (e) {
            failed++;
            rows.push({ namespace: ns, ok: false, error: (e as Error).message });
            if (!v.json) out.write(`${ns}: FAILED: ${(e as Error).message} (the cached copy stays in use)\n`);
          }
        }),
      );
      if (v.json) out.write(JSON.stringify(rows) + '\n');
      return failed > 0 ? 1 : 0;
    }
    case 'status': {
      const rows: { namespace: string; kind: string; entries: number; fetchedAt?: string; stale?: boolean }[] = [];
      for (const [ns, entries] of set.lists) rows.push({ namespace: ns, kind: 'static', entries: entries.length });
      for (const [ns, s] of remote) {
        const st = s.status();
        rows.push({ namespace: ns, kind: 'remote', entries: st.entries, fetchedAt: st.fetchedAt > 0 ? new Date(st.fetchedAt).toISOString() : 'never', stale: st.stale });
      }
      if (v.json) out.write(JSON.stringify(rows) + '\n');
      else for (const r of rows) out.write(`${r.namespace.padEnd(28)} ${r.kind.padEnd(7)} ${String(r.entries).padStart(8)}${r.fetchedAt !== undefined ? `  fetched ${r.fetchedAt}${r.stale ? ' (stale)' : ''}` : ''}\n`);
      return 0;
    }
    case 'show': {
      const [name, key] = rest;
      if (name === undefined || key === undefined) {
        process.stderr.write(`spamrule lists show: expected NAME KEY\n\n${HELP}`);
        return 2;
      }
      const stat = set.lists.get(name);
      const store = stat !== undefined ? new StaticLookupList(name, stat) : remote.get(name);
      if (store === undefined) {
        process.stderr.write(`spamrule lists: no list named "${name}" in the rule set\n`);
        return 2;
      }
      const found = await store.keyExists(key);
      if (v.json) out.write(JSON.stringify({ namespace: name, key, found }) + '\n');
      else out.write(`${name} ${JSON.stringify(key)}: ${found ? 'found' : 'not found'}\n`);
      return found ? 0 : 1;
    }
    default:
      process.stderr.write(`spamrule lists: unknown subcommand "${sub}"\n\n${HELP}`);
      return 2;
  }
}
