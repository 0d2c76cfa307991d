/**
 * The word memo of one language's rules: a word, given as a range of a text, → its interned word tokens.
 * Mail repeats its words, and one lookup here replaces the normalisation, stemming and interning of a
 * word seen before (see `insertType`).
 *
 * Why not a `Map<string, …>`: a long-running classifier's memo holds tens of thousands of words, and a
 * Map lookup then costs several cache and TLB misses (hash table, key string, value object, all spread
 * over the heap), measured at 200–400 ns a word, and it needs the word cut out of the text first. This
 * table keeps everything in a few typed arrays (open addressing, linear probing): the slot (hash and
 * entry), then the word's characters in one pool, compared in place against the text.
 *
 * Bounded: words longer than {@link MAX_WORD} code units are not kept, a probe sequence longer than
 * {@link MAX_PROBE} gives up (a miss, nothing stored: crafted collisions cannot make a lookup slow), and
 * the owner clears the table when {@link size} reaches its limit.
 */
import type { Tok } from './tokens.js';

/** Longest word kept (UTF-16 code units); longer words are rare and cost one normalisation each. */
export const MAX_WORD = 64;
/** Slots probed at most per lookup or insertion. */
const MAX_PROBE = 32;
/** Entry value of a word with no token (a stop word). */
const NONE = -1;

/**
 * A word's tokens as kept: a token id (≥ 0), {@link NONE}, or −2 − k for the k-th multi-token list
 * (segmented words).
 */
export type WordValue = number;

/** The 32-bit FNV-1a hash of `s[start, end)` (UTF-16 code units). */
export function wordHash(s: string, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

export class WordMemo {
  /** Per slot: the word's hash, and its entry + 1 (0: empty). */
  private slots: Int32Array;
  private mask: number;
  /** Per entry: the word's offset in the pool, its length and its hash. */
  private entries = new Int32Array(3 * 1024);
  /** Per entry: its value (see {@link WordValue}). */
  private values = new Int32Array(1024);
  private pool = new Uint16Array(8192);
  private poolLen = 0;
  private lists: (readonly Tok[])[] = [];
  /** Entries stored. */
  size = 0;

  /** Starts small; the slots double whenever they are half full. */
  constructor() {
    this.slots = new Int32Array(2 * 1024);
    this.mask = 1023;
  }

  /** The slot index of the word, or −1 − (a free slot's index) when absent, or −MAX−1 when given up. */
  private find(s: string, start: number, end: number, h: number): number {
    const len = end - start;
    const slots = this.slots;
    let i = (h ^ (h >>> 16)) & this.mask;
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const e = slots[2 * i + 1]!;
      if (e === 0) return -1 - i;
      if (slots[2 * i] === h) {
        const off = this.entries[3 * (e - 1)]!;
        if (this.entries[3 * (e - 1) + 1] === len) {
          const pool = this.pool;
          let k = 0;
          while (k < len && pool[off + k] === s.charCodeAt(start + k)) k++;
          if (k === len) return i;
        }
      }
      i = (i + 1) & this.mask;
    }
    return -1 - (this.mask + 1);
  }

  /**
   * The tokens of the word `s[start, end)` whose {@link wordHash} is `h`: a token id, or a list (empty for
   * a stop word); `undefined` when the word is not kept.
   */
  get(s: string, start: number, end: number, h: number): Tok | readonly Tok[] | undefined {
    if (end - start > MAX_WORD) return undefined;
    const i = this.find(s, start, end, h);
    if (i < 0) return undefined;
    const v = this.values[this.slots[2 * i + 1]! - 1]!;
    if (v >= 0) return v;
    return v === NONE ? EMPTY : this.lists[-2 - v]!;
  }

  /** Keeps the tokens of the word `s[start, end)` (no-op when too long, already kept or given up). */
  set(s: string, start: number, end: number, h: number, toks: readonly Tok[]): void {
    const len = end - start;
    if (len > MAX_WORD) return;
    const i = this.find(s, start, end, h);
    if (i >= 0 || i === -1 - (this.mask + 1)) return;
    let slot = -1 - i;
    if (2 * (this.size + 1) > this.mask + 1) {
      this.rehash();
      const j = this.find(s, start, end, h);
      if (j === -1 - (this.mask + 1)) return;
      slot = -1 - j;
    }
    const e = this.size++;
    if (3 * e + 2 >= this.entries.length) {
      const grown = new Int32Array(2 * this.entries.length);
      grown.set(this.entries);
      this.entries = grown;
      const vals = new Int32Array(2 * this.values.length);
      vals.set(this.values);
      this.values = vals;
    }
    if (this.poolLen + len > this.pool.length) {
      const grown = new Uint16Array(Math.max(2 * this.pool.length, this.poolLen + len));
      grown.set(this.pool.subarray(0, this.poolLen));
      this.pool = grown;
    }
    const pool = this.pool;
    for (let k = 0; k < len; k++) pool[this.poolLen + k] = s.charCodeAt(start + k);
    this.entries[3 * e] = this.poolLen;
    this.entries[3 * e + 1] = len;
    this.entries[3 * e + 2] = h;
    this.poolLen += len;
    if (toks.length === 1) this.values[e] = toks[0]!;
    else if (toks.length === 0) this.values[e] = NONE;
    else {
      this.values[e] = -2 - this.lists.length;
      this.lists.push(toks);
    }
    this.slots[2 * slot] = h;
    this.slots[2 * slot + 1] = e + 1;
  }

  /** Twice the slots, every entry placed again (a sequence too long to place is dropped). */
  private rehash(): void {
    const n = 2 * (this.mask + 1);
    const slots = new Int32Array(2 * n);
    const mask = n - 1;
    for (let e = 0; e < this.size; e++) {
      const h = this.entries[3 * e + 2]!;
      let i = (h ^ (h >>> 16)) & mask;
      for (let probe = 0; probe < MAX_PROBE && slots[2 * i + 1] !== 0; probe++) i = (i + 1) & mask;
      if (slots[2 * i + 1] !== 0) continue;
      slots[2 * i] = h;
      slots[2 * i + 1] = e + 1;
    }
    this.slots = slots;
    this.mask = mask;
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
