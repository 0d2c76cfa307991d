/**
 * Per-evaluation variable slots (issue 2 §6a; spec §3: variables are immutable during one
 * evaluation): a variable read more than once by an expression, or by the expressions of one
 * if-block, is asked of the context once per evaluation and then answered from its slot
 * (`subject` appears 20× in STWT_SUBJ_BOUNCE_WORDS). Only fully synchronous code gets slots: a
 * synchronous evaluation cannot interleave with another, so one epoch counter per scope tells a
 * stale slot from a fresh one without allocating anything per evaluation.
 */
import type { Expr } from './resolve.js';
import type { Value } from './value.js';

interface Slot {
  epoch: number;
  value: Value;
}

/** The slots of one expression or if-block; `begin()` starts an evaluation. */
export class SlotScope {
  epoch = 0;
  private readonly slots = new Map<string, Slot>();
  /** @param names the variables worth a slot (read at least twice) */
  constructor(readonly names: ReadonlySet<string>) {}

  /** Invalidates every slot: the next read of each variable asks the context again. */
  begin(): void {
    this.epoch++;
  }

  /** The (shared) slot of `name`. */
  slot(name: string): Slot {
    let s = this.slots.get(name);
    if (s === undefined) this.slots.set(name, (s = { epoch: -1, value: 0 }));
    return s;
  }
}

/** Adds to `out` how many times each variable is read by `tree` (syntactically). */
export function countVariables(tree: Expr, out: Map<string, number>): Map<string, number> {
  const stack: Expr[] = [tree];
  while (stack.length > 0) {
    const e = stack.pop()!;
    switch (e.k) {
      case 'var':
        out.set(e.name, (out.get(e.name) ?? 0) + 1);
        break;
      case 'array':
        stack.push(...e.items);
        break;
      case 'index':
        stack.push(e.target, e.index);
        break;
      case 'unary':
        stack.push(e.operand);
        break;
      case 'binary':
        stack.push(e.left, e.right);
        break;
      case 'call':
        stack.push(...e.args);
        break;
      case 'matches':
        stack.push(e.subject);
        break;
      default:
        break;
    }
  }
  return out;
}

/** A scope for the variables read at least twice by `trees`, or undefined when none is. */
export function slotScopeFor(trees: Expr[]): SlotScope | undefined {
  const counts = new Map<string, number>();
  for (const t of trees) countVariables(t, counts);
  const names = new Set<string>();
  for (const [n, c] of counts) if (c > 1) names.add(n);
  return names.size > 0 ? new SlotScope(names) : undefined;
}

/** Whether any node of `tree` satisfies `test` (iterative walk). */
function some(tree: Expr, test: (e: Expr) => boolean): boolean {
  const stack: Expr[] = [tree];
  while (stack.length > 0) {
    const e = stack.pop()!;
    if (test(e)) return true;
    if (e.k === 'array') stack.push(...e.items);
    else if (e.k === 'index') stack.push(e.target, e.index);
    else if (e.k === 'unary') stack.push(e.operand);
    else if (e.k === 'binary') stack.push(e.left, e.right);
    else if (e.k === 'call') stack.push(...e.args);
    else if (e.k === 'matches') stack.push(e.subject);
  }
  return false;
}

/** True when evaluating `tree` never awaits (no store/DNS call), the condition for slots. */
export function isSyncTree(tree: Expr): boolean {
  return !some(tree, (e) => e.k === 'call' && e.def.async);
}

/** True when `tree` reads or writes the capture buffer (`$N`, `matches`). */
export function usesCaptures(tree: Expr): boolean {
  return some(tree, (e) => e.k === 'capture' || e.k === 'matches');
}
