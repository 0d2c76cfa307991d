/**
 * The write-only rule for the secrets of an `x:StoreLookup` (docs/jmap.md "Secrets"). `/get` never returns
 * a secret: a `Value` secret comes back without its `secret`, a URL's password as `****`
 * (src/lookup/secret.ts `maskSecrets`). So a client that read a store and writes it back cannot send
 * them, and the stored ones are kept (`keepSecrets`).
 */
import { MASKED_PASSWORD, maskUrlPassword } from '../lookup/secret.js';

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

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
