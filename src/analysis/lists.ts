/**
 * Stalwart's predicates over lookup namespaces (`stalwart:crates/spam-filter/src/analysis/mod.rs`) for
 * the domain and url modules: the name is looked up exactly as given, with no normalisation.
 */
import type { AnalysisContext } from './types.js';

async function exists(ctx: AnalysisContext, namespace: string, key: string): Promise<boolean> {
  const store = ctx.lists.get(namespace);
  if (store === undefined) return false;
  try {
    return await store.keyExists(key);
  } catch {
    return false; // a lookup error counts as "not listed", as in Stalwart
  }
}

/** Is `domain` in `trusted-domains`? (Local domains of a directory are not known here.) */
export function trustedDomain(ctx: AnalysisContext, domain: string): Promise<boolean> {
  return exists(ctx, 'trusted-domains', domain);
}

/** Is `domain` in `url-redirectors`? */
export function urlRedirector(ctx: AnalysisContext, domain: string): Promise<boolean> {
  return exists(ctx, 'url-redirectors', domain);
}
