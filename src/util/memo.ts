/**
 * Per-message memos kept on the message's own objects (its context, its headers).
 *
 * A module-level `WeakMap` keyed by a message's objects is the obvious memo, and it is collected in the
 * end, but not soon: V8's young-generation collector (the scavenger) keeps the entries of a `WeakMap` that
 * lives in the old generation, dead keys included, until a full collection. Every message analysed
 * between two full collections then survived its scavenges and was promoted, all of it (its elements
 * point at its context, which holds its MIME tree, texts and HTML tokens). In the learn bench that was
 * about 2 MB promoted per scavenge, pauses of about 4 ms every 40 messages, and 12% of the time of
 * `classify`. A {@link MemoSlot} keeps its value in an array on the key object, so it dies with the key in
 * the first scavenge after the message (test/util/memo.test.ts shows both behaviours).
 */

/** An object that can hold {@link MemoSlot} values: a message context, a raw header. */
export interface MemoHolder {
  /** The values of the memo slots, by slot number (created on the first `set`). */
  memoSlots?: unknown[];
}

let slots = 0;

/** One memo kept on its key objects: `get`/`set` as a `WeakMap`'s, for values that should die with their key. */
export class MemoSlot<K extends MemoHolder, V> {
  private readonly slot = slots++;

  get(key: K): V | undefined {
    const values = key.memoSlots;
    return values === undefined ? undefined : (values[this.slot] as V | undefined);
  }

  set(key: K, value: V): void {
    let values = key.memoSlots;
    if (values === undefined) {
      values = [];
      // Not enumerable: a key stays the plain data it was for its users (JSON, spreads, deep equality).
      Object.defineProperty(key, 'memoSlots', { value: values, writable: true, configurable: true });
    }
    values[this.slot] = value;
  }
}
