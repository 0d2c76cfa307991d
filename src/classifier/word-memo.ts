/**
 * The word memo of one language's rules: a word, given as a range of a text, → its interned word tokens.
 * Mail repeats its words, and one lookup here replaces the normalisation, stemming and interning of a
 * word seen before (see `insertType`).
 *
 * It is a {@link SlotTable} (slot-table.ts says why not a Map): the word is compared in place in the text,
 * so a known word costs no string cut out of it. A slot's value is a token id (≥ 0), {@link NONE} (a stop
 * word), or −2 − k for the k-th multi-token list (segmented words).
 *
 * Bounded: words longer than {@link MAX_WORD} code units are not kept, a word the table gives up on (a
 * crafted cluster, see {@link MAX_PROBE}) is not kept either and only costs the work of a new word, and the
 * owner clears the memo when {@link size} reaches its limit.
 */
import { GAVE_UP, MAX_VALUE, MIN_VALUE, SlotTable } from './slot-table.js';
import type { Tok } from './tokens.js';

export { foldedWordHash, MAX_PROBE, wordHash } from './slot-table.js';

/** Longest word kept (UTF-16 code units); longer words are rare and cost one normalisation each. */
export const MAX_WORD = 64;
/** Entry value of a word with no token (a stop word). */
const NONE = -1;

export class WordMemo {
  private readonly table = new SlotTable();
  private lists: (readonly Tok[])[] = [];

  /** Entries stored. */
  get size(): number {
    return this.table.size;
  }

  /**
   * The tokens of the word `s[start, end)` whose `wordHash` is `h`: a token id, or a list (empty for a
   * stop word); `undefined` when the word is not kept. `fold`: the word is kept ASCII-lower-cased (`h` is
   * its `foldedWordHash`), for words whose tokens do not depend on the case of their ASCII letters.
   */
  get(s: string, start: number, end: number, h: number, fold = false): Tok | readonly Tok[] | undefined {
    if (end - start > MAX_WORD) return undefined;
    return this.tokensAt(this.table.find(s, start, end, h, fold));
  }

  /**
   * {@link get} for an ASCII word kept folded, with its `foldedWordHash` `h` and, for a word of at most 8
   * letters, its folded letters as bytes in `lo`/`hi` (`SlotTable.findPacked`): what the tokenizer
   * computed while reading the word.
   */
  getAscii(s: string, start: number, end: number, h: number, lo: number, hi: number): Tok | readonly Tok[] | undefined {
    if (end - start > MAX_WORD) return undefined;
    return this.tokensAt(this.table.findPacked(s, start, end, h, true, end - start <= 8, lo, hi));
  }

  /** The tokens kept in slot `i` as `SlotTable.find` answered it (undefined: not kept). */
  private tokensAt(i: number): Tok | readonly Tok[] | undefined {
    if (i < 0) return undefined;
    const v = this.table.valueAt(i);
    if (v >= 0) return v;
    return v === NONE ? EMPTY : this.lists[-2 - v]!;
  }

  /**
   * Keeps the tokens of the word `s[start, end)` (no-op when too long, already kept or given up, or when
   * its token id or list index does not fit a slot); `fold` as for {@link get}.
   */
  set(s: string, start: number, end: number, h: number, toks: readonly Tok[], fold = false): void {
    if (end - start > MAX_WORD) return;
    const t = this.table;
    t.reserve();
    const i = t.find(s, start, end, h, fold);
    if (i >= 0 || i === GAVE_UP) return;
    let value: number;
    if (toks.length === 1) value = toks[0]!;
    else if (toks.length === 0) value = NONE;
    else {
      value = -2 - this.lists.length;
      if (value < MIN_VALUE) return;
      this.lists.push(toks);
    }
    if (value > MAX_VALUE) return;
    t.insert(i, s, start, end, h, value, fold);
  }

  /** Forgets every word (the arrays keep their size). */
  clear(): void {
    this.table.clear();
    this.lists = [];
  }
}

const EMPTY: readonly Tok[] = Object.freeze([]);
