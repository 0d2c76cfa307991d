/**
 * The work bound of a parsed pattern, and the factoring of literal alternations that keeps keyword
 * lists cheap.
 *
 * A linear-time search (a Pike VM, which re2js falls back to when its DFA gives up) costs per subject
 * character at most the instructions it can visit in one step, so a search costs up to
 * ({@link patternCost} × subject length). The bound counts what multiplies that work: a counted
 * repetition is as many copies of what it repeats (`(?:a*){500}` is 500 loops, all live at every
 * character), alternatives and concatenated atoms add up, a capture group copies the capture slots
 * at each of its two instructions. A plain alternation of literal words does not add up: it is
 * first factored into a trie (`(?:cat|car|dog)` → `(?:ca(?:t|r)|dog)`, see {@link factorLiterals}),
 * in which the threads at one depth have all read the same characters, so below a fan-out only the
 * branches whose first literals overlap (the same letter, or its other case under `(?i)`) can be under
 * way together: a list of distinct words costs its widest fan-out per depth, not its length (1,000
 * keywords: about 125). Branches the trie cannot merge without changing the priority (`a…|(?i:a)…`,
 * alternating) count in full, each of them.
 */
import { foldClass } from './regex-fold.js';
import type { Node } from './regex-syntax.js';

type Lit = Extract<Node, { t: 'lit' }>;
/**
 * An alternation that {@link factorLiterals} built: every branch a literal string. `keys[i]` is the
 * fold class of branch i's first literal (undefined for an empty branch): branches with different
 * keys start with exclusive literals; branches with the same key can all be under way at once.
 */
export type TrieAlt = Extract<Node, { t: 'alt' }> & { trie?: true; keys?: readonly (string | undefined)[] };

/** The literals of a branch that is a plain string (literals in non-capturing groups), else undefined. */
function literalString(n: Node): Lit[] | undefined {
  if (n.t === 'lit') return [n];
  if (n.t === 'group') return n.cap ? undefined : literalString(n.body);
  if (n.t !== 'concat') return undefined;
  const out: Lit[] = [];
  for (const item of n.items) {
    const s = literalString(item);
    if (s === undefined) return undefined;
    out.push(...s);
  }
  return out;
}

/**
 * [exclusivity key, identity] of a literal: its fold class (`regex-fold.ts`), and which characters of
 * it the literal matches. Literals with different keys match disjoint characters; with the same
 * identity, the same characters (a case-insensitive `é` and `É`; `k` and `K` under `(?i)`, and
 * U+212A KELVIN SIGN, which folds with them).
 */
function litKey(l: Lit): [string, string] {
  const cls = foldClass(l.cp);
  const key = String(cls[0]);
  return [key, l.ci && cls.length > 1 ? `${key}i` : String(l.cp)];
}

const chain = (lits: Lit[]): Node => (lits.length === 0 ? { t: 'concat', items: [] } : lits.length === 1 ? lits[0]! : { t: 'concat', items: lits });

/**
 * Nested branching levels a trie may have; below, the branches stay a plain alternation (which costs
 * its length). Keeps the recursion of the emitter and the cost shallow whatever the pattern.
 */
const MAX_TRIE_DEPTH = 64;

/**
 * Branches grouped by first literal, keeping Rust's leftmost-first priority: a branch moves up to
 * an earlier branch with the same first literal only past branches whose first literal is
 * exclusive with it (they cannot match where it does); an empty branch or one whose first literal
 * overlaps without being equal stops the moves. The prefix all the branches of a group share is
 * taken in one step (`a{900}b|a{900}c` is `a{900}(?:b|c)`, not 900 nested levels).
 */
function trie(branches: Lit[][], depth: number): Node {
  if (depth >= MAX_TRIE_DEPTH) return { t: 'alt', branches: branches.map(chain) };
  type Entry = { key?: string; id?: string; members: Lit[][] };
  const entries: Entry[] = [];
  let open = new Map<string, Entry>();
  for (const b of branches) {
    if (b.length === 0) {
      entries.push({ members: [b] });
      open = new Map();
      continue;
    }
    const [key, id] = litKey(b[0]!);
    const e = open.get(key);
    if (e !== undefined && e.id === id) {
      e.members.push(b);
      continue;
    }
    if (e !== undefined) open = new Map(); // overlapping, not equal: keep the order from here
    const ne: Entry = { key, id, members: [b] };
    entries.push(ne);
    open.set(key, ne);
  }
  const out: Node[] = entries.map((e) => {
    const first = e.members[0]!;
    if (e.members.length === 1) return chain(first);
    let n = 1;
    while (n < first.length && e.members.every((m) => n < m.length && litKey(m[n]!)[1] === litKey(first[n]!)[1])) n++;
    return { t: 'concat', items: [...first.slice(0, n), trie(e.members.map((m) => m.slice(n)), depth + 1)] };
  });
  const alt: TrieAlt = { t: 'alt', branches: out, trie: true, keys: entries.map((e) => e.key) };
  return alt;
}

/** The tree with every alternation of two or more plain strings factored into a trie. */
export function factorLiterals(n: Node): Node {
  switch (n.t) {
    case 'alt': {
      const strings = n.branches.map(literalString);
      if (strings.every((s): s is Lit[] => s !== undefined)) return trie(strings, 0);
      return { t: 'alt', branches: n.branches.map(factorLiterals) };
    }
    case 'concat': return { t: 'concat', items: n.items.map(factorLiterals) };
    case 'group': return { ...n, body: factorLiterals(n.body) };
    case 'repeat': return { ...n, body: factorLiterals(n.body) };
    default: return n;
  }
}

/** Per-step weights the cost depends on: an atom, an assertion, a capture slot. */
export interface CostWeights {
  atom: number;
  assert: (n: Extract<Node, { t: 'assert' }>) => number;
  /** Capture slots copied at each capture instruction: 2 × (groups + 1). */
  slots: number;
}

/**
 * Work per depth of a trie branch starting at depth `d`: sums at one depth; below an alternation's
 * heads, only the branches of one key can be under way (they share the character read at depth
 * `d`), so the deeper work is the sum over the branches of a key, at most over the keys.
 */
function trieWork(n: Node, d: number, w: CostWeights, work: number[]): number {
  const add = (at: number, v: number): void => {
    work[at] = (work[at] ?? 0) + v;
  };
  switch (n.t) {
    case 'lit':
      add(d, w.atom);
      return d + 1;
    case 'concat': {
      let at = d;
      for (const item of n.items) at = trieWork(item, at, w, work);
      return at;
    }
    case 'group':
      return trieWork(n.body, d, w, work);
    case 'alt': {
      const { keys } = n as TrieAlt;
      if (keys === undefined) {
        // Left unfactored (below MAX_TRIE_DEPTH): all of it may be under way.
        add(d, patternCost(n, w));
        return d + 1;
      }
      // Every branch head is visited when the alternation is entered.
      add(d, n.branches.length - 1);
      const byKey = new Map<string, number[]>();
      let end = d;
      n.branches.forEach((b, i) => {
        const own: number[] = [];
        end = Math.max(end, trieWork(b, d, w, own));
        add(d, own[d] ?? 0);
        const k = keys[i] ?? `#${i}`;
        const sum = byKey.get(k) ?? [];
        for (let j = d + 1; j < own.length; j++) sum[j] = (sum[j] ?? 0) + (own[j] ?? 0);
        byKey.set(k, sum);
      });
      const deeper: number[] = [];
      for (const sum of byKey.values()) for (let j = d + 1; j < sum.length; j++) deeper[j] = Math.max(deeper[j] ?? 0, sum[j] ?? 0);
      for (let j = d + 1; j < deeper.length; j++) add(j, deeper[j] ?? 0);
      return end;
    }
    default:
      throw new Error(`not a trie node: ${n.t}`);
  }
}

/** Upper bound of the instructions one search step can visit (see the module docstring). */
export function patternCost(n: Node, w: CostWeights): number {
  switch (n.t) {
    case 'lit':
    case 'any':
    case 'class':
      return w.atom;
    case 'assert':
      return w.assert(n);
    case 'group':
      return patternCost(n.body, w) + (n.cap ? 2 + 2 * w.slots : 0);
    case 'concat':
      return n.items.reduce((s, i) => s + patternCost(i, w), 0);
    case 'alt': {
      if ((n as TrieAlt).trie) {
        const work: number[] = [];
        trieWork(n, 0, w, work);
        return work.reduce((s, v) => s + (v ?? 0), 0);
      }
      return n.branches.reduce((s, b) => s + patternCost(b, w), n.branches.length - 1);
    }
    case 'repeat': {
      const body = patternCost(n.body, w);
      // RE2 expands x{n,m} into n copies and m-n optional ones (a split each), x{n,} into n copies, the last looping.
      if (n.max === Infinity) return Math.max(n.min, 1) * body + 1;
      return n.min * body + (n.max - n.min) * (body + 1);
    }
  }
}
