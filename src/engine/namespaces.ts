/**
 * Which lookup namespaces a rule set reads (`key_exists('trusted-domains', …)`), so that a namespace
 * nothing provides is reported (`lint` warning, one warning per classify run) instead of silently
 * answering `""`.
 */
import { normalizeCondition } from './rules.js';
import type { SpamRuleInput } from './types.js';

const STORE_CALL = /\b(?:key_exists|key_get|key_set|counter_get|counter_incr|counter_set|sql_query)\s*\(\s*(?:'([^'\\]*)'|"([^"\\]*)")/g;

/** Namespace → names of the enabled rules that read it with a literal namespace argument. */
export function namespacesRead(rules: readonly SpamRuleInput[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of rules) {
    if (r.enable === false) continue;
    let cond;
    try {
      cond = normalizeCondition(r.condition);
    } catch {
      continue;
    }
    for (const src of [...cond.match.flatMap((m) => [m.if, m.then]), cond.else]) {
      for (const m of src.matchAll(STORE_CALL)) {
        const ns = m[1] ?? m[2]!;
        // "" and "*" are the default in-memory store, always there.
        if (ns === '' || ns === '*') continue;
        const l = out.get(ns) ?? [];
        if (!l.includes(r.name)) l.push(r.name);
        out.set(ns, l);
      }
    }
  }
  return out;
}

/** The namespaces rules read that `provided` lacks, with the rules that read each. */
export function missingNamespaces(rules: readonly SpamRuleInput[], provided: (ns: string) => boolean): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [ns, by] of namespacesRead(rules)) if (!provided(ns)) out.set(ns, by);
  return out;
}
