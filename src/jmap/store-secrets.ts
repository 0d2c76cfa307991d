/**
 * The write-only rule for the secrets of an `x:StoreLookup` (docs/jmap.md "Secrets"). `/get` never returns
 * a secret: a `Value` secret comes back without its `secret`, a URL's password as `****`
 * (src/lookup/secret.ts `maskSecrets`). So a client that read a store and writes it back cannot send
 * them, and the stored ones are kept (`keepSecrets`). But a kept secret keeps going to the address it was
 * given for only: an update that points a store at another host must send its secrets again
 * (`carriedSecretProblems`), or a token that may update stores, and does not know their passwords,
 * would have them sent to a host of its choosing.
 */
import { MASKED_PASSWORD, maskUrlPassword } from '../lookup/secret.js';
import { parsePointer } from './pointer.js';
import type { Problem } from './schema.js';
import { isObject } from '../util/index.js';

/** The secret properties of the store variants and their replica or shard items (x:SecretKeyOptional). */
const SECRET_KEYS = ['authSecret', 'sentinelSecret'];

/** `url` back with the stored password when it is that stored URL as `/get` masked it. */
function unmask(url: string, stored: readonly string[]): string {
  if (!url.includes(MASKED_PASSWORD)) return url;
  return stored.find((s) => s !== url && maskUrlPassword(s) === url) ?? url;
}

/** A `urls` set (array or `{"value": true}` map) with masked URLs given their stored passwords back. */
function keepUrls(v: unknown, old: unknown): unknown {
  const stored = Array.isArray(old) ? old.filter((u): u is string => typeof u === 'string') : isObject(old) ? Object.keys(old) : [];
  if (Array.isArray(v)) return v.map((u) => (typeof u === 'string' ? unmask(u, stored) : u));
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([u, on]) => [unmask(u, stored), on]));
  return v;
}

/**
 * The store a client sent (`v`, any depth) with the secrets it could not send taken from the stored one
 * (`old`), position by position: a `{"@type": "Value"}` without `secret` gets the stored secret of the same
 * variant, and a URL whose password reads `****` gets the stored URL it masks (same user, host, port and
 * database). A variant that changed keeps nothing.
 */
export function keepSecrets(v: unknown, old: unknown): unknown {
  if (typeof v === 'string') return typeof old === 'string' ? unmask(v, [old]) : v;
  if (Array.isArray(v)) return v.map((x, i) => keepSecrets(x, Array.isArray(old) ? old[i] : undefined));
  if (!isObject(v) || !isObject(old)) return v;
  if (v['@type'] !== undefined && old['@type'] !== undefined && v['@type'] !== old['@type']) return v;
  if (v['@type'] === 'Value' && v.secret === undefined && typeof old.secret === 'string') return { ...v, secret: old.secret };
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'urls' ? keepUrls(x, old[k]) : keepSecrets(x, old[k])]));
}

/** Where an object's secrets go: its host and port, its URL(s) without their passwords, the sentinel service. */
function destination(o: Record<string, unknown>): string {
  const urls = Array.isArray(o.urls) ? o.urls.map(String) : isObject(o.urls) ? Object.keys(o.urls) : [];
  const trim = (x: unknown) => (typeof x === 'string' ? x.trim() : (x ?? null));
  return JSON.stringify([trim(o.host), o.port ?? null, typeof o.url === 'string' ? maskUrlPassword(o.url.trim()) : null, urls.map((u) => maskUrlPassword(u.trim())).sort(), trim(o.serviceName)]);
}

/**
 * Whether the PatchObject itself carries the secret at `segs` (from the object's root: `store`,
 * `authSecret`): a key at or above it whose value holds the whole secret (a `Value` with its `secret`), or
 * the key of its `secret` alone.
 */
function supplied(patch: Record<string, unknown>, segs: readonly string[]): boolean {
  for (const [key, value] of Object.entries(patch)) {
    const k = parsePointer(key);
    if (!k.slice(0, segs.length).every((s, i) => s === segs[i])) continue;
    if (k.length === segs.length + 1 && k[segs.length] === 'secret') return typeof value === 'string';
    if (k.length > segs.length) continue;
    let cur: unknown = value;
    for (const s of segs.slice(k.length)) cur = isObject(cur) || Array.isArray(cur) ? (cur as Record<string, unknown>)[s] : undefined;
    return isObject(cur) && typeof cur['@type'] === 'string' && (cur['@type'] !== 'Value' || typeof cur.secret === 'string');
  }
  return false;
}

/**
 * The secrets an update would keep while the object holding them (the store, a read replica, a shard) now
 * points elsewhere: problems at their paths (`store/authSecret`, `store/readReplicas/1/authSecret`) unless
 * the PatchObject sends them again. `newStore` and `oldStore` are validated stores (defaults applied).
 */
export function carriedSecretProblems(patch: Record<string, unknown>, oldStore: unknown, newStore: unknown): Problem[] {
  const problems: Problem[] = [];
  const visit = (n: unknown, o: unknown, path: string[]): void => {
    if (Array.isArray(n)) {
      n.forEach((x, i) => visit(x, Array.isArray(o) ? o[i] : undefined, [...path, String(i)]));
      return;
    }
    if (!isObject(n) || !isObject(o)) return;
    if (destination(n) !== destination(o))
      for (const k of SECRET_KEYS) {
        const s = n[k];
        if (!isObject(s) || s['@type'] === 'None' || !isObject(o[k]) || o[k]['@type'] === 'None') continue;
        const segs = ['store', ...path, k];
        if (!supplied(patch, segs))
          problems.push({
            path: segs.join('/'),
            message: 'the address this secret is used with changed (host, port or URLs): send the secret again; a kept secret only goes to the address it was given for',
          });
      }
    for (const [k, x] of Object.entries(n)) if (!SECRET_KEYS.includes(k)) visit(x, o[k], [...path, k]);
  };
  visit(newStore, oldStore, []);
  return problems;
}
