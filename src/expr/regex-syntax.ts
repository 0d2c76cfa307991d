/**
 * Parser of Rust `regex` crate syntax (the patterns of Stalwart's `matches`) into a small syntax
 * tree, flags resolved while parsing. Emitters for the two linear-time engines live in
 * `regex.ts`; character classes become code-point ranges in `regex-ranges.ts`.
 */
import { RegexError } from './regex-error.js';

/** Largest accepted `{n}`/`{n,m}` bound (Rust's parser accepts larger ones, its size limit does not). */
export const MAX_REPEAT = 1000;

export interface Flags { i: boolean; m: boolean; s: boolean; x: boolean; U: boolean; u: boolean; R: boolean }

export type ClassItem =
  | { k: 'cp'; cp: number }
  | { k: 'range'; lo: number; hi: number }
  | { k: 'prop'; src: string }
  | { k: 'set'; set: ClassSet };
export type ClassSet =
  | { k: 'union'; negated: boolean; items: ClassItem[] }
  | { k: 'op'; op: '&&' | '--' | '~~'; left: ClassSet; right: ClassSet };

/** Zero-width assertions: haystack ends, line ends (`crlf` under `(?R)`), word boundaries. */
export type AssertKind = 'start' | 'end' | 'lineStart' | 'lineEnd' | 'word' | 'notWord' | 'wordStart' | 'wordEnd' | 'wordStartHalf' | 'wordEndHalf';

export type Node =
  | { t: 'lit'; cp: number; ci: boolean }
  | { t: 'any'; s: boolean; R: boolean }
  | { t: 'class'; set: ClassSet; ci: boolean }
  | { t: 'assert'; kind: AssertKind; crlf: boolean; unicode: boolean }
  | { t: 'group'; cap: boolean; name?: string; body: Node }
  | { t: 'concat'; items: Node[] }
  | { t: 'alt'; branches: Node[] }
  | { t: 'repeat'; body: Node; min: number; max: number; greedy: boolean };

const u = (lo: number, hi: number): ClassItem => ({ k: 'range', lo, hi });
const union = (items: ClassItem[], negated = false): ClassSet => ({ k: 'union', negated, items });
/**
 * Rust's Unicode `\w`: Alphabetic, M, Nd, Pc and Join_Control, written with general categories
 * only (Alphabetic = L + Nl + the Other_Alphabetic code points outside M: the circled and squared
 * Latin letters listed), so that RE2, which knows categories but not Alphabetic, takes it as is.
 */
export const WORD_U: ClassItem[] = [
  ...['\\p{L}', '\\p{Nl}', '\\p{M}', '\\p{Nd}', '\\p{Pc}'].map((src): ClassItem => ({ k: 'prop', src })),
  u(0x200c, 0x200d), u(0x24b6, 0x24e9), u(0x1f130, 0x1f149), u(0x1f150, 0x1f169), u(0x1f170, 0x1f189),
];
export const WORD_A: ClassItem[] = [u(0x30, 0x39), u(0x41, 0x5a), u(0x61, 0x7a), { k: 'cp', cp: 0x5f }];
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
    // A bare script name is Script= in Rust (`\p{Greek}` leaves out the marks Greek shares with
    // other scripts); Script_Extensions only as scx=.
    for (const v of loose(raw)) candidates.push(v, `Script=${v}`);
  }
  for (const c of candidates) if (tryProp(c)) return c;
  throw new RegexError(`unknown Unicode class \\p{${raw}}`);
}

export class Parser {
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
      const kind = flags.m ? (c === '^' ? 'lineStart' : 'lineEnd') : c === '^' ? 'start' : 'end';
      return { t: 'assert', kind, crlf: flags.R, unicode: flags.u };
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
      const a = (kind: AssertKind): Node => ({ t: 'assert', kind, crlf: flags.R, unicode: flags.u });
      if (c === 'b') {
        const sub = /^\{(start|end|start-half|end-half)\}/.exec(this.src.slice(this.pos));
        if (sub === null) return a('word');
        this.pos += sub[0].length;
        return a(({ start: 'wordStart', end: 'wordEnd', 'start-half': 'wordStartHalf', 'end-half': 'wordEndHalf' } as const)[sub[1] as 'start']);
      }
      const kind = ({ A: 'start', z: 'end', '<': 'wordStart', '>': 'wordEnd', B: 'notWord' } as const)[c as 'A'];
      if (kind !== undefined) return a(kind);
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

