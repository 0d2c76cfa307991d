/**
 * Name resolution and static checks over the syntax tree (docs/expression-language.md):
 * identifiers become variables or constants (with the context's allow-lists), calls are checked
 * against the function table's fixed arity, and the special forms `matches`/`system`/`metric` get
 * their literal argument validated (the regex is compiled here, once). The result is the
 * resolved tree ({@link Expr}) that both the closure compiler and the interpreter consume.
 */
import { parse, GrammarError, positionAt, type Node } from '../../grammar/index.js';
import { DEFAULT_TREES_JSON } from './default-trees.js';
import { FUNCTIONS, type FunctionDef } from './functions/index.js';
import { stackSafe } from './nesting.js';
import { compileRustRegex, RegexError, type RustRegex } from './regex.js';
import { ExprParseError, type CompileOptions } from './types.js';
import { Constant, Float, type Value } from './value.js';
import { isExpressionVariable, SYSTEM_VARIABLES } from './variables.js';

export type Expr =
  | { k: 'lit'; value: Value }
  | { k: 'var'; name: string }
  | { k: 'global'; name: string }
  | { k: 'capture'; index: number }
  | { k: 'array'; items: Expr[] }
  | { k: 'index'; target: Expr; index: Expr }
  | { k: 'unary'; op: '!' | '-'; operand: Expr }
  | { k: 'binary'; op: string; left: Expr; right: Expr }
  | { k: 'call'; name: string; def: FunctionDef; args: Expr[] }
  | { k: 'matches'; source: string; regex: RustRegex; subject: Expr }
  | { k: 'system'; name: string }
  | { k: 'metric'; name: string };

/** A parsed and resolved expression, plus whether evaluating it may await. */
export interface ResolvedExpression {
  source: string;
  tree: Expr;
  isAsync: boolean;
}

/**
 * Metric names: Stalwart checks them against its telemetry enum, which the spec does not list;
 * we accept its shape (dotted lower-case words, e.g. `queue.count`) and refuse anything else.
 */
const METRIC_NAME = /^[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)+$/;
const SPECIAL_FORMS = new Set(['matches', 'system', 'metric']);

function fail(source: string, problem: string, offset: number): never {
  const position = positionAt(source, offset);
  throw new ExprParseError(`${problem} at ${position.line}:${position.column}`, position);
}

function resolveNode(src: string, n: Node, opts: CompileOptions, flags: { async: boolean }): Expr {
  const go = (m: Node): Expr => resolveNode(src, m, opts, flags);
  switch (n.type) {
    case 'Int':
      return { k: 'lit', value: n.value };
    case 'Float':
      return { k: 'lit', value: new Float(n.value) };
    case 'Str':
      return { k: 'lit', value: n.value };
    case 'Empty':
      return { k: 'lit', value: '' };
    case 'Global':
      return { k: 'global', name: n.name };
    case 'Capture':
      return { k: 'capture', index: n.index };
    case 'Array':
      return { k: 'array', items: n.items.map(go) };
    case 'Index': {
      // Spec §1.6: only a variable, `)` or `]` may be followed by an index; the grammar lets any
      // bare name through, as it does not know which names are constants.
      const t = n.target;
      if (t.type === 'Name' && (t as { paren?: boolean }).paren !== true && !isExpressionVariable(t.name) && Constant.of(t.name) !== undefined) {
        fail(src, `the constant ${JSON.stringify(t.name)} cannot be indexed (only a variable, ")" or "]" can)`, t.end);
      }
      return { k: 'index', target: go(t), index: go(n.index) };
    }
    case 'Unary':
      return { k: 'unary', op: n.op, operand: go(n.operand) };
    case 'Binary':
      return { k: 'binary', op: n.op, left: go(n.left), right: go(n.right) };
    case 'Name': {
      const name = n.name;
      if (isExpressionVariable(name)) {
        const allowed = opts.allowedVariables;
        if (allowed !== undefined && allowed.length > 0 && !allowed.includes(name)) {
          fail(src, `variable ${JSON.stringify(name)} not allowed in this context`, n.start);
        }
        return { k: 'var', name };
      }
      const c = Constant.of(name);
      if (c !== undefined) {
        const allowed = opts.allowedConstants;
        if (allowed !== undefined && allowed.length > 0 && !allowed.includes(name)) {
          fail(src, `constant ${JSON.stringify(name)} not allowed in this context`, n.start);
        }
        return { k: 'lit', value: c };
      }
      if (Object.hasOwn(FUNCTIONS, name) || SPECIAL_FORMS.has(name)) {
        fail(src, `function ${JSON.stringify(name)} needs its arguments in parentheses`, n.start);
      }
      return fail(src, `unknown variable ${JSON.stringify(name)}`, n.start);
    }
    case 'Call':
      return resolveCall(src, n, opts, flags, go);
  }
}

function resolveCall(
  src: string,
  n: Extract<Node, { type: 'Call' }>,
  _opts: CompileOptions,
  flags: { async: boolean },
  go: (m: Node) => Expr,
): Expr {
  const name = n.name;
  if (SPECIAL_FORMS.has(name)) {
    // Stalwart recognises the special forms only when `(` follows the name directly.
    if (!n.adjacent) fail(src, `no space allowed between ${JSON.stringify(name)} and "("`, n.start);
    const want = name === 'matches' ? 2 : 1;
    if (n.args.length !== want) {
      fail(src, `function ${JSON.stringify(name)} expects ${want} argument${want > 1 ? 's' : ''}, got ${n.args.length}`, n.start);
    }
    const lit = n.args[0]!;
    if (lit.type !== 'Str') fail(src, `the first argument of ${JSON.stringify(name)} must be a string literal`, lit.start);
    if (name === 'matches') {
      let regex: RustRegex;
      try {
        regex = compileRustRegex(lit.value);
      } catch (e) {
        if (e instanceof RegexError) fail(src, `invalid regular expression ${JSON.stringify(lit.value)}: ${e.message}`, lit.start);
        throw e;
      }
      return { k: 'matches', source: lit.value, regex, subject: go(n.args[1]!) };
    }
    if (name === 'system') {
      if (!SYSTEM_VARIABLES.includes(lit.value)) fail(src, `invalid system variable name ${JSON.stringify(lit.value)}`, lit.start);
      return { k: 'system', name: lit.value };
    }
    if (!METRIC_NAME.test(lit.value)) fail(src, `invalid metric name ${JSON.stringify(lit.value)}`, lit.start);
    return { k: 'metric', name: lit.value };
  }
  const def = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
  if (def === undefined) {
    if (isExpressionVariable(name) || Constant.of(name) !== undefined) {
      fail(src, `${JSON.stringify(name)} is not a function (missing operator before "("?)`, n.start + name.length);
    }
    fail(src, `unknown function ${JSON.stringify(name)}`, n.start);
  }
  if (n.args.length !== def.arity) {
    fail(src, `function ${JSON.stringify(name)} expects ${def.arity} argument${def.arity === 1 ? '' : 's'}, got ${n.args.length}`, n.start);
  }
  if (def.async) flags.async = true;
  return { k: 'call', name, def, args: n.args.map(go) };
}

let defaultTrees: Map<string, Node> | undefined;

/**
 * Parses one expression into the grammar's syntax tree (names unresolved).
 * @throws ExprParseError naming the problem and its `line:column` (README.md, deviation D6), also
 *   for nesting deeper than MAX_NESTING (grammar/parser.ts)
 */
export function parseExpression(source: string): Node {
  // The default rules' trees are prebuilt (src/expr/default-trees.ts): compiling them needs no parser.
  const known = (defaultTrees ??= new Map(Object.entries(JSON.parse(DEFAULT_TREES_JSON) as Record<string, Node>))).get(source);
  if (known !== undefined) return structuredClone(known);
  try {
    return stackSafe(() => parse(source));
  } catch (e) {
    if (e instanceof GrammarError) throw new ExprParseError(e.message, e.position);
    throw e;
  }
}

/**
 * Parses and resolves one expression.
 *
 * @param source the expression text (≤ 64 KiB, see grammar `MAX_SOURCE_LENGTH`)
 * @param opts allow-lists of the parse context (§3.3; empty or absent = everything allowed)
 * @throws ExprParseError naming the problem and its `line:column` (README.md, deviation D6)
 */
export function resolveExpression(source: string, opts: CompileOptions = {}): ResolvedExpression {
  const tree = parseExpression(source);
  const flags = { async: false };
  return { source, tree: stackSafe(() => resolveNode(source, tree, opts, flags)), isAsync: flags.async };
}
