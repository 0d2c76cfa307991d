/**
 * Operator semantics of the expression language (docs/expression-language.md), shared by
 * the closure compiler and the reference interpreter so both give identical results.
 * Every function is total (§6.2): operators never throw, except the ExprEvalError of a result over
 * the size limits of limits.ts (`+` only), which the engine reports as the rule's error.
 */
import { MAX_ARRAY_ELEMENTS, MAX_VALUE_CHARS, tooLarge } from './limits.js';
import {
  Constant, Float, I64_MIN, looseEq, num, parseNumber, partialCmp, saturate, toBool, toDisplay, type Value,
} from './value.js';

type Num = number | Float;

function isNum(v: Value): v is Num {
  return typeof v === 'number' || v instanceof Float;
}

/** Int∘Int → saturating Integer, anything with a Float → Float (§2.6, §2.8). */
function arith(a: Num, b: Num, f: (x: number, y: number) => number): Value {
  if (typeof a === 'number' && typeof b === 'number') return saturate(f(a, b));
  return new Float(f(num(a), num(b)));
}

const addF = (x: number, y: number): number => x + y;
const subF = (x: number, y: number): number => x - y;
const mulF = (x: number, y: number): number => x * y;

/** String concatenation within MAX_VALUE_CHARS. */
function concat(x: string, y: string): string {
  const n = x.length + y.length;
  if (n > MAX_VALUE_CHARS) tooLarge('a string', n, MAX_VALUE_CHARS);
  return x + y;
}

/**
 * `+`: numbers add, arrays concatenate/append/prepend, strings concatenate with Display (§2.6).
 * @throws ExprEvalError when the result would exceed MAX_VALUE_CHARS or MAX_ARRAY_ELEMENTS
 */
export function opAdd(a: Value, b: Value): Value {
  if (isNum(a) && isNum(b)) return arith(a, b, addF);
  const aArr = Array.isArray(a);
  const bArr = Array.isArray(b);
  if (aArr || bArr) {
    const n = (aArr ? a.length : 1) + (bArr ? b.length : 1);
    if (n > MAX_ARRAY_ELEMENTS) tooLarge('an array', n, MAX_ARRAY_ELEMENTS);
    if (aArr && bArr) return [...a, ...b];
    if (aArr) return [...a, b];
    return [a, ...(b as Value[])];
  }
  if (typeof a === 'string') return a.length === 0 ? b : concat(a, toDisplay(b));
  if (typeof b === 'string') return b.length === 0 ? a : concat(toDisplay(a), b);
  if (b instanceof Constant) return a;
  return b; // Constant + x
}

/** `-`: numbers subtract; with an Array operand, removes the elements `==` the other (§2.6). */
export function opSub(a: Value, b: Value): Value {
  if (isNum(a) && isNum(b)) return arith(a, b, subF);
  if (Array.isArray(a)) return a.filter((e) => !looseEq(e, b));
  if (Array.isArray(b)) return b.filter((e) => !looseEq(e, a));
  return arith(parseNumber(a), parseNumber(b), subF);
}

/** `*`: numbers multiply; anything else through `parse_number` first. */
export function opMul(a: Value, b: Value): Value {
  return arith(isNum(a) ? a : parseNumber(a), isNum(b) ? b : parseNumber(b), mulF);
}

/** `/`: always Float; division by zero (integer or 0.0) gives Float 0.0. */
export function opDiv(a: Value, b: Value): Value {
  const x = num(isNum(a) ? a : parseNumber(a));
  const y = num(isNum(b) ? b : parseNumber(b));
  return new Float(y === 0 ? 0 : x / y);
}

export function opEq(a: Value, b: Value): Value {
  return looseEq(a, b) ? 1 : 0;
}
export function opNe(a: Value, b: Value): Value {
  return looseEq(a, b) ? 0 : 1;
}
export function opLt(a: Value, b: Value): Value {
  return partialCmp(a, b) === -1 ? 1 : 0;
}
export function opLe(a: Value, b: Value): Value {
  const c = partialCmp(a, b);
  return c === -1 || c === 0 ? 1 : 0;
}
export function opGt(a: Value, b: Value): Value {
  return partialCmp(a, b) === 1 ? 1 : 0;
}
export function opGe(a: Value, b: Value): Value {
  const c = partialCmp(a, b);
  return c === 1 || c === 0 ? 1 : 0;
}
export function opXor(a: Value, b: Value): Value {
  return toBool(a) !== toBool(b) ? 1 : 0;
}

/** Strict binary operators (all but the short-circuiting `&&`/`||`). */
export const BINARY_OPS: Readonly<Record<string, (a: Value, b: Value) => Value>> = {
  '+': opAdd, '-': opSub, '*': opMul, '/': opDiv,
  '==': opEq, '!=': opNe, '<': opLt, '<=': opLe, '>': opGt, '>=': opGe, '^': opXor,
};

/** `!x` → Integer 0/1. */
export function opNot(v: Value): Value {
  return toBool(v) ? 0 : 1;
}

/** `-x` (§2.7): Integer negation wraps (`-(i64::MIN)` = i64::MIN), Float negates, else `-parse_number`. */
export function opNeg(v: Value): Value {
  const n = isNum(v) ? v : parseNumber(v);
  if (typeof n === 'number') return n === I64_MIN ? I64_MIN : n === 0 ? 0 : -n;
  return new Float(-n.value);
}
