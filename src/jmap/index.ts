/**
 * The JMAP (RFC 8620) management facade for `x:SpamRule` and `x:StoreLookup` (docs/jmap.md):
 * server, token store, and the managed rule set reader used by `classify --db`.
 */
import { readSqliteObjects } from './repo.js';
import { rulesForEngine } from './bridge.js';
import { compareIds } from './ids.js';
import type { SpamRuleInput } from '../engine/types.js';

export { createJmapServer, DEFAULT_CAPABILITY, type JmapServer, type JmapServerOptions } from './server.js';
export { TokenStore, PERMISSIONS, parsePermissions, hashToken, type Permission, type TokenInfo } from './auth.js';
export { DEFAULT_LIMITS, type Limits } from './methods.js';
export { KINDS, SPAM_RULE_SCOPES, normalizeRuleName, type ObjectType } from './objects.js';
export { SqliteRepository, PostgresRepository, type ObjectRepository } from './repo.js';
export type { SetError } from './errors.js';
export type { EngineLike } from './bridge.js';

/**
 * Reads the rules and lookup stores that `spamrule serve --db PATH` manages, straight from the
 * SQLite file (read-only; safe while the server runs, thanks to WAL). Rules come in creation order,
 * stores with their full configuration (secrets included, as adapters need them). Throws when the
 * file does not exist or is not a SQLite database.
 */
export function loadManagedRuleSet(dbPath: string): { rules: SpamRuleInput[]; stores: { namespace: string; config: unknown }[] } {
  const objects = readSqliteObjects(dbPath);
  const rules = rulesForEngine(objects.SpamRule) as unknown as SpamRuleInput[];
  const stores = [...objects.StoreLookup]
    .sort((a, b) => compareIds(a[0], b[0]))
    .map(([, d]) => ({ namespace: d.namespace as string, config: d.store }));
  return { rules, stores };
}
