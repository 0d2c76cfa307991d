/**
 * If-blocks: Stalwart `Expression` objects `{match: [{if, then}], else}` (docs/expression-language.md
 * §5). Compilation follows §5.2 (else first, empty block, missing else, empty if/then); evaluation
 * §5.3 (one capture buffer per block evaluation, first truthy `if` wins, `else` otherwise).
 */
import { compileResolved, type MaybeAsyncExpression } from './compile.js';
import { guardOf, optimizeTree } from './optimize.js';
import { resolveExpression, type ResolvedExpression } from './resolve.js';
import { slotScopeFor, type SlotScope } from './slots.js';
import {
  ExprParseError, type CompiledIfBlock, type CompileOptions, type EvalContext,
  type IfBlockError, type IfResult,
} from './types.js';
import { trim } from './functions/util.js';
import { isStackOverflow } from '../util/index.js';
import { toBool as truthy } from './value.js';

/**
 * Empty or only the grammar's white space. JS `trim()` would also strip U+FEFF, which the grammar
 * refuses as a character: such an expression must be an error, not an empty block.
 */
const isBlank = (s: string): boolean => trim(s) === '';

/** `match` as a list, or Stalwart's index-keyed object (`{"0": {...}, "1": {...}}`). */
export type MatchInput = { if: string; then: string }[] | Record<string, { if: string; then: string }>;

export interface IfBlockInput {
  match?: MatchInput;
  else?: string;
}

/** Normalises `match` to a list; index-keyed objects are ordered by their numeric keys. */
export function normalizeMatch(match: MatchInput | undefined): { if: string; then: string }[] {
  if (match === undefined || match === null) return [];
  if (Array.isArray(match)) return match;
  return Object.keys(match)
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => match[k]!);
}

interface Branch {
  cond: MaybeAsyncExpression;
  then: MaybeAsyncExpression;
}

/** Shared buffer for blocks that never touch captures: nothing ever writes to it. */
const NO_CAPTURES: string[] = [];

/** A precomputed result for a branch whose value is a constant; results are read-only to callers. */
function constResult(e: MaybeAsyncExpression | undefined, branch: number): IfResult | undefined {
  return e?.constant !== undefined ? Object.freeze({ value: e.constant.value, branch }) : undefined;
}

class IfBlock implements CompiledIfBlock {
  readonly isAsync: boolean;
  readonly isEmpty: boolean;
  /** Most rules end in `else: "false"` and tag with a literal: those results are allocated once. */
  private readonly elseConst: IfResult | undefined;
  private readonly thenConst: (IfResult | undefined)[];
  private readonly capturing: boolean;
  constructor(
    private readonly branches: Branch[],
    private readonly otherwise: MaybeAsyncExpression | undefined,
    /** Variable slots shared by all expressions of a synchronous block; one epoch per evaluation. */
    private readonly scope?: SlotScope,
    /** For a single-branch block: a membership test the `if` is falsy without (optimize.ts `guardOf`). */
    guard?: { name: string; values: ReadonlySet<string> },
  ) {
    this.isEmpty = otherwise === undefined;
    this.elseConst = constResult(otherwise, -1);
    this.thenConst = branches.map((b, i) => constResult(b.then, i));
    this.capturing = (otherwise?.usesCaptures ?? false) || branches.some((b) => b.cond.usesCaptures || b.then.usesCaptures);
    this.isAsync = branches.some((b) => b.cond.isAsync || b.then.isAsync) || (otherwise?.isAsync ?? false);
    // The commonest rule shape (54 of the 66 public rules): one synchronous `if`, a literal tag and
    // `else: false`, no captures. It is answered by one call of the condition's closure instead of
    // the branch loop below.
    const only = branches[0];
    const thenK = this.thenConst[0];
    const elseK = this.elseConst;
    if (branches.length === 1 && !this.isAsync && !this.capturing && thenK !== undefined && elseK !== undefined) {
      const cond = only!.cond.evalSync;
      const scope = this.scope;
      const full =
        scope === undefined
          ? (ctx: EvalContext): IfResult => (truthy(cond(ctx, NO_CAPTURES)) ? thenK : elseK)
          : (ctx: EvalContext): IfResult => {
              scope.begin();
              return truthy(cond(ctx, NO_CAPTURES)) ? thenK : elseK;
            };
      let run = full;
      if (guard !== undefined) {
        // All 12 public Header rules (after cost ordering): a header whose name is not one of the
        // rule's answers `else` after one variable read and one Set lookup. Non-String values take
        // the full (loose) evaluation.
        const { name, values } = guard;
        run = (ctx) => {
          const v = ctx.variable(name);
          return typeof v === 'string' && !values.has(v) ? elseK : full(ctx);
        };
      }
      this.evalSync = run;
      this.evalMaybe = run;
    }
  }

  evalSync(ctx: EvalContext): IfResult | undefined {
    if (this.otherwise === undefined) return undefined;
    if (this.isAsync) throw new Error('if-block needs evalAsync (it calls a store or DNS function)');
    this.scope?.begin();
    const caps: string[] = this.capturing ? [] : NO_CAPTURES;
    const bs = this.branches;
    for (let i = 0; i < bs.length; i++) {
      const b = bs[i]!;
      if (truthy(b.cond.evalSync(ctx, caps))) return this.thenConst[i] ?? { value: b.then.evalSync(ctx, caps), branch: i };
    }
    return this.elseConst ?? { value: this.otherwise.evalSync(ctx, caps), branch: -1 };
  }

  evalAsync(ctx: EvalContext): Promise<IfResult | undefined> {
    if (this.otherwise === undefined) return Promise.resolve(undefined);
    try {
      return Promise.resolve(this.evalMaybe(ctx));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Like `evalAsync`, but returns the result directly when no store call had to wait (a Promise
   * otherwise); `undefined` for the empty block. Rejects/throws ExprEvalError on store failure.
   */
  evalMaybe(ctx: EvalContext): IfResult | undefined | Promise<IfResult | undefined> {
    if (this.otherwise === undefined) return undefined;
    this.scope?.begin();
    return this.from(ctx, this.capturing ? [] : NO_CAPTURES, 0);
  }

  private from(ctx: EvalContext, caps: string[], start: number): IfResult | Promise<IfResult> {
    const bs = this.branches;
    for (let i = start; i < bs.length; i++) {
      const v = bs[i]!.cond.evalMaybe(ctx, caps);
      if (v instanceof Promise) return v.then((x) => (truthy(x) ? this.branch(ctx, caps, i) : this.from(ctx, caps, i + 1)));
      if (truthy(v)) return this.branch(ctx, caps, i);
    }
    if (this.elseConst !== undefined) return this.elseConst;
    const e = this.otherwise!.evalMaybe(ctx, caps);
    return e instanceof Promise ? e.then((value) => ({ value, branch: -1 })) : { value: e, branch: -1 };
  }

  private branch(ctx: EvalContext, caps: string[], i: number): IfResult | Promise<IfResult> {
    const k = this.thenConst[i];
    if (k !== undefined) return k;
    const t = this.branches[i]!.then.evalMaybe(ctx, caps);
    return t instanceof Promise ? t.then((value) => ({ value, branch: i })) : { value: t, branch: i };
  }
}

/**
 * The error entry of one expression. Anything unexpected (a bug, an exhausted stack) is still that
 * expression's error: one bad rule must never stop the others of a rule set from loading.
 */
function errorOf({ path, prefix }: Where, e: unknown): IfBlockError {
  if (e instanceof ExprParseError) {
    return { path, message: prefix + e.message, ...(e.position !== undefined ? { position: e.position } : {}) };
  }
  const problem = isStackOverflow(e) ? 'expression nested too deeply (out of stack)' : `internal error: ${e instanceof Error ? e.message : String(e)}`;
  return { path, message: prefix + problem };
}

/** Where an expression stands in the block: its error path and the prefix of its messages. */
interface Where {
  path: string;
  prefix: string;
}
const ELSE: Where = { path: 'else', prefix: "error in 'else' expression: " };
const ifAt = (i: number): Where => ({ path: `match/${i}/if`, prefix: `error in 'if' expression of condition #${i + 1}: ` });
const thenAt = (i: number): Where => ({ path: `match/${i}/then`, prefix: `error in 'then' expression of condition #${i + 1}: ` });

/**
 * Compiles an if-block.
 *
 * @param obj `{match, else}`; `match` as an array or an index-keyed object; missing fields are empty
 * @param opts allow-lists of the context (§3.3), applied to every branch
 * @returns `{block}` on success (the empty block when both `match` and `else` are empty), or
 *   `{errors}` with the first error only, as Stalwart stops there (§5.2). Paths: `else`,
 *   `match/<i>/if`, `match/<i>/then` (0-based); messages carry the position (D6). Never throws: an
 *   unexpected failure (a bug, an exhausted stack) is returned as that expression's error too.
 */
export function compileIfBlock(obj: IfBlockInput, opts: CompileOptions = {}): { block?: CompiledIfBlock; errors: IfBlockError[] } {
  const match = normalizeMatch(obj.match);
  const elseSrc = obj.else ?? '';
  if (isBlank(elseSrc) && match.length === 0) return { block: new IfBlock([], undefined), errors: [] };
  if (isBlank(elseSrc)) return { errors: [{ path: 'else', message: "missing 'else' expression (required when 'match' is not empty)" }] };
  for (let i = 0; i < match.length; i++) {
    const m = match[i]!;
    if (typeof m?.if !== 'string' || isBlank(m.if)) return { errors: [{ path: `match/${i}/if`, message: "'if' expression must not be empty" }] };
    if (typeof m.then !== 'string' || isBlank(m.then)) return { errors: [{ path: `match/${i}/then`, message: "'then' expression must not be empty" }] };
  }
  // Resolve everything first: a block whose expressions are all synchronous shares one set of
  // variable slots, so a variable read by an `if` and its `then` is asked of the context once.
  let elseTree: ResolvedExpression;
  try {
    elseTree = resolveExpression(elseSrc, opts);
    elseTree = { ...elseTree, tree: optimizeTree(elseTree.tree, false) };
  } catch (e) {
    return { errors: [errorOf(ELSE, e)] };
  }
  const resolved: { cond: ResolvedExpression; then: ResolvedExpression }[] = [];
  for (let i = 0; i < match.length; i++) {
    const m = match[i]!;
    let cond: ResolvedExpression;
    let then: ResolvedExpression;
    try {
      cond = resolveExpression(m.if, opts);
      // Only the truthiness of an `if` is read (§5.3): its tests may be reordered (optimize.ts).
      cond = { ...cond, tree: optimizeTree(cond.tree, true) };
    } catch (e) {
      return { errors: [errorOf(ifAt(i), e)] };
    }
    try {
      then = resolveExpression(m.then, opts);
      then = { ...then, tree: optimizeTree(then.tree, false) };
    } catch (e) {
      return { errors: [errorOf(thenAt(i), e)] };
    }
    resolved.push({ cond, then });
  }
  const all = [elseTree, ...resolved.flatMap((r) => [r.cond, r.then])];
  // Compilation of a resolved tree is not expected to fail; if it does, it is that expression's error.
  let at = ELSE;
  try {
    const scope = all.every((r) => !r.isAsync) ? slotScopeFor(all.map((r) => r.tree)) : undefined;
    const compile = (r: ResolvedExpression, where: Where): MaybeAsyncExpression => {
      at = where;
      return compileResolved(r.source, r.tree, scope);
    };
    const otherwise = compile(elseTree, ELSE);
    const branches: Branch[] = resolved.map((r, i) => ({ cond: compile(r.cond, ifAt(i)), then: compile(r.then, thenAt(i)) }));
    const guard = resolved.length === 1 ? guardOf(resolved[0]!.cond.tree) : undefined;
    return { block: new IfBlock(branches, otherwise, scope, guard), errors: [] };
  } catch (e) {
    return { errors: [errorOf(at, e)] };
  }
}
