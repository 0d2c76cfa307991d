/**
 * The registry's StoreLookups in the engine: after every change (and at start), the stores whose
 * configuration changed are started again, those destroyed are closed. Each is checked against the
 * store policy before it starts (a store written before the policy, or by another server sharing the
 * registry), its host names resolved and checked too (src/lookup/store-policy.ts). A started store connects
 * to each host name at the address checked then (src/lookup/store-pins.ts), until it is started again.
 *
 * A store that is refused, fails to start, or names a host that gave no address is logged and not started:
 * its namespace gets a {@link NotStartedStore} (each lookup an error naming the namespace and why, as for a store
 * that is down), and the store it replaces, if any, is closed: a change accepted by `/set` always stops the old
 * configuration, never leaves it running. A store with a name that gave no address is tried again every
 * {@link UNRESOLVED_RETRY_MS} until it starts, changes or goes; a destroy removes the namespace.
 */
import { parseLookupStoreConfig } from '../lookup/config.js';
import { NotStartedStore } from '../lookup/not-started.js';
import type { PinnedHosts } from '../lookup/store-pins.js';
import { checkStorePolicy, resolveStorePins, type StoreHostResolver, type StorePolicy } from '../lookup/store-policy.js';
import type { EngineLike } from './bridge.js';
import type { Data } from './kind.js';

type Closable = { close(): Promise<void> };

/** How long a store whose host names gave no address waits before it is resolved and tried again (ms). */
export const UNRESOLVED_RETRY_MS = 30_000;

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
  /** Builds a store; `opts.pinned`: the addresses its connections go to (CreateLookupStoreOptions.pinned). */
  createLookupStore: ((namespace: string, config: unknown, opts: { pinned: PinnedHosts }) => Closable | Promise<Closable>) | undefined;
  /** How long a store with an unresolved name waits before it is tried again (ms); default {@link UNRESOLVED_RETRY_MS}. */
  retryMs?: number;
  policy: StorePolicy;
  resolve: StoreHostResolver;
  log: (line: string) => void;
}): StoreSync {
  const { engine, createLookupStore, policy, resolve, log } = opts;
  const retryMs = opts.retryMs ?? UNRESOLVED_RETRY_MS;
  // Lookup stores in the engine, by namespace, with the config they were built from (a NotStartedStore for one
  // that did not start); `retry`: not started because a name gave no address, so the same config is tried again.
  const applied = new Map<string, { json: string; store: Closable; retry?: boolean }>();
  let chain: Promise<void> = Promise.resolve();
  let retryTimer: NodeJS.Timeout | undefined;
  let closed = false;
  const refused = (problems: { path: string; message: string }[]): Error =>
    new Error(`refused by the store policy: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  const self: StoreSync = {
    sync(stored) {
      chain = chain.then(async () => {
        if (closed) return;
        const lookups = engine?.lookups;
        if (lookups === undefined || createLookupStore === undefined) return;
        const wanted = new Map([...stored()].map((d) => [d.namespace as string, d.store]));
        for (const [ns, cur] of applied)
          if (!wanted.has(ns)) {
            lookups.delete(ns);
            applied.delete(ns);
            await cur.store.close().catch(() => undefined);
          }
        for (const [ns, config] of wanted) {
          const json = JSON.stringify(config);
          const cur = applied.get(ns);
          if (cur?.json === json && cur.retry !== true) continue;
          // The store the namespace gets, and whether its configuration is tried again later.
          let next: { store: Closable; retry?: boolean };
          try {
            // The stored (wire) shape has `urls` as a {"url": true} map: the policy reads the parsed configuration.
            const parsed = parseLookupStoreConfig(config);
            if (!parsed.ok) throw new Error(`invalid configuration: ${parsed.errors.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
            const checked = checkStorePolicy(parsed.value, policy);
            if (!checked.ok) throw refused(checked.problems);
            // A host name is checked by the addresses it has now (at the /set, it had those of then), and
            // the store connects to those addresses only, whatever the name resolves to later.
            const pins = await resolveStorePins(checked.config, policy, resolve);
            if (!pins.ok && pins.unresolved.length > 0) {
              const names = pins.unresolved.map((n) => `"${n}"`).join(', ');
              const reason = `${names} gave no address (tried again every ${retryMs / 1000} s)`;
              scheduleRetry(stored);
              // Still down for the same reason on a retry: the namespace keeps its store (under serve, every
              // lookups.set is a rule-set update of each scan worker), and the log says it once, not every retry.
              if (cur?.json === json && cur.store instanceof NotStartedStore && cur.store.reason === reason) continue;
              log(`spamrule serve: lookup store "${ns}" not started: ${names} gave no address; tried again every ${retryMs / 1000} s`);
              next = { store: new NotStartedStore(ns, reason), retry: true };
            } else {
              if (!pins.ok) throw refused(pins.problems);
              next = { store: await createLookupStore(ns, checked.config, { pinned: pins.pinned }) };
              // The operator read "not started" once; say when a retry brought it up.
              if (cur?.json === json && cur.retry === true) log(`spamrule serve: lookup store "${ns}" started: its host names resolve now`);
            }
          } catch (e) {
            // A LookupConfigError (a secret that cannot be read) names the store already.
            const message = e instanceof Error ? e.message : String(e);
            const own = `lookup store "${ns}": `;
            const why = message.startsWith(own) ? message.slice(own.length) : message;
            log(`spamrule serve: lookup store "${ns}" not started: ${why}`);
            next = { store: new NotStartedStore(ns, why) };
          }
          // The namespace's lookups go to the new store (or fail as not started) before the old one closes.
          lookups.set(ns, next.store);
          applied.set(ns, { json, ...next });
          if (cur !== undefined && cur.store !== next.store) await cur.store.close().catch(() => undefined);
        }
      });
      // A sync that throws (the engine refusing a store) must not stop the ones after it.
      chain = chain.catch((e: unknown) => log(`spamrule serve: lookup stores not brought in line: ${e instanceof Error ? e.message : String(e)}`));
    },
    settled: () => chain,
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      await chain;
      for (const { store } of applied.values()) await store.close().catch(() => undefined);
    },
  };
  /** One pending retry at a time; it syncs against the registry as it is then. */
  const scheduleRetry = (stored: () => Iterable<Data>): void => {
    if (retryTimer !== undefined || closed) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      self.sync(stored);
    }, retryMs);
    retryTimer.unref();
  };
  return self;
}
