import { describe, expect, it } from 'vitest';
import { CachedLookupStore, createLookupStore, DEFAULT_CACHE_MAX_BYTES, MemoryStore, type LookupStore } from '../../src/lookup/index.js';

/** A store that counts calls and can be told to fail, in front of an in-memory store. */
class Counting implements LookupStore {
  readonly type = 'Test';
  readonly calls: string[] = [];
  failing = false;
  private readonly inner = new MemoryStore();
  private gate: Promise<void> | undefined;
  private call<T>(op: string, f: () => Promise<T>): Promise<T> {
    this.calls.push(op);
    if (this.failing) return Promise.reject(new Error('down'));
    return (this.gate ?? Promise.resolve()).then(f);
  }
  hold(): () => void {
    let release!: () => void;
    this.gate = new Promise((r) => (release = r));
    return () => {
      this.gate = undefined;
      release();
    };
  }
  keyGet(k: string) {
    return this.call('get', () => this.inner.keyGet(k));
  }
  keyExists(k: string) {
    return this.call('exists', () => this.inner.keyExists(k));
  }
  keySet(k: string, v: string, ttl?: number) {
    return this.call('set', () => this.inner.keySet(k, v, ttl));
  }
  counterGet(k: string) {
    return this.call('cget', () => this.inner.counterGet(k));
  }
  counterIncr(k: string, by: number) {
    return this.call('incr', () => this.inner.counterIncr(k, by));
  }
  async close() {}
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('CachedLookupStore', () => {
  it('answers repeated reads from the cache, hits and misses alike', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner);
    await inner.keySet('a', '1');
    inner.calls.length = 0;
    expect([await c.keyGet('a'), await c.keyGet('a'), await c.keyExists('a'), await c.keyExists('a')]).toEqual(['1', '1', true, true]);
    expect([await c.keyGet('none'), await c.keyGet('none'), await c.keyExists('none'), await c.keyExists('none')]).toEqual([null, null, false, false]);
    expect(inner.calls).toEqual(['get', 'exists', 'get', 'exists']);
  });

  it('entries expire after ttlMs; misses after negativeTtlMs (0 = not cached)', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner, { ttlMs: 60, negativeTtlMs: 0 });
    await inner.keySet('a', '1');
    inner.calls.length = 0;
    await c.keyGet('a');
    await c.keyGet('a');
    await c.keyGet('miss');
    await c.keyGet('miss');
    expect(inner.calls).toEqual(['get', 'get', 'get']);
    await sleep(120);
    await c.keyGet('a');
    expect(inner.calls).toEqual(['get', 'get', 'get', 'get']);
  });

  it('key_set and counter_incr invalidate; a read racing a write does not cache the old value', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner, { counters: true });
    expect(await c.keyGet('k')).toBeNull();
    await c.keySet('k', 'new');
    expect(await c.keyGet('k')).toBe('new');
    expect(await c.counterGet('n')).toBe(0);
    expect(await c.counterIncr('n', 2)).toBe(2);
    expect(await c.counterGet('n')).toBe(2);

    const release = inner.hold();
    const slowRead = c.keyGet('k'); // starts before the write, answers 'new'
    const write = c.keySet('k', 'newer');
    release();
    expect(await slowRead).toBe('new');
    await write;
    expect(await c.keyGet('k')).toBe('newer');
  });

  it('counter_get is not cached unless asked', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner);
    await c.counterGet('n');
    await c.counterGet('n');
    expect(inner.calls).toEqual(['cget', 'cget']);
  });

  it('concurrent reads of one key share one store call; failures are not cached', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner);
    await inner.keySet('a', '1');
    inner.calls.length = 0;
    expect(await Promise.all(Array.from({ length: 10 }, () => c.keyGet('a')))).toEqual(Array(10).fill('1'));
    expect(inner.calls).toEqual(['get']);
    inner.failing = true;
    await expect(c.keyGet('b')).rejects.toThrow('down');
    inner.failing = false;
    expect(await c.keyGet('b')).toBeNull();
    expect(inner.calls).toEqual(['get', 'get', 'get']);
  });

  it('holds at most max entries (least recently used go first)', async () => {
    const inner = new Counting();
    const c = new CachedLookupStore(inner, { max: 2 });
    await c.keyGet('a');
    await c.keyGet('b');
    await c.keyGet('a');
    await c.keyGet('c'); // evicts b
    inner.calls.length = 0;
    await c.keyGet('a');
    await c.keyGet('b');
    expect(inner.calls).toEqual(['get']);
  });

  it('holds at most maxBytes (default 64 MiB) and never caches one value over maxEntryBytes', async () => {
    const inner = new Counting();
    const MB = 1024 * 1024;
    for (let i = 0; i < 40; i++) await inner.keySet(`v${i}`, String(i % 10).repeat(MB)); // ~2 MB each in UTF-16
    const c = new CachedLookupStore(inner, { maxBytes: 10 * MB, maxEntryBytes: 3 * MB });
    for (let i = 0; i < 40; i++) await c.keyGet(`v${i}`);
    const lru = (c as unknown as { cache: { calculatedSize: number; size: number } }).cache;
    expect(lru.calculatedSize).toBeLessThanOrEqual(10 * MB);
    expect(lru.size).toBeLessThanOrEqual(5);
    // The most recent are cached, the first ones were evicted.
    inner.calls.length = 0;
    expect(await c.keyGet('v39')).toBe('9'.repeat(MB));
    expect(inner.calls).toEqual([]);
    await c.keyGet('v0');
    expect(inner.calls).toEqual(['get']);
    // A value over maxEntryBytes is answered but not cached.
    await inner.keySet('huge', 'h'.repeat(2 * MB)); // ~4 MB > 3 MB
    inner.calls.length = 0;
    expect(((await c.keyGet('huge')) as string).length).toBe(2 * MB);
    expect(((await c.keyGet('huge')) as string).length).toBe(2 * MB);
    expect(inner.calls).toEqual(['get', 'get']);
    // Small values still fill the cache up to max entries.
    const d = new CachedLookupStore(inner);
    expect((d as unknown as { cache: { maxSize: number } }).cache.maxSize).toBe(DEFAULT_CACHE_MAX_BYTES);
  });

  it('createLookupStore puts the cache in front by default and leaves it out when disabled', async () => {
    const on = createLookupStore('c1', { '@type': 'Sqlite', path: ':memory:' });
    const off = createLookupStore('c2', { '@type': 'Sqlite', path: ':memory:' }, { cache: { enabled: false } });
    expect(on).toBeInstanceOf(CachedLookupStore);
    expect(off).not.toBeInstanceOf(CachedLookupStore);
    expect(on.type).toBe('Sqlite');
    expect(await on.sqlQuery!('SELECT 1 + ?', [41])).toBe(42);
    await on.close();
    await off.close();
  });
});
