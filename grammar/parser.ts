/**
 * Chevrotain parser for the expression language: precedence climbing over the token stream of
 * `lexer.ts`, building the tree of `ast.ts`.
 *
 * Precedence (low → high, all left-associative, Stalwart `parser.rs`): `||` < `&&` < `^` <
 * `== !=` < `< <= > >=` < `+ -` < `* /` < unary `! -` (nesting as in mathematics, D5) < indexing.
 * Indexing `[i]` is only allowed after a name, `)` or `]` (spec §1.6); anywhere else `[` would start
 * an array literal right after an operand, which is juxtaposition and therefore an error (D4).
 * Commas separate arguments and elements and nothing else (D4: `1, 2`, `[1,]`, `f(a b)` are errors).
 */
import type { IRecognitionException, IToken, TokenType } from 'chevrotain';
import type { BinaryOp, Node } from './ast.js';
import { chevrotain, SKIP_GRAMMAR_CHECKS } from './chevrotain.js';
import { grammarError, GrammarError, quote } from './errors.js';
import { grammarTokens } from './lexer.js';

/** Longest accepted source, in UTF-16 code units (64 KiB): larger input is refused before lexing. */
export const MAX_SOURCE_LENGTH = 65536;
/**
 * Deepest accepted nesting, counted cumulatively: every open `(` or `[` and every unary `!`/`-`
 * whose operand is still open adds one (`-len(!x)` is 3). The recursive parser and the tree passes
 * use several stack frames per level; in a fresh Node 20 process the cheapest construct to
 * overflow (`len(1+len(1+…`) did so at about 184 levels, so 64 leaves a margin of about 3× for
 * callers that are themselves deep in the stack. Rules need a handful of levels.
 */
export const MAX_NESTING = 64;
/** Deepest accepted syntax tree (long operator chains nest on the left). */
export const MAX_TREE_DEPTH = 1024;

const I64_MAX = 9223372036854775807n;
const U32_MAX = 4294967295;

/** Duration units (Stalwart `registry/src/types/duration.rs`), in milliseconds. */
const DURATION_UNITS: Record<string, number> = { d: 86400000, h: 3600000, m: 60000, s: 1000, ms: 1 };

/** D1: `\\ \' \" \n \r \t` are escapes; any other backslash sequence is kept as written. */
export function unescapeString(body: string): string {
  if (!body.includes('\\')) return body;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\' || i + 1 >= body.length) {
      out += c;
      continue;
    }
    const n = body[++i]!;
    if (n === 'n') out += '\n';
    else if (n === 'r') out += '\r';
    else if (n === 't') out += '\t';
    else if (n === '\\' || n === "'" || n === '"') out += n;
    else out += '\\' + n;
  }
  return out;
}

/** Binary precedence (Stalwart `BinaryOperator::precedence`); higher binds tighter. */
const PRECEDENCE: Record<BinaryOp, number> = {
  '||': 1, '&&': 2, '^': 3, '==': 4, '!=': 4, '<': 5, '<=': 5, '>': 5, '>=': 5, '+': 6, '-': 6, '*': 7, '/': 7,
};

/** `=` → `==` (D2), `&` → `&&`, `|` → `||`. */
function opOf(t: IToken): BinaryOp {
  const i = t.image;
  if (i === '=') return '==';
  if (i === '&') return '&&';
  if (i === '|') return '||';
  return i as BinaryOp;
}

/** Letters, `_` or `$` make a word a name rather than a number (spec §1.2 `has_alpha`). */
const HAS_ALPHA = /[A-Za-z_$]/;

/**
 * Defines the parser class once Chevrotain is loaded (its base class comes from the module) and
 * returns the one shared instance; `performSelfAnalysis` runs here, on the first parse.
 */
function buildParser() {
  const { EmbeddedActionsParser } = chevrotain();
  const { ALL_TOKENS, BinaryOperator, Comma, LBracket, LParen, Minus, NotOp, RBracket, RParen, StringLiteral, UnterminatedString, Word } =
    grammarTokens();

  class ExprParser extends EmbeddedActionsParser {
    /** Source of the current parse, for error positions. */
    source = '';

    constructor() {
      super(ALL_TOKENS, { maxLookahead: 2, recoveryEnabled: false, skipValidations: SKIP_GRAMMAR_CHECKS });
      this.performSelfAnalysis();
    }

    private fail(problem: string, offset: number): never {
      throw grammarError(this.source, problem, offset);
    }

    /** Classifies a finished word (spec §1.2 `parse_buf`, minus name resolution). */
    private word(tok: IToken): Node {
      const w = tok.image;
      const start = tok.startOffset;
      const end = start + w.length;
      const hasNumber = /[0-9]/.test(w);
      const hasAlpha = HAS_ALPHA.test(w);
      if (hasNumber && !hasAlpha) {
        if (w.includes('.')) {
          if (!/^(?:[0-9]+\.[0-9]*|\.[0-9]+)$/.test(w)) this.fail(`invalid number ${quote(w)}`, start);
          return { type: 'Float', value: Number(w), start, end };
        }
        if (!/^[0-9]+$/.test(w) || BigInt(w) > I64_MAX) this.fail(`integer ${quote(w)} out of range`, start);
        return { type: 'Int', value: Number(w), start, end };
      }
      if (w === 'true' || w === 'false') return { type: 'Int', value: w === 'true' ? 1 : 0, start, end };
      if (w.startsWith('$')) {
        const rest = w.slice(1);
        if (rest.length === 0) this.fail('"$" must be followed by a tag name or a capture number', start);
        if (/^[0-9]+$/.test(rest) && Number(rest) <= U32_MAX) return { type: 'Capture', index: Number(rest), start, end };
        return { type: 'Global', name: rest, start, end };
      }
      const d = /^([0-9]+)(ms|[dhms])$/i.exec(w);
      if (d !== null) {
        const ms = BigInt(d[1]!) * BigInt(DURATION_UNITS[d[2]!.toLowerCase()]!);
        if (ms > I64_MAX) this.fail(`duration ${quote(w)} out of range`, start);
        return { type: 'Int', value: Number(ms), start, end };
      }
      return { type: 'Name', name: w, start, end };
    }

    private binary(op: BinaryOp, left: Node, right: Node, opTok: IToken): Node {
      return { type: 'Binary', op, left, right, start: left.start, end: right.end, opStart: opTok.startOffset };
    }

    expression = this.RULE('expression', (): Node => {
      // One flat loop for all binary operators (precedence is applied in the action): a rule per
      // precedence level would multiply the recursion per nesting level by seven.
      const operands: Node[] = [this.SUBRULE(this.unaryExpr)];
      const ops: IToken[] = [];
      this.MANY(() => {
        ops.push(this.CONSUME(BinaryOperator));
        operands.push(this.SUBRULE2(this.unaryExpr));
      });
      return this.ACTION(() => this.climb(operands, ops));
    });

    /** Shunting-yard over `a op b op c …`: higher precedence first, equal precedence to the left. */
    private climb(operands: Node[], ops: IToken[]): Node {
      if (ops.length === 0) return operands[0]!;
      const out: Node[] = [operands[0]!];
      const stack: IToken[] = [];
      const reduce = (): void => {
        const t = stack.pop()!;
        const right = out.pop()!;
        const left = out.pop()!;
        out.push(this.binary(opOf(t), left, right, t));
      };
      for (let i = 0; i < ops.length; i++) {
        const p = PRECEDENCE[opOf(ops[i]!)];
        while (stack.length > 0 && PRECEDENCE[opOf(stack[stack.length - 1]!)] >= p) reduce();
        stack.push(ops[i]!);
        out.push(operands[i + 1]!);
      }
      while (stack.length > 0) reduce();
      return out[0]!;
    }

    /** Entry point: an optional expression, then end of input. */
    root = this.RULE('root', (): Node => {
      let n: Node | undefined;
      this.OPTION(() => {
        n = this.SUBRULE(this.expression);
      });
      return n ?? { type: 'Empty', start: 0, end: 0 };
    });

    /** D5: unary operators nest (`- -1` = 1, `!-1` = 0). */
    private unaryExpr = this.RULE('unaryExpr', (): Node =>
      this.OR([
        {
          ALT: () => {
            const t = this.OR2([{ ALT: () => this.CONSUME(NotOp) }, { ALT: () => this.CONSUME(Minus) }]);
            const operand = this.SUBRULE(this.unaryExpr);
            return this.ACTION((): Node => ({ type: 'Unary', op: t.image as '!' | '-', operand, start: t.startOffset, end: operand.end }));
          },
        },
        { ALT: () => this.SUBRULE(this.postfixExpr) },
      ]),
    );

    /** Indexing after a name, a call, a parenthesised group, an array literal or another index. */
    private postfixExpr = this.RULE('postfixExpr', (): Node => {
      let target = this.SUBRULE(this.primary);
      this.MANY({
        GATE: () => {
          const k = target.type;
          return k === 'Name' || k === 'Call' || k === 'Array' || k === 'Index' || (target as { paren?: boolean }).paren === true;
        },
        DEF: () => {
          this.CONSUME(LBracket);
          const index = this.SUBRULE(this.expression);
          const close = this.CONSUME(RBracket);
          target = this.ACTION((): Node => ({ type: 'Index', target, index, start: target.start, end: close.startOffset + 1 }));
        },
      });
      return target;
    });

    private primary = this.RULE('primary', (): Node =>
      this.OR([
        {
          ALT: () => {
            const t = this.CONSUME(StringLiteral);
            return this.ACTION((): Node => ({
              type: 'Str',
              value: unescapeString(t.image.slice(1, -1)),
              start: t.startOffset,
              end: t.startOffset + t.image.length,
            }));
          },
        },
        {
          ALT: () => {
            const t = this.CONSUME(UnterminatedString);
            return this.ACTION(() => this.fail('unterminated string', t.startOffset));
          },
        },
        {
          ALT: () => {
            const t = this.CONSUME(Word);
            let call: { args: Node[]; open: IToken; close: IToken } | undefined;
            this.OPTION({
              GATE: () => /^[A-Za-z_]/.test(t.image),
              DEF: () => {
                const open = this.CONSUME(LParen);
                const args = this.SUBRULE(this.list);
                const close = this.CONSUME(RParen);
                call = { args, open, close };
              },
            });
            return this.ACTION((): Node => {
              if (call === undefined) return this.word(t);
              return {
                type: 'Call',
                name: t.image,
                args: call.args,
                adjacent: call.open.startOffset === t.startOffset + t.image.length,
                start: t.startOffset,
                end: call.close.startOffset + 1,
              };
            });
          },
        },
        {
          ALT: () => {
            const open = this.CONSUME2(LParen);
            let inner: Node | undefined;
            this.OPTION2(() => {
              inner = this.SUBRULE(this.expression);
            });
            const close = this.CONSUME2(RParen);
            return this.ACTION((): Node => {
              const span = { start: open.startOffset, end: close.startOffset + 1 };
              // Keep the inner node (so evaluation has no wrapper) but remember the parentheses,
              // which allow a following index (spec §1.6).
              const n: Node = inner === undefined ? { type: 'Empty', ...span } : { ...inner };
              (n as { paren?: boolean }).paren = true;
              return n;
            });
          },
        },
        {
          ALT: () => {
            const open = this.CONSUME(LBracket);
            const items = this.SUBRULE2(this.list);
            const close = this.CONSUME(RBracket);
            return this.ACTION((): Node => ({ type: 'Array', items, start: open.startOffset, end: close.startOffset + 1 }));
          },
        },
      ]),
    );

    /** Zero or more comma-separated expressions (arguments, array elements). */
    private list = this.RULE('list', (): Node[] => {
      const items: Node[] = [];
      this.OPTION(() => {
        items.push(this.SUBRULE(this.expression));
        this.MANY(() => {
          this.CONSUME(Comma);
          items.push(this.SUBRULE2(this.expression));
        });
      });
      return items;
    });
  }

  return new ExprParser();
}

let shared: ReturnType<typeof buildParser> | undefined;

function describe(tok: IToken): string {
  if (tok.tokenType === chevrotain().EOF) return 'end of expression';
  return quote(tok.image);
}

/** Turns Chevrotain's first recognition error into our message (D4, D6). */
function translate(source: string, e: IRecognitionException, endOffset: number): GrammarError {
  const tok = e.token;
  const { Comma, RBracket, RParen } = grammarTokens();
  const atEnd = tok.tokenType === chevrotain().EOF || Number.isNaN(tok.startOffset);
  const offset = atEnd ? endOffset : tok.startOffset;
  if (atEnd) {
    if (e.name === 'MismatchedTokenException' && /RParen|'\)'/.test(e.message)) return grammarError(source, 'unmatched open parenthesis', offset);
    if (e.name === 'MismatchedTokenException' && /RBracket|'\]'/.test(e.message)) return grammarError(source, "missing ']'", offset);
    return grammarError(source, 'unexpected end of expression', offset);
  }
  const t = tok.tokenType as TokenType;
  if (e.name === 'NotAllInputParsedException') {
    if (t === RParen) return grammarError(source, 'unmatched close parenthesis', offset);
    if (t === RBracket) return grammarError(source, "unmatched ']'", offset);
    if (t === Comma) return grammarError(source, 'unexpected \',\' outside a function call or array', offset);
    return grammarError(source, `missing operator before ${describe(tok)}`, offset);
  }
  if (e.name === 'MismatchedTokenException') {
    if (t === RParen && /RBracket|'\]'/.test(e.message)) return grammarError(source, "mismatched brackets: expected ']' but found ')'", offset);
    if (t === RBracket && /RParen|'\)'/.test(e.message)) return grammarError(source, "mismatched brackets: expected ')' but found ']'", offset);
    if (t === Comma) return grammarError(source, "unexpected ','", offset);
    return grammarError(source, `missing ',' or operator before ${describe(tok)}`, offset);
  }
  return grammarError(source, `unexpected ${describe(tok)}`, offset);
}

/**
 * Refuses nesting deeper than MAX_NESTING before the recursive parser sees it, counting open
 * brackets plus the unary operators whose operand is still open (a unary run ends at the next
 * binary operator or comma of its level, and survives the brackets it applies to: `-len(` counts 2).
 */
function checkNesting(source: string, tokens: IToken[]): void {
  const g = grammarTokens();
  const operandEnd = new Set([g.Word, g.StringLiteral, g.RParen, g.RBracket]);
  const saved: number[] = [];
  let run = 0; // unary operators of the current level whose operand is still open
  let total = 0; // open brackets + every open unary operator
  let prev: IToken | undefined;
  for (const t of tokens) {
    const k = t.tokenType;
    if (k === g.NotOp || (k === g.Minus && (prev === undefined || !operandEnd.has(prev.tokenType)))) {
      run++;
      total++;
    } else if (k === g.LParen || k === g.LBracket) {
      saved.push(run);
      total++;
      run = 0;
    } else if (k === g.RParen || k === g.RBracket) {
      // An unmatched close is the parser's error to report.
      if (saved.length > 0) {
        total -= run + 1;
        run = saved.pop()!;
      }
    } else if (k === g.Comma || (k.CATEGORIES ?? []).includes(g.BinaryOperator)) {
      total -= run;
      run = 0;
    }
    if (total > MAX_NESTING) throw grammarError(source, `expression nested too deeply (more than ${MAX_NESTING} levels)`, t.startOffset);
    if (k !== g.WhiteSpace) prev = t;
  }
}

/** Iterative depth check of the tree, so later recursive passes cannot overflow the stack. */
function checkTreeDepth(source: string, root: Node): void {
  const stack: [Node, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [n, d] = stack.pop()!;
    if (d > MAX_TREE_DEPTH) throw grammarError(source, `expression too complex (more than ${MAX_TREE_DEPTH} nested operations)`, n.start);
    switch (n.type) {
      case 'Array':
        for (const i of n.items) stack.push([i, d + 1]);
        break;
      case 'Call':
        for (const i of n.args) stack.push([i, d + 1]);
        break;
      case 'Index':
        stack.push([n.target, d + 1], [n.index, d + 1]);
        break;
      case 'Unary':
        stack.push([n.operand, d + 1]);
        break;
      case 'Binary':
        stack.push([n.left, d + 1], [n.right, d + 1]);
        break;
      default:
    }
  }
}

/**
 * Parses one expression into a syntax tree. An empty source (or one that is only white space,
 * or starts with `}`) gives an `Empty` node.
 *
 * @throws GrammarError for any lexical or syntax error, with the problem and its 1-based
 *   line:column (README.md, deviation D6), for sources over MAX_SOURCE_LENGTH and nesting over MAX_NESTING.
 */
export function parse(source: string): Node {
  if (source.length > MAX_SOURCE_LENGTH) {
    throw grammarError(source, `expression too long (${source.length} characters, limit ${MAX_SOURCE_LENGTH})`, MAX_SOURCE_LENGTH);
  }
  const lexed = grammarTokens().exprLexer.tokenize(source);
  if (lexed.errors.length > 0) {
    const e = lexed.errors[0]!;
    const ch = String.fromCodePoint(source.codePointAt(e.offset) ?? 0);
    throw grammarError(source, `invalid character ${quote(ch)}`, e.offset);
  }
  checkNesting(source, lexed.tokens);
  const parser = (shared ??= buildParser());
  parser.source = source;
  parser.input = lexed.tokens;
  const tree = parser.root();
  if (parser.errors.length > 0) {
    const e = parser.errors[0]!;
    parser.input = [];
    // "End of expression" is where the text stops or a `}` cut it short (spec §1.1).
    const cut = /^[^'"}]*(?:(?:'(?:[^'\\]|\\[\s\S])*'|"(?:[^"\\]|\\[\s\S])*")[^'"}]*)*\}/.exec(source);
    throw translate(source, e, cut !== null ? cut[0].length - 1 : source.length);
  }
  parser.input = [];
  checkTreeDepth(source, tree);
  return tree;
}
