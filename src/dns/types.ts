/**
 * The one DNS interface analysis modules and DNS blocklists use (docs/dns.md).
 *
 * An answer is records, NXDOMAIN (also used for "no records of this type", NODATA: Stalwart treats
 * both as a definite "no"), or an error (timeout, SERVFAIL, refused, over the per-message cap).
 * A failed query sets no tag, as in Stalwart. Resolvers never throw and never reject.
 */

export type DnsType = 'A' | 'AAAA' | 'MX' | 'PTR' | 'TXT';

/** One MX record: preference and exchange (lowercased, no trailing dot). */
export interface MxRecord {
  preference: number;
  exchange: string;
}

/** Record payloads per type: A/AAAA addresses as text, PTR names without trailing dot, TXT strings joined per record. */
export interface DnsRecordMap {
  A: string;
  AAAA: string;
  MX: MxRecord;
  PTR: string;
  TXT: string;
}

export type DnsAnswer<T extends DnsType = DnsType> =
  /** At least one record. `ttlMs`: the smallest TTL of the answer, in milliseconds, when known. */
  | { status: 'ok'; records: DnsRecordMap[T][]; ttlMs?: number }
  /** NXDOMAIN, or the name exists with no record of this type. */
  | { status: 'nxdomain' }
  /** Timeout, SERVFAIL, refused, network error, query cap reached, resolver off. */
  | { status: 'error'; error: string };

export interface Resolver {
  /**
   * Looks `name` up (no trailing dot; a PTR query takes the IP address itself). Never rejects.
   * Implementations: the system resolver (timeouts, TTL cache, negative cache), a static map, `off`.
   */
  query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>>;
  /**
   * Optional: makes every query still in flight answer `error` at once, the resolver staying usable
   * (`SystemResolver`: queries c-ares still retries, which keep the process alive up to the resolver's
   * `timeoutMs`). `SpamEngine.close()` calls it.
   */
  cancel?(): void;
}
