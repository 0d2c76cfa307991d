/**
 * The JMAP management client (RFC 8620, docs/jmap.md): `JmapClient` for x:SpamRule and
 * x:StoreLookup, error classes for request/method/set failures, and the idempotent importer of
 * Stalwart's published `spam-filter-rules.json`.
 */
export { JmapClient, normalizeRuleName, responseOf, CORE_CAPABILITY, MANAGEMENT_CAPABILITY, type JmapClientOptions, type CoreLimits, type ManagedType } from './client.js';
export { JmapError, JmapRequestError, JmapMethodError, JmapSetError, formatSetError } from './errors.js';
export {
  listFromWire,
  normalizeRule,
  parseStalwartBundle,
  readStalwartBundle,
  writeTagsFile,
  writeListsDir,
  isUnrepresentableKey,
  type RuleInput,
  type StalwartBundle,
} from './bundle.js';
export { importRules, importObjects, rulePatch, IMPORT_KEYS, type ImportableType, type ImportOptions, type ImportReport } from './import.js';
export { formatTable, parseAssignments, connectionFrom, CONNECTION_OPTIONS, CONNECTION_HELP, type ConnectionFlags } from './cli-util.js';
export type * from './types.js';
export { SPAM_RULE_SCOPES } from './types.js';
