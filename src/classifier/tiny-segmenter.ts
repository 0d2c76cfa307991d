/**
 * TinySegmenter's `segment` (package `tiny-segmenter`, the segmenter Stalwart's Japanese tokenizer uses)
 * computed over the package's own model: same character types, same features, same integer scores, same
 * boundaries.
 *
 * Why: the package builds a string key per feature (42 of them per character: `w2 + w3`, `p2 + c1 + c2 + c3`, …)
 * and looks each up in a plain object, and tests each character against its six type patterns: about 10 µs a
 * character, so a 2,500-character Japanese message took 25 ms to segment, ten times the rest of its
 * classification. Here the model's tables are read once into integer-keyed tables (a character is its UTF-16
 * code unit, the padding `B3`…`E3` six codes above them) and a character's type is asked of the package once per
 * code unit. The package stays the reference: its instance supplies the tables and the types, `test/classifier`
 * checks that both segment corpus and random texts alike, and {@link fastTinySegmenter} gives `undefined` when
 * the instance does not have the tables this version reads (the caller then uses the package's `segment`).
 */

/** The parts of a `tiny-segmenter` instance read here: its bias, its type test and its feature tables. */
export interface TinySegmenterInstance {
  segment(input: string): string[];
  ctype_?(ch: string): string;
  BIAS__?: unknown;
  [table: string]: unknown;
}

/** A segmenter: the pieces of `input` (empty input: none). */
export type Segment = (input: string) => string[];

/** The padding around the input, as the package writes it, and its codes (above every UTF-16 code unit). */
const PADDING = ['B3', 'B2', 'B1', 'E1', 'E2', 'E3'] as const;
const [B3, B2, B1, E1, E2, E3] = PADDING.map((_, i) => 0x10000 + i) as [number, number, number, number, number, number];
/** Character types (`ctype_`) and previous-boundary marks (`U` unknown, `O` none, `B` boundary), as indexes. */
const TYPES = ['M', 'H', 'I', 'K', 'A', 'N', 'O'] as const;
const TYPE_O = 6;
const MARKS = ['U', 'O', 'B'] as const;
const [MARK_U, MARK_O, MARK_B] = [0, 1, 2];

/**
 * Every reading of `key` as `k` elements, each one code unit or one padding name: the tuples whose
 * concatenation is `key` (the package looks up that concatenation).
 */
function readings(key: string, k: number): number[][] {
  const out: number[][] = [];
  const walk = (pos: number, acc: number[]): void => {
    if (acc.length === k) {
      if (pos === key.length) out.push([...acc]);
      return;
    }
    if (pos >= key.length) return;
    acc.push(key.charCodeAt(pos));
    walk(pos + 1, acc);
    acc.pop();
    PADDING.forEach((p, i) => {
      if (key.startsWith(p, pos)) {
        acc.push(0x10000 + i);
        walk(pos + p.length, acc);
        acc.pop();
      }
    });
  };
  walk(0, []);
  return out;
}

/** An open-addressing table from tuples of 1–3 elements (0 … 0x10005) to scores; a missing tuple scores 0. */
class TupleScores {
  private readonly mask: number;
  /** Per slot: the tuple's elements plus one (0: empty slot), `k` per slot. */
  private readonly keys: Int32Array;
  private readonly scores: Int32Array;

  constructor(
    private readonly k: number,
    entries: readonly (readonly [readonly number[], number])[],
  ) {
    let size = 16;
    while (size < entries.length * 2) size *= 2;
    this.mask = size - 1;
    this.keys = new Int32Array(size * k);
    this.scores = new Int32Array(size);
    for (const [t, score] of entries) {
      let i = this.slot(t[0]!, t[1] ?? -1, t[2] ?? -1);
      while (this.keys[i * k] !== 0) i = (i + 1) & this.mask;
      for (let j = 0; j < k; j++) this.keys[i * k + j] = t[j]! + 1;
      this.scores[i] = score;
    }
  }

  private slot(a: number, b: number, c: number): number {
    let h = Math.imul(a + 1, 0x9e3779b1) ^ Math.imul(b + 2, 0x85ebca77) ^ Math.imul(c + 3, 0xc2b2ae3d);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    return (h ^ (h >>> 13)) & this.mask;
  }

  get1(a: number): number {
    const keys = this.keys;
    for (let i = this.slot(a, -1, -1); ; i = (i + 1) & this.mask) {
      const x = keys[i]!;
      if (x === 0) return 0;
      if (x === a + 1) return this.scores[i]!;
    }
  }

  get2(a: number, b: number): number {
    const keys = this.keys;
    for (let i = this.slot(a, b, -1); ; i = (i + 1) & this.mask) {
      const x = keys[i * 2]!;
      if (x === 0) return 0;
      if (x === a + 1 && keys[i * 2 + 1] === b + 1) return this.scores[i]!;
    }
  }

  get3(a: number, b: number, c: number): number {
    const keys = this.keys;
    for (let i = this.slot(a, b, c); ; i = (i + 1) & this.mask) {
      const x = keys[i * 3]!;
      if (x === 0) return 0;
      if (x === a + 1 && keys[i * 3 + 1] === b + 1 && keys[i * 3 + 2] === c + 1) return this.scores[i]!;
    }
  }
}

/** The package's score of a key (`ts_`: a missing or falsy value counts 0). */
function scoreOf(table: Record<string, unknown>, key: string): number {
  const v = Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined;
  return typeof v === 'number' && v ? v : 0;
}

/** A table over the type/mark alphabets, indexed as digits (`alphabets[0]` most significant). */
function denseScores(table: Record<string, unknown>, alphabets: readonly (readonly string[])[]): Int32Array {
  const size = alphabets.reduce((n, a) => n * a.length, 1);
  const out = new Int32Array(size);
  for (let i = 0; i < size; i++) {
    let key = '';
    let rest = i;
    for (let d = alphabets.length - 1; d >= 0; d--) {
      const a = alphabets[d]!;
      key = a[rest % a.length]! + key;
      rest = Math.floor(rest / a.length);
    }
    out[i] = scoreOf(table, key);
  }
  return out;
}

function tupleScores(table: Record<string, unknown>, k: number): TupleScores {
  const entries: [number[], number][] = [];
  for (const key of Object.keys(table)) {
    const s = scoreOf(table, key);
    if (s !== 0) for (const t of readings(key, k)) entries.push([t, s]);
  }
  return new TupleScores(k, entries);
}

const W_TABLES = { UW1__: 1, UW2__: 1, UW3__: 1, UW4__: 1, UW5__: 1, UW6__: 1, BW1__: 2, BW2__: 2, BW3__: 2, TW1__: 3, TW2__: 3, TW3__: 3, TW4__: 3 } as const;
const T = TYPES;
const M = MARKS;
const C_TABLES = {
  UC1__: [T], UC2__: [T], UC3__: [T], UC4__: [T], UC5__: [T], UC6__: [T],
  BC1__: [T, T], BC2__: [T, T], BC3__: [T, T],
  TC1__: [T, T, T], TC2__: [T, T, T], TC3__: [T, T, T], TC4__: [T, T, T],
  UP1__: [M], UP2__: [M], UP3__: [M], BP1__: [M, M], BP2__: [M, M],
  UQ1__: [M, T], UQ2__: [M, T], UQ3__: [M, T],
  BQ1__: [M, T, T], BQ2__: [M, T, T], BQ3__: [M, T, T], BQ4__: [M, T, T],
  TQ1__: [M, T, T, T], TQ2__: [M, T, T, T], TQ3__: [M, T, T, T], TQ4__: [M, T, T, T],
} as const;

/**
 * The package's `segment` over integer tables built from `instance` (a `new TinySegmenter()`), or `undefined`
 * when the instance lacks a table, its bias or its type test (another version of the package).
 * Building takes a few milliseconds; each code unit's type is asked of the instance once, then kept
 * (64 KB).
 */
export function fastTinySegmenter(instance: TinySegmenterInstance): Segment | undefined {
  const ctype = instance.ctype_;
  const bias = instance.BIAS__;
  if (typeof ctype !== 'function' || typeof bias !== 'number') return undefined;
  const table = (name: string): Record<string, unknown> | undefined => {
    const t = instance[name];
    return typeof t === 'object' && t !== null ? (t as Record<string, unknown>) : undefined;
  };
  // Both lists are in the tables' declaration order, which the destructurings below follow.
  const w: TupleScores[] = [];
  for (const [name, k] of Object.entries(W_TABLES)) {
    const t = table(name);
    if (t === undefined) return undefined;
    w.push(tupleScores(t, k));
  }
  const c: Int32Array[] = [];
  for (const [name, alphabets] of Object.entries(C_TABLES)) {
    const t = table(name);
    if (t === undefined) return undefined;
    c.push(denseScores(t, alphabets));
  }
  const [UW1, UW2, UW3, UW4, UW5, UW6, BW1, BW2, BW3, TW1, TW2, TW3, TW4] = w as [TupleScores, ...TupleScores[]];
  const [UC1, UC2, UC3, UC4, UC5, UC6, BC1, BC2, BC3, TC1, TC2, TC3, TC4, UP1, UP2, UP3, BP1, BP2, UQ1, UQ2, UQ3, BQ1, BQ2, BQ3, BQ4, TQ1, TQ2, TQ3, TQ4] =
    c as [Int32Array, ...Int32Array[]];

  /** Code unit → its type index plus one (0: not asked yet). */
  const types = new Uint8Array(0x10000);
  const typeOf = (code: number): number => {
    let t = types[code]!;
    if (t === 0) {
      const i = (TYPES as readonly string[]).indexOf(ctype.call(instance, String.fromCharCode(code)));
      t = types[code] = (i < 0 ? TYPE_O : i) + 1;
    }
    return t - 1;
  };
  let seg = new Int32Array(64);
  let ct = new Uint8Array(64);

  return (input: string): string[] => {
    const n = input.length;
    if (n === 0) return [];
    if (seg.length < n + 6) {
      seg = new Int32Array(n + 6);
      ct = new Uint8Array(n + 6);
    }
    seg[0] = B3;
    seg[1] = B2;
    seg[2] = B1;
    ct[0] = ct[1] = ct[2] = TYPE_O;
    for (let i = 0; i < n; i++) {
      const code = input.charCodeAt(i);
      seg[i + 3] = code;
      ct[i + 3] = typeOf(code);
    }
    seg[n + 3] = E1;
    seg[n + 4] = E2;
    seg[n + 5] = E3;
    ct[n + 3] = ct[n + 4] = ct[n + 5] = TYPE_O;
    const result: string[] = [];
    let start = 0;
    let p1 = MARK_U;
    let p2 = MARK_U;
    let p3 = MARK_U;
    for (let i = 4; i < n + 3; i++) {
      const w1 = seg[i - 3]!, w2 = seg[i - 2]!, w3 = seg[i - 1]!, w4 = seg[i]!, w5 = seg[i + 1]!, w6 = seg[i + 2]!;
      const c1 = ct[i - 3]!, c2 = ct[i - 2]!, c3 = ct[i - 1]!, c4 = ct[i]!, c5 = ct[i + 1]!, c6 = ct[i + 2]!;
      const score =
        bias +
        UP1[p1]! + UP2[p2]! + UP3[p3]! + BP1[p1 * 3 + p2]! + BP2[p2 * 3 + p3]! +
        UW1.get1(w1) + UW2.get1(w2) + UW3.get1(w3) + UW4.get1(w4) + UW5.get1(w5) + UW6.get1(w6) +
        BW1.get2(w2, w3) + BW2.get2(w3, w4) + BW3.get2(w4, w5) +
        TW1.get3(w1, w2, w3) + TW2.get3(w2, w3, w4) + TW3.get3(w3, w4, w5) + TW4.get3(w4, w5, w6) +
        UC1[c1]! + UC2[c2]! + UC3[c3]! + UC4[c4]! + UC5[c5]! + UC6[c6]! +
        BC1[c2 * 7 + c3]! + BC2[c3 * 7 + c4]! + BC3[c4 * 7 + c5]! +
        TC1[(c1 * 7 + c2) * 7 + c3]! + TC2[(c2 * 7 + c3) * 7 + c4]! + TC3[(c3 * 7 + c4) * 7 + c5]! + TC4[(c4 * 7 + c5) * 7 + c6]! +
        UQ1[p1 * 7 + c1]! + UQ2[p2 * 7 + c2]! + UQ3[p3 * 7 + c3]! +
        BQ1[(p2 * 7 + c2) * 7 + c3]! + BQ2[(p2 * 7 + c3) * 7 + c4]! + BQ3[(p3 * 7 + c2) * 7 + c3]! + BQ4[(p3 * 7 + c3) * 7 + c4]! +
        TQ1[((p2 * 7 + c1) * 7 + c2) * 7 + c3]! + TQ2[((p2 * 7 + c2) * 7 + c3) * 7 + c4]! +
        TQ3[((p3 * 7 + c1) * 7 + c2) * 7 + c3]! + TQ4[((p3 * 7 + c2) * 7 + c3) * 7 + c4]!;
      let p = MARK_O;
      if (score > 0) {
        result.push(input.slice(start, i - 3));
        start = i - 3;
        p = MARK_B;
      }
      p1 = p2;
      p2 = p3;
      p3 = p;
    }
    result.push(input.slice(start, n));
    return result;
  };
}
