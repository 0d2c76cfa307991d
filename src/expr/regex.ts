/**
 * Translation of Stalwart `matches` patterns (Rust `regex` crate syntax, expression-language.md
 * §4.4, §9) to JavaScript, with a safety check: JS regexes backtrack while Rust's are linear-time,
 * so patterns that could backtrack catastrophically are refused at compile time.
 *
 * One file on purpose (~590 lines): the parser, the safety analysis and the JS emitter share one
 * private node type and walk it together; splitting them would export internals for no reader's gain.
 *
 * The pattern is parsed into a small syntax tree (flags resolved while parsing), checked, then
 * emitted. Translation table (Rust → JS):
 *
 * | Rust                          | JS                                                               |
 * |-------------------------------|------------------------------------------------------------------|
 * | `.`                           | `[^\n]`; `[^]` under `(?s)`; `[^\r\n]` under `(?R)`              |
 * | `^` `$` `\A` `\z`             | `^` `$` (whole haystack; the JS `m` flag is never used)          |
 * | `^` `$` under `(?m)`          | `(?<![^\n])` / `(?![^\n])` (LF only, as Rust; `\r` too with R)   |
 * | `\d` `\s` `\w` (Unicode)      | `\p{Nd}`, `\p{White_Space}`, `[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]`; negations likewise |
 * | `\d` `\s` `\w` under `(?-u)`  | `[0-9]`, `[\t\n\v\f\r ]`, `[0-9A-Za-z_]`                         |
 * | `\b` `\B` `\<` `\>` `\b{start}` `\b{end}` | look-around on the (Unicode or ASCII) word class     |
 * | `(?i)` over the whole pattern | the `i` flag; a scoped `(?i:…)` expands literals to case classes |
 * | `(?U)`                        | greedy and lazy quantifiers swapped                              |
 * | `(?x)`                        | whitespace and `#` comments dropped (`\ ` stays a space)         |
 * | `(?P<n>…)` `(?<n>…)`          | `(?<n>…)` (a name JS cannot take becomes a plain group: same number) |
 * | `[[:alpha:]]` `[[:^alpha:]]`  | the ASCII ranges (negated as a nested class)                     |
 * | `\p{Greek}` `\pL` `\p{gc=Lu}` | `\p{Script_Extensions=Greek}`, `\p{L}`, `\p{General_Category=Lu}` |
 * | `[a&&b]` `[a--b]` `[a~~b]`, nested classes | the same with the `v` flag (`~~` as `[[a--b][b--a]]`) |
 * | `\x7F` `\x{…}` `\u…` `\U…` `\a` `\f` `\v`, escaped ASCII punctuation | the code point      |
 *
 * The flag is `u`, or `v` when a class needs nesting or set operations; never `g`/`y`/`m`, so
 * `exec` is stateless. Refused (RegexError): backreferences and look-around (Rust rejects them
 * too), unbounded repetitions nesting another unbounded one (`(a+)+`, `(\w+\s?)*`), repeated
 * alternations whose branches can start alike or match empty (`(a|aa)+`; classes are compared on
 * U+0000–U+024F), counts above {@link MAX_REPEAT}, and sources longer than {@link MAX_PATTERN_LENGTH}.
 */

/** Thrown for a pattern that is invalid, unsupported, or could backtrack catastrophically. */
export class RegexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexError';
  }
}

/** Longest accepted pattern source, in UTF-16 code units (4 KiB of ASCII). */
export const MAX_PATTERN_LENGTH = 4096;
/** Largest accepted `{n}`/`{n,m}` bound. */
export const MAX_REPEAT = 1000;

interface Flags { i: boolean; m: boolean; s: boolean; x: boolean; U: boolean; u: boolean; R: boolean }

type ClassItem =
  | { k: 'cp'; cp: number }
  | { k: 'range'; lo: number; hi: number }
  | { k: 'prop'; src: string }
  | { k: 'set'; set: ClassSet };
type ClassSet =
  | { k: 'union'; negated: boolean; items: ClassItem[] }
  | { k: 'op'; op: '&&' | '--' | '~~'; left: ClassSet; right: ClassSet };

type Node =
  | { t: 'lit'; cp: number; ci: boolean }
  | { t: 'any'; s: boolean; R: boolean }
  | { t: 'class'; set: ClassSet; ci: boolean }
  | { t: 'assert'; src: string }
  | { t: 'group'; cap: boolean; name?: string; body: Node }
  | { t: 'concat'; items: Node[] }
  | { t: 'alt'; branches: Node[] }
  | { t: 'repeat'; body: Node; min: number; max: number; greedy: boolean };

const u = (lo: number, hi: number): ClassItem => ({ k: 'range', lo, hi });
const union = (items: ClassItem[], negated = false): ClassSet => ({ k: 'union', negated, items });
const WORD_U: ClassItem[] = ['\\p{Alphabetic}', '\\p{M}', '\\p{Nd}', '\\p{Pc}', '\\p{Join_Control}'].map((src) => ({ k: 'prop', src }));
const WORD_A: ClassItem[] = [u(0x30, 0x39), u(0x41, 0x5a), u(0x61, 0x7a), { k: 'cp', cp: 0x5f }];
const SPACE_A: ClassItem[] = [u(9, 13), { k: 'cp', cp: 32 }];
/** Rust's ASCII POSIX classes. */
const POSIX: Record<string, ClassItem[]> = {
  alnum: [u(0x30, 0x39), u(0x41, 0x5a), u(0x61, 0x7a)], alpha: [u(0x41, 0x5a), u(0x61, 0x7a)],
  ascii: [u(0, 0x7f)], blank: [{ k: 'cp', cp: 9 }, { k: 'cp', cp: 32 }], cntrl: [u(0, 0x1f), { k: 'cp', cp: 0x7f }],
  digit: [u(0x30, 0x39)], graph: [u(0x21, 0x7e)], lower: [u(0x61, 0x7a)], print: [u(0x20, 0x7e)],
  punct: [u(0x21, 0x2f), u(0x3a, 0x40), u(0x5b, 0x60), u(0x7b, 0x7e)], space: SPACE_A, upper: [u(0x41, 0x5a)],
  word: WORD_A, xdigit: [u(0x30, 0x39), u(0x41, 0x46), u(0x61, 0x66)],
};
const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, f: 12, v: 11, a: 7 };

/** Resolves `\p{…}` contents to a JS property escape body, or throws. */
function unicodeProperty(raw: string): string {
  const tryProp = (body: string): boolean => {
    try {
      return new RegExp(`\\p{${body}}`, 'u') !== null;
    } catch {
      return false;
    }
  };
  const eq = raw.search(/[=:]/);
  const candidates: string[] = [];
  const loose = (s: string): string[] => {
    const t = s.trim().replace(/[\s-]+/g, '_');
    const title = t.replace(/(^|_)([a-z])/g, (_m, p: string, c: string) => p + c.toUpperCase());
    return [t, title, title.replace(/_/g, ''), t.toLowerCase(), t.toUpperCase()];
  };
  if (eq >= 0) {
    const key = raw.slice(0, eq).trim().toLowerCase().replace(/[\s_-]/g, '');
    const keyName = ({ gc: 'General_Category', generalcategory: 'General_Category', sc: 'Script', script: 'Script',
      scx: 'Script_Extensions', scriptextensions: 'Script_Extensions' } as Record<string, string>)[key];
    if (keyName === undefined) throw new RegexError(`unsupported Unicode property \\p{${raw}}`);
    for (const v of loose(raw.slice(eq + 1))) candidates.push(`${keyName}=${v}`);
  } else {
    if (/^(any)$/i.test(raw.trim())) return 'Any';
    for (const v of loose(raw)) candidates.push(v, `Script_Extensions=${v}`);
  }
  for (const c of candidates) if (tryProp(c)) return c;
  throw new RegexError(`unknown Unicode class \\p{${raw}}`);
}

class Parser {
  pos = 0;
  constructor(readonly src: string) {}

  fail(msg: string, at = this.pos): never {
    throw new RegexError(`${msg} at offset ${at} in pattern`);
  }
  peek = (off = 0): string => this.src[this.pos + off] ?? '';
  eof = (): boolean => this.pos >= this.src.length;
  /** Code point at the cursor, advancing past it. */
  takeCp(): number {
    const cp = this.src.codePointAt(this.pos)!;
    this.pos += cp > 0xffff ? 2 : 1;
    return cp;
  }
  /** `(?x)`: skip whitespace and `#` comments up to the end of the line. */
  skipX(f: Flags): void {
    if (!f.x) return;
    for (;;) {
      const c = this.peek();
      if (c === '#') {
        while (!this.eof() && this.peek() !== '\n') this.pos++;
      } else if (c !== '' && /\s/u.test(c)) this.pos++;
      else return;
    }
  }

  parseAlt(flags: Flags, depth: number): Node {
    if (depth > 100) this.fail('pattern nests too deeply');
    const branches: Node[] = [];
    let items: Node[] = [];
    for (;;) {
      this.skipX(flags);
      if (this.eof() || this.peek() === ')') break;
      const c = this.peek();
      if (c === '|') {
        this.pos++;
        branches.push({ t: 'concat', items });
        items = [];
      } else if (c === '*' || c === '+' || c === '?' || c === '{') {
        const last = items.pop();
        if (last === undefined || last.t === 'assert') this.fail('repetition operator missing expression');
        items.push(this.parseRepeat(last, flags));
      } else if (c === '(') {
        const n = this.parseGroup(flags, depth);
        if (n !== undefined) items.push(n);
      } else items.push(this.parseAtom(flags));
    }
    branches.push({ t: 'concat', items });
    return branches.length === 1 ? branches[0]! : { t: 'alt', branches };
  }

  parseRepeat(body: Node, flags: Flags): Node {
    const start = this.pos;
    const c = this.src[this.pos++]!;
    let min: number;
    let max: number;
    if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '?') [min, max] = [0, 1];
    else {
      const m = /^\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}/.exec(this.src.slice(start));
      if (m === null) this.fail('invalid counted repetition', start);
      this.pos = start + m[0].length;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) {
        this.fail(`counted repetition ${m[0]} exceeds the limit of ${MAX_REPEAT}`, start);
      }
      if (max < min) this.fail(`invalid counted repetition ${m[0]} (max below min)`, start);
    }
    const greedy = this.peek() !== '?';
    if (!greedy) this.pos++;
    return { t: 'repeat', body, min, max, greedy: flags.U ? !greedy : greedy };
  }

  /** Returns undefined for a flag-only group `(?i)`, which changes `flags` in place. */
  parseGroup(flags: Flags, depth: number): Node | undefined {
    const start = this.pos;
    this.pos++;
    let cap = true;
    let name: string | undefined;
    let inner = flags;
    if (this.peek() === '?') {
      this.pos++;
      const rest = this.src.slice(this.pos);
      if (/^(=|!|<=|<!)/.test(rest)) this.fail('look-around (look-ahead/look-behind) is not supported, as in Rust regex', start);
      if (/^P[=>]/.test(rest)) this.fail('backreferences are not supported, as in Rust regex', start);
      const named = /^P?<([^>]*)>/.exec(rest);
      if (named !== null) {
        name = named[1]!;
        if (!/^[_\p{Alphabetic}][_.[\]0-9\p{Alphabetic}]*$/u.test(name)) this.fail(`invalid group name "${name}"`, start);
        this.pos += named[0].length;
      } else {
        const fm = /^([a-zA-Z-]*)([:)])/.exec(rest);
        if (fm === null || (fm[1] === '' && fm[2] === ')')) this.fail('unrecognized group syntax', start);
        const next: Flags = { ...flags };
        let on = true;
        for (const ch of fm[1]!) {
          if (ch === '-') {
            if (!on) this.fail('repeated negation in flags', start);
            on = false;
          } else if ('imsxUuR'.includes(ch)) next[ch as keyof Flags] = on;
          else this.fail(`unrecognized flag "${ch}"`, start);
        }
        this.pos += fm[0].length;
        if (fm[2] === ')') {
          Object.assign(flags, next); // applies to the rest of the enclosing group
          return undefined;
        }
        inner = next;
        cap = false;
      }
    }
    const body = this.parseAlt({ ...inner }, depth + 1);
    if (this.peek() !== ')') this.fail('unclosed group', start);
    this.pos++;
    return { t: 'group', cap, name, body };
  }

  parseAtom(flags: Flags): Node {
    const c = this.peek();
    if (c === '[') return { t: 'class', set: this.parseClass(flags), ci: flags.i };
    if (c === '.' && ++this.pos) return { t: 'any', s: flags.s, R: flags.R };
    if (c === '^' || c === '$') {
      this.pos++;
      if (!flags.m) return { t: 'assert', src: c };
      const nl = flags.R ? '\\r\\n' : '\\n';
      return { t: 'assert', src: c === '^' ? `(?<![^${nl}])` : `(?![^${nl}])` };
    }
    if (c === '\\') return this.parseEscape(flags, false) as Node;
    return { t: 'lit', cp: this.takeCp(), ci: flags.i };
  }

  /** An escape; inside a class returns a ClassItem, outside a Node. */
  parseEscape(flags: Flags, inClass: boolean): Node | ClassItem {
    const start = this.pos;
    this.pos++;
    if (this.eof()) this.fail('incomplete escape sequence', start);
    const c = this.peek();
    const item = (it: ClassItem): Node | ClassItem => (inClass ? it : { t: 'class', set: union([it]), ci: flags.i });
    const set = (items: ClassItem[], neg: boolean): Node | ClassItem =>
      inClass ? (neg ? { k: 'set', set: union(items, true) } : { k: 'set', set: union(items) }) : { t: 'class', set: union(items, neg), ci: flags.i };
    const cpOut = (cp: number): Node | ClassItem => (inClass ? { k: 'cp', cp } : { t: 'lit', cp, ci: flags.i });
    this.pos++;
    switch (c) {
      case 'd': return flags.u ? item({ k: 'prop', src: '\\p{Nd}' }) : set([u(0x30, 0x39)], false);
      case 'D': return flags.u ? item({ k: 'prop', src: '\\P{Nd}' }) : set([u(0x30, 0x39)], true);
      case 's': return flags.u ? item({ k: 'prop', src: '\\p{White_Space}' }) : set(SPACE_A, false);
      case 'S': return flags.u ? item({ k: 'prop', src: '\\P{White_Space}' }) : set(SPACE_A, true);
      case 'w': return set(flags.u ? WORD_U : WORD_A, false);
      case 'W': return set(flags.u ? WORD_U : WORD_A, true);
      case 'p':
      case 'P': {
        let body: string;
        if (this.peek() === '{') {
          const end = this.src.indexOf('}', this.pos);
          if (end < 0) this.fail('unclosed Unicode class', start);
          body = this.src.slice(this.pos + 1, end);
          this.pos = end + 1;
        } else {
          if (this.eof()) this.fail('incomplete Unicode class', start);
          body = String.fromCodePoint(this.takeCp());
        }
        let neg = c === 'P';
        if (body.startsWith('^')) [neg, body] = [!neg, body.slice(1)];
        return item({ k: 'prop', src: `\\${neg ? 'P' : 'p'}{${unicodeProperty(body)}}` });
      }
      case 'x':
      case 'u':
      case 'U': {
        const m = /^\{([0-9a-fA-F]{1,8})\}/.exec(this.src.slice(this.pos)) ??
          new RegExp(`^[0-9a-fA-F]{${c === 'x' ? 2 : c === 'u' ? 4 : 8}}`).exec(this.src.slice(this.pos));
        if (m === null) this.fail('invalid hexadecimal escape', start);
        const cp = parseInt(m[1] ?? m[0], 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) this.fail('escape is not a Unicode scalar value', start);
        this.pos += m[0].length;
        return cpOut(cp);
      }
      case 'k': this.fail('backreferences are not supported, as in Rust regex', start);
    }
    if (/[1-9]/.test(c)) this.fail('backreferences are not supported, as in Rust regex', start);
    if (SIMPLE_ESCAPES[c] !== undefined) return cpOut(SIMPLE_ESCAPES[c]);
    if (!inClass) {
      const w = `[${flags.u ? WORD_U.map((i) => (i as { src: string }).src).join('') : '0-9A-Za-z_'}]`;
      const boundary: Record<string, string> = {
        A: '^', z: '$', '<': `(?<!${w})(?=${w})`, '>': `(?<=${w})(?!${w})`,
        B: `(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`,
      };
      if (c === 'b') {
        const sub = /^\{(start|end|start-half|end-half)\}/.exec(this.src.slice(this.pos));
        if (sub !== null) {
          this.pos += sub[0].length;
          const src = { start: boundary['<']!, end: boundary['>']!, 'start-half': `(?<!${w})`, 'end-half': `(?!${w})` }[sub[1] as 'start'];
          return { t: 'assert', src };
        }
        return { t: 'assert', src: `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))` };
      }
      if (boundary[c] !== undefined) return { t: 'assert', src: boundary[c] };
    }
    // regex ≥ 1.8: any escaped ASCII char that is not alphanumeric is itself (LF and space included).
    if (c.charCodeAt(0) < 0x80 && !/[0-9A-Za-z]/.test(c)) return cpOut(c.charCodeAt(0));
    this.fail(`unrecognized escape sequence \\${c}`, start);
  }

  parseClass(flags: Flags): ClassSet {
    const start = this.pos;
    this.pos++; // [
    const negated = this.peek() === '^';
    if (negated) this.pos++;
    const operands: ClassSet[] = [];
    const ops: ('&&' | '--' | '~~')[] = [];
    let items: ClassItem[] = [];
    let first = true;
    for (;;) {
      this.skipX(flags);
      if (this.eof()) this.fail('unclosed character class', start);
      const c = this.peek();
      if (c === ']' && !first && ++this.pos) break;
      const two = this.src.slice(this.pos, this.pos + 2);
      if (!first && (two === '&&' || two === '--' || two === '~~')) {
        this.pos += 2;
        operands.push(union(items));
        ops.push(two);
        items = [];
        continue;
      }
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(this.src.slice(this.pos));
      if (posix !== null) {
        const members = POSIX[posix[2]!];
        if (members === undefined) this.fail(`unknown POSIX class [:${posix[2]}:]`);
        this.pos += posix[0].length;
        if (posix[1] === '^') items.push({ k: 'set', set: union(members, true) });
        else items.push(...members);
        continue;
      }
      if (c === '[') items.push({ k: 'set', set: this.parseClass(flags) });
      else this.classRange(flags, items);
    }
    operands.push(union(items));
    let set = operands[0]!;
    for (let i = 0; i < ops.length; i++) set = { k: 'op', op: ops[i]!, left: set, right: operands[i + 1]! };
    if (!negated) return set;
    return set.k === 'union' ? { ...set, negated: true } : union([{ k: 'set', set }], true);
  }

  /** One class atom, or a range `a-z` when a `-` follows that is neither last nor `--`. */
  classRange(flags: Flags, items: ClassItem[]): void {
    const lo = this.classAtom(flags);
    this.skipX(flags);
    if (lo.k === 'cp' && this.peek() === '-' && this.peek(1) !== ']' && this.peek(1) !== '-') {
      this.pos++;
      this.skipX(flags);
      const hi = this.classAtom(flags);
      if (hi.k !== 'cp') this.fail('invalid character class range');
      if (hi.cp < lo.cp) this.fail('invalid character class range (end before start)');
      items.push({ k: 'range', lo: lo.cp, hi: hi.cp });
    } else items.push(lo);
  }

  classAtom(flags: Flags): ClassItem {
    if (this.peek() === '\\') return this.parseEscape(flags, true) as ClassItem;
    return { k: 'cp', cp: this.takeCp() };
  }
}

const cpEsc = (cp: number): string => `\\u{${cp.toString(16)}}`;

/** Simple case variants of a code point (what Rust's and JS's case folding pair it with). */
function caseVariants(cp: number): number[] {
  const s = String.fromCodePoint(cp);
  const out = new Set<number>([cp]);
  for (const t of [s.toLowerCase(), s.toUpperCase()]) if ([...t].length === 1) out.add(t.codePointAt(0)!);
  if (cp === 0x6b || cp === 0x4b) out.add(0x212a); // KELVIN SIGN folds to k
  if (cp === 0x73 || cp === 0x53) out.add(0x17f); // LONG S folds to s
  return [...out];
}

class Emitter {
  needsV = false;
  constructor(readonly localCi: boolean) {}

  /** Class items, with case variants added under a scoped `(?i)`. */
  items(items: ClassItem[], ci: boolean): string {
    let out = '';
    for (const it of items) {
      if (it.k === 'cp') out += ci ? caseVariants(it.cp).map(cpEsc).join('') : cpEsc(it.cp);
      else if (it.k === 'range') {
        out += `${cpEsc(it.lo)}-${cpEsc(it.hi)}`;
        if (ci && it.hi - it.lo <= 512) {
          for (let cp = it.lo; cp <= it.hi; cp++) for (const v of caseVariants(cp)) if (v < it.lo || v > it.hi) out += cpEsc(v);
        }
      } else if (it.k === 'prop') out += it.src;
      else {
        this.needsV = true;
        out += this.set(it.set, ci);
      }
    }
    return out;
  }

  set(set: ClassSet, ci: boolean): string {
    if (set.k === 'union') {
      const only = set.items.length === 1 && !set.negated ? set.items[0]! : undefined;
      if (only !== undefined && only.k === 'prop') return only.src; // `\p{Nd}` needs no brackets
      return `[${set.negated ? '^' : ''}${this.items(set.items, ci)}]`;
    }
    this.needsV = true;
    const l = this.set(set.left, ci);
    const r = this.set(set.right, ci);
    if (set.op === '~~') return `[[${l}--${r}][${r}--${l}]]`;
    return `[${l}${set.op}${r}]`;
  }

  node(n: Node): string {
    switch (n.t) {
      case 'lit': {
        const vs = n.ci && this.localCi ? caseVariants(n.cp) : [n.cp];
        if (vs.length > 1) return `[${vs.map(cpEsc).join('')}]`;
        const ch = String.fromCodePoint(n.cp);
        if ('\\^$.*+?()[]{}|/'.includes(ch)) return '\\' + ch;
        return n.cp < 0x20 || n.cp === 0x7f || (n.cp >= 0x80 && /[\p{C}\p{Z}]/u.test(ch)) ? cpEsc(n.cp) : ch;
      }
      case 'any':
        return n.s ? '[^]' : n.R ? '[^\\r\\n]' : '[^\\n]';
      case 'class':
        return this.set(n.set, n.ci && this.localCi);
      case 'assert':
        return n.src;
      case 'group':
        return `(${n.cap ? (n.name !== undefined && /^[A-Za-z_$][\w$]*$/.test(n.name) ? `?<${n.name}>` : '') : '?:'}${this.node(n.body)})`;
      case 'concat':
        return n.items.map((i) => (i.t === 'alt' ? `(?:${this.node(i)})` : this.node(i))).join('');
      case 'alt':
        return n.branches.map((b) => this.node(b)).join('|');
      case 'repeat': {
        const body = this.node(n.body);
        const atomic = n.body.t === 'lit' || n.body.t === 'any' || n.body.t === 'class' || n.body.t === 'group';
        const q = n.min === 0 && n.max === Infinity ? '*' : n.min === 1 && n.max === Infinity ? '+'
          : n.min === 0 && n.max === 1 ? '?' : n.max === Infinity ? `{${n.min},}` : n.min === n.max ? `{${n.min}}` : `{${n.min},${n.max}}`;
        return `${atomic ? body : `(?:${body})`}${q}${n.greedy ? '' : '?'}`;
      }
    }
  }
}

/** Whether each literal/class node is case-insensitive: 'all', 'none' or 'mixed'. */
function caseMode(n: Node): { ci: boolean; cs: boolean } {
  const acc = { ci: false, cs: false };
  const walk = (x: Node): void => {
    if (x.t === 'lit' || x.t === 'class') acc[x.ci ? 'ci' : 'cs'] = true;
    else if (x.t === 'group' || x.t === 'repeat') walk(x.body);
    else if (x.t === 'concat') x.items.forEach(walk);
    else if (x.t === 'alt') x.branches.forEach(walk);
  };
  walk(n);
  return acc;
}

/** What a node can start with: literal code points, classes (as compiled tests), any char, or nothing. */
interface First { any: boolean; cps: Set<number>; classes: RegExp[]; nullable: boolean }

function first(n: Node, classRe: (n: Node) => RegExp): First {
  switch (n.t) {
    case 'lit': return { any: false, cps: new Set(n.ci ? caseVariants(n.cp) : [n.cp]), classes: [], nullable: false };
    case 'any': return { any: true, cps: new Set(), classes: [], nullable: false };
    case 'class': return { any: false, cps: new Set(), classes: [classRe(n)], nullable: false };
    case 'assert': return { any: false, cps: new Set(), classes: [], nullable: true };
    case 'group': return first(n.body, classRe);
    case 'repeat': {
      const f = first(n.body, classRe);
      return n.min === 0 ? { ...f, nullable: true } : f;
    }
    case 'concat':
    case 'alt': {
      const acc: First = { any: false, cps: new Set(), classes: [], nullable: n.t === 'concat' };
      for (const x of n.t === 'concat' ? n.items : n.branches) {
        const f = first(x, classRe);
        acc.any ||= f.any;
        f.cps.forEach((c) => acc.cps.add(c));
        acc.classes.push(...f.classes);
        if (n.t === 'alt') acc.nullable ||= f.nullable;
        else if (!f.nullable) {
          acc.nullable = false;
          break;
        }
      }
      if (n.t === 'concat' && n.items.length === 0) acc.nullable = true;
      return acc;
    }
  }
}

/** Code points on which two class tests are compared (ASCII, Latin-1, Latin Extended-A/B). */
const SAMPLE = Array.from({ length: 0x250 }, (_, i) => String.fromCodePoint(i));

function overlaps(a: First, b: First): boolean {
  if (a.nullable || b.nullable) return true;
  if (a.any || b.any) return true;
  for (const c of a.cps) if (b.cps.has(c) || b.classes.some((r) => r.test(String.fromCodePoint(c)))) return true;
  for (const c of b.cps) if (a.classes.some((r) => r.test(String.fromCodePoint(c)))) return true;
  for (const ra of a.classes) for (const rb of b.classes) if (SAMPLE.some((ch) => ra.test(ch) && rb.test(ch))) return true;
  return false;
}

/** Refuses shapes that make a backtracking engine explode (see the module docstring). */
function checkSafety(root: Node, classRe: (n: Node) => RegExp): void {
  const hasUnbounded = (n: Node): boolean =>
    n.t === 'repeat' ? n.max === Infinity || hasUnbounded(n.body)
      : n.t === 'group' ? hasUnbounded(n.body)
        : n.t === 'concat' ? n.items.some(hasUnbounded) : n.t === 'alt' ? n.branches.some(hasUnbounded) : false;
  const alts = (n: Node, out: Node[][]): Node[][] => {
    if (n.t === 'alt') out.push(n.branches);
    if (n.t === 'group') alts(n.body, out);
    else if (n.t === 'concat') n.items.forEach((x) => alts(x, out));
    else if (n.t === 'alt') n.branches.forEach((x) => alts(x, out));
    return out; // alternations under a nested repeat are checked when that repeat is visited
  };
  const walk = (n: Node): void => {
    if (n.t === 'repeat') {
      if (n.max > 10) {
        if (hasUnbounded(n.body)) {
          throw new RegexError('nested unbounded repetition (such as (a+)+ or (\\w+\\s?)*) can backtrack catastrophically');
        }
        for (const branches of alts(n.body, [])) {
          const fs = branches.map((b) => first(b, classRe));
          for (let i = 0; i < fs.length; i++) {
            for (let j = i + 1; j < fs.length; j++) {
              if (overlaps(fs[i]!, fs[j]!)) {
                throw new RegexError('repeated alternation with overlapping or empty branches (such as (a|aa)+) can backtrack catastrophically');
              }
            }
          }
        }
      }
      walk(n.body);
    } else if (n.t === 'group') walk(n.body);
    else if (n.t === 'concat') n.items.forEach(walk);
    else if (n.t === 'alt') n.branches.forEach(walk);
  };
  walk(root);
}

/**
 * Compiles a Rust-syntax regular expression source into an equivalent JS `RegExp` (flag `u`, or
 * `v` for nested classes/set operations, plus `i` when the whole pattern is case-insensitive;
 * never `g`/`y`, so `exec` is stateless). Semantics per expression-language.md §4.4.
 * Throws {@link RegexError} for invalid, unsupported (backreferences, look-around) or unsafe
 * patterns, and for sources longer than {@link MAX_PATTERN_LENGTH}.
 */
export function compileRustRegex(source: string): RegExp {
  if (source.length > MAX_PATTERN_LENGTH) {
    throw new RegexError(`pattern is ${source.length} characters long; the limit is ${MAX_PATTERN_LENGTH}`);
  }
  const p = new Parser(source);
  const root = p.parseAlt({ i: false, m: false, s: false, x: false, U: false, u: true, R: false }, 0);
  if (!p.eof()) p.fail('unopened group');
  const mode = caseMode(root);
  const globalCi = mode.ci && !mode.cs;
  const classRe = (n: Node): RegExp => {
    const e = new Emitter(true);
    const src = e.node(n);
    return new RegExp(src, e.needsV ? 'v' : 'u');
  };
  checkSafety(root, classRe);
  const e = new Emitter(!globalCi);
  const out = e.node(root);
  const flags = (globalCi ? 'i' : '') + (e.needsV ? 'v' : 'u');
  try {
    return new RegExp(out, flags);
  } catch (err) {
    throw new RegexError(`invalid pattern: ${(err as Error).message}`);
  }
}
