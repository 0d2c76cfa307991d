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
 * look-around (a {@link RegexError} with the offset). Word boundaries (`\b \B \< \> \b{start}`…)
 * look at Unicode word characters (`\w`) as Rust's do, ASCII ones under `(?-u)`: RE2 has only an
 * ASCII `\b`, so such a pattern searches a marked copy of the subject (`regex-marks.ts`).
 * Differences from Rust: `(?R)` line anchors break lines at LF only; nested counted repetitions
 * may total at most 1000 (RE2's limit); a pattern whose cost (`regex-cost.ts`: the instructions one
 * search step can visit) is over {@link MAX_PROGRAM_COST} is refused, for a search costs up to that
 * × the subject length; a pattern longer than {@link MAX_PATTERN_LENGTH} is refused.
 * Two bounds Rust does not have, for a rule set that is hostile or merely careless: a search given a
 * work limit (`matches`: {@link DEFAULT_REGEX_WORK_LIMIT} steps, `EngineOptions.regexWorkLimit`) is
 * refused before it starts when its cost × the subject's length is over it ({@link RegexWorkError});
 * and the DFA state caches re2js keeps per compiled program share one budget per thread, the least
 * recently used dropped past it (`regex-cache.ts`), which never changes a result.
 */
import { RE2JS } from 're2js';
import { isStackOverflow } from '../util/index.js';
import { BudgetedProgram } from './regex-cache.js';
import { RegexError, RegexWorkError } from './regex-error.js';
import { patternCost, factorLiterals, type CostWeights } from './regex-cost.js';
import { ANY_MARK, MARK_RANGE, markClass, markSubject, markTest, unmark } from './regex-marks.js';
import { classRanges, complement, subtract, type Ranges } from './regex-ranges.js';
import { Parser, WORD_A, WORD_U, type AssertKind, type ClassItem, type ClassSet, type Node } from './regex-syntax.js';

export { RegexError, RegexWorkError } from './regex-error.js';
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

/**
 * A compiled Rust-syntax pattern; `exec`/`test` search the whole subject, statelessly (the DFA cache
 * they fill is shared under the thread's budget, `regex-cache.ts`, and never changes a result).
 * `maxWork` (steps; default no limit): refuse a search that could take more, i.e. whose program
 * cost × the subject's length (UTF-16 code units) is over it, by throwing {@link RegexWorkError}
 * before the search starts. The program is the pattern's own, of cost {@link RustRegex.cost}; for a
 * pattern with Unicode word boundaries on an ASCII subject, and for the quick test that comes first
 * on another, the cheaper one without marks.
 */
export interface RustRegex {
  /** The Rust source as written in the rule. */
  readonly source: string;
  /**
   * The pattern's cost (`regex-cost.ts`, at most {@link MAX_PROGRAM_COST}): the instructions one
   * step of a search can visit, so a search of an n-character subject does at most cost × n steps.
   */
  readonly cost: number;
  /** Bytes its programs' DFA caches hold now (re2js's estimate; `regex-cache.ts`), for inspection. */
  readonly cacheBytes: number;
  exec(subject: string, maxWork?: number): RustRegexMatch | null;
  test(subject: string, maxWork?: number): boolean;
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
  // RE2 knows scripts, not script extensions (which add the marks a script shares with others).
  if (key === 'Script_Extensions') return undefined;
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

/**
 * A class in RE2 syntax: written directly when RE2 can read it, else as computed ranges. Under
 * `ci`, RE2 folds a class it reads as Rust does (each range and property, then the negation); the
 * computed ranges are folded already (`classRanges`).
 */
function re2Class(set: ClassSet, ci: boolean): string {
  if (set.k === 'union' && set.items.length > 0) {
    const items = re2Items(set.items);
    if (items !== undefined) return ci ? `(?i:[${set.negated ? '^' : ''}${items}])` : `[${set.negated ? '^' : ''}${items}]`;
  }
  return re2Ranges(classRanges(set, ci));
}

const wordClass = (unicode: boolean): string => re2Class({ k: 'union', negated: false, items: unicode ? WORD_U : WORD_A }, false);

/** RE2 forms of Rust's assertions without marks: ASCII `\b`, look-behind for the half boundaries. */
function re2Assert(kind: AssertKind, unicode: boolean, uses: Uses): string {
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

interface Uses {
  lookbehind: boolean;
  /** Searching the marked subject (`regex-marks.ts`): atoms leave marks out, assertions read them. */
  marks: boolean;
  /** Memo of {@link sides}. */
  sides: Map<Node, number[]>;
  /**
   * Without marks: leave the Unicode word assertions out (match the empty string). The pattern then
   * matches wherever the full one does, and more: a quick test on the unmarked subject that rules
   * most subjects out before the marked search.
   */
  relax?: boolean;
}

/** In the marked subject, a position is just before its mark (B) or just after it (A); a bit set of both. */
const B = 1;
const A = 2;

/** A class of code points without the marks (in mark mode) as RE2 source. */
function atomClass(r: Ranges, uses: Uses): string {
  return re2Ranges(uses.marks ? subtract(r, MARK_RANGE) : r);
}

const NOT_LF = complement([10, 10]);
const NOT_LF_CR = complement([10, 10, 13, 13]);
const ALL = complement([]);

/**
 * RE2 source of `n`, entered at the sides `at` of a position of the marked subject (ignored
 * without marks), and the sides it can end at. An atom consumes the mark before its character
 * when at B; an assertion consumes the mark when at B and reads it by look-behind when at A.
 */
function re2(n: Node, uses: Uses, at: number): [string, number] {
  const mark = (): string => (!uses.marks ? '' : at === B ? ANY_MARK : at === A ? '' : `${ANY_MARK}?`);
  switch (n.t) {
    case 'lit':
      return [mark() + (n.ci ? `(?i:${esc(n.cp)})` : esc(n.cp)), B];
    case 'any': {
      if (!uses.marks) return [n.s ? '(?s:.)' : n.R ? '[^\\x{a}\\x{d}]' : '[^\\x{a}]', B];
      return [mark() + atomClass(n.s ? ALL : n.R ? NOT_LF_CR : NOT_LF, uses), B];
    }
    case 'class': {
      return [mark() + (uses.marks ? atomClass(classRanges(n.set, n.ci), uses) : re2Class(n.set, n.ci)), B];
    }
    case 'assert': {
      if (!uses.marks) return [uses.relax === true && isUnicodeWordAssert(n) ? '' : re2Assert(n.kind, n.unicode, uses), at];
      const cls = markClass(markTest(n.kind, n.unicode));
      if (at & A) uses.lookbehind = true;
      return [at === B ? cls : at === A ? `(?<=${cls})` : `(?:${cls}|(?<=${cls}))`, A];
    }
    case 'group': {
      const open = n.cap ? (n.name !== undefined && /^\w+$/.test(n.name) ? `(?P<${n.name}>` : '(') : '(?:';
      const [body, out] = re2(n.body, uses, at);
      return [`${open}${body})`, out];
    }
    case 'concat': {
      let src = '';
      let side = at;
      for (const item of n.items) {
        const [s, out] = re2(item, uses, side);
        src += `(?:${s})`;
        side = out;
      }
      return [src, side];
    }
    case 'alt': {
      let out = 0;
      const srcs = n.branches.map((b) => {
        const [s, o] = re2(b, uses, at);
        out |= o;
        return s;
      });
      return [srcs.join('|'), out];
    }
    case 'repeat': {
      const entry = repeatEntry(n, at, uses.sides);
      const [body, out] = re2(n.body, uses, entry);
      return [`(?:${body})${quantifier(n)}`, out | (n.min === 0 ? at : 0)];
    }
  }
}

/** The sides a repetition's body can start at: later iterations start where earlier ones end. */
function repeatEntry(n: Extract<Node, { t: 'repeat' }>, at: number, memo: Map<Node, number[]>): number {
  let entry = at;
  for (let out = sides(n.body, entry, memo); (entry | out) !== entry; out = sides(n.body, entry, memo)) entry |= out;
  return entry;
}

/** The sides `n` can end at when entered at `at` (what `re2` returns, memoized: nested repetitions stay linear). */
function sides(n: Node, at: number, memo: Map<Node, number[]>): number {
  const known = memo.get(n)?.[at];
  if (known !== undefined) return known;
  let out: number;
  switch (n.t) {
    case 'lit':
    case 'any':
    case 'class': out = B; break;
    case 'assert': out = A; break;
    case 'group': out = sides(n.body, at, memo); break;
    case 'concat': out = n.items.reduce((side, i) => sides(i, side, memo), at); break;
    case 'alt': out = n.branches.reduce((o, b) => o | sides(b, at, memo), 0); break;
    case 'repeat': out = sides(n.body, repeatEntry(n, at, memo), memo) | (n.min === 0 ? at : 0); break;
  }
  const row = memo.get(n) ?? [];
  row[at] = out;
  memo.set(n, row);
  return out;
}

/** A word assertion on Unicode word characters (`\b`, `\B`, `\<`, … without `(?-u)`): RE2 has none. */
function isUnicodeWordAssert(n: Extract<Node, { t: 'assert' }>): boolean {
  return n.unicode && !['start', 'end', 'lineStart', 'lineEnd'].includes(n.kind);
}

/** Whether a pattern has a Unicode word assertion, which needs the marked subject. */
function hasUnicodeWordAssert(n: Node): boolean {
  switch (n.t) {
    case 'assert': return isUnicodeWordAssert(n);
    case 'group':
    case 'repeat': return hasUnicodeWordAssert(n.body);
    case 'concat': return n.items.some(hasUnicodeWordAssert);
    case 'alt': return n.branches.some(hasUnicodeWordAssert);
    default: return false;
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
 * instruction live at every character; 1 MB: 18 s for `exec`, which {@link DEFAULT_REGEX_WORK_LIMIT}
 * now refuses to start). A keyword list costs its trie's
 * widest fan-out per depth (1,000 words: about 125) and `a{1000}` 1,000.
 */
export const MAX_PROGRAM_COST = 1000;

/**
 * Default most steps one `matches` search may take (2^26, 64 Mi): the bound of
 * `EngineOptions.regexWorkLimit`, and of any evaluation whose context sets none
 * (`EvalContext.regexWorkLimit`). {@link MAX_PROGRAM_COST} bounds the work per character, not per
 * search; this bounds the search, at about a second on the worst shape (every instruction live at
 * every character: `(?:a*)` ×499 took 15 ns a step for `$1`, i.e. 1 s at this limit, and 18 s on
 * 1 MB, which is now refused). A pass of a search is refused before it starts when its program's
 * cost × the subject's length is over the limit, so the outcome depends on the pattern and the
 * subject only (its length; with Unicode word boundaries, also whether it is ASCII and whether the
 * quick test matched), never on timing or on what the DFA caches hold.
 * Ordinary patterns stay far below it: cost 100 runs on 670,000 characters; the shipped rules'
 * patterns cost 37–104 on ASCII text (their Unicode word boundaries cost nothing there) and at most
 * 392 on other text, and the largest text part of the SpamAssassin corpus is 195,000 characters.
 */
export const DEFAULT_REGEX_WORK_LIMIT = 2 ** 26;

/** The weights of `patternCost`: a mark before each atom, a look-behind for the half boundaries. */
function weights(root: Node, marks: boolean): CostWeights {
  return {
    atom: marks ? 3 : 1,
    // A mark class, possibly behind a look-behind; without marks, ASCII `\b` or a look-behind automaton.
    assert: (n) => (marks ? 3 : ['start', 'end', 'lineStart', 'lineEnd', 'word', 'notWord'].includes(n.kind) ? 1 : 4),
    slots: 2 * (countGroups(root) + 1),
  };
}

const NON_ASCII = /[^\x00-\x7f]/;
const isAscii = (s: string): boolean => !NON_ASCII.test(s);

function re2Regex(source: string, parsed: Node): RustRegex {
  const root = factorLiterals(parsed);
  const uses: Uses = { lookbehind: false, marks: hasUnicodeWordAssert(root), sides: new Map() };
  // The marked subject is twice as long: each step of the search counts twice.
  const cost = patternCost(root, weights(root, uses.marks)) * (uses.marks ? 2 : 1);
  if (cost > MAX_PROGRAM_COST) {
    throw new RegexError(`pattern too complex: its program costs ${cost} (limit ${MAX_PROGRAM_COST}); write fewer or smaller repetitions and capture groups`);
  }
  const [src] = re2(root, uses, B);
  let re: BudgetedProgram;
  try {
    re = new BudgetedProgram(RE2JS.compile(src, uses.lookbehind ? RE2JS.LOOKBEHINDS : 0));
  } catch (err) {
    throw new RegexError(`pattern too large or unsupported: ${(err as Error).message}`);
  }
  const refuse = (c: number, s: string, maxWork: number): void => {
    if (c * s.length > maxWork) throw new RegexWorkError(source, c, s.length, maxWork);
  };
  // `test` runs RE2's DFA (no captures), far cheaper than `exec` on a subject that does not match,
  // which is the common case of a spam rule.
  if (!uses.marks) {
    return {
      source,
      cost,
      get cacheBytes() {
        return re.cacheBytes;
      },
      test: (s, maxWork = Infinity) => {
        refuse(cost, s, maxWork);
        return searched(re, re.re.test(s));
      },
      exec: (s, maxWork = Infinity) => {
        refuse(cost, s, maxWork);
        return searched(re, re.re.test(s) ? (re.re.exec(s) as RustRegexMatch | null) : null);
      },
    };
  }
  // On an ASCII subject, Unicode and ASCII word characters are the same: the pattern without marks
  // (RE2's ASCII `\b`) gives the same answers, on a subject half as long that needs no marking (most
  // mail is ASCII). Compiled on the first ASCII subject.
  // On another subject, the pattern without its word assertions first (on the unmarked subject): a
  // subject it does not match, most of them, is neither marked nor searched twice as long.
  // Both cost what the pattern costs without marks, which bounds their searches. That cost is at
  // most the full one (each weight with marks is at least as large, and counted twice): it is worked
  // out (a walk of the tree, a few ms for 1,000 keywords) only for a subject the full cost refuses.
  let plainCost: number | undefined;
  const refuseUnmarked = (s: string, maxWork: number): void => {
    if (cost * s.length > maxWork) refuse((plainCost ??= patternCost(root, weights(root, false))), s, maxWork);
  };
  const unmarked = (relax: boolean): BudgetedProgram => {
    const u: Uses = { lookbehind: false, marks: false, sides: new Map(), relax };
    const [p] = re2(root, u, B);
    return new BudgetedProgram(RE2JS.compile(p, u.lookbehind ? RE2JS.LOOKBEHINDS : 0));
  };
  let plain: BudgetedProgram | undefined;
  let relaxed: BudgetedProgram | undefined;
  const ascii = (): BudgetedProgram => (plain ??= unmarked(false));
  const mayMatch = (s: string, maxWork: number): boolean => {
    refuseUnmarked(s, maxWork);
    const r = (relaxed ??= unmarked(true));
    return searched(r, r.re.test(s));
  };
  return {
    source,
    cost,
    get cacheBytes() {
      return re.cacheBytes + (plain?.cacheBytes ?? 0) + (relaxed?.cacheBytes ?? 0);
    },
    test: (s, maxWork = Infinity) => {
      if (isAscii(s)) {
        refuseUnmarked(s, maxWork);
        const a = ascii();
        return searched(a, a.re.test(s));
      }
      if (!mayMatch(s, maxWork)) return false;
      refuse(cost, s, maxWork);
      return searched(re, re.re.test(markSubject(s)));
    },
    exec: (s, maxWork = Infinity) => {
      if (isAscii(s)) {
        refuseUnmarked(s, maxWork);
        const a = ascii();
        return searched(a, a.re.test(s) ? (a.re.exec(s) as RustRegexMatch | null) : null);
      }
      if (!mayMatch(s, maxWork)) return null;
      refuse(cost, s, maxWork);
      const marked = markSubject(s);
      const m = searched(re, re.re.test(marked) ? (re.re.exec(marked) as (RustRegexMatch & { groups?: Record<string, string | null | undefined> }) | null) : null);
      if (m === null) return null;
      const out = Array.from(m, (g) => (typeof g === 'string' ? unmark(g) : g)) as (string | null | undefined)[] & { groups?: Record<string, string | null | undefined> };
      if (m.groups !== undefined) {
        out.groups = {};
        for (const [k, v] of Object.entries(m.groups)) out.groups[k] = typeof v === 'string' ? unmark(v) : v;
      }
      return out;
    },
  };
}

/** Accounts the DFA cache growth of the search that gave `result` (`regex-cache.ts`) and returns it. */
function searched<T>(p: BudgetedProgram, result: T): T {
  p.searched();
  return result;
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
  try {
    const p = new Parser(source);
    const root = p.parseAlt({ i: false, m: false, s: false, x: false, U: false, u: true, R: false }, 0);
    if (!p.eof()) p.fail('unopened group');
    return re2Regex(source, root);
  } catch (err) {
    // The tree is walked recursively (its depth is bounded: groups 100 deep, tries MAX_TRIE_DEPTH),
    // so only a thread with a small stack gets here.
    if (isStackOverflow(err)) throw new RegexError('pattern too deeply nested for the stack of this thread');
    throw err;
  }
}
