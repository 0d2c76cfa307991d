/**
 * `spamrule lists`: the rule set's lookup lists. `update` downloads the remote (`HttpLookup`)
 * lists into the on-disk cache now; `show NAME KEY` answers a lookup as the rules would; `status`
 * lists every namespace with its size and age.
 */
import { parseCliArgs } from '../util/index.js';
import { defaultListCacheDir, HttpListStore, type HttpListOptions } from '../lookup/http-list.js';
import { StaticLookupList } from '../lookup/memory.js';
import { AddressPolicy } from '../net/index.js';
import { optionError } from './errors.js';
import { readRuleSet, RULESET_OPTIONS, type LoadedRuleSet } from './ruleset.js';

const HELP = `usage: spamrule lists update|status|show NAME KEY [--rules FILE]... [--list NS=FILE]... [--cache-dir DIR]

  update          download the remote (HttpLookup) lists of the rule set into the cache now
                  (timeout, size cap and format of each list as the rule set says); exit 1 if one fails
  status          every namespace: kind, entries, last download, stale or not
  show NAME KEY   does KEY exist in namespace NAME? (exit 0 found, 1 not found, 2 unknown namespace
                  or a remote list never downloaded)

  --rules FILE    the rule set (e.g. Stalwart's spam-filter-rules.json: its HttpLookup and MemoryLookupKey lists)
  --cache-dir DIR the on-disk cache (default ${defaultListCacheDir()})
  --list-allow-network CIDR
                  downloads may connect to this address or range although it is not public (an internal
                  list server; repeatable). Default: a list URL and its redirects must reach public addresses
  --json          JSON output
  --scores FILE, --score-spam N, --score-reject N, --score-discard N
                  taken as "classify" takes them, so that its command line can be reused (a --scores
                  file is read, and must be valid); they change nothing here
`;


function stores(set: LoadedRuleSet, cacheDir: string | undefined, allowedNetworks: readonly string[] | undefined): Map<string, HttpListStore> {
  const out = new Map<string, HttpListStore>();
  for (const h of set.httpLookups ?? []) {
    if (h.enable === false) continue;
    const o: HttpListOptions = {};
    if (cacheDir !== undefined) o.cacheDir = cacheDir;
    if (allowedNetworks !== undefined) o.allowedNetworks = allowedNetworks;
    out.set(h.namespace, new HttpListStore(h, o));
  }
  return out;
}

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = { ...RULESET_OPTIONS, 'list-allow-network': { type: 'string', multiple: true }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCliArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (e) {
    process.stderr.write(optionError('lists', e));
    return 2;
  }
  const v = args.values;
  const [sub, ...rest] = args.positionals;
  if (v.help || sub === undefined) {
    (v.help ? process.stdout : process.stderr).write(HELP);
    return v.help ? 0 : 2;
  }
  let set: LoadedRuleSet;
  const allowed = v['list-allow-network'];
  try {
    set = readRuleSet(v);
    // Refused here, once, rather than by every download.
    if (allowed !== undefined) new AddressPolicy(allowed);
  } catch (e) {
    process.stderr.write(`spamrule lists: ${(e as Error).message}\n`);
    return 2;
  }
  const remote = stores(set, v['cache-dir'], allowed);
  const out = process.stdout;
  // The built-in rule set has no lists: without --rules/--list there is nothing to act on, which is
  // a usage error rather than an empty answer.
  const noSource = (v.rules ?? []).length === 0 && (v.list ?? []).length === 0;
  const needRules = 'give --rules FILE (e.g. Stalwart\'s spam-filter-rules.json) or --list NS=FILE';
  switch (sub) {
    case 'update': {
      if (remote.size === 0) {
        if (noSource) {
          process.stderr.write(`spamrule lists update: the built-in rule set has no remote lists: give --rules FILE (e.g. Stalwart's spam-filter-rules.json)\n`);
          return 2;
        }
        process.stderr.write('spamrule lists update: the rule set has no enabled HttpLookup lists: nothing to download\n');
        if (v.json) out.write('[]\n');
        return 0;
      }
      let failed = 0;
      const rows: object[] = [];
      await Promise.all(
        [...remote].map(async ([ns, s]) => {
          const t0 = performance.now();
          // Read before the download: whether a copy from an earlier run is there to fall back on.
          const before = s.status();
          try {
            const r = await s.update();
            const ms = Math.round(performance.now() - t0);
            rows.push({ namespace: ns, ok: true, entries: r.entries, capped: r.capped, ms });
            if (!v.json) out.write(`${ns}: ${r.entries} ${r.entries === 1 ? 'entry' : 'entries'}${r.capped ? ' (capped at maxEntries)' : ''} in ${ms} ms\n`);
          } catch (e) {
            failed++;
            // The download error starts with "list NAME: " and may end "from URL", which the line already says.
            const why = (e as Error).message.replace(`list ${ns}: `, '').replace(` from ${before.url}`, '');
            const cached = before.fetchedAt > 0;
            rows.push({ namespace: ns, ok: false, url: before.url, error: why, cached });
            if (!v.json) {
              const fallback = cached
                ? `the cached copy of ${new Date(before.fetchedAt).toISOString()} (${before.entries} ${before.entries === 1 ? 'entry' : 'entries'}) stays in use`
                : 'no cached copy: the list stays empty until a download succeeds';
              out.write(`${ns}: FAILED: ${before.url}: ${why} (${fallback})\n`);
            }
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
      if (rows.length === 0) {
        if (noSource) {
          process.stderr.write(`spamrule lists status: the built-in rule set has no lookup lists: ${needRules}\n`);
          return 2;
        }
        if (!v.json) process.stderr.write('spamrule lists status: the rule set has no lookup lists\n');
        return 0;
      }
      if (!v.json) for (const r of rows) out.write(`${r.namespace.padEnd(28)} ${r.kind.padEnd(7)} ${String(r.entries).padStart(8)}${r.fetchedAt !== undefined ? `  fetched ${r.fetchedAt}${r.stale ? ' (stale)' : ''}` : ''}\n`);
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
        process.stderr.write(`spamrule lists show: no list named "${name}" in the ${noSource ? `built-in rule set: ${needRules}` : 'rule set'}\n`);
        return 2;
      }
      // A remote list that was never downloaded is empty: "not found" would be an answer it cannot give.
      if (store instanceof HttpListStore && store.status().fetchedAt === 0) {
        process.stderr.write(`spamrule lists show: list "${name}" has not been downloaded yet (run spamrule lists update with the same --rules${v['cache-dir'] !== undefined ? ' and --cache-dir' : ''})\n`);
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
