/**
 * Syntax tree of the Stalwart expression language (docs/expression-language.md), as produced by
 * `parse()` in `parser.ts`. Every node carries its source span (`start` inclusive, `end`
 * exclusive, 0-based UTF-16 offsets) so that later passes can report positions (README.md, deviation D6).
 *
 * Names are left unresolved here: whether `foo` is a variable, a constant or nothing at all, and
 * whether `len(...)` has the right arity, is decided by `src/expr/resolve.ts`, which knows the
 * name tables and the parse context (allow-lists).
 */

export interface Span {
  start: number;
  end: number;
}

/** Integer literal, `true`/`false` (1/0) or a duration (`5d` → 432000000 ms). */
export interface IntNode extends Span {
  type: 'Int';
  value: number;
}
/** Float literal (`1.5`, `.5`, `5.`). */
export interface FloatNode extends Span {
  type: 'Float';
  value: number;
}
/** String literal after D1 escape processing. */
export interface StrNode extends Span {
  type: 'Str';
  value: string;
}
/** An identifier: a variable or constant name (resolved later). */
export interface NameNode extends Span {
  type: 'Name';
  name: string;
}
/** `$NAME`: a tag already set on the message (spam filter), Integer 1/0. */
export interface GlobalNode extends Span {
  type: 'Global';
  name: string;
}
/** `$N`: capture group N of the last `matches`. */
export interface CaptureNode extends Span {
  type: 'Capture';
  index: number;
}
/** `[a, b, …]`. */
export interface ArrayNode extends Span {
  type: 'Array';
  items: Node[];
}
/** `target[index]`; only after a variable, `)` or `]` (spec §1.6). */
export interface IndexNode extends Span {
  type: 'Index';
  target: Node;
  index: Node;
}
export type UnaryOp = '!' | '-';
export interface UnaryNode extends Span {
  type: 'Unary';
  op: UnaryOp;
  operand: Node;
}
/** Binary operators; `=` is normalised to `==` (D2), `&` to `&&`, `|` to `||`. */
export type BinaryOp = '||' | '&&' | '^' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/';
export interface BinaryNode extends Span {
  type: 'Binary';
  op: BinaryOp;
  left: Node;
  right: Node;
  /** Offset of the operator token, for messages. */
  opStart: number;
}
/** `name(args…)`. `adjacent` is false when white space separates the name and `(`. */
export interface CallNode extends Span {
  type: 'Call';
  name: string;
  args: Node[];
  adjacent: boolean;
}
/** `()` or an empty source: evaluates to `""` (spec §0.1, empty stack). */
export interface EmptyNode extends Span {
  type: 'Empty';
}

export type Node =
  | IntNode
  | FloatNode
  | StrNode
  | NameNode
  | GlobalNode
  | CaptureNode
  | ArrayNode
  | IndexNode
  | UnaryNode
  | BinaryNode
  | CallNode
  | EmptyNode;
