/**
 * What is left of the facade's own object checks once validation moved to the shared schemas
 * (`src/engine/schema.ts` for the rule-set objects, `src/lookup/config.ts` for StoreLookup
 * stores): the problem type of `invalidProperties`. Secrets are masked on `/get` by
 * `src/lookup/secret.ts` `maskSecrets` and kept on update by `store-secrets.ts`.
 */

export interface Problem {
  /** JSON pointer relative to the object, e.g. `store/port`, `condition/match/0/if`. */
  path: string;
  message: string;
}
