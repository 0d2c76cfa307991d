/**
 * What an expression says about tags, read from its syntax tree (grammar/ast.ts): the `$TAG`s it
 * reads, and the tag names a `then`/`else` branch can produce: exactly (`'GTUBE'`), among some
 * (`if_then(location == 'tcp', 'RBL_X', 'RECEIVED_X')`), or by prefix (`'FREEMAIL_' + to_uppercase(location)`).
 */
import type { ExprNode } from '../expr/index.js';
import { parseExpression } from '../expr/index.js';

/** A tag name as rules and modules write them. */
export const TAG_NAME = /^[A-Z][A-Z0-9_]*$/;

/** The tags a branch (`then` or `else` source) can produce. */
export interface BranchTags {
  /** The branch is one string literal: exactly this tag. */
  exact?: string;
  /** Tag-shaped string literals of a computed branch: tags it may produce. */
  candidates: string[];
  /** Literal heads of concatenations (`'FREEMAIL_' + …`): it may produce tags starting with these. */
  prefixes: string[];
  /** Neither false/true/empty nor one string literal: the name is computed. */
  computed: boolean;
  /** Computed, and nothing above says which names it produces. */
  opaque: boolean;
}

function parse(src: string): ExprNode | undefined {
  try {
    return parseExpression(src);
  } catch {
    return undefined;
  }
}

function children(n: ExprNode): ExprNode[] {
  switch (n.type) {
    case 'Array':
      return n.items;
    case 'Index':
      return [n.target, n.index];
    case 'Unary':
      return [n.operand];
    case 'Binary':
      return [n.left, n.right];
    case 'Call':
      return n.args;
    default:
      return [];
  }
}

/** The leftmost operand of a chain of `+`. */
function leftmost(n: ExprNode): ExprNode {
  while (n.type === 'Binary' && n.op === '+') n = n.left;
  return n;
}

/** The `$NAME` references of an expression source (none when it does not parse). */
export function readTags(src: string): string[] {
  const tree = parse(src);
  if (tree === undefined) return [];
  const out: string[] = [];
  const stack: ExprNode[] = [tree];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'Global') out.push(n.name);
    stack.push(...children(n));
  }
  return out;
}

/** The tags a `then`/`else` branch source can produce (see {@link BranchTags}). */
export function branchTags(src: string): BranchTags {
  const tree = parse(src);
  const out: BranchTags = { candidates: [], prefixes: [], computed: false, opaque: false };
  if (tree === undefined || tree.type === 'Empty' || tree.type === 'Int' || tree.type === 'Float') return out;
  if (tree.type === 'Str') {
    out.exact = tree.value;
    return out;
  }
  out.computed = true;
  const stack: ExprNode[] = [tree];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'Binary' && n.op === '+') {
      const head = leftmost(n);
      if (head.type === 'Str' && TAG_NAME.test(head.value)) {
        out.prefixes.push(head.value);
        // The head is a prefix, not a tag: the rest of the chain may hold other tag literals.
        let m: ExprNode = n;
        while (m.type === 'Binary' && m.op === '+') {
          stack.push(m.right);
          m = m.left;
        }
        continue;
      }
    }
    if (n.type === 'Str' && TAG_NAME.test(n.value)) out.candidates.push(n.value);
    stack.push(...children(n));
  }
  out.opaque = out.candidates.length === 0 && out.prefixes.length === 0;
  return out;
}
