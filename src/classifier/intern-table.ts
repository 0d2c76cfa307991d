/**
 * The intern table of one token kind: a token's value → its token id (see `internKind` in tokens.ts).
 *
 * Why not a `Map<string, number>`: the table of a long-running classifier holds up to hundreds of
 * thousands of values, and a lookup with a value just built (an address, a host, a stem) costs several
 * cache misses there (hash table, chain, key string); measured at about 0.5–0.7 µs a lookup in the
 * classify path. This table keeps a 16-byte slot per value (hash, pool offset, length, id) in one typed
 * array and the characters in a pool, as the word memo (word-memo.ts) does.
 *
 * Unlike the word memo it never forgets a value: an id handed out must be found again, or one token
 * would get two ids and a message would count it twice apart. Values the slots cannot hold (longer than
 * {@link MAX_SLOT_VALUE} code units, or whose probe sequence would pass {@link MAX_PROBE}: crafted
 * collisions) go to a Map beside it, so a crafted value costs a Map lookup, never a long probe.
 */
import { MAX_PROBE, wordHash } from './word-memo.js';

/** Longest value kept in the slots (UTF-16 code units); longer ones go to the overflow Map. */
export const MAX_SLOT_VALUE = 64;

export class InternTable {
  /** Per slot: the value's hash, its pool offset + 1 (0: empty), its length and its id. */
  private slots = new Int32Array(4 * 1024);
  private mask = 1023;
  private pool = new Uint16Array(8192);
  private poolLen = 0;
  /** Values the slots do not hold (too long, or a probe sequence too long). */
  private overflow: Map<string, number> | undefined;
  /** Values in the slots. */
  private size = 0;

  /** `hash`: the hash of a range of a string (tests pass a colliding one). */
  constructor(private readonly hash: (s: string, start: number, end: number) => number = wordHash) {}

  /** The id of `value`, or −1 when it has none. */
  get(value: string): number {
    const len = value.length;
    if (len <= MAX_SLOT_VALUE) {
      const i = this.find(value, this.hash(value, 0, len));
      if (i >= 0) return this.slots[4 * i + 3]!;
    }
    const o = this.overflow;
    return o === undefined ? -1 : (o.get(value) ?? -1);
  }

  /** Records `value` → `id` (a value that has an id gets the new one). */
  add(value: string, id: number): void {
    const len = value.length;
    if (len <= MAX_SLOT_VALUE) {
      if (2 * (this.size + 1) > this.mask + 1) this.rehash();
      const h = this.hash(value, 0, len);
      const i = this.find(value, h);
      if (i >= 0) {
        this.slots[4 * i + 3] = id;
        return;
      }
      if (i !== GAVE_UP) {
        const q = 4 * (-1 - i);
        if (this.poolLen + len > this.pool.length) {
          const grown = new Uint16Array(Math.max(2 * this.pool.length, this.poolLen + len));
          grown.set(this.pool.subarray(0, this.poolLen));
          this.pool = grown;
        }
        const pool = this.pool;
        for (let k = 0; k < len; k++) pool[this.poolLen + k] = value.charCodeAt(k);
        this.slots[q] = h;
        this.slots[q + 1] = this.poolLen + 1;
        this.slots[q + 2] = len;
        this.slots[q + 3] = id;
        this.poolLen += len;
        this.size++;
        return;
      }
    }
    (this.overflow ??= new Map()).set(value, id);
  }

  /** Forgets every value (the arrays keep their size). */
  clear(): void {
    this.slots.fill(0);
    this.poolLen = 0;
    this.size = 0;
    this.overflow = undefined;
  }

  /** The slot index of the value, or −1 − (a free slot's index) when absent, or {@link GAVE_UP}. */
  private find(s: string, h: number): number {
    const len = s.length;
    const slots = this.slots;
    const pool = this.pool;
    let i = (h ^ (h >>> 16)) & this.mask;
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const q = 4 * i;
      const off1 = slots[q + 1]!;
      if (off1 === 0) return -1 - i;
      if (slots[q] === h && slots[q + 2] === len) {
        const off = off1 - 1;
        let k = 0;
        while (k < len && pool[off + k] === s.charCodeAt(k)) k++;
        if (k === len) return i;
      }
      i = (i + 1) & this.mask;
    }
    return GAVE_UP;
  }

  /** Twice the slots, every value placed again; one whose probe sequence is too long moves to the overflow Map. */
  private rehash(): void {
    const old = this.slots;
    const n = 2 * (this.mask + 1);
    const mask = n - 1;
    const slots = new Int32Array(4 * n);
    let size = 0;
    for (let q = 0; q < old.length; q += 4) {
      if (old[q + 1] === 0) continue;
      const h = old[q]!;
      let i = (h ^ (h >>> 16)) & mask;
      for (let probe = 0; probe < MAX_PROBE && slots[4 * i + 1] !== 0; probe++) i = (i + 1) & mask;
      if (slots[4 * i + 1] !== 0) {
        const off = old[q + 1]! - 1;
        const value = String.fromCharCode(...this.pool.subarray(off, off + old[q + 2]!));
        (this.overflow ??= new Map()).set(value, old[q + 3]!);
        continue;
      }
      slots.set(old.subarray(q, q + 4), 4 * i);
      size++;
    }
    this.slots = slots;
    this.mask = mask;
    this.size = size;
  }
}

const GAVE_UP = -(2 ** 31);
