/**
 * The managed registry side of `spamrule serve` (`--db`): the JMAP facade over the scan pool, the
 * classifier learner its training samples go to, and the store policy the operator sets for the
 * StoreLookups written over JMAP (docs/deployment.md "Managed stores").
 */
import type { JmapServer, JmapServerOptions } from '../jmap/index.js';
import type { ServeConfig } from '../server/config.js';
import type { PinnedHosts } from '../lookup/index.js';
import { modelLocationKind, modelStoreConfig } from '../classifier/location.js';

/**
 * What StoreLookups written over JMAP may reach: the config file's `managedStores` (or the
 * `--secret-file-dir`, `--secret-env-prefix`, `--sqlite-store-dir`, `--store-allow-host` flags), and the `--model` file, which no
 * Sqlite store may open. The JMAP server adds the defaults (src/jmap/server.ts): no `File` or
 * `EnvironmentVariable` secret, Sqlite files in the registry's directory, the registry protected.
 */
export function storePolicyOf(c: ServeConfig): NonNullable<JmapServerOptions['storePolicy']> {
  const m = c.managedStores ?? {};
  return {
    ...(m.secretFileDirs !== undefined ? { secretFileDirs: m.secretFileDirs } : {}),
    ...(m.secretEnvPrefixes !== undefined ? { secretEnvPrefixes: m.secretEnvPrefixes } : {}),
    ...(m.sqliteDir !== undefined ? { sqliteDir: m.sqliteDir } : {}),
    ...(m.allowedHosts !== undefined ? { allowedHosts: m.allowedHosts } : {}),
    protectedFiles: c.model !== undefined && modelLocationKind(c.model) === 'file' ? [c.model] : [],
  };
}

/** Samples from rspamd's learn commands and JMAP go to the `--model` file or store; a run trains 10 s after the last. */
export async function modelLearner(model: string, warn: (m: string) => void): Promise<import('../classifier/index.js').Learner> {
  const cls = await import('../classifier/index.js');
  // This classifier only stores samples and starts training; it never classifies (the scan workers
  // have their own), so it needs no language resources.
  return cls.debouncedLearner(cls.liveClassifier(modelStoreConfig({ model }), { refreshMs: 0, preload: false }), 10_000, (e) => warn(`classifier training failed: ${e.message}`));
}

/**
 * What every JMAP server `serve` starts takes from the configuration: the registry (`db`, `pg`), the
 * capability, the address, the connection caps, the store policy, and the training samples' learner.
 */
export function jmapServerOptions(
  c: ServeConfig, listen: { host: string; port: number }, learner: import('../classifier/index.js').Learner | undefined,
): Pick<JmapServerOptions, 'db' | 'pg' | 'capability' | 'host' | 'port' | 'maxConnections' | 'maxConnectionsPerPeer' | 'storePolicy' | 'trainingSamples'> {
  return {
    db: c.db!,
    pg: c.pg,
    capability: c.capability,
    ...listen,
    maxConnections: c.limits?.maxConnections,
    maxConnectionsPerPeer: c.limits?.maxConnectionsPerPeer,
    storePolicy: storePolicyOf(c),
    ...sampleSinkOption(learner),
  };
}

/** The JMAP server's `trainingSamples` option over a learner (none without a model). */
export function sampleSinkOption(learner: import('../classifier/index.js').Learner | undefined): { trainingSamples?: import('../jmap/index.js').TrainingSampleSink } {
  return learner === undefined ? {} : { trainingSamples: { add: (raw, spam, o) => learner.learn(raw, spam, o), remove: (id) => learner.forget(id) } };
}


/**
 * The JMAP facade over the pool: rule changes and StoreLookup changes become pool updates, which
 * reach every worker before its next message. Store connections are opened in the workers, so the
 * facade only records each store's configuration (or, for one that could not be started, why: the workers
 * then fail its lookups, src/jmap/store-sync.ts). `onConnectionRefused` hears of each connection closed on
 * accept (the connection caps, `limits.maxConnections` and `limits.maxConnectionsPerPeer`). `storeStart`: the
 * resolver of the store policy's address check and the retry delay of a store whose name gave no address
 * (JmapServerOptions `resolveStoreHost`, `storeRetryMs`; default the system resolver and 30 s).
 */
export async function startManaged(
  c: ServeConfig,
  listen: { host: string; port: number },
  pool: import('../server/pool.js').SpamEnginePool,
  warn: (m: string) => void,
  learner?: import('../classifier/index.js').Learner,
  onConnectionRefused?: JmapServerOptions['onConnectionRefused'],
  storeStart: Pick<JmapServerOptions, 'resolveStoreHost' | 'storeRetryMs'> = {},
): Promise<JmapServer> {
  const { createJmapServer } = await import('../jmap/index.js');
  const { createLookupStore, NotStartedStore } = await import('../lookup/index.js');
  // Each store's configuration and, for one written over JMAP, the addresses its connections are pinned to, or
  // (`notStarted`, config null) why it could not be started: the workers then fail its lookups (RuleSetSpec.stores).
  type Entry = { config: unknown; pinned?: PinnedHosts; notStarted?: string };
  const stores = new Map<string, Entry>(
    pool.ruleSet.stores?.map((s) => [s.namespace, { config: s.config, ...(s.pinned ? { pinned: s.pinned } : {}), ...(s.notStarted !== undefined ? { notStarted: s.notStarted } : {}) }]) ?? [],
  );
  const pushStores = (): void => {
    pool.update({ stores: [...stores].map(([namespace, e]) => ({ namespace, ...e })) });
  };
  type Recorded = Entry & { close(): Promise<void> };
  return createJmapServer({
    ...jmapServerOptions(c, listen, learner),
    ...(onConnectionRefused !== undefined ? { onConnectionRefused } : {}),
    ...storeStart,
    log: warn,
    // The pool stands in for the engine: every registry type reaches each worker thread as a rule-set update.
    engine: {
      loadRules: (rules) => pool.loadRules(rules as never),
      loadTags: (tags) => pool.update({ tags: tags as never }),
      loadHttpLookups: (lists) => pool.update({ httpLookups: lists as never }),
      // `undefined` while analysis is off (--no-analysis): DNSBL servers and file extensions then wait unused.
      get analysis() {
        const a = pool.ruleSet.engine?.analysis;
        return a === false ? undefined : ((a ?? {}) as Record<string, unknown>);
      },
      set analysis(next: Record<string, unknown> | undefined) {
        if (next !== undefined) pool.update({ engine: { ...pool.ruleSet.engine, analysis: next as never } });
      },
      lookups: {
        set: (namespace: string, store: unknown) => {
          // A store that could not be (re)started: the workers drop the configuration they ran (a change to it
          // may be what revokes it) and answer its lookups with the error, as the in-process engine does.
          if (store instanceof NotStartedStore) stores.set(namespace, { config: null, notStarted: store.reason });
          else {
            const { config, pinned } = store as Recorded;
            stores.set(namespace, { config, ...(pinned ? { pinned } : {}) });
          }
          pushStores();
        },
        delete: (namespace: string) => {
          stores.delete(namespace);
          pushStores();
        },
      },
    },
    // The workers connect where `pinned` says (src/lookup/store-pins.ts). The store is built here too (which
    // validates it) and closed before it connects (nothing connects before a first call), so that what makes its
    // construction throw in a worker (a secret that cannot be read) leaves it not started, as in the JMAP
    // server's own engine, rather than left out by the workers.
    createLookupStore: async (namespace: string, config: unknown, opts: { pinned: PinnedHosts }): Promise<Recorded> => {
      await createLookupStore(namespace, config, { pinned: opts.pinned }).close();
      return { config, pinned: opts.pinned, close: async () => undefined };
    },
  });
}
