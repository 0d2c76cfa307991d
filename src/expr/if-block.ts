/**
 * If-blocks: Stalwart `Expression` objects `{match: [{if, then}], else}` (expression-language.md
 * §5). Compilation follows §5.2 (else first, empty block, missing else, empty if/then); evaluation
 * §5.3 (one capture buffer per block evaluation, first truthy `if` wins, `else` otherwise).
 */
import { compileExpression } from './compile.js';
import {
  ExprParseError, type CompiledExpression, type CompiledIfBlock, type CompileOptions, type EvalContext,
  type IfBlockError, type IfResult,
} from './types.js';
import { toBool as truthy } from './value.js';

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
  cond: CompiledExpression;
  then: CompiledExpression;
}

class IfBlock implements CompiledIfBlock {
  readonly isAsync: boolean;
  readonly isEmpty: boolean;
  constructor(
    private readonly branches: Branch[],
    private readonly otherwise: CompiledExpression | undefined,
  ) {
    this.isEmpty = otherwise === undefined;
    this.isAsync = branches.some((b) => b.cond.isAsync || b.then.isAsync) || (otherwise?.isAsync ?? false);
  }

  evalSync(ctx: EvalContext): IfResult | undefined {
    if (this.otherwise === undefined) return undefined;
    if (this.isAsync) throw new Error('if-block needs evalAsync (it calls a store or DNS function)');
    const caps: string[] = [];
    const bs = this.branches;
    for (let i = 0; i < bs.length; i++) {
      const b = bs[i]!;
      if (truthy(b.cond.evalSync(ctx, caps))) return { value: b.then.evalSync(ctx, caps), branch: i };
    }
    return { value: this.otherwise.evalSync(ctx, caps), branch: -1 };
  }

  async evalAsync(ctx: EvalContext): Promise<IfResult | undefined> {
    if (this.otherwise === undefined) return undefined;
    if (!this.isAsync) return this.evalSync(ctx);
    const caps: string[] = [];
    const bs = this.branches;
    for (let i = 0; i < bs.length; i++) {
      const b = bs[i]!;
      if (truthy(await b.cond.evalAsync(ctx, caps))) return { value: await b.then.evalAsync(ctx, caps), branch: i };
    }
    return { value: await this.otherwise.evalAsync(ctx, caps), branch: -1 };
  }
}

function errorOf(path: string, prefix: string, e: unknown): IfBlockError {
  if (e instanceof ExprParseError) {
    return { path, message: prefix + e.message, ...(e.position !== undefined ? { position: e.position } : {}) };
  }
  throw e;
}

/**
 * Compiles an if-block.
 *
 * @param obj `{match, else}`; `match` as an array or an index-keyed object; missing fields are empty
 * @param opts allow-lists of the context (§3.3), applied to every branch
 * @returns `{block}` on success (the empty block when both `match` and `else` are empty), or
 *   `{errors}` with the first error only, as Stalwart stops there (§5.2). Paths: `else`,
 *   `match/<i>/if`, `match/<i>/then` (0-based); messages carry the position (D6).
 */
export function compileIfBlock(obj: IfBlockInput, opts: CompileOptions = {}): { block?: CompiledIfBlock; errors: IfBlockError[] } {
  const match = normalizeMatch(obj.match);
  const elseSrc = obj.else ?? '';
  if (elseSrc.trim() === '' && match.length === 0) return { block: new IfBlock([], undefined), errors: [] };
  if (elseSrc.trim() === '') return { errors: [{ path: 'else', message: "missing 'else' expression (required when 'match' is not empty)" }] };
  for (let i = 0; i < match.length; i++) {
    const m = match[i]!;
    if (typeof m?.if !== 'string' || m.if.trim() === '') return { errors: [{ path: `match/${i}/if`, message: "'if' expression must not be empty" }] };
    if (typeof m.then !== 'string' || m.then.trim() === '') return { errors: [{ path: `match/${i}/then`, message: "'then' expression must not be empty" }] };
  }
  let otherwise: CompiledExpression;
  try {
    otherwise = compileExpression(elseSrc, opts);
  } catch (e) {
    return { errors: [errorOf('else', "error in 'else' expression: ", e)] };
  }
  const branches: Branch[] = [];
  for (let i = 0; i < match.length; i++) {
    const m = match[i]!;
    let cond: CompiledExpression;
    let then: CompiledExpression;
    try {
      cond = compileExpression(m.if, opts);
    } catch (e) {
      return { errors: [errorOf(`match/${i}/if`, `error in 'if' expression of condition #${i + 1}: `, e)] };
    }
    try {
      then = compileExpression(m.then, opts);
    } catch (e) {
      return { errors: [errorOf(`match/${i}/then`, `error in 'then' expression of condition #${i + 1}: `, e)] };
    }
    branches.push({ cond, then });
  }
  return { block: new IfBlock(branches, otherwise), errors: [] };
}
