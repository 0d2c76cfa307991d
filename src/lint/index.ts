/**
 * Public face of lint's tag analysis (used by src/cli/lint.ts): the catalogue of tags the built-in
 * modules and the classifier set, and what rule and DNSBL expressions read and emit.
 */
export { builtinTagCatalogue, catalogueFrom, type BuiltinSource, type TagCatalogue } from './catalogue.js';
export { branchTags, readTags, TAG_NAME, type BranchTags } from './expr-tags.js';
export { sourceLiterals, type SourceLiterals } from './source-literals.js';
