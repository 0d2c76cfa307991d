/**
 * What is left of the facade's own object checks once validation moved to the shared schemas
 * (`src/engine/schema.ts` for the rule-set objects, `src/lookup/config.ts` for StoreLookup
 * stores): the problem type of `invalidProperties`, and the write-only rule for secrets on `/get`.
 */

export interface Problem {
  /** JSON pointer relative to the object, e.g. `store/port`, `condition/match/0/if`. */
  path: string;
  message: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Copy of a stored value with write-only secrets removed: a `Value` secret comes back as
 * `{"@type": "Value"}` (docs/jmap.md). Names of env variables and files are not secret.
 */
export function maskSecrets(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(maskSecrets);
  if (!isObject(v)) return v;
  if (v['@type'] === 'Value' && 'secret' in v) return { '@type': 'Value' };
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, maskSecrets(x)]));
}
