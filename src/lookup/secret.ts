/** `x:SecretKeyOptional` resolution and masking (Stalwart's registry schema, docs/jmap.md). */
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
  if (secret === undefined) return undefined;
  switch (secret['@type']) {
    case 'None':
      return undefined;
    case 'Value':
      return secret.secret;
    case 'EnvironmentVariable': {
      const v = process.env[secret.variableName];
      if (v === undefined || v === '')
        throw new LookupConfigError(storeName, `secret environment variable "${secret.variableName}" is not set`);
      return v;
    }
    case 'File': {
      let v: string;
      try {
        v = readFileSync(secret.filePath, 'utf8');
      } catch (e) {
        throw new LookupConfigError(storeName, `secret file "${secret.filePath}" cannot be read: ${(e as Error).message}`);
      }
      v = v.replace(/\r?\n$/, '');
      if (v === '') throw new LookupConfigError(storeName, `secret file "${secret.filePath}" is empty`);
      return v;
    }
  }
}

/**
 * A copy of a store config (any depth) with the `secret` of every `Value` secret removed, as JMAP `get`
 * returns it (the variant stays; `EnvironmentVariable`/`File` names are not secret). docs/jmap.md.
 */
export function maskSecrets<T>(config: T): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      if (k === 'secret' && o['@type'] === 'Value') continue;
      out[k] = walk(x);
    }
    return out;
  };
  return walk(config) as T;
}
