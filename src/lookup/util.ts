/** Helpers shared by the database adapters: per-call timeouts and `sql_query` result shaping. */
import { LookupStoreError, type LookupValue, type SqlResult } from './types.js';

/**
 * Runs `work` and rejects with a LookupStoreError naming `namespace` if it has not settled within `ms`
 * milliseconds (the store's `timeout`), or if it fails. The late result of a timed-out call is swallowed so
 * no rejection goes unhandled. `ms` null/0 means no timeout.
 */
export function withTimeout<T>(namespace: string, op: string, ms: number | null | undefined, work: () => Promise<T>): Promise<T> {
  let p: Promise<T>;
  try {
    p = work();
  } catch (e) {
    return Promise.reject(wrapError(namespace, op, e));
  }
  if (!ms) return p.catch((e) => Promise.reject(wrapError(namespace, op, e)));
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new LookupStoreError(namespace, `${op} timed out after ${ms} ms`)), ms);
    timer.unref?.();
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(wrapError(namespace, op, e));
      },
    );
  });
}

/**
 * A LookupStoreError for a request the adapter refuses by itself (a value over a packet limit, a result
 * over the row cap, a counter that is not a number): it says nothing about the store's health, so the
 * circuit breaker does not count it (`requestRefused` is true).
 */
export class RequestRefusedError extends LookupStoreError {
  readonly requestRefused = true;
}

/** Default cap on the rows one `sql_query` reads (`sqlMaxRows` of createLookupStore). */
export const DEFAULT_SQL_MAX_ROWS = 10_000;

/** The error of a SELECT that returned more than `max` rows (reading stops there). */
export function tooManyRows(namespace: string, max: number): RequestRefusedError {
  return new RequestRefusedError(namespace, `sql_query failed: the query returned more than ${max} rows (the row cap, sqlMaxRows); narrow it or add a LIMIT`);
}

/**
 * A stored counter as a number. `raw` is what the store holds (`null`/`undefined` → 0). A value that is not
 * an integer (e.g. `abc` written by another program) rejects with a RequestRefusedError naming the key,
 * instead of reading as NaN. Integers beyond ±2^53 lose precision (JavaScript numbers; documented).
 */
export function parseCounter(namespace: string, key: string, raw: unknown): number {
  if (raw === null || raw === undefined) return 0;
  if (typeof raw === 'number' && Number.isInteger(raw)) return raw;
  if (typeof raw === 'bigint') return Number(raw);
  const s = Buffer.isBuffer(raw) ? raw.toString('utf8') : String(raw);
  if (!/^\s*[+-]?\d+\s*$/.test(s))
    throw new RequestRefusedError(namespace, `counter "${key}" holds ${JSON.stringify(s.length > 40 ? s.slice(0, 40) + '…' : s)}, not an integer`);
  return Number(s);
}

export function wrapError(namespace: string, op: string, e: unknown): LookupStoreError {
  if (e instanceof LookupStoreError) return e;
  const msg = e instanceof Error ? e.message || (e as { code?: string }).code || e.name : String(e);
  return new LookupStoreError(namespace, `${op} failed: ${msg}`, { cause: e });
}

/** A database cell as a LookupValue: integers stay numbers, floats become `{ float }`, bools 0/1. */
export function cellValue(v: unknown, isFloat: boolean): LookupValue {
  if (v === null || v === undefined) return '';
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return isFloat || !Number.isInteger(v) ? { float: v } : v;
  if (typeof v === 'string') return v;
  if (v instanceof Date) return v.toISOString();
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('utf8'); // lossy UTF-8, as Stalwart
  return String(v);
}

/** True for statements that return rows (§4.3: "a query starting with SELECT", case-insensitive). */
export const isSelect = (query: string): boolean => /^\s*select\b/i.test(query);

/**
 * Shapes rows as docs/expression-language.md says: no rows → `""`; one row with one non-NULL column → the
 * value; one row with one NULL column → `[""]`; one row → an Array; several rows → an Array of Arrays.
 * `rows` are arrays of raw cells, `floatCols[i]` tells whether column i is a floating-point type.
 */
export function shapeRows(rows: unknown[][], floatCols: boolean[]): SqlResult {
  if (rows.length === 0) return '';
  const conv = (row: unknown[]) => row.map((c, i) => cellValue(c, floatCols[i] ?? false));
  if (rows.length === 1) {
    const row = rows[0]!;
    if (row.length === 1 && row[0] !== null && row[0] !== undefined) return cellValue(row[0], floatCols[0] ?? false);
    return conv(row);
  }
  return rows.map(conv);
}

/** Round-robin picker (read replicas). */
export class RoundRobin<T> {
  private i = 0;
  constructor(private readonly items: T[]) {}
  next(): T {
    const it = this.items[this.i % this.items.length]!;
    this.i = (this.i + 1) % this.items.length;
    return it;
  }
}

/** How long {@link endPool} lets a pool's connections finish before it cuts them (ms). */
export const CLOSE_GRACE_MS = 1_000;

/**
 * Ends a driver's connection pool: `end` is the driver's own (it waits for every connection, a connect
 * still in progress included), and once `graceMs` have passed, `cut` destroys the sockets still open.
 * A server that accepted the connection and then went silent would otherwise hold `close()` (and the
 * process) for up to the store's `timeout`. Never rejects.
 */
export async function endPool(end: Promise<unknown>, cut: () => void, graceMs = CLOSE_GRACE_MS): Promise<void> {
  const ended = end.then(
    () => true,
    () => true,
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)));
  const inTime = await Promise.race([ended, late]);
  clearTimeout(timer);
  if (inTime) return;
  try {
    cut();
  } catch {
    // The driver's internals changed: nothing more can be done than wait for its own end.
  }
  await ended;
}

/** A driver's socket, as far as {@link socketClosed} needs it (a `net.Socket`). */
export interface ClosingSocket {
  /** True once 'close' has been emitted (Node streams). */
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/** Resolves when the socket has emitted 'close' (at once if it has, or when there is none). */
export function socketClosed(socket: ClosingSocket | undefined): Promise<void> {
  if (socket === undefined || socket.closed === true) return Promise.resolve();
  return new Promise((resolve) => socket.once('close', resolve));
}

/**
 * Waits for `closes` (sockets closing, a client's 'end'), for at most `graceMs`. A driver's `end()` or
 * `disconnect()` may return once it has asked its connections to end (pg-pool's does, ioredis' too),
 * their sockets closing a few milliseconds later: a store's `close()` waits for them so that, once it
 * resolves, no handle of the store is left in the process (a test runner's open-handle check sees
 * none). Never rejects.
 */
export async function closedWithin(closes: readonly Promise<void>[], graceMs = CLOSE_GRACE_MS): Promise<void> {
  if (closes.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  await Promise.race([Promise.all(closes), late]);
  clearTimeout(timer);
}

/** A driver's socket that {@link closePools} can also destroy. */
export type DestroyableSocket = ClosingSocket & { destroy(): void };

/**
 * Ends each of a store's connection pools ({@link endPool}) and waits for their sockets to close
 * ({@link closedWithin}). `sockets(pool)` reads the driver's open sockets: once before `end()`, which may
 * forget them before they have closed, and again past the grace, to destroy those still open. Never rejects.
 */
export async function closePools<P extends { end(): Promise<unknown> }>(
  pools: readonly P[], sockets: (pool: P) => readonly (DestroyableSocket | undefined)[],
): Promise<void> {
  await Promise.all(
    pools.map(async (p) => {
      const closes = sockets(p).map(socketClosed);
      await endPool(p.end(), () => {
        for (const s of sockets(p)) s?.destroy();
      });
      await closedWithin(closes);
    }),
  );
}
