/**
 * Drives the function library with the shared vectors (docs/expression-language.md, functions) whose compiled
 * form (`rpn`) uses only literals, variables, indexing, arrays, `+`, `matches` and function calls, so the
 * library and the regex translator are checked bit for bit (type and value) without the compiler. The full vector suite
 * belongs to the compiler's tests.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FUNCTIONS } from '../../../src/expr/functions/index.js';
import type { EvalContext } from '../../../src/expr/types.js';
import { compileRustRegex } from '../../../src/expr/regex.js';
import { Constant, Float, intoArray, toDisplay, toStr, toUsize, type Value } from '../../../src/expr/value.js';
import { LookupMap, MemoryStore, StaticLookupList } from '../../../src/lookup/memory.js';
import { hasSharedData, sharedPath } from '../../helpers/shared-data.js';

type Typed = { str?: string; int?: number; float?: number | string; array?: Typed[]; const?: string };
interface Vector {
  id: string;
  kind: string;
  expr: unknown;
  vars?: Record<string, unknown>;
  expected: Typed & { parseError?: string; evalError?: string };
  rpn?: unknown;
  store?: Record<string, { kind?: string; entries?: string[] | Record<string, string>; domains?: string[]; accounts?: string[] }>;
}

function fromTyped(t: Typed): Value {
  if (t.str !== undefined) return t.str;
  if (t.int !== undefined) return t.int;
  if (t.float !== undefined) {
    const f = t.float;
    return new Float(f === 'NaN' ? NaN : f === 'inf' ? Infinity : f === '-inf' ? -Infinity : Number(f));
  }
  if (t.array !== undefined) return t.array.map(fromTyped);
  if (t.const !== undefined) return Constant.of(t.const)!;
  throw new Error(`bad typed value ${JSON.stringify(t)}`);
}

function fromVar(v: unknown): Value {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? v : new Float(v);
  if (Array.isArray(v)) return v.map(fromVar);
  const o = v as { float?: number | string; const?: string };
  if (o.const !== undefined) return Constant.of(o.const)!;
  return fromTyped(o as Typed);
}

/** `+` exactly as §2.6 states it; only here so that the concatenating store vectors can run. */
function plus(a: Value, b: Value): Value {
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if ((typeof a === 'number' || a instanceof Float) && (typeof b === 'number' || b instanceof Float)) {
    return new Float((typeof a === 'number' ? a : a.value) + (typeof b === 'number' ? b : b.value));
  }
  if (Array.isArray(a)) return Array.isArray(b) ? [...a, ...b] : [...a, b];
  if (Array.isArray(b)) return [a, ...b];
  if (typeof a === 'string') return a === '' ? b : a + toDisplay(b);
  if (typeof b === 'string') return b === '' ? a : toDisplay(a) + b;
  return b instanceof Constant ? a : b;
}

const SIMPLE = new Set(['str', 'int', 'float', 'const', 'array', 'fn', 'index', 'var', 'regex', 'capture']);

function runnable(v: Vector): boolean {
  if (v.expected.parseError !== undefined || v.expected.evalError !== undefined || v.kind !== 'expression') return false;
  const rpn = v.rpn;
  if (!Array.isArray(rpn) || !rpn.some((i) => Array.isArray(i) && (i[0] === 'fn' || i[0] === 'regex'))) return false;
  return rpn.every((i) => Array.isArray(i) && (SIMPLE.has(i[0]) || (i[0] === 'op' && i[1] === '+')));
}

function contextFor(v: Vector): EvalContext {
  const lookups = new LookupMap();
  let domains: string[] = [];
  let accounts: string[] = [];
  for (const [ns, s] of Object.entries(v.store ?? {})) {
    if (s.domains !== undefined || s.accounts !== undefined) {
      domains = s.domains ?? [];
      accounts = s.accounts ?? [];
    } else if (s.kind?.startsWith('static key set')) {
      lookups.set(ns, new StaticLookupList(ns, s.entries as string[]));
    } else if (s.kind?.startsWith('static key/value')) {
      const entries = Object.entries(s.entries as Record<string, string>).map(([key, value]) => ({ key, value }));
      lookups.set(ns, new StaticLookupList(ns, entries));
    } else {
      lookups.set(ns, new MemoryStore(ns));
    }
  }
  return {
    variable: (name) => (v.vars?.[name] !== undefined ? fromVar(v.vars[name]) : ''),
    global: () => 0,
    lookups,
    isLocalDomain: (d) => domains.includes(d),
    isLocalAddress: (a) => accounts.includes(a),
  };
}

async function run(v: Vector): Promise<Value> {
  const ctx = contextFor(v);
  const stack: Value[] = [];
  const pop = (): Value => stack.pop() ?? '';
  let captures: string[] = [];
  for (const item of v.rpn as unknown[][]) {
    const [op, a, b] = item as [string, unknown, unknown];
    switch (op) {
      case 'str': stack.push(a as string); break;
      case 'int': stack.push(a as number); break;
      case 'float': stack.push(fromTyped({ float: a as number })); break;
      case 'const': stack.push(Constant.of(a as string)!); break;
      case 'var': stack.push(ctx.variable(a as string)); break;
      case 'array': { const n = a as number; const els = stack.splice(Math.max(0, stack.length - n)); stack.push(els); break; }
      case 'index': { const i = pop(); const arr = intoArray(pop()); stack.push(arr[toUsize(i)] ?? ''); break; }
      case 'regex': {
        // §4.4: clear the captures, search (not full match), groups that did not take part read as "".
        const m = compileRustRegex(a as string).exec(toStr(pop()));
        captures = m === null ? [] : [...m].map((g) => g ?? '');
        stack.push(m === null ? 0 : 1);
        break;
      }
      case 'capture': stack.push(captures[a as number] ?? ''); break;
      case 'op': { const r = pop(); const l = pop(); stack.push(plus(l, r)); break; }
      case 'fn': {
        const def = FUNCTIONS[a as string];
        if (def === undefined) throw new Error(`unknown function ${String(a)}`);
        const n = b as number;
        expect(def.arity).toBe(n);
        const args: Value[] = new Array<Value>(n);
        for (let i = n - 1; i >= 0; i--) args[i] = pop();
        stack.push(def.async ? await def.fn(args, ctx) : def.fn(args, ctx));
        break;
      }
    }
  }
  return pop();
}

const vectors: Vector[] = hasSharedData
  ? (JSON.parse(readFileSync(sharedPath('expr-vectors.json'), 'utf8')) as Vector[]).filter(runnable)
  : [];

describe.skipIf(!hasSharedData)('function vectors (expr-vectors.json)', () => {
  it('selects the function vectors', () => {
    expect(vectors.length).toBeGreaterThan(150);
  });
  it.each(vectors.map((v) => [v.id, typeof v.expr === 'string' ? v.expr : '', v] as const))('%s: %s', async (_id, _expr, v) => {
    expect(await run(v)).toStrictEqual(fromTyped(v.expected));
  });
});
