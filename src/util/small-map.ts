/**
 * A string-keyed map for the few keys of one message (its Received host names, its host labels): searched
 * in order while it holds at most {@link SMALL_MAP_LINEAR} keys, which costs less than a `Map` created per
 * message, and backed by a `Map` beyond that, so that a hostile message with thousands of keys costs
 * linear time, not quadratic.
 */
export const SMALL_MAP_LINEAR = 16;

export class SmallMap<V> {
  private readonly keys: string[] = [];
  private readonly values: V[] = [];
  private index: Map<string, V> | undefined;

  get size(): number {
    return this.keys.length;
  }

  get(key: string): V | undefined {
    if (this.index !== undefined) return this.index.get(key);
    const k = this.keys.indexOf(key);
    return k < 0 ? undefined : this.values[k];
  }

  has(key: string): boolean {
    return this.index !== undefined ? this.index.has(key) : this.keys.includes(key);
  }

  /** Adds `key` → `value`; a key already present keeps its first value. */
  set(key: string, value: V): void {
    if (this.has(key)) return;
    this.keys.push(key);
    this.values.push(value);
    if (this.index !== undefined) this.index.set(key, value);
    else if (this.keys.length > SMALL_MAP_LINEAR) this.index = new Map(this.keys.map((k, i) => [k, this.values[i]!]));
  }
}
