/**
 * The rule engine: compiled rule sets, `classify`, SpamTag scoring, verdict headers, and loading
 * rule material (Stalwart JSON bundles, scores.txt, list files). docs/compiler.md.
 */
export * from './types.js';
export { SpamEngine, DEFAULT_TIME_BUDGET_MS, type EngineOptions } from './engine.js';
export { EngineClosedError, type CloseOptions, type EnginePart } from './lifecycle.js';
// Compiling a rule set (compileRuleSet, compileCondition, normalizeCondition) and rendering the verdict
// headers are the engine's own: `new SpamEngine`/`loadRules` compile, `classify` renders
// (`result.headers`). Import them from their modules inside the package.
export { validateCondition, validateDnsblTag, DEFAULT_PRIORITY } from './rules.js';
export { SpamTagTable, parseScoresTxt, type TagAction } from './tags.js';
export {
  parseRuleBundle,
  loadRuleFile,
  loadScoresFile,
  parseListText,
  describeProblem,
  RuleBundleError,
  type BundleProblem,
  type ParseBundleOptions,
  type RuleBundle,
  type DnsblServerInput,
} from './load.js';
export {
  validateRegistryObject,
  normalizeRuleName,
  SPAM_RULE_SCOPES,
  DNSBL_SCOPES,
  type Problem,
  type RegistryObject,
  type RegistryType,
} from './schema.js';
export { DEFAULT_RULES, DEFAULT_TAGS } from './default-rules.js';
export { engineOptionsFromBundle, type BundleEngineFields, type BundleEngineOptions, type RuleMaterial } from './from-bundle.js';
