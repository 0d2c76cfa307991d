/**
 * Simple case folding, as Rust's `regex-syntax` applies it under `(?i)`: a character matches every
 * character with the same simple case folding (Unicode's CaseFolding.txt, statuses C and S), its
 * "fold class" (`k`, `K` and U+212A KELVIN SIGN; `s`, `S` and U+017F LONG S). Read from V8's own
 * Unicode tables: ECMAScript's `u`-flag case-insensitive matching compares characters by the same
 * simple case folding (ECMA-262, Canonicalize).
 */

/** Below this every cased character lies (the last ones are Adlam, U+1E900–U+1E943). */
const CASED_END = 0x20000;

/** Per code point with a fold class of two or more: its class (shared array, sorted). */
let classes: Map<number, readonly number[]> | undefined;

function build(): Map<number, readonly number[]> {
  // Candidates joined by the case mappings (one code point to one), then split by what `iu` matching says.
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let r = x;
    while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!;
    parent.set(x, r);
    return r;
  };
  const join = (a: number, b: number): void => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(ra, rb);
  };
  for (let cp = 0; cp < CASED_END; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    for (const m of [ch.toLowerCase(), ch.toUpperCase()]) {
      const to = m.codePointAt(0)!;
      if (to !== cp && m.length === String.fromCodePoint(to).length) join(cp, to);
    }
  }
  const groups = new Map<number, number[]>();
  for (const cp of parent.keys()) {
    const r = find(cp);
    const g = groups.get(r) ?? [];
    g.push(cp);
    groups.set(r, g);
  }
  const out = new Map<number, readonly number[]>();
  for (const g of groups.values()) {
    const left = [...g].sort((a, b) => a - b);
    while (left.length > 0) {
      const re = new RegExp(`^\\u{${left[0]!.toString(16)}}$`, 'iu');
      const cls = left.filter((c) => re.test(String.fromCodePoint(c)));
      for (const c of cls) left.splice(left.indexOf(c), 1);
      if (cls.length > 1) for (const c of cls) out.set(c, cls);
    }
  }
  return out;
}

const ASCII_CLASSES: (readonly number[])[] = [];
for (let c = 0; c < 0x80; c++) {
  const up = c & ~0x20;
  const letter = up >= 0x41 && up <= 0x5a;
  ASCII_CLASSES.push(!letter ? [c] : up === 0x4b ? [0x4b, 0x6b, 0x212a] : up === 0x53 ? [0x53, 0x73, 0x17f] : [up, up | 0x20]);
}

/**
 * The fold class of `cp`, sorted (just `[cp]` for a character without case). ASCII is written out,
 * so that a keyword list does not build the table (about 60 ms, once).
 */
export function foldClass(cp: number): readonly number[] {
  if (cp < 0x80) return ASCII_CLASSES[cp]!;
  return (classes ??= build()).get(cp) ?? [cp];
}

/** Every character with a fold class of two or more, sorted. */
let members: number[] | undefined;

/**
 * What closing the range list `r` (sorted, as in `regex-ranges.ts`) under simple case folding adds:
 * the fold class of each member, as unsorted `[lo, hi]` pairs.
 */
export function foldAdditions(r: readonly number[]): number[] {
  if (members === undefined) members = [...(classes ??= build()).keys()].sort((a, b) => a - b);
  const add: number[] = [];
  let j = 0;
  for (let i = 0; i < r.length && j < members.length; i += 2) {
    const lo = r[i]!;
    const hi = r[i + 1]!;
    while (j < members.length && members[j]! < lo) j++;
    for (; j < members.length && members[j]! <= hi; j++) for (const c of classes!.get(members[j]!)!) add.push(c, c);
  }
  return add;
}
