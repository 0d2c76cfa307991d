/**
 * The invariants every analysed or classified message must keep, whatever its bytes (README "Library":
 * `classify` never throws for a bad message; docs/message-analysis.md "Limits"): shared by the message
 * fuzz properties (test/message/fuzz.test.ts) and the classify fuzz properties
 * (test/engine/classify-fuzz.test.ts). Each check throws an Error naming what was wrong, so a
 * fast-check property built on it shrinks to the input and the broken invariant.
 */
import { Constant, Float, type Value } from '../../src/expr/value.js';
import { SCOPE_ORDER, type AnalyzedMessage, type Scope } from '../../src/message/index.js';
import { GENERIC_VARIABLES } from '../../src/message/context.js';
import type { ClassifyResult } from '../../src/engine/index.js';

/** The element variables of each scope (docs/expression-language.md), plus one name no scope knows. */
const SCOPE_VARIABLES: Readonly<Record<Scope, readonly string[]>> = {
  Url: ['url', 'value', 'url_original', 'scheme', 'authority', 'host', 'sld', 'port', 'path', 'query', 'path_query'],
  Domain: ['value', 'domain', 'sld'],
  Email: ['email', 'value', 'name', 'local', 'domain', 'sld'],
  Ip: ['ip', 'value', 'ip_reverse', 'octets', 'is_v4', 'is_v6'],
  Header: ['name', 'name_lower', 'raw', 'raw_lower', 'value', 'value_lower', 'attributes', 'address', 'date', 'contenttype', 'id', 'textlist', 'text'],
  Body: ['value', 'raw', 'text'],
  Any: ['value'],
};
const EVERY_VARIABLE = [...GENERIC_VARIABLES, 'no_such_variable'];

const checkedLists = new WeakSet<object>();

/** Throws unless `v` is a well-formed expression Value: a string, a finite number, Float, Constant, or an array of them. */
export function assertValue(v: unknown, where: string): asserts v is Value {
  if (typeof v === 'string' || v instanceof Float || v instanceof Constant) return;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`${where}: number ${v} is not finite`);
    return;
  }
  if (Array.isArray(v)) {
    // Generic variables are memoized per message: the same list comes back for every element, checked once.
    if (checkedLists.has(v)) return;
    v.forEach((x, i) => assertValue(x, `${where}[${i}]`));
    checkedLists.add(v);
    return;
  }
  throw new Error(`${where}: not a Value (${typeof v}: ${String(v)})`);
}

/**
 * Reads every variable of every element of every scope and checks the result's shape; returns the
 * element count. A warning `analysis failed (…)` means analyzeMessage caught an exception of its
 * own and fell back to an empty message: that is a crash hidden, not a result, so it fails too.
 */
export function assertAnalysis(m: AnalyzedMessage, size: number): number {
  if (m.size !== size) throw new Error(`size ${m.size}, expected ${size}`);
  for (const w of m.warnings) {
    if (typeof w !== 'string') throw new Error(`warning is not a string: ${String(w)}`);
    if (w.startsWith('analysis failed')) throw new Error(`hidden crash: ${w}`);
  }
  if (!m.builtinTags.every((t) => typeof t === 'string' && t !== '')) throw new Error('builtinTags: not all non-empty strings');
  let n = 0;
  for (const s of SCOPE_ORDER) {
    const els = m.elements(s);
    if (s === 'Any' && els.length !== 1) throw new Error(`Any scope has ${els.length} elements`);
    for (const [i, e] of els.entries()) {
      if (e.scope !== s) throw new Error(`${s}[${i}] has scope ${e.scope}`);
      if (typeof e.label !== 'string' || typeof e.location !== 'string') throw new Error(`${s}[${i}]: label/location not strings`);
      for (const name of [...SCOPE_VARIABLES[s], ...EVERY_VARIABLE]) assertValue(e.variable(name), `${s}[${i}].${name}`);
      n++;
    }
  }
  return n;
}

const ACTIONS = new Set(['allow', 'spam', 'reject', 'discard']);

/**
 * Checks a classify result's shape: a finite score, tags a duplicate-free list of strings (each scored
 * tag among them), a known action, the two header strings, timings finite, and no `errors` but those
 * `allowed` accepts (by default none: a malformed message must not make a rule or a module fail).
 */
export function assertVerdict(res: ClassifyResult, allowed: (e: ClassifyResult['errors'][number]) => boolean = () => false): void {
  if (typeof res.score !== 'number' || !Number.isFinite(res.score)) throw new Error(`score ${res.score} is not finite`);
  if (!Array.isArray(res.tags) || !res.tags.every((t) => typeof t === 'string' && t !== '')) throw new Error('tags: not all non-empty strings');
  if (new Set(res.tags).size !== res.tags.length) throw new Error(`tags has duplicates: ${res.tags.join(',')}`);
  for (const [t, s] of Object.entries(res.scores)) {
    if (!Number.isFinite(s)) throw new Error(`score of ${t} is ${s}`);
    if (!res.tags.includes(t)) throw new Error(`scored tag ${t} not in tags`);
  }
  if (!ACTIONS.has(res.action)) throw new Error(`action ${String(res.action)}`);
  if (typeof res.headers['X-Spam-Result'] !== 'string' || typeof res.headers['X-Spam-Score'] !== 'string') throw new Error('headers not strings');
  for (const [k, v] of Object.entries(res.timings)) if (!Number.isFinite(v)) throw new Error(`timings.${k} = ${v}`);
  if (!res.warnings.every((w) => typeof w === 'string')) throw new Error('warnings not strings');
  for (const w of res.warnings) if (w.startsWith('analysis failed')) throw new Error(`hidden crash: ${w}`);
  const bad = res.errors.filter((e) => !allowed(e));
  if (bad.length > 0) throw new Error(`errors: ${JSON.stringify(bad)}`);
}
