/**
 * The open-addressing table under the word memo (word-memo.ts) and the intern tables (intern-table.ts):
 * a string key (a range of a text) → a 32-bit value, in two typed arrays.
 *
 * Why not a `Map<string, …>`: these tables hold tens to hundreds of thousands of keys, and a Map lookup
 * then costs several cache and TLB misses (hash table, key string, value object, all spread over the
 * heap), measured at 200–700 ns, and it needs the key cut out of the text first. Here a 16-byte slot holds
 * the key's hash, its length, its value and the offset of its characters in a pool; linear probing; the
 * key is compared in place against the text.
 *
 * Bounded: a probe sequence longer than {@link MAX_PROBE} gives up (the owner decides what a key it cannot
 * hold costs: the word memo forgets it, the intern table keeps it in a Map), and {@link wordHash} starts
 * from a per-process random basis, so colliding keys cannot be prepared offline.
 */
import { randomBytes } from 'node:crypto';

/**
 * Slots probed at most per lookup or insertion. The table is at most half full, where a run this long
 * is vanishingly rare by chance: only a key in a crafted cluster is given up.
 */
export const MAX_PROBE = 64;
/** What {@link SlotTable.find} answers when it gave up probing. */
export const GAVE_UP = -(2 ** 31);

/** FNV-1a's starting value, random per process (FNV's own is 0x811c9dc5). */
const BASIS = randomBytes(4).readInt32LE(0);

/** The 32-bit FNV-1a hash of `s[start, end)` (UTF-16 code units) from this process's basis. */
export function wordHash(s: string, start: number, end: number): number {
  let h = BASIS;
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

/** A UTF-16 code unit with ASCII upper-case letters lower-cased (how a folded key is hashed, kept and compared). */
function foldAscii(c: number): number {
  return c >= 65 && c <= 90 ? c | 32 : c;
}

/** {@link wordHash} of `s[start, end)` with ASCII upper-case letters lower-cased (a folded key, see {@link SlotTable.find}). */
export function foldedWordHash(s: string, start: number, end: number): number {
  let h = BASIS;
  for (let i = start; i < end; i++) h = Math.imul(h ^ foldAscii(s.charCodeAt(i)), 0x01000193);
  return h;
}

/** Length field of a folded key's slot: the length plus this flag (keys are far shorter). */
const FOLDED = 0x40000000;

export class SlotTable {
  /** Per slot, 4 integers: the key's hash, its pool offset + 1 (0: empty slot), its length and its value. */
  slots = new Int32Array(4 * 1024);
  private mask = 1023;
  private pool = new Uint16Array(8192);
  private poolLen = 0;
  /** Keys stored. */
  size = 0;

  /**
   * The slot index of the key `s[start, end)` hashed `h`, or −1 − (a free slot's index) when absent, or
   * {@link GAVE_UP}. `fold`: the key is `s[start, end)` with ASCII upper-case letters lower-cased (hashed
   * by {@link foldedWordHash}); folded and unfolded keys never match each other.
   */
  find(s: string, start: number, end: number, h: number, fold = false): number {
    const len = end - start;
    const lenField = fold ? len | FOLDED : len;
    const slots = this.slots;
    const pool = this.pool;
    let i = (h ^ (h >>> 16)) & this.mask;
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const q = 4 * i;
      const off1 = slots[q + 1]!;
      if (off1 === 0) return -1 - i;
      if (slots[q] === h && slots[q + 2] === lenField) {
        const off = off1 - 1;
        let k = 0;
        if (fold) while (k < len && pool[off + k] === foldAscii(s.charCodeAt(start + k))) k++;
        else while (k < len && pool[off + k] === s.charCodeAt(start + k)) k++;
        if (k === len) return i;
      }
      i = (i + 1) & this.mask;
    }
    return GAVE_UP;
  }

  /**
   * Makes room for one more key: past half full, twice the slots and every key placed again; a key whose
   * probe sequence is then too long is dropped, after `onDrop` (when given) got its text and value.
   * Slot indexes found before are stale afterwards.
   */
  reserve(onDrop?: (key: string, value: number) => void): void {
    if (2 * (this.size + 1) <= this.mask + 1) return;
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
        if (onDrop !== undefined) {
          const off = old[q + 1]! - 1;
          onDrop(String.fromCharCode(...this.pool.subarray(off, off + (old[q + 2]! & ~FOLDED))), old[q + 3]!);
        }
        continue;
      }
      slots.set(old.subarray(q, q + 4), 4 * i);
      size++;
    }
    this.slots = slots;
    this.mask = mask;
    this.size = size;
  }

  /**
   * Stores the key `s[start, end)` hashed `h` with `value` in the free slot `free` (as {@link find}
   * answered it: −1 − index); `fold` as for {@link find}.
   */
  insert(free: number, s: string, start: number, end: number, h: number, value: number, fold = false): void {
    const len = end - start;
    const q = 4 * (-1 - free);
    if (this.poolLen + len > this.pool.length) {
      const grown = new Uint16Array(Math.max(2 * this.pool.length, this.poolLen + len));
      grown.set(this.pool.subarray(0, this.poolLen));
      this.pool = grown;
    }
    const pool = this.pool;
    for (let k = 0; k < len; k++) {
      const c = s.charCodeAt(start + k);
      pool[this.poolLen + k] = fold ? foldAscii(c) : c;
    }
    this.slots[q] = h;
    this.slots[q + 1] = this.poolLen + 1;
    this.slots[q + 2] = fold ? len | FOLDED : len;
    this.slots[q + 3] = value;
    this.poolLen += len;
    this.size++;
  }

  /** Forgets every key (the arrays keep their size). */
  clear(): void {
    this.slots.fill(0);
    this.size = 0;
    this.poolLen = 0;
  }
}
