/**
 * The registry's StoreLookups in the engine: after every change (and at start), the stores whose
 * configuration changed are started again, those destroyed are closed. Each is checked against the
 * store policy before it starts (a store written before the policy, or by another server sharing the
 * registry), its host names resolved and checked too (src/lookup/store-policy.ts); one that is refused
 * or fails to start is logged and not started.
 */
import { parseLookupStoreConfig } from '../lookup/config.js';
import { checkStoreAddresses, checkStorePolicy, type StoreHostResolver, type StorePolicy } from '../lookup/store-policy.js';
import type { EngineLike } from './bridge.js';
import type { Data } from './kind.js';

type Closable = { close(): Promise<void> };

export interface StoreSync {
  /** Brings the engine's stores in line with the StoreLookups `stored()` gives when its turn comes (after the syncs before it). */
  sync(stored: () => Iterable<Data>): void;
  /** Resolves once every sync asked for so far is done. */
  settled(): Promise<void>;
  /** Closes every store started (after the syncs under way). */
  close(): Promise<void>;
}

export function storeSync(opts: {
  engine: EngineLike | undefined;
  createLookupStore: ((namespace: string, config: unknown) => Closable | Promise<Closable>) | undefined;
  policy: StorePolicy;
  resolve: StoreHostResolver;
  log: (line: string) => void;
}): StoreSync {
  const { engine, createLookupStore, policy, resolve, log } = opts;
  // Lookup stores in the engine, by namespace, with the config they were built from.
  const applied = new Map<string, { json: string; store?: Closable }>();
  let chain: Promise<void> = Promise.resolve();
  const refused = (problems: { path: string; message: string }[]): Error =>
    new Error(`refused by the store policy: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  return {
    sync(stored) {
      chain = chain.then(async () => {
        const lookups = engine?.lookups;
        if (lookups === undefined || createLookupStore === undefined) return;
        const wanted = new Map([...stored()].map((d) => [d.namespace as string, d.store]));
        for (const [ns, cur] of applied)
          if (!wanted.has(ns)) {
            lookups.delete(ns);
            applied.delete(ns);
            await cur.store?.close().catch(() => undefined);
          }
        for (const [ns, config] of wanted) {
          const json = JSON.stringify(config);
          const cur = applied.get(ns);
          if (cur?.json === json) continue;
          try {
            // The stored (wire) shape has `urls` as a {"url": true} map: the policy reads the parsed configuration.
            const parsed = parseLookupStoreConfig(config);
            if (!parsed.ok) throw new Error(`invalid configuration: ${parsed.errors.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
            const checked = checkStorePolicy(parsed.value, policy);
            if (!checked.ok) throw refused(checked.problems);
            // A host name is checked by the addresses it has now (at the /set, it had those of then).
            const addresses = await checkStoreAddresses(checked.config, policy, resolve);
            if (addresses.length > 0) throw refused(addresses);
            const store = await createLookupStore(ns, checked.config);
            lookups.set(ns, store);
            applied.set(ns, { json, store });
          } catch (e) {
            log(`spamrule serve: lookup store "${ns}" not started: ${e instanceof Error ? e.message : String(e)}`);
            applied.set(ns, { json });
          }
          await cur?.store?.close().catch(() => undefined);
        }
      });
    },
    settled: () => chain,
    async close() {
      await chain;
      for (const { store } of applied.values()) await store?.close().catch(() => undefined);
    },
  };
}
