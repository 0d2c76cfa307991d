/**
 * The word memo of one language's rules: a word, given as a range of a text, → its interned word tokens.
 * Mail repeats its words, and one lookup here replaces the normalisation, stemming and interning of a
 * word seen before (see `insertType`).
 *
 * Why not a `Map<string, …>`: a long-running classifier's memo holds tens of thousands of words, and a
 * Map lookup then costs several cache and TLB misses (hash table, key string, value object, all spread
 * over the heap), measured at 200–400 ns a word, and it needs the word cut out of the text first. This
 * table keeps everything in two typed arrays (open addressing, linear probing): a 16-byte slot with the
 * word's hash, length, value and offset in a pool of characters, where the word is compared in place
 * against the text.
 *
 * Bounded: words longer than {@link MAX_WORD} code units are not kept, a probe sequence longer than
 * {@link MAX_PROBE} gives up (a miss, nothing stored: crafted collisions cannot make a lookup slow, only
 * cost a crafted word the work of a new word), the hash starts from a per-process random basis (so
 * colliding words cannot be prepared offline), and the owner clears the table when {@link size} reaches
 * its limit.
 */
import { randomBytes } from 'node:crypto';
import type { Tok } from './tokens.js';

/** Longest word kept (UTF-16 code units); longer words are rare and cost one normalisation each. */
export const MAX_WORD = 64;
/**
 * Slots probed at most per lookup or insertion. The table is at most half full, where a run this long
 * is vanishingly rare by chance: only a word in a crafted cluster is given up.
 */
export const MAX_PROBE = 64;
/** Entry value of a word with no token (a stop word). */
const NONE = -1;
/** What `find` answers when it gave up probing. */
const GAVE_UP = -(2 ** 31);

/** FNV-1a's starting value, random per process (FNV's own is 0x811c9dc5). */
const BASIS = randomBytes(4).readInt32LE(0);

/**
 * The 32-bit FNV-1a hash of `s[start, end)` (UTF-16 code units) from this process's basis. A slot's
 * value is a token id (≥ 0), {@link NONE}, or −2 − k for the k-th multi-token list (segmented words).
 */
export function wordHash(s: string, start: number, end: number): number {
  let h = BASIS;
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

export class WordMemo {
  /**
   * Per slot, 4 integers (16 bytes: a lookup reads one slot, then the word's characters): the word's
   * hash, its pool offset + 1 (0: empty slot), its length and its value.
   */
  private slots = new Int32Array(4 * 1024);
  private mask = 1023;
  private pool = new Uint16Array(8192);
  private poolLen = 0;
  private lists: (readonly Tok[])[] = [];
  /** Entries stored. */
  size = 0;

  /** The slot index of the word, or −1 − (a free slot's index) when absent, or {@link GAVE_UP}. */
  private find(s: string, start: number, end: number, h: number): number {
    const len = end - start;
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
        while (k < len && pool[off + k] === s.charCodeAt(start + k)) k++;
        if (k === len) return i;
      }
      i = (i + 1) & this.mask;
    }
    return GAVE_UP;
  }

  /**
   * The tokens of the word `s[start, end)` whose {@link wordHash} is `h`: a token id, or a list (empty for
   * a stop word); `undefined` when the word is not kept.
   */
  get(s: string, start: number, end: number, h: number): Tok | readonly Tok[] | undefined {
    if (end - start > MAX_WORD) return undefined;
    const i = this.find(s, start, end, h);
    if (i < 0) return undefined;
    const v = this.slots[4 * i + 3]!;
    if (v >= 0) return v;
    return v === NONE ? EMPTY : this.lists[-2 - v]!;
  }

  /** Keeps the tokens of the word `s[start, end)` (no-op when too long, already kept or given up). */
  set(s: string, start: number, end: number, h: number, toks: readonly Tok[]): void {
    const len = end - start;
    if (len > MAX_WORD) return;
    if (2 * (this.size + 1) > this.mask + 1) this.rehash();
    const i = this.find(s, start, end, h);
    if (i >= 0 || i === GAVE_UP) return;
    const q = 4 * (-1 - i);
    if (this.poolLen + len > this.pool.length) {
      const grown = new Uint16Array(Math.max(2 * this.pool.length, this.poolLen + len));
      grown.set(this.pool.subarray(0, this.poolLen));
      this.pool = grown;
    }
    const pool = this.pool;
    for (let k = 0; k < len; k++) pool[this.poolLen + k] = s.charCodeAt(start + k);
    let value: number;
    if (toks.length === 1) value = toks[0]!;
    else if (toks.length === 0) value = NONE;
    else {
      value = -2 - this.lists.length;
      this.lists.push(toks);
    }
    this.slots[q] = h;
    this.slots[q + 1] = this.poolLen + 1;
    this.slots[q + 2] = len;
    this.slots[q + 3] = value;
    this.poolLen += len;
    this.size++;
  }

  /** Twice the slots, every entry placed again (one whose probe sequence is too long is dropped). */
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
      if (slots[4 * i + 1] !== 0) continue;
      slots.set(old.subarray(q, q + 4), 4 * i);
      size++;
    }
    this.slots = slots;
    this.mask = mask;
    this.size = size;
  }

  /** Forgets every word (the arrays keep their size). */
  clear(): void {
    this.slots.fill(0);
    this.size = 0;
    this.poolLen = 0;
    this.lists = [];
  }
}

const EMPTY: readonly Tok[] = Object.freeze([]);
