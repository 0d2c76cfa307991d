/**
 * The catalogue of tags spamrule itself can set, built from the code that sets them rather than
 * from a copied list: the built-in analysis modules (src/analysis, `MODULES`) write their tags as
 * string literals (`ctx.tag('HTML_SHORT_1')`, tag tables such as dmarc's `SPF_TAGS`) or literal
 * heads (`` `SOURCE_ASN_${asn}` ``), read here from each module's own source file next to the
 * analysis index (`.ts` under tsx/vitest, `.js` in dist); the headers module's `X_HDR_<NAME>`
 * family comes from `headerTag` (src/message/headers.ts); the statistical classifier's `PROB_*`
 * tags from its `probTag` table (src/classifier/classifier.ts), which it sets after the rules.
 * DNSBL tags are not here: they come from the rule set's own SpamDnsblServer objects.
 */
import { existsSync, readFileSync } from 'node:fs';
import { MODULE_NAMES } from '../analysis/index.js';
import { probTag } from '../classifier/classifier.js';
import { headerTag } from '../message/headers.js';
import { TAG_NAME } from './expr-tags.js';
import { sourceLiterals } from './source-literals.js';

/** Who sets a built-in tag: a module (before the rules) or the classifier (after them). */
export type BuiltinSource = { kind: 'module'; module: string } | { kind: 'classifier' };

export interface TagCatalogue {
  /** Exact tag names and who sets them (the first module that names a tag). */
  readonly tags: ReadonlyMap<string, BuiltinSource>;
  /** Families of computed names (`SOURCE_ASN_`, `X_HDR_`) and who sets them. */
  readonly prefixes: ReadonlyArray<readonly [string, BuiltinSource]>;
  /** Modules whose source file was not found (their tags are missing from the catalogue). */
  readonly unreadModules: readonly string[];
  /** Who sets `tag`, or undefined when no built-in code does. */
  sourceOf(tag: string): BuiltinSource | undefined;
}

const ANALYSIS_DIR = new URL('../analysis/', import.meta.url);

/** The source text of module `name` (`<name>.js` or `<name>.ts` beside the analysis index), or undefined. */
function moduleSource(name: string): string | undefined {
  for (const ext of ['.js', '.ts']) {
    const file = new URL(name + ext, ANALYSIS_DIR);
    if (existsSync(file)) return readFileSync(file, 'utf8');
  }
  return undefined;
}

/** Builds a catalogue from modules' sources (`name` → source text); exported for tests. */
export function catalogueFrom(sources: ReadonlyArray<readonly [string, string | undefined]>): TagCatalogue {
  const tags = new Map<string, BuiltinSource>();
  const prefixes: [string, BuiltinSource][] = [];
  const unreadModules: string[] = [];
  for (const [module, src] of sources) {
    if (src === undefined) {
      unreadModules.push(module);
      continue;
    }
    const source: BuiltinSource = { kind: 'module', module };
    const lit = sourceLiterals(src);
    for (const s of lit.strings) if (TAG_NAME.test(s) && !tags.has(s)) tags.set(s, source);
    for (const h of lit.templateHeads) if (h !== '' && TAG_NAME.test(h)) prefixes.push([h, source]);
  }
  // The headers module tags each header `X_HDR_<NAME>` through the message's headerTags.
  prefixes.push([headerTag(''), { kind: 'module', module: 'headers' }]);
  // Every confidence band of the classifier's table (NaN: its "uncertain" answer).
  for (let i = 0; i <= 1000; i++) tags.set(probTag(i / 1000), { kind: 'classifier' });
  tags.set(probTag(Number.NaN), { kind: 'classifier' });
  return {
    tags,
    prefixes,
    unreadModules,
    sourceOf(tag: string): BuiltinSource | undefined {
      const exact = tags.get(tag);
      if (exact !== undefined) return exact;
      for (const [p, s] of prefixes) if (tag.startsWith(p) && tag.length > p.length) return s;
      return undefined;
    },
  };
}

let cached: TagCatalogue | undefined;

/** The catalogue of the built-in modules and the classifier (built once per process). */
export function builtinTagCatalogue(): TagCatalogue {
  return (cached ??= catalogueFrom(MODULE_NAMES.map((m) => [m, moduleSource(m)] as const)));
}
