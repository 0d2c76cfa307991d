/**
 * Stalwart `matches` patterns (Rust `regex` crate syntax) compiled for a linear-time engine, so no
 * rule and no input can make a match backtrack: every match costs time linear in the subject, as
 * in Rust. The pattern is parsed once (`regex-syntax.ts`), its classes resolved to code-point
 * ranges (`regex-ranges.ts`), then emitted in RE2 syntax for re2js (RE2 in JavaScript:
 * leftmost-first like Rust, linear time, no backtracking). `bench/regex.ts` measured 0.2–94 µs per
 * search of a 285-character subject (most 7–20 µs; V8's backtracking engine: 0.2–6 µs, but seconds to
 * minutes on hostile input). V8's own linear mode (the RegExp `l` flag) was measured too: it runs
 * only without the `u`/`i` flags, look-around and counts above 16, and was 2–30× slower than re2js
 * on the same searches, so it is not used.
 *
 * Rust semantics kept: `.` excludes only LF (nothing under `(?s)`, CR too under `(?R)`);
 * `^`/`$` anchor the whole haystack unless `(?m)`, where only LF breaks lines; `\d \s \w` are
 * Unicode (`\p{Nd}`, `White_Space`, `Alphabetic`+`M`+`Nd`+`Pc`+`Join_Control`), ASCII under `(?-u)`;
 * leftmost-first alternation; greedy/lazy and `(?U)`; POSIX classes, nested classes and the set
 * operations `&&`, `--`, `~~`; named groups. Refused, as Rust refuses them: backreferences and
 * look-around (a {@link RegexError} with the offset). Differences from Rust: word boundaries
 * (`\b \B \< \>`) look at ASCII word characters only; `(?R)` line anchors break lines at LF only;
 * nested counted repetitions may total at most 1000 (RE2's limit); a pattern whose cost
 * (`regex-cost.ts`: the instructions one search step can visit) is over {@link MAX_PROGRAM_COST} is
 * refused, for a search costs up to that × the subject length; a pattern longer than
 * {@link MAX_PATTERN_LENGTH} is refused.
 */
import { RE2JS } from 're2js';
import { RegexError } from './regex-error.js';
import { patternCost, factorLiterals, type CostWeights } from './regex-cost.js';
import { classRanges, type Ranges } from './regex-ranges.js';
import { Parser, WORD_A, WORD_U, type AssertKind, type ClassItem, type ClassSet, type Node } from './regex-syntax.js';

export { RegexError } from './regex-error.js';
export { MAX_REPEAT } from './regex-syntax.js';

/**
 * Longest accepted pattern source, in UTF-16 code units: room for a list of 3,000 keywords. It
 * bounds the compile time (1,000 keywords, 7.5 KB: 0.2–0.4 s) and memory, not the search, which
 * {@link MAX_PROGRAM_COST} bounds.
 */
export const MAX_PATTERN_LENGTH = 32_768;

/** One match: the whole match at 0, then each group (`undefined`/`null` when it did not take part). */
export type RustRegexMatch = readonly (string | null | undefined)[] & {
  readonly groups?: Record<string, string | null | undefined> | undefined;
};

/** A compiled Rust-syntax pattern; `exec`/`test` search the whole subject, statelessly. */
export interface RustRegex {
  /** The Rust source as written in the rule. */
  readonly source: string;
  exec(subject: string): RustRegexMatch | null;
  test(subject: string): boolean;
}

function quantifier(n: Extract<Node, { t: 'repeat' }>): string {
  const q = n.min === 0 && n.max === Infinity ? '*' : n.min === 1 && n.max === Infinity ? '+'
    : n.min === 0 && n.max === 1 ? '?' : n.max === Infinity ? `{${n.min},}` : n.min === n.max ? `{${n.min}}` : `{${n.min},${n.max}}`;
  return q + (n.greedy ? '' : '?');
}

const esc = (cp: number): string => `\\x{${cp.toString(16)}}`;

/** RE2 syntax for a range list: `\x{…}` escapes only, so no character is special. */
function re2Ranges(r: Ranges): string {
  if (r.length === 0) return '[^\\x{0}-\\x{10ffff}]';
  let out = '';
  for (let i = 0; i < r.length; i += 2) {
    out += r[i] === r[i + 1] ? esc(r[i]!) : `${esc(r[i]!)}-${esc(r[i + 1]!)}`;
  }
  return `[${out}]`;
}

const RE2_CATEGORIES = new Set('L Lu Ll Lt Lm Lo M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp C Cc Cf Co Cs'.split(' '));
const re2Known = new Map<string, boolean>();

/** A JS property escape (`\p{Nd}`, `\P{Script_Extensions=Greek}`) in RE2 syntax, or undefined. */
function re2Property(src: string): string | undefined {
  const m = /^\\([pP])\{(?:(General_Category|Script|Script_Extensions)=)?([A-Za-z_]+)\}$/.exec(src);
  if (m === null) return undefined;
  const [, pP, key, value] = m as unknown as [string, string, string | undefined, string];
  if (key === 'General_Category' || key === undefined) return RE2_CATEGORIES.has(value) ? `\\${pP}{${value}}` : undefined;
  // A script: RE2 knows scripts, not script extensions (the difference is a few shared marks).
  let ok = re2Known.get(value);
  if (ok === undefined) {
    try {
      RE2JS.compile(`\\p{${value}}`);
      ok = true;
    } catch {
      ok = false;
    }
    re2Known.set(value, ok);
  }
  return ok ? `\\${pP}{${value}}` : undefined;
}

/** The members of a class in RE2 syntax when they need no range arithmetic, else undefined. */
function re2Items(items: readonly ClassItem[]): string | undefined {
  let out = '';
  for (const it of items) {
    if (it.k === 'cp') out += esc(it.cp);
    else if (it.k === 'range') out += `${esc(it.lo)}-${esc(it.hi)}`;
    else if (it.k === 'prop') {
      const p = re2Property(it.src);
      if (p === undefined) return undefined;
      out += p;
    } else {
      if (it.set.k !== 'union' || it.set.negated) return undefined;
      const inner = re2Items(it.set.items);
      if (inner === undefined) return undefined;
      out += inner;
    }
  }
  return out;
}

/** A class in RE2 syntax: written directly when RE2 can read it, else as computed ranges. */
function re2Class(set: ClassSet): string {
  if (set.k === 'union' && set.items.length > 0) {
    const items = re2Items(set.items);
    if (items !== undefined) return `[${set.negated ? '^' : ''}${items}]`;
  }
  return re2Ranges(classRanges(set));
}

const wordClass = (unicode: boolean): string => re2Class({ k: 'union', negated: false, items: unicode ? WORD_U : WORD_A });

/** RE2 forms of Rust's assertions (see the module docstring for the approximations). */
function re2Assert(kind: AssertKind, unicode: boolean, uses: { lookbehind: boolean }): string {
  switch (kind) {
    case 'start': return '\\A';
    case 'end': return '\\z';
    case 'lineStart': return '(?m:^)';
    case 'lineEnd': return '(?m:$)';
    case 'word': return '\\b';
    case 'notWord': return '\\B';
    default: {
      uses.lookbehind = true;
      const w = wordClass(unicode);
      if (kind === 'wordStart') return `\\b(?<!${w})`;
      if (kind === 'wordEnd') return `\\b(?<=${w})`;
      if (kind === 'wordStartHalf') return `(?<!${w})`;
      return `(?:\\b(?<=${w})|\\B(?<!${w}))`; // end-half: not followed by a word character
    }
  }
}

function re2(n: Node, uses: { lookbehind: boolean }): string {
  switch (n.t) {
    case 'lit': {
      return n.ci ? `(?i:${esc(n.cp)})` : esc(n.cp);
    }
    case 'any':
      return n.s ? '(?s:.)' : n.R ? '[^\\x{a}\\x{d}]' : '[^\\x{a}]';
    case 'class': {
      const cls = re2Class(n.set);
      return n.ci ? `(?i:${cls})` : cls;
    }
    case 'assert':
      return re2Assert(n.kind, n.unicode, uses);
    case 'group': {
      const open = n.cap ? (n.name !== undefined && /^\w+$/.test(n.name) ? `(?P<${n.name}>` : '(') : '(?:';
      return `${open}${re2(n.body, uses)})`;
    }
    case 'concat':
      return n.items.map((i) => `(?:${re2(i, uses)})`).join('');
    case 'alt':
      return n.branches.map((b) => re2(b, uses)).join('|');
    case 'repeat':
      return `(?:${re2(n.body, uses)})${quantifier(n)}`;
  }
}

function countGroups(n: Node): number {
  switch (n.t) {
    case 'group': return (n.cap ? 1 : 0) + countGroups(n.body);
    case 'repeat': return countGroups(n.body);
    case 'concat': return n.items.reduce((s, i) => s + countGroups(i), 0);
    case 'alt': return n.branches.reduce((s, b) => s + countGroups(b), 0);
    default: return 0;
  }
}

/**
 * Largest accepted {@link patternCost} (`regex-cost.ts`): a search costs up to that × the subject
 * length. The fuzz campaign's `(?:(a)|b){1000}!` (cost 13,001) took 17–28 s on 100 KB, `(?:a*)` ×680
 * (1,360) 11 s; just under the limit `(?:a*)` ×499 still takes 2.5–4 s (the worst shape: every
 * instruction live at every character). A keyword list costs its trie's widest fan-out per depth
 * (1,000 words: a few hundred) and `a{1000}` 1,000.
 */
export const MAX_PROGRAM_COST = 1000;

/** The weights of `patternCost`: a look-behind automaton for the half boundaries. */
function weights(root: Node): CostWeights {
  return {
    atom: 1,
    assert: (n) => (['start', 'end', 'lineStart', 'lineEnd', 'word', 'notWord'].includes(n.kind) ? 1 : 4),
    slots: 2 * (countGroups(root) + 1),
  };
}

function re2Regex(source: string, parsed: Node): RustRegex {
  const root = factorLiterals(parsed);
  const cost = patternCost(root, weights(root));
  if (cost > MAX_PROGRAM_COST) {
    throw new RegexError(`pattern too complex: its program costs ${cost} (limit ${MAX_PROGRAM_COST}); write fewer or smaller repetitions and capture groups`);
  }
  const uses = { lookbehind: false };
  const src = re2(root, uses);
  let re: RE2JS;
  try {
    re = RE2JS.compile(src, uses.lookbehind ? RE2JS.LOOKBEHINDS : 0);
  } catch (err) {
    throw new RegexError(`pattern too large or unsupported: ${(err as Error).message}`);
  }
  // `test` runs RE2's DFA (no captures), far cheaper than `exec` on a subject that does not match,
  // which is the common case of a spam rule.
  return { source, exec: (s) => (re.test(s) ? (re.exec(s) as RustRegexMatch | null) : null), test: (s) => re.test(s) };
}

/**
 * Compiles a Rust-syntax regular expression for a linear-time engine (re2js). Semantics per the
 * module docstring.
 * Throws {@link RegexError} for invalid patterns, for what Rust refuses too (backreferences,
 * look-around), for counts above `MAX_REPEAT`, and for sources longer than {@link MAX_PATTERN_LENGTH}.
 */
export function compileRustRegex(source: string): RustRegex {
  if (source.length > MAX_PATTERN_LENGTH) {
    throw new RegexError(`pattern is ${source.length} characters long; the limit is ${MAX_PATTERN_LENGTH}`);
  }
  const p = new Parser(source);
  const root = p.parseAlt({ i: false, m: false, s: false, x: false, U: false, u: true, R: false }, 0);
  if (!p.eof()) p.fail('unopened group');
  return re2Regex(source, root);
}
