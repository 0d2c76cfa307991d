import { describe, expect, it } from 'vitest';
import { SMALL_MAP_LINEAR, SmallMap } from '../../src/util/index.js';

describe('SmallMap (a few keys per message, a Map beyond them)', () => {
  it('keeps the first value of a key and answers like a Map below and above its linear limit', () => {
    const m = new SmallMap<number>();
    const ref = new Map<string, number>();
    for (let i = 0; i < 3 * SMALL_MAP_LINEAR; i++) {
      // Every key twice: the second set must not replace the first value.
      for (const v of [i, -i]) {
        const key = `host-${i % (2 * SMALL_MAP_LINEAR)}.example`;
        m.set(key, v);
        if (!ref.has(key)) ref.set(key, v);
      }
      expect(m.size).toBe(ref.size);
      for (const [k, v] of ref) {
        expect(m.has(k)).toBe(true);
        expect(m.get(k)).toBe(v);
      }
      expect(m.has('absent.example')).toBe(false);
      expect(m.get('absent.example')).toBeUndefined();
    }
    expect(m.size).toBe(2 * SMALL_MAP_LINEAR);
  });
});
