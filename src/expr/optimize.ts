/**
 * Static rewrites of a resolved tree before closure compilation (issue 2 §6a). Each keeps what the
 * expression evaluates to (its value, or, where it applies only in a boolean context, its
 * truthiness), and each needs the whole tree before the first evaluation: what a compiler has and
 * a tree-walking interpreter does not.
 *
 * 1. Equality sets. A run of `x == 'a' || x == 'b' || …` over one variable and String literals
 *    becomes `contains(['a', 'b', …], x)`. Both give Integer 1/0: `==` is loose equality, which is
 *    symmetric, and `contains` on an Array applies it element by element (value.ts `looseEq`,
 *    spec §2.6, §4.1). The specialised `contains` then answers with one `Set.has` and the
 *    variable is read once instead of once per literal.
 * 2. Cost-ordered tests. In a boolean context, the operands of an `&&`/`||` chain that are pure and
 *    total are reordered by a static cost estimate, cheapest first, so that
 *    `contains(value_lower, 'eval()') && contains([…], name_lower)` tests the header name (a short
 *    memoized string against a Set) before it searches every header's value. Only truthiness is
 *    read there, and `a && b` is truthy exactly when `b && a` is. "Pure and total": no store, DNS
 *    or directory call (those may wait and fail), no `matches` (it writes the capture buffer),
 *    no `$N` (it reads it); the library's synchronous functions and the operators never throw and
 *    have no effects (functions/types.ts, ops.ts). Any other operand keeps its place and no
 *    operand is moved across it.
 *
 * Boolean contexts (spec §1.6, §5.3): an if-block's `if`; the operand of `!`; every operand of an
 * `&&`/`||` chain except the first (the chain turns it into 1/0); and the first operand too when
 * the chain itself is in a boolean context.
 */
import { FUNCTIONS } from './functions/index.js';
import type { Expr } from './resolve.js';
import { isSyncTree, usesCaptures } from './slots.js';

/**
 * Variables whose value is long (a search over it scales with the message) or computed on first
 * read (a header value is parsed, body words are tokenized): docs/message-analysis.md.
 */
const HEAVY_VARIABLES: ReadonlySet<string> = new Set([
  'attributes', 'body', 'body.html', 'body.raw', 'body.text', 'body.words', 'headers', 'raw', 'raw_lower',
  'subject.words', 'value', 'value_lower',
]);

/** Library calls that cost no more than reading their arguments. */
const CHEAP_CALLS: ReadonlySet<string> = new Set(['count', 'is_empty', 'len']);
/** One pass over a string or a short array, no allocation. */
const SEARCH_CALLS: ReadonlySet<string> = new Set([
  'contains', 'contains_ignore_case', 'ends_with', 'eq_ignore_case', 'is_intersect', 'starts_with',
]);

/**
 * A static estimate of evaluation cost, in arbitrary units: 0 for a literal, 1 for a `$TAG`,
 * 2 for a short variable, 8 for a heavy one, plus a weight per operator and call. Only the order
 * it induces matters.
 */
export function estimateCost(e: Expr): number {
  switch (e.k) {
    case 'lit':
      return 0;
    case 'global':
    case 'capture':
      return 1;
    case 'system':
    case 'metric':
      return 2;
    case 'var':
      return HEAVY_VARIABLES.has(e.name) ? 8 : 2;
    case 'array':
      return 1 + e.items.reduce((s, x) => s + estimateCost(x), 0);
    case 'index':
      return 1 + estimateCost(e.target) + estimateCost(e.index);
    case 'unary':
      return 1 + estimateCost(e.operand);
    case 'binary':
      return 1 + estimateCost(e.left) + estimateCost(e.right);
    case 'matches':
      return 20 + estimateCost(e.subject);
    case 'call': {
      const own = CHEAP_CALLS.has(e.name) ? 1 : SEARCH_CALLS.has(e.name) ? 4 : 10;
      return own + e.args.reduce((s, x) => s + estimateCost(x), 0);
    }
  }
}

/** True when evaluating `e` can neither wait, fail, nor touch the capture buffer (see above). */
export function isPureTotal(e: Expr): boolean {
  return isSyncTree(e) && !usesCaptures(e);
}

/** `a op b op c` (left-nested, as the parser builds it) → `[a, b, c]`. */
export function flattenChain(op: '&&' | '||', e: Expr): Expr[] {
  const out: Expr[] = [];
  let cur = e;
  while (cur.k === 'binary' && cur.op === op) {
    out.push(cur.right);
    cur = cur.left;
  }
  out.push(cur);
  return out.reverse();
}

/** `[a, b, c]` → `(a op b) op c`. */
function rebuildChain(op: '&&' | '||', operands: Expr[]): Expr {
  let acc = operands[0]!;
  for (let i = 1; i < operands.length; i++) acc = { k: 'binary', op, left: acc, right: operands[i]! };
  return acc;
}

/** `name == 'lit'` or `'lit' == name` → `{name, lit}`; anything else → undefined. */
function equalityTest(e: Expr): { name: string; lit: string } | undefined {
  if (e.k !== 'binary' || e.op !== '==') return undefined;
  const { left: l, right: r } = e;
  if (l.k === 'var' && r.k === 'lit' && typeof r.value === 'string') return { name: l.name, lit: r.value };
  if (r.k === 'var' && l.k === 'lit' && typeof l.value === 'string') return { name: r.name, lit: l.value };
  return undefined;
}

/**
 * A guard of a boolean-context tree: a membership test of one variable against literal Strings
 * (`name_lower == 'x-mailer'`, `contains(['to', 'cc'], name_lower)`) that the whole tree is falsy
 * without, i.e. the tree itself or the first operand of its top-level `&&` chain.
 *
 * When the variable holds a String that is not in `values`, the tree is falsy, so an if-block may
 * answer its `else` without evaluating it (if-block.ts). For any other value the test is loose
 * (`0 == 'abc'` holds, value.ts `looseEq`) and the tree must be evaluated.
 */
export function guardOf(tree: Expr): { name: string; values: ReadonlySet<string> } | undefined {
  const first = tree.k === 'binary' && tree.op === '&&' ? flattenChain('&&', tree)[0]! : tree;
  const eq = equalityTest(first);
  if (eq !== undefined) return { name: eq.name, values: new Set([eq.lit]) };
  if (first.k !== 'call' || first.name !== 'contains') return undefined;
  const [arr, x] = first.args;
  if (x?.k !== 'var' || arr === undefined) return undefined;
  // The array as written (`['to', 'cc']`, an array node) or as rewrite 1 makes it (a literal).
  const items: readonly unknown[] | undefined =
    arr.k === 'lit' && Array.isArray(arr.value)
      ? arr.value
      : arr.k === 'array' && arr.items.every((i) => i.k === 'lit')
        ? arr.items.map((i) => (i as { value: unknown }).value)
        : undefined;
  if (items === undefined || !items.every((v) => typeof v === 'string')) return undefined;
  return { name: x.name, values: new Set(items as string[]) };
}

/** Rewrite 1: runs of two or more equality tests of one variable in an `||` chain. */
function mergeEqualityRuns(operands: Expr[]): Expr[] {
  const out: Expr[] = [];
  for (let i = 0; i < operands.length; ) {
    const first = equalityTest(operands[i]!);
    let j = i + 1;
    const lits: string[] = first === undefined ? [] : [first.lit];
    if (first !== undefined) {
      for (; j < operands.length; j++) {
        const t = equalityTest(operands[j]!);
        if (t === undefined || t.name !== first.name) break;
        lits.push(t.lit);
      }
    }
    if (first !== undefined && lits.length > 1) {
      out.push({
        k: 'call',
        name: 'contains',
        def: FUNCTIONS.contains!,
        args: [{ k: 'lit', value: Object.freeze(lits) as unknown as string[] }, { k: 'var', name: first.name }],
      });
      i = j;
    } else {
      out.push(operands[i]!);
      i++;
    }
  }
  return out;
}

/** Rewrite 2: stable sort by cost within each run of pure, total operands. */
function orderByCost(operands: Expr[]): Expr[] {
  const out: Expr[] = [];
  let run: { e: Expr; cost: number; at: number }[] = [];
  const flush = (): void => {
    run.sort((a, b) => a.cost - b.cost || a.at - b.at);
    for (const r of run) out.push(r.e);
    run = [];
  };
  operands.forEach((e, at) => {
    if (isPureTotal(e)) run.push({ e, cost: estimateCost(e), at });
    else {
      flush();
      out.push(e);
    }
  });
  flush();
  return out;
}

/**
 * Applies the rewrites above to a resolved tree; the input is not modified.
 *
 * @param boolean true when only the truthiness of the result is read (an if-block's `if`)
 */
export function optimizeTree(e: Expr, boolean: boolean): Expr {
  switch (e.k) {
    case 'array':
      return { k: 'array', items: e.items.map((x) => optimizeTree(x, false)) };
    case 'index':
      return { k: 'index', target: optimizeTree(e.target, false), index: optimizeTree(e.index, false) };
    case 'unary':
      return { k: 'unary', op: e.op, operand: optimizeTree(e.operand, e.op === '!') };
    case 'binary': {
      if (e.op === '&&' || e.op === '||') {
        const op = e.op;
        let operands = flattenChain(op, e).map((x, i) => optimizeTree(x, boolean || i > 0));
        if (op === '||') operands = mergeEqualityRuns(operands);
        if (boolean) operands = orderByCost(operands);
        return rebuildChain(op, operands);
      }
      return { k: 'binary', op: e.op, left: optimizeTree(e.left, false), right: optimizeTree(e.right, false) };
    }
    case 'call':
      return { k: 'call', name: e.name, def: e.def, args: e.args.map((x) => optimizeTree(x, false)) };
    case 'matches':
      return { k: 'matches', source: e.source, regex: e.regex, subject: optimizeTree(e.subject, false) };
    default:
      return e;
  }
}
