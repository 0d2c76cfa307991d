/**
 * Rule-set compilation: SpamRule objects (Stalwart JSON shape) → per-scope lists of compiled
 * if-blocks in execution order (Stalwart's rule evaluation, Stalwart's spam filter).
 */
import { compileIfBlock, DNSBL_TAG_VARIABLES, SPAM_RULE_VARIABLES } from '../expr/index.js';
import type { CompiledIfBlock, ExpressionObject } from '../expr/types.js';
import { SCOPE_ORDER, type Scope } from '../message/types.js';
import type { ConditionInput, RuleError, RuleLoadReport, SpamRuleInput } from './types.js';

/** Schema default of `x:SpamRule.priority`. */
export const DEFAULT_PRIORITY = 500;

export interface CompiledRule {
  readonly name: string;
  readonly scope: Scope;
  readonly priority: number;
  readonly block: CompiledIfBlock;
  /** Load order, the tie-breaker for equal priorities (Stalwart: ascending object id = creation order). */
  readonly order: number;
  /**
   * True when the rule awaits stores but neither reads `$TAG`s nor writes (`key_set`,
   * `counter_incr`): its result cannot depend on other rules, so the engine may run its lookups
   * for all elements of a scope concurrently and apply the results in canonical order.
   */
  readonly prefetchable: boolean;
}

const READS_GLOBAL = /\$[A-Za-z_]/;
const WRITES_STORE = /\b(key_set|counter_incr|sql_query)\s*\(/;

/** Conservative source-level check (a `$X` inside a string literal also counts). */
function isPrefetchable(obj: ExpressionObject, block: CompiledIfBlock): boolean {
  if (!block.isAsync) return false;
  const sources = [obj.else, ...obj.match.flatMap((m) => [m.if, m.then])];
  return !sources.some((src) => READS_GLOBAL.test(src) || WRITES_STORE.test(src));
}

export type RulesByScope = Record<Scope, CompiledRule[]>;

const SCOPES = new Set<string>(SCOPE_ORDER);

/**
 * Normalises a `condition`: `match` may be an array or Stalwart's index-keyed object
 * (`{"0": {...}, "1": {...}}`, sorted numerically), docs/jmap.md. Throws a `TypeError` naming the
 * offending path for a shape that is neither.
 */
export function normalizeCondition(condition: ConditionInput | undefined): ExpressionObject {
  if (condition === null || typeof condition !== 'object') throw new TypeError('condition: expected an object {match, else}');
  const raw = condition.match ?? [];
  let match: { if: string; then: string }[];
  if (Array.isArray(raw)) match = raw;
  else if (typeof raw === 'object') {
    match = Object.keys(raw)
      .map((k) => {
        if (!/^\d+$/.test(k)) throw new TypeError(`condition/match/${k}: index keys must be decimal integers`);
        return [Number(k), raw[k]!] as const;
      })
      .sort((a, b) => a[0] - b[0])
      .map(([, v]) => v);
  } else throw new TypeError('condition/match: expected an array or an index-keyed object');
  match.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || typeof m.if !== 'string' || typeof m.then !== 'string')
      throw new TypeError(`condition/match/${i}: expected {"if": string, "then": string}`);
  });
  const els = condition.else ?? '';
  if (typeof els !== 'string') throw new TypeError('condition/else: expected a string');
  return { match, else: els };
}

/**
 * Compiles one condition for a scope with that scope's variable allow-list (docs/expression-language.md
 * §3.3). Returns the block, or the errors with JSON-pointer paths (`condition/match/0/if`).
 */
export function compileCondition(
  scope: Scope,
  condition: ConditionInput | undefined,
): { block?: CompiledIfBlock; errors: { path: string; message: string }[]; expression?: ExpressionObject } {
  if (!SCOPES.has(scope)) return { errors: [{ path: '@type', message: `unknown SpamRule scope "${String(scope)}"` }] };
  let obj: ExpressionObject;
  try {
    obj = normalizeCondition(condition);
  } catch (e) {
    const msg = (e as Error).message;
    const i = msg.indexOf(': ');
    return { errors: [{ path: msg.slice(0, i), message: msg.slice(i + 2) }] };
  }
  const { block, errors } = compileIfBlock(obj, { allowedVariables: SPAM_RULE_VARIABLES[scope] });
  if (errors.length > 0 || block === undefined)
    return { errors: errors.map((e: { path: string; message: string }) => ({ path: `condition/${e.path}`, message: e.message })) };
  return { block, errors: [], expression: obj };
}

/**
 * Validates a SpamRule condition the way the JMAP facade needs it: compiles it with the variables of
 * `scope` (docs/expression-language.md). `[]` when it compiles, else one entry per failing branch
 * with the path (`condition/match/0/if`, or `condition` for a shape that is no `{match, else}`) and
 * the error with its `line:column`. Never throws.
 */
export function validateCondition(scope: Scope, condition: unknown): { path: string; message: string }[] {
  return compileCondition(scope, condition as ConditionInput).errors;
}

/**
 * Validates a `SpamDnsblServer` `tag` expression (an if/then/else over the answer's Ip variables, as the
 * DNSBL module compiles it): `[]` when it compiles, else the errors with paths under `tag/`. Never throws.
 */
export function validateDnsblTag(tag: unknown): { path: string; message: string }[] {
  let obj: ExpressionObject;
  try {
    obj = normalizeCondition(tag as ConditionInput);
  } catch (e) {
    return [{ path: 'tag', message: (e as Error).message }];
  }
  return compileIfBlock(obj, { allowedVariables: DNSBL_TAG_VARIABLES }).errors.map((e: { path: string; message: string }) => ({ path: `tag/${e.path}`, message: e.message }));
}

/**
 * Compiles a rule set. Disabled rules are skipped; rules that fail to compile are reported, never
 * silently dropped. Order inside a scope: ascending `priority`, ties in load order (stable sort).
 */
export function compileRuleSet(rules: readonly SpamRuleInput[]): { byScope: RulesByScope; report: RuleLoadReport } {
  const byScope = Object.fromEntries(SCOPE_ORDER.map((s) => [s, [] as CompiledRule[]])) as RulesByScope;
  const errors: RuleError[] = [];
  let loaded = 0;
  let disabled = 0;
  rules.forEach((rule, order) => {
    const name = typeof rule?.name === 'string' && rule.name !== '' ? rule.name : `#${order}`;
    if (rule === null || typeof rule !== 'object') {
      errors.push({ rule: name, path: '', message: 'expected a SpamRule object' });
      return;
    }
    if (rule.enable === false) {
      disabled++;
      return;
    }
    const priority = rule.priority ?? DEFAULT_PRIORITY;
    if (!Number.isInteger(priority) || priority < -99999 || priority > 99999) {
      errors.push({ rule: name, path: 'priority', message: 'priority must be an integer in -99999..99999' });
      return;
    }
    const { block, errors: errs, expression } = compileCondition(rule['@type'], rule.condition);
    if (block === undefined || expression === undefined) {
      for (const e of errs) errors.push({ rule: name, ...e });
      return;
    }
    const prefetchable = isPrefetchable(expression, block);
    byScope[rule['@type']].push({ name, scope: rule['@type'], priority, block, order, prefetchable });
    loaded++;
  });
  for (const s of SCOPE_ORDER) byScope[s].sort((a, b) => a.priority - b.priority || a.order - b.order);
  return { byScope, report: { loaded, disabled, errors } };
}
