/**
 * The lookup map a rule set's sources give: static lists, remote lists (`HttpLookup`) and managed
 * StoreLookups, by namespace. Shared by `spamrule classify`/`lint` (src/cli/ruleset.ts) and by the
 * servers' rule-set specs (src/server/ruleset.ts), so that both resolve a namespace the same way.
 */
import { createLookupStore } from './factory.js';
import { LookupConfigError } from './config.js';
import { HttpListStore, type HttpListOptions, type HttpLookupInput } from './http-list.js';
import { LookupMap, StaticLookupList, type StaticEntry } from './memory.js';
import { NotStartedStore } from './not-started.js';
import type { PinnedHosts } from './store-pins.js';

/** The lookup sources of a rule set. */
export interface LookupSources {
  /** Static lists by namespace: MemoryLookupKey(Value) entries, or plain keys (`--list NS=FILE`). */
  lists?: Iterable<readonly [string, readonly (StaticEntry | string)[]]>;
  /** Remote lists, served from their on-disk cache. Disabled ones (`enable: false`) are left out. */
  httpLookups?: readonly HttpLookupInput[];
  /**
   * Managed StoreLookups: namespace and `x:LookupStore` configuration (validated here), and for one written
   * over JMAP the addresses its connections are pinned to (`CreateLookupStoreOptions.pinned`). `notStarted`:
   * the StoreLookup could not be started, and why; its namespace gets a `NotStartedStore` (every lookup fails
   * with that reason) and `config` is not read.
   */
  stores?: readonly { namespace: string; config: unknown; pinned?: PinnedHosts; notStarted?: string }[];
}

export interface LookupSourceOptions {
  /** Refresh stale remote lists in the background (false: serve the on-disk cache only). */
  autoRefresh: boolean;
  /** Folder of the remote lists' on-disk cache (default: HttpListStore's). */
  cacheDir?: string;
  /**
   * Addresses or CIDR ranges remote list downloads may connect to although they are not public (an
   * internal list server); default none (`HttpListOptions.allowedNetworks`).
   */
  allowedNetworks?: readonly string[];
  /** Told of each store left out (invalid configuration, unreadable secret) and of remote-list errors. */
  warn: (msg: string) => void;
  /**
   * The stores' `BreakerOptions.slowCallMs` (ms; 0 = off): pass the engine's `ruleWaitMs`, so that a
   * store counts as failing from the moment no rule waits for it any more. Default: the breaker's.
   */
  slowCallMs?: number;
}

/**
 * One LookupMap of all the sources. Precedence by namespace: a managed store wins over a static list,
 * which wins over a remote list. A store whose configuration is refused or cannot be created is
 * reported through `warn` and gets a `NotStartedStore`, as one marked `notStarted` does: its lookups fail with
 * the reason (in the verdict's `errors`), the other rules still run. Nothing connects here (stores connect on first use). Never throws for a bad source.
 */
export function buildLookupMap(src: LookupSources, opts: LookupSourceOptions): LookupMap {
  const { warn } = opts;
  const lookups = new LookupMap();
  for (const [ns, entries] of src.lists ?? []) lookups.set(ns, new StaticLookupList(ns, entries));
  for (const h of src.httpLookups ?? []) {
    if (h.enable === false || lookups.get(h.namespace) !== undefined) continue;
    const o: HttpListOptions = {
      autoRefresh: opts.autoRefresh,
      onError: (e) => warn(`${e.message} (${h.url})`),
      // Otherwise a list that was never fetched (classify makes no download) answers nothing, unsaid.
      onNeverDownloaded: () => warn(`remote list ${h.namespace} was never downloaded: its lookups answer nothing (run "spamrule lists update")`),
    };
    if (opts.cacheDir !== undefined) o.cacheDir = opts.cacheDir;
    if (opts.allowedNetworks !== undefined) o.allowedNetworks = opts.allowedNetworks;
    lookups.set(h.namespace, new HttpListStore(h, o));
  }
  for (const s of src.stores ?? []) {
    if (s.notStarted !== undefined) {
      lookups.set(s.namespace, new NotStartedStore(s.namespace, s.notStarted));
      continue;
    }
    try {
      // createLookupStore validates the configuration (once) and resolves its secrets.
      lookups.set(
        s.namespace,
        createLookupStore(s.namespace, s.config, {
          ...(opts.slowCallMs === undefined ? {} : { breaker: { slowCallMs: opts.slowCallMs } }),
          ...(s.pinned === undefined ? {} : { pinned: s.pinned }),
        }),
      );
    } catch (e) {
      // An invalid configuration is told by its problems; anything else (a secret) by its message.
      const problems = e instanceof LookupConfigError ? e.problems : [];
      const why = problems.length > 0 ? problems.map((p) => `${p.path}: ${p.message}`).join('; ') : (e as Error).message;
      warn(`store "${s.namespace}" not started: ${why}`);
      // As a managed store that cannot start (src/jmap/store-sync.ts): each lookup fails with the reason, reported in
      // the verdict's errors, rather than answering "" as an unknown namespace would, unsaid after this warning.
      lookups.set(s.namespace, new NotStartedStore(s.namespace, why));
    }
  }
  return lookups;
}
