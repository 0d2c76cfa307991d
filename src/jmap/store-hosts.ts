/**
 * The host names a StoreLookup `/set` names, to be resolved before the call runs (src/lookup
 * store-policy.ts `resolveHostNames`), so that the store policy, which runs inside the storage
 * transaction and cannot wait for DNS, can refuse a name that resolves to a link-local or cloud metadata
 * address with a SetError (docs/jmap.md, "Secrets and the store policy"). The policy checks the same names
 * again when it starts the store.
 */
import { checkStorePolicy, type StorePolicy } from '../lookup/store-policy.js';
import { hostAddress, redisHost } from '../lookup/store-hosts.js';
import type { LookupStoreConfig } from '../lookup/config.js';
import type { Validators } from './kind.js';
import { parsePointer } from './pointer.js';
import { isObject } from '../util/index.js';

/** Names resolved per request at most: a `/set` that names more gets the rest checked when the store starts. */
const MAX_NAMES = 32;

/**
 * The host names in the `x:StoreLookup/set` calls of a request: `host` values, the hosts of `url` values
 * and of `urls` entries (array items, map keys, or a PatchObject pointer `store/urls/redis:~1~1h:6379`),
 * lowercased, without IP literals and socket paths. At most {@link MAX_NAMES}.
 */
export function storeHostCandidates(methodCalls: readonly (readonly [string, unknown, string])[]): string[] {
  const names = new Set<string>();
  const add = (h: string | undefined): void => {
    const t = h?.trim();
    if (t !== undefined && t !== '' && !t.startsWith('/') && hostAddress(t) === undefined && names.size < MAX_NAMES) names.add(t.toLowerCase());
  };
  const walk = (v: unknown, key: string | undefined, depth: number): void => {
    if (depth > 16) return;
    if (typeof v === 'string') {
      if (key === 'host') add(v);
      else if (key === 'url' || key === 'urls') add(redisHost(v));
    } else if (Array.isArray(v)) for (const x of v) walk(x, key, depth + 1);
    else if (isObject(v))
      for (const [k, x] of Object.entries(v)) {
        const segs = parsePointer(k);
        const last = segs.at(-1);
        // A set written as a map ({"redis://h": true}), or one entry of it patched by pointer.
        if (key === 'urls' || segs.at(-2) === 'urls') add(redisHost(last ?? k));
        walk(x, last, depth + 1);
      }
  };
  for (const [name, args] of methodCalls) if (name === 'x:StoreLookup/set' && isObject(args)) walk({ create: args.create, update: args.update }, undefined, 0);
  return [...names];
}

/** The `storePolicy` validator of a request: the server's policy, with the addresses resolved for it. */
export function storePolicyValidator(policy: StorePolicy, resolved?: ReadonlyMap<string, readonly string[]>): NonNullable<Validators['storePolicy']> {
  return (store) => {
    const r = checkStorePolicy(store as unknown as LookupStoreConfig, policy, resolved);
    return r.ok ? { ok: true as const, store: r.config as unknown as Record<string, unknown> } : { ok: false as const, problems: r.problems };
  };
}
