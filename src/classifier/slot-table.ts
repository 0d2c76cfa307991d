/**
 * The open-addressing table under the word memo (word-memo.ts) and the intern tables (intern-table.ts):
 * a string key (a range of a text) → a 22-bit signed value, in two typed arrays.
 *
 * Why not a `Map<string, …>`: these tables hold tens to hundreds of thousands of keys, and a Map lookup
 * then costs several cache and TLB misses (hash table, key string, value object, all spread over the
 * heap), measured at 200–700 ns, and it needs the key cut out of the text first. Here a 16-byte slot holds
 * the key's hash, its length, its value and either the key itself (up to 8 code units below 256: most
 * words) or the offset of its characters in a pool; linear probing; the key is compared in place against
 * the text.
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
export const BASIS = randomBytes(4).readInt32LE(0);

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

/**
 * A slot's second integer, `meta`: 0 for an empty slot, else bit 0 set, bit 1 a folded key, bit 2 a key
 * kept in the slot itself ({@link INLINE_MAX}), bits 3–9 the key's length, bits 10–31 the value.
 */
const USED = 1;
const FOLDED = 2;
const INLINE = 4;
const KEY_BITS = 0x3ff;
const VALUE_SHIFT = 10;
/** Values a slot holds (22 bits, signed): token ids, and the word memo's markers below 0. */
export const MIN_VALUE = -(2 ** 21);
export const MAX_VALUE = 2 ** 21 - 1;
/** Longest key a slot can hold at all (its length has 7 bits). */
export const MAX_KEY = 127;
/**
 * Keys of up to this many code units, each below 256, are kept in the slot's last 8 bytes, so finding
 * one reads its slot and nothing else; longer keys are kept in the pool. Most words and stems are this
 * short: a known word then costs one cache miss instead of two dependent ones (slot, then pool).
 */
const INLINE_MAX = 8;

/** What {@link pack} packed last: a key's first 4 and next 4 characters as bytes, little-endian. */
let packLo = 0;
let packHi = 0;
/** Packs the key `s[start, start + len)` (folded when `fold`) into {@link packLo}/{@link packHi}; false when it cannot be inlined. */
function pack(s: string, start: number, len: number, fold: boolean): boolean {
  if (len > INLINE_MAX) return false;
  let lo = 0;
  let hi = 0;
  for (let k = 0; k < len; k++) {
    let c = s.charCodeAt(start + k);
    if (c > 255) return false;
    if (fold) c = foldAscii(c);
    if (k < 4) lo |= c << (8 * k);
    else hi |= c << (8 * (k - 4));
  }
  packLo = lo;
  packHi = hi;
  return true;
}

export class SlotTable {
  /**
   * Per slot, 4 integers: the key's hash, `meta` (0: empty slot; see {@link USED}), then either the key's
   * characters as bytes (an inline key) or its pool offset.
   */
  slots = new Int32Array(4 * 1024);
  private mask = 1023;
  private pool = new Uint16Array(8192);
  private poolLen = 0;
  /** Keys stored. */
  size = 0;

  /**
   * The slot index of the key `s[start, end)` hashed `h`, or −1 − (a free slot's index) when absent, or
   * {@link GAVE_UP}. `fold`: the key is `s[start, end)` with ASCII upper-case letters lower-cased (hashed
   * by {@link foldedWordHash}); folded and unfolded keys never match each other. Keys longer than
   * {@link MAX_KEY} are never found (the owners keep shorter ones only).
   */
  find(s: string, start: number, end: number, h: number, fold = false): number {
    const inline = pack(s, start, end - start, fold);
    return this.findPacked(s, start, end, h, fold, inline, packLo, packHi);
  }

  /**
   * {@link find} with the key's inline form given: `inline` (at most 8 code units, each below 256) and
   * its characters as bytes in `lo`/`hi` (folded when `fold`), as {@link pack} makes them. The
   * classifier's tokenizer makes them while it reads a word, so a word is not read again to find it.
   */
  findPacked(s: string, start: number, end: number, h: number, fold: boolean, inline: boolean, lo: number, hi: number): number {
    const len = end - start;
    const key = USED | (fold ? FOLDED : 0) | (inline ? INLINE : 0) | (len << 3);
    const slots = this.slots;
    let i = (h ^ (h >>> 16)) & this.mask;
    for (let probe = 0; probe < MAX_PROBE; probe++) {
      const q = 4 * i;
      const meta = slots[q + 1]!;
      if (meta === 0) return -1 - i;
      if (slots[q] === h && (meta & KEY_BITS) === key) {
        if (inline) {
          if (slots[q + 2] === lo && slots[q + 3] === hi) return i;
        } else {
          const pool = this.pool;
          const off = slots[q + 2]!;
          let k = 0;
          if (fold) while (k < len && pool[off + k] === foldAscii(s.charCodeAt(start + k))) k++;
          else while (k < len && pool[off + k] === s.charCodeAt(start + k)) k++;
          if (k === len) return i;
        }
      }
      i = (i + 1) & this.mask;
    }
    return GAVE_UP;
  }

  /** The value of the key in slot `i` (an index {@link find} answered). */
  valueAt(i: number): number {
    return this.slots[4 * i + 1]! >> VALUE_SHIFT;
  }

  /** Sets the value of the key in slot `i`. Throws `RangeError` outside [{@link MIN_VALUE}, {@link MAX_VALUE}]. */
  setValue(i: number, value: number): void {
    checkValue(value);
    const q = 4 * i + 1;
    this.slots[q] = (this.slots[q]! & KEY_BITS) | (value << VALUE_SHIFT);
  }

  /** The key of slot `q / 4` as a string. */
  private keyAt(q: number): string {
    const meta = this.slots[q + 1]!;
    const len = (meta >>> 3) & MAX_KEY;
    if ((meta & INLINE) !== 0) {
      const codes: number[] = [];
      for (let k = 0; k < len; k++) codes.push((this.slots[q + 2 + (k >> 2)]! >>> (8 * (k & 3))) & 255);
      return String.fromCharCode(...codes);
    }
    const off = this.slots[q + 2]!;
    return String.fromCharCode(...this.pool.subarray(off, off + len));
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
          onDrop(this.keyAt(q), old[q + 1]! >> VALUE_SHIFT);
        }
        continue;
      }
      // Four stores, not `slots.set(old.subarray(q, q + 4), …)`: a subarray is an object per key, which
      // made growing a word table of 65,536 keys a 19 ms pause inside one message's classification
      // (3–7.5 ms this way; docs/classifier-performance.md).
      const d = 4 * i;
      slots[d] = h;
      slots[d + 1] = old[q + 1]!;
      slots[d + 2] = old[q + 2]!;
      slots[d + 3] = old[q + 3]!;
      size++;
    }
    this.slots = slots;
    this.mask = mask;
    this.size = size;
  }

  /**
   * Stores the key `s[start, end)` hashed `h` with `value` in the free slot `free` (as {@link find}
   * answered it: −1 − index); `fold` as for {@link find}. Throws `RangeError` for a key longer than
   * {@link MAX_KEY} or a value outside [{@link MIN_VALUE}, {@link MAX_VALUE}].
   */
  insert(free: number, s: string, start: number, end: number, h: number, value: number, fold = false): void {
    const len = end - start;
    if (len > MAX_KEY) throw new RangeError(`slot key of ${len} code units (at most ${MAX_KEY})`);
    checkValue(value);
    const q = 4 * (-1 - free);
    const slots = this.slots;
    const inline = pack(s, start, len, fold);
    if (inline) {
      slots[q + 2] = packLo;
      slots[q + 3] = packHi;
    } else {
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
      slots[q + 2] = this.poolLen;
      slots[q + 3] = 0;
      this.poolLen += len;
    }
    slots[q] = h;
    slots[q + 1] = USED | (fold ? FOLDED : 0) | (inline ? INLINE : 0) | (len << 3) | (value << VALUE_SHIFT);
    this.size++;
  }

  /** Forgets every key (the arrays keep their size). */
  clear(): void {
    this.slots.fill(0);
    this.size = 0;
    this.poolLen = 0;
  }
}

function checkValue(value: number): void {
  if (!(value >= MIN_VALUE && value <= MAX_VALUE && Number.isInteger(value))) throw new RangeError(`slot value ${value} outside [${MIN_VALUE}, ${MAX_VALUE}]`);
}
