/** `x:SecretKeyOptional` resolution, and masking of secrets and URL passwords (Stalwart's registry schema, docs/jmap.md). */
import { readFileSync } from 'node:fs';
import { LookupConfigError, type SecretKeyOptional } from './config.js';

/**
 * The secret a store connects with: `undefined` for `None`, the literal for `Value`, the variable's
 * content for `EnvironmentVariable`, the file's content (one trailing newline trimmed, as files written by
 * `echo` end with one) for `File`.
 * @throws LookupConfigError naming `storeName` when the variable is unset or empty or the file unreadable
 *   or empty: connecting with an empty password instead would hide the mistake.
 */
export function resolveSecret(secret: SecretKeyOptional | undefined, storeName: string): string | undefined {
  try {
    return readSecret(secret);
  } catch (e) {
    throw new LookupConfigError(storeName, (e as Error).message);
  }
}

/**
 * {@link resolveSecret} for any user of a secret (a lookup store, the LLM step's API key): throws a plain
 * `Error` (`secret environment variable "X" is not set`, `secret file "F" cannot be read: …`, `… is empty`)
 * for the caller to name itself in. The message never holds the secret.
 */
export function readSecret(secret: SecretKeyOptional | undefined): string | undefined {
  if (secret === undefined) return undefined;
  switch (secret['@type']) {
    case 'None':
      return undefined;
    case 'Value':
      return secret.secret;
    case 'EnvironmentVariable': {
      const v = process.env[secret.variableName];
      if (v === undefined || v === '') throw new Error(`secret environment variable "${secret.variableName}" is not set`);
      return v;
    }
    case 'File': {
      let v: string;
      try {
        v = readFileSync(secret.filePath, 'utf8');
      } catch (e) {
        throw new Error(`secret file "${secret.filePath}" cannot be read: ${(e as Error).message}`);
      }
      v = v.replace(/\r?\n$/, '');
      if (v === '') throw new Error(`secret file "${secret.filePath}" is empty`);
      return v;
    }
  }
}

/** What a masked URL password reads as (Stalwart's `MASKED_PASSWORD`, its registry schema). */
export const MASKED_PASSWORD = '****';

/** `scheme://user:password@` at the start of a URL: the userinfo RFC 3986 §3.2.1 deprecates for passwords. */
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/?#]*:)([^@/?#]*)@/;

/**
 * A URL with the password of its userinfo replaced by `****` (`redis://default:****@10.0.0.5:6379/0`);
 * anything else (no password, not a URL, a socket path) unchanged. Nothing else of the URL changes, so two
 * URLs that mask alike name the same user, host, port and database.
 */
export function maskUrlPassword(url: string): string {
  return url.replace(USERINFO, (_m, head: string, pw: string) => (pw === '' ? _m : `${head}${MASKED_PASSWORD}@`));
}

/**
 * A copy of a store config (any depth) without its secrets, as JMAP `get` returns it (docs/jmap.md): the
 * `secret` of every `Value` secret removed (the variant stays), and the password of every URL (a `Redis`
 * `url`, the `urls` of a cluster or sentinel, as values or as set keys) replaced by `****`.
 * `EnvironmentVariable`/`File` names are not secret.
 */
export function maskSecrets<T>(config: T): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return maskUrlPassword(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      if (k === 'secret' && o['@type'] === 'Value') continue;
      // A set is a `{"value": true}` map: its values are the keys.
      out[maskUrlPassword(k)] = walk(x);
    }
    return out;
  };
  return walk(config) as T;
}
