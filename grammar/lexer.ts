/**
 * Chevrotain lexer for the expression language (docs/expression-language.md with the
 * deviations of README.md, "Compatibility with Stalwart").
 *
 * - White space is any Unicode White_Space character, tabs included (D3).
 * - A `}` outside a string ends the expression; the rest is skipped (spec §1.1, `{…}` templates).
 * - Words follow Stalwart's byte rules (§1.2): `A–Z a–z 0–9 _ $ .`, `:` once the word holds a
 *   `.`, and `*` right after a `.`. Classification (number, duration, name…) is the parser's job.
 * - `=` is a token of its own that consumes nothing else (D2); `&`/`&&` and `|`/`||` are one token.
 */
import type { IToken, TokenType } from 'chevrotain';
import { chevrotain, SKIP_GRAMMAR_CHECKS } from './chevrotain.js';

/** The Unicode White_Space property (as Rust `char::is_whitespace`); excludes U+FEFF. */
export const WHITE_SPACE_CLASS = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

function isWordByte(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x24 || c === 0x2e
  );
}

/** Stalwart's word scanner (tokenizer.rs): see the module comment. */
function matchWord(text: string, offset: number): RegExpExecArray | null {
  let i = offset;
  let hasDot = false;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (isWordByte(c)) {
      if (c === 0x2e) hasDot = true;
    } else if (c === 0x3a /* : */ && hasDot && i > offset) {
      // allowed once the word holds a dot
    } else if (c === 0x2a /* * */ && i > offset && text.charCodeAt(i - 1) === 0x2e) {
      // allowed right after a dot
    } else break;
    i++;
  }
  if (i === offset) return null;
  const m = [text.slice(offset, i)] as unknown as RegExpExecArray;
  return m;
}

/**
 * Builds the token types and the lexer. Chevrotain is loaded here, on the first parse, not when the
 * package is imported: a program that compiles no expression never pays for it.
 */
function build() {
  const { createToken, Lexer } = chevrotain();
  const WhiteSpace = createToken({
    name: 'WhiteSpace',
    pattern: new RegExp(`[${WHITE_SPACE_CLASS}]+`),
    group: Lexer.SKIPPED,
    line_breaks: true,
  });
  /** `}` and everything after it: ignored (spec §1.1). */
  const Terminator = createToken({
    name: 'Terminator',
    pattern: /\}[\s\S]*/,
    group: Lexer.SKIPPED,
    line_breaks: true,
  });
  const StringLiteral = createToken({
    name: 'StringLiteral',
    pattern: /'(?:[^'\\]|\\[\s\S])*'|"(?:[^"\\]|\\[\s\S])*"/,
    line_breaks: true,
  });
  /** A quote with no closing partner: matched only when StringLiteral fails. */
  const UnterminatedString = createToken({
    name: 'UnterminatedString',
    pattern: /['"][\s\S]*/,
    line_breaks: true,
  });

  const Word = createToken({
    name: 'Word',
    pattern: { exec: matchWord },
    line_breaks: false,
    start_chars_hint: [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$.'],
  });

  /** Category of every binary operator token (`-` is also unary; the parser position decides). */
  const BinaryOperator = createToken({ name: 'BinaryOperator', pattern: Lexer.NA, label: 'operator' });
  const bin = { categories: [BinaryOperator] };

  const OrOp = createToken({ name: 'OrOp', pattern: /\|\|?/, label: "'||'", ...bin });
  const AndOp = createToken({ name: 'AndOp', pattern: /&&?/, label: "'&&'", ...bin });
  const XorOp = createToken({ name: 'XorOp', pattern: /\^/, label: "'^'", ...bin });
  const NeOp = createToken({ name: 'NeOp', pattern: /!=/, label: "'!='", ...bin });
  const NotOp = createToken({ name: 'NotOp', pattern: /!/, label: "'!'" });
  const EqEqOp = createToken({ name: 'EqEqOp', pattern: /==/, label: "'=='", ...bin });
  const EqOp = createToken({ name: 'EqOp', pattern: /=/, label: "'='", ...bin });
  const LeOp = createToken({ name: 'LeOp', pattern: /<=/, label: "'<='", ...bin });
  const LtOp = createToken({ name: 'LtOp', pattern: /</, label: "'<'", ...bin });
  const GeOp = createToken({ name: 'GeOp', pattern: />=/, label: "'>='", ...bin });
  const GtOp = createToken({ name: 'GtOp', pattern: />/, label: "'>'", ...bin });
  const Plus = createToken({ name: 'Plus', pattern: /\+/, label: "'+'", ...bin });
  const Minus = createToken({ name: 'Minus', pattern: /-/, label: "'-'", ...bin });
  const Star = createToken({ name: 'Star', pattern: /\*/, label: "'*'", ...bin });
  const Slash = createToken({ name: 'Slash', pattern: /\//, label: "'/'", ...bin });
  const LParen = createToken({ name: 'LParen', pattern: /\(/, label: "'('" });
  const RParen = createToken({ name: 'RParen', pattern: /\)/, label: "')'" });
  const LBracket = createToken({ name: 'LBracket', pattern: /\[/, label: "'['" });
  const RBracket = createToken({ name: 'RBracket', pattern: /\]/, label: "']'" });
  const Comma = createToken({ name: 'Comma', pattern: /,/, label: "','" });

  const ALL_TOKENS: TokenType[] = [
    WhiteSpace, Terminator, StringLiteral, UnterminatedString, Word, BinaryOperator,
    OrOp, AndOp, XorOp, NeOp, NotOp, EqEqOp, EqOp, LeOp, LtOp, GeOp, GtOp,
    Plus, Minus, Star, Slash, LParen, RParen, LBracket, RBracket, Comma,
  ];

  // One shared lexer instance (construction validates the token set, which is not free).
  const exprLexer = new Lexer(ALL_TOKENS, { positionTracking: 'full', ensureOptimizations: false, skipValidations: SKIP_GRAMMAR_CHECKS });
  return { WhiteSpace, Terminator, StringLiteral, UnterminatedString, Word, BinaryOperator, OrOp, AndOp, XorOp, NeOp, NotOp, EqEqOp, EqOp, LeOp, LtOp, GeOp, GtOp, Plus, Minus, Star, Slash, LParen, RParen, LBracket, RBracket, Comma, ALL_TOKENS, exprLexer };
}

export type GrammarTokens = ReturnType<typeof build>;
let built: GrammarTokens | undefined;

/** The token types and the shared lexer, built on first use. */
export function grammarTokens(): GrammarTokens {
  return (built ??= build());
}

export type { IToken };
