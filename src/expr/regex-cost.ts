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
 * in which at most one node per depth can be live (two nodes of the same depth spell different
 * words), so it costs its widest fan-out per depth, not its length: 1,000 keywords cost a few hundred.
 */
import type { Node } from './regex-syntax.js';

type Lit = Extract<Node, { t: 'lit' }>;
/** An alternation that {@link factorLiterals} built: every branch a literal string, first literals pairwise exclusive. */
export type TrieAlt = Extract<Node, { t: 'alt' }> & { trie?: true };

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

const isAsciiLetter = (cp: number): boolean => (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);

/**
 * [exclusivity key, identity] of a first literal, or undefined when its case folding is not known
 * here (a case-insensitive non-ASCII literal; K and ſ, which fold to ASCII letters). Literals with
 * different keys match disjoint characters; with the same identity, the same characters.
 */
function litKey(l: Lit): [string, string] | undefined {
  const { cp } = l;
  if (cp === 0x212a || cp === 0x17f) return undefined;
  if (cp >= 0x80) return l.ci ? undefined : [String(cp), `${cp}`];
  if (!isAsciiLetter(cp)) return [String(cp), `${cp}`];
  const lower = cp | 0x20;
  return [String(lower), l.ci ? `${lower}i` : `${cp}`];
}

const chain = (lits: Lit[]): Node => (lits.length === 1 ? lits[0]! : { t: 'concat', items: lits });

/**
 * Branches grouped by first literal, keeping Rust's leftmost-first priority: a branch moves up to
 * an earlier branch with the same first literal only past branches whose first literal is
 * exclusive with it (they cannot match where it does); an empty branch or one whose first literal
 * is not understood stops the moves.
 */
function trie(branches: Lit[][]): TrieAlt {
  type Entry = { lit?: Lit; id?: string; members: Lit[][] };
  const entries: Entry[] = [];
  let open = new Map<string, Entry>();
  for (const b of branches) {
    const k = b.length === 0 ? undefined : litKey(b[0]!);
    if (k === undefined) {
      entries.push({ members: [b] });
      open = new Map();
      continue;
    }
    const e = open.get(k[0]);
    if (e !== undefined && e.id === k[1]) {
      e.members.push(b);
      continue;
    }
    if (e !== undefined) open = new Map(); // overlapping, not equal: keep the order from here
    const ne: Entry = { lit: b[0]!, id: k[1], members: [b] };
    entries.push(ne);
    open.set(k[0], ne);
  }
  const out: Node[] = entries.map((e) => {
    if (e.members.length === 1 || e.lit === undefined) return e.members[0]!.length === 0 ? { t: 'concat', items: [] } : chain(e.members[0]!);
    return { t: 'concat', items: [e.lit, trie(e.members.map((m) => m.slice(1)))] };
  });
  return { t: 'alt', branches: out, trie: true };
}

/** The tree with every alternation of two or more plain strings factored into a trie. */
export function factorLiterals(n: Node): Node {
  switch (n.t) {
    case 'alt': {
      const strings = n.branches.map(literalString);
      if (strings.every((s): s is Lit[] => s !== undefined)) return trie(strings);
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

/** Work per depth of a trie branch starting at depth `d`: sums at one depth, maxima across branches. */
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
      // Every branch head is visited when the alternation is entered; below that, one node per depth.
      add(d, n.branches.length - 1);
      const deeper: number[] = [];
      let end = d;
      for (const b of n.branches) {
        const own: number[] = [];
        end = Math.max(end, trieWork(b, d, w, own));
        add(d, own[d] ?? 0);
        for (let i = d + 1; i < own.length; i++) deeper[i] = Math.max(deeper[i] ?? 0, own[i] ?? 0);
      }
      for (let i = d + 1; i < deeper.length; i++) add(i, deeper[i] ?? 0);
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
