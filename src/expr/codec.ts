/**
 * The typed JSON of `expr-vectors.json` (docs/expression-language.md), used by the vector tests and
 * `spamrule eval`:
 * - results: `{"int": n}`, `{"float": x | "NaN" | "inf" | "-inf"}`, `{"str": s}`,
 *   `{"array": [typed…]}`, `{"const": name}`, `{"parseError": msg}`, `{"evalError": msg}`;
 * - inputs (`vars`, `globals`): a JSON string is a String, an integral number an Integer, a
 *   number with a fraction a Float, `{"float": …}` forces a Float, an array is an Array,
 *   `{"const": name}` a Constant.
 */
import { Constant, Float, type Value } from './value.js';

export type EncodedValue =
  | { int: number }
  | { float: number | 'NaN' | 'inf' | '-inf' }
  | { str: string }
  | { array: EncodedValue[] }
  | { const: string };
export type EncodedResult = EncodedValue | { parseError: string } | { evalError: string };

function encodeFloat(x: number): number | 'NaN' | 'inf' | '-inf' {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  return x;
}

/** Value → typed JSON. */
export function encodeValue(v: Value): EncodedValue {
  if (typeof v === 'string') return { str: v };
  if (typeof v === 'number') return { int: v };
  if (v instanceof Float) return { float: encodeFloat(v.value) };
  if (v instanceof Constant) return { const: v.name };
  return { array: v.map(encodeValue) };
}

function decodeFloat(x: unknown): number {
  if (x === 'NaN') return NaN;
  if (x === 'inf') return Infinity;
  if (x === '-inf') return -Infinity;
  if (typeof x === 'number') return x;
  throw new TypeError(`bad float ${JSON.stringify(x)}`);
}

/**
 * Typed JSON (`{"int"}`, `{"str"}`…) or plain JSON input (string, number, array) → Value.
 * @throws TypeError for anything else (null, booleans, unknown constants, other objects)
 */
export function decodeValue(j: unknown): Value {
  if (typeof j === 'string') return j;
  if (typeof j === 'number') return Number.isInteger(j) ? j : new Float(j);
  if (Array.isArray(j)) return j.map(decodeValue);
  if (j !== null && typeof j === 'object') {
    const o = j as Record<string, unknown>;
    if ('int' in o && typeof o.int === 'number') return o.int;
    if ('float' in o) return new Float(decodeFloat(o.float));
    if ('str' in o && typeof o.str === 'string') return o.str;
    if ('array' in o && Array.isArray(o.array)) return o.array.map(decodeValue);
    if ('const' in o && typeof o.const === 'string') {
      const c = Constant.of(o.const);
      if (c === undefined) throw new TypeError(`unknown constant ${JSON.stringify(o.const)}`);
      return c;
    }
  }
  throw new TypeError(`cannot decode ${JSON.stringify(j)} as an expression value`);
}

/** Bit-for-bit equality of two encoded results (`-0.0` ≠ `0.0`, `NaN` = `NaN`). Messages are not compared. */
export function sameEncoded(a: EncodedResult, b: EncodedResult): boolean {
  if ('parseError' in a || 'parseError' in b) return 'parseError' in a && 'parseError' in b;
  if ('evalError' in a || 'evalError' in b) return 'evalError' in a && 'evalError' in b;
  if ('int' in a) return 'int' in b && a.int === b.int;
  if ('float' in a) return 'float' in b && Object.is(a.float, b.float);
  if ('str' in a) return 'str' in b && a.str === b.str;
  if ('const' in a) return 'const' in b && a.const === b.const;
  return 'array' in b && a.array.length === b.array.length && a.array.every((x, i) => sameEncoded(x, b.array[i]!));
}
