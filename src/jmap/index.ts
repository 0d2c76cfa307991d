/**
 * The JMAP (RFC 8620) management facade for `x:SpamRule`, `x:StoreLookup`, `x:SpamTag`,
 * `x:SpamDnsblServer`, `x:HttpLookup` and `x:SpamFileExtension` (docs/jmap.md):
 * server, token store, and the managed rule set reader used by `classify --db`.
 */
import { readSqliteObjects } from './repo.js';
import { objectsForEngine, rulesForEngine } from './bridge.js';
import { compareIds } from './ids.js';
import type { SpamRuleInput, SpamTagInput } from '../engine/types.js';
import type { DnsblServerInput, FileExtensionInput } from '../analysis/types.js';
import type { HttpLookupInput } from '../lookup/http-list.js';

export { createJmapServer, DEFAULT_CAPABILITY, type JmapServer, type JmapServerOptions } from './server.js';
export { TokenStore, PERMISSIONS, parsePermissions, hashToken, type Permission, type TokenInfo } from './auth.js';
export { DEFAULT_LIMITS, type Limits } from './methods.js';
export { KINDS, OBJECT_TYPES, SPAM_RULE_SCOPES, normalizeRuleName, type ObjectType } from './objects.js';
export { SqliteRepository, PostgresRepository, type ObjectRepository } from './repo.js';
export type { SetError } from './errors.js';
export type { EngineLike } from './bridge.js';
export type { TrainingSampleSink } from './kind.js';
export { BlobCache, type BlobInfo, type BlobCacheOptions } from './blobs.js';
export { DEFAULT_PUSH, type PushOptions } from './push.js';
export { HOLD_SAMPLES_MS, expireSamples } from './training-samples.js';

/** What `spamrule serve --db PATH` manages, in engine input shape (see {@link loadManagedRuleSet}). */
export interface ManagedRuleSet {
  rules: SpamRuleInput[];
  stores: { namespace: string; config: unknown }[];
  tags: SpamTagInput[];
  dnsblServers: DnsblServerInput[];
  httpLookups: HttpLookupInput[];
  fileExtensions: FileExtensionInput[];
}

/**
 * Reads the rules, lookup stores, SpamTags, DNSBL servers, remote lists and file extensions that
 * `spamrule serve --db PATH` manages, straight from the SQLite file (read-only; safe while the
 * server runs, thanks to WAL). Objects come in creation order, stores with their full
 * configuration (secrets included, as adapters need them). Throws when the file does not exist or
 * is not a SQLite database.
 */
export function loadManagedRuleSet(dbPath: string): ManagedRuleSet {
  const objects = readSqliteObjects(dbPath);
  const rules = rulesForEngine(objects.SpamRule) as unknown as SpamRuleInput[];
  const stores = [...objects.StoreLookup]
    .sort((a, b) => compareIds(a[0], b[0]))
    .map(([, d]) => ({ namespace: d.namespace as string, config: d.store }));
  return {
    rules,
    stores,
    tags: objectsForEngine(objects.SpamTag) as unknown as SpamTagInput[],
    dnsblServers: objectsForEngine(objects.SpamDnsblServer) as unknown as DnsblServerInput[],
    httpLookups: objectsForEngine(objects.HttpLookup) as unknown as HttpLookupInput[],
    fileExtensions: objectsForEngine(objects.SpamFileExtension) as unknown as FileExtensionInput[],
  };
}
