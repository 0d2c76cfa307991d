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
 * facade only records each store's configuration. `onConnectionRefused` hears of each connection
 * closed on accept (the connection caps, `limits.maxConnections` and `limits.maxConnectionsPerPeer`).
 */
export async function startManaged(
  c: ServeConfig,
  listen: { host: string; port: number },
  pool: import('../server/pool.js').SpamEnginePool,
  warn: (m: string) => void,
  learner?: import('../classifier/index.js').Learner,
  onConnectionRefused?: JmapServerOptions['onConnectionRefused'],
): Promise<JmapServer> {
  const { createJmapServer } = await import('../jmap/index.js');
  const { parseLookupStoreConfig } = await import('../lookup/index.js');
  // Each store's configuration and, for one written over JMAP, the addresses its connections are pinned to.
  type Entry = { config: unknown; pinned?: PinnedHosts };
  const stores = new Map<string, Entry>(pool.ruleSet.stores?.map((s) => [s.namespace, { config: s.config, ...(s.pinned ? { pinned: s.pinned } : {}) }]) ?? []);
  const pushStores = (): void => {
    pool.update({ stores: [...stores].map(([namespace, e]) => ({ namespace, ...e })) });
  };
  type Recorded = Entry & { close(): Promise<void> };
  return createJmapServer({
    ...jmapServerOptions(c, listen, learner),
    ...(onConnectionRefused !== undefined ? { onConnectionRefused } : {}),
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
          const { config, pinned } = store as Recorded;
          stores.set(namespace, { config, ...(pinned ? { pinned } : {}) });
          pushStores();
        },
        delete: (namespace: string) => {
          stores.delete(namespace);
          pushStores();
        },
      },
    },
    // The workers connect where `pinned` says (src/lookup/store-pins.ts).
    createLookupStore: (namespace: string, config: unknown, opts: { pinned: PinnedHosts }): Recorded => {
      const parsed = parseLookupStoreConfig(config);
      if (!parsed.ok) throw new Error(`store "${namespace}": ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
      return { config, pinned: opts.pinned, close: async () => undefined };
    },
  });
}
