/**
 * Stalwart's spam-trap step (`stalwart:crates/spam-filter/src/analysis/classifier.rs`,
 * `spam_filter_analyze_spam_trap`): when a lookup namespace `spam-traps` exists, each envelope recipient
 * (RCPT TO, lowercased by the session) is looked up with `key_exists`, in order; the first one found sets
 * **SPAM_TRAP** and ends the step. Nothing else stops: as in Stalwart, the later modules and the rules
 * still run, and only the statistical classifier is skipped for a message so tagged (src/engine/engine.ts).
 * A lookup that fails counts as "not a trap", as in Stalwart, and is reported in the result's warnings.
 * Waiting for the store is a network wait, which the classify time budget leaves out (the store's own
 * timeout bounds it).
 */
import type { LookupStore } from '../lookup/types.js';
import type { AnalysisContext } from './types.js';

/** The lookup namespace of spam-trap addresses (Stalwart's `SpamTrap` view of its lookup keys). */
export const SPAM_TRAPS = 'spam-traps';

/** The module: nothing without a `spam-traps` namespace or recipients, else a promise (store lookups). Never throws. */
export function spamtrap(ctx: AnalysisContext): void | Promise<void> {
  const store = ctx.lists.get(SPAM_TRAPS);
  if (store === undefined || ctx.session.rcptTo.length === 0) return;
  return check(ctx, store);
}

async function check(ctx: AnalysisContext, store: LookupStore): Promise<void> {
  for (const rcpt of ctx.session.rcptTo) {
    let found: boolean;
    try {
      found = await ctx.networkWait(store.keyExists(rcpt));
    } catch (e) {
      ctx.warn(`lookup of ${JSON.stringify(rcpt)} in "${SPAM_TRAPS}" failed (${e instanceof Error ? e.message : String(e)}); that recipient was not checked`);
      continue;
    }
    if (found) {
      ctx.tag('SPAM_TRAP');
      return;
    }
  }
}
