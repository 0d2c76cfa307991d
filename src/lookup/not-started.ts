/**
 * The store a namespace has while its StoreLookup could not be started: every call rejects at once with a
 * {@link LookupStoreError} naming the namespace and why, so that the rules using it fail as with a store that is
 * down (an entry in `classify`'s `errors`, the other rules still running; docs/lookup-stores.md "Faults"),
 * rather than answering as an unknown namespace (`""`) or reaching a store that was replaced.
 *
 * Used for a StoreLookup written over JMAP whose configuration is refused by the store policy, names a host that
 * gives no address, or cannot be created when it is (re)started (src/jmap/store-sync.ts, docs/jmap.md), in the
 * JMAP server's own engine and, as `RuleSetSpec.stores[].notStarted`, in `spamrule serve`'s scan workers.
 */
import { LookupStoreError, type LookupStore, type SqlResult } from './types.js';

export class NotStartedStore implements LookupStore {
  readonly type = 'NotStarted';

  /**
   * @param namespace the StoreLookup's namespace, named in every error.
   * @param reason why it is not started, e.g. `"db.example" gave no address (tried again every 30 s)`.
   */
  constructor(
    readonly namespace: string,
    readonly reason: string,
  ) {}

  /** The error every call rejects with: `lookup store "<ns>": not started: <reason>`. */
  private fail(): Promise<never> {
    return Promise.reject(new LookupStoreError(this.namespace, `not started: ${this.reason}`));
  }

  keyGet(): Promise<string | number | null> {
    return this.fail();
  }
  keyExists(): Promise<boolean> {
    return this.fail();
  }
  keySet(): Promise<void> {
    return this.fail();
  }
  counterGet(): Promise<number> {
    return this.fail();
  }
  counterIncr(): Promise<number> {
    return this.fail();
  }
  /** Present so that `sql_query` fails with the same error (the store it stands for may be an SQL one). */
  sqlQuery(): Promise<SqlResult> {
    return this.fail();
  }
  /** Nothing to release. */
  async close(): Promise<void> {}
}
