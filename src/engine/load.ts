/**
 * Loading rule material from files: SpamRule JSON (plain arrays, `{ "SpamRule": [...] }` bundles
 * such as Stalwart's published `spam-filter-rules.json`), SpamTag lists or `scores.txt`, and
 * static lookup lists (one key per line, `*` globs allowed).
 */
import { readFileSync } from 'node:fs';
import { parseJsonText } from '../util/index.js';
import type { StaticEntry } from '../lookup/memory.js';
import { parseScoresTxt } from './tags.js';
import type { SpamRuleInput, SpamTagInput } from './types.js';

import type { DnsblServerInput, FileExtensionInput } from '../analysis/types.js';
import { validateRegistryObject, type RegistryType } from './schema.js';
import type { HttpLookupInput } from '../lookup/http-list.js';

export type { DnsblServerInput } from '../analysis/types.js';

export interface RuleBundle {
  rules: SpamRuleInput[];
  tags: SpamTagInput[];
  /** MemoryLookupKey / MemoryLookupKeyValue entries by namespace. */
  lists: Map<string, StaticEntry[]>;
  dnsblServers: DnsblServerInput[];
  /** `HttpLookup` remote lists (freemail, disposable domains, phishing feeds). */
  httpLookups: HttpLookupInput[];
  /** `SpamFileExtension` objects for the mime module. */
  fileExtensions: FileExtensionInput[];
  /** Objects that do not validate, when parsed with `{ lenient: true }` (they are kept as given). */
  problems?: BundleProblem[];
}

type MemoryEntryType = 'MemoryLookupKey' | 'MemoryLookupKeyValue';

/** An object of a bundle that does not validate against the shared schema (src/engine/schema.ts). */
export interface BundleProblem {
  /** The object's type: a registry type, or a static list entry (`MemoryLookupKey`, `MemoryLookupKeyValue`). */
  type: RegistryType | MemoryEntryType;
  /** Position in its list. */
  index: number;
  /** The object's `name`/`tag`/`namespace`/`extension`, when it has one. */
  name?: string;
  /** JSON pointer inside the object (`priority`, `condition/match/0/if`). */
  path: string;
  message: string;
}

/** Thrown by `parseRuleBundle`/`loadRuleFile` for objects that do not validate; a TypeError, as before. */
export class RuleBundleError extends TypeError {
  constructor(
    readonly source: string,
    readonly problems: BundleProblem[],
  ) {
    const shown = problems.slice(0, 10).map(describeProblem).join('; ');
    super(`${source}: ${problems.length} invalid propert${problems.length === 1 ? 'y' : 'ies'}: ${shown}${problems.length > 10 ? '; …' : ''}`);
    this.name = 'RuleBundleError';
  }
}

/**
 * A problem as one line, as {@link RuleBundleError}'s message shows it (`{ lenient: true }` callers get
 * the list): `SpamRule[3] (NAME) priority: must be in -99999..99999`.
 */
export function describeProblem(p: BundleProblem): string {
  return `${p.type}[${p.index}]${p.name !== undefined ? ` (${p.name})` : ''} ${p.path === '' ? '' : `${p.path}: `}${p.message}`;
}

const NAME_KEYS: Record<RegistryType, string> = { SpamRule: 'name', SpamTag: 'tag', SpamDnsblServer: 'name', HttpLookup: 'namespace', SpamFileExtension: 'extension' };

function validateBundle(bundle: RuleBundle): BundleProblem[] {
  const out: BundleProblem[] = [];
  const check = (type: RegistryType, list: readonly unknown[]): void =>
    list.forEach((o, index) => {
      const r = validateRegistryObject(type, o);
      if (r.ok) return;
      const n = o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[NAME_KEYS[type]] : undefined;
      for (const p of r.problems) out.push({ type, index, ...(typeof n === 'string' ? { name: n } : {}), path: p.path, message: p.message });
    });
  check('SpamRule', bundle.rules);
  check('SpamTag', bundle.tags);
  check('SpamDnsblServer', bundle.dnsblServers);
  check('HttpLookup', bundle.httpLookups);
  check('SpamFileExtension', bundle.fileExtensions);
  return out;
}

export interface ParseBundleOptions {
  /** Report invalid objects in `problems` instead of throwing (what `spamrule lint` does). */
  lenient?: boolean;
}

/**
 * Interprets parsed JSON as a rule bundle. Accepts: an array of SpamRule objects; an object with
 * any of the keys `SpamRule`, `SpamTag`, `MemoryLookupKey`, `MemoryLookupKeyValue`,
 * `SpamDnsblServer`, `HttpLookup`, `SpamFileExtension` (Stalwart's export shape); or
 * `{ "rules": [...] }`. Every SpamRule, SpamTag, SpamDnsblServer, HttpLookup and
 * SpamFileExtension is checked against the schema JMAP `/set` uses (src/engine/schema.ts); objects
 * are kept as given. Throws `TypeError` for anything else, and {@link RuleBundleError} (a
 * TypeError) listing the invalid objects unless `opts.lenient`.
 */
export function parseRuleBundle(json: unknown, source = 'input', opts: ParseBundleOptions = {}): RuleBundle {
  const { bundle, entryProblems } = readBundle(json, source);
  // The static list entries were checked as they were read (they are not kept as given, as the others are).
  const problems = [...validateBundle(bundle), ...entryProblems];
  if (problems.length > 0 && !opts.lenient) throw new RuleBundleError(source, problems);
  if (opts.lenient) bundle.problems = problems;
  return bundle;
}

/** The bundle `json` holds, and the problems of its static list entries, which are left out of its lists. */
function readBundle(json: unknown, source: string): { bundle: RuleBundle; entryProblems: BundleProblem[] } {
  const bundle: RuleBundle = { rules: [], tags: [], lists: new Map(), dnsblServers: [], httpLookups: [], fileExtensions: [] };
  const entryProblems: BundleProblem[] = [];
  if (Array.isArray(json)) {
    bundle.rules = json as SpamRuleInput[];
    return { bundle, entryProblems };
  }
  if (json === null || typeof json !== 'object') throw new TypeError(`${source}: expected a JSON array of SpamRules or a bundle object`);
  const o = json as Record<string, unknown>;
  const list = (k: string): unknown[] => {
    const v = o[k];
    if (v === undefined) return [];
    if (!Array.isArray(v)) throw new TypeError(`${source}: "${k}" must be an array`);
    return v;
  };
  bundle.rules = [...list('SpamRule'), ...list('rules')] as SpamRuleInput[];
  bundle.tags = list('SpamTag') as SpamTagInput[];
  bundle.dnsblServers = list('SpamDnsblServer') as DnsblServerInput[];
  bundle.httpLookups = list('HttpLookup') as HttpLookupInput[];
  bundle.fileExtensions = list('SpamFileExtension') as FileExtensionInput[];
  for (const type of ['MemoryLookupKey', 'MemoryLookupKeyValue'] as const) {
    list(type).forEach((k, index) => {
      const problem = memoryEntryProblem(type, k);
      if (problem !== undefined) {
        const name = (k as { namespace?: unknown } | null)?.namespace;
        entryProblems.push({ type, index, ...(typeof name === 'string' ? { name } : {}), ...problem });
        return;
      }
      const e = k as { namespace: string; key: string; value?: string; isGlobPattern?: boolean | null };
      addEntry(bundle.lists, e.namespace, { key: e.key, ...(type === 'MemoryLookupKeyValue' ? { value: e.value! } : {}), isGlobPattern: e.isGlobPattern ?? false });
    });
  }
  if (
    bundle.rules.length === 0 && bundle.tags.length === 0 && bundle.lists.size === 0 && bundle.dnsblServers.length === 0 &&
    bundle.httpLookups.length === 0 && bundle.fileExtensions.length === 0 && entryProblems.length === 0
  )
    throw new TypeError(`${source}: no SpamRule, SpamTag, MemoryLookupKey, SpamDnsblServer, HttpLookup or SpamFileExtension objects found`);
  return { bundle, entryProblems };
}

/**
 * What is wrong with a `MemoryLookupKey` (`{namespace, key, isGlobPattern?}`) or `MemoryLookupKeyValue`
 * (also `value`) entry, as the path and message of a {@link BundleProblem}; undefined when nothing is.
 * They were taken unchecked: `null` failed as "Cannot read properties of null", and an entry without a
 * namespace went into a list named `undefined`.
 */
function memoryEntryProblem(type: MemoryEntryType, k: unknown): { path: string; message: string } | undefined {
  if (k === null || typeof k !== 'object' || Array.isArray(k)) return { path: '', message: 'expected an object' };
  const o = k as Record<string, unknown>;
  if (typeof o.namespace !== 'string' || o.namespace === '') return { path: 'namespace', message: 'expected a non-empty string' };
  if (typeof o.key !== 'string') return { path: 'key', message: 'expected a string' };
  if (type === 'MemoryLookupKeyValue' && typeof o.value !== 'string') return { path: 'value', message: 'expected a string' };
  if (o.isGlobPattern !== undefined && o.isGlobPattern !== null && typeof o.isGlobPattern !== 'boolean') return { path: 'isGlobPattern', message: 'expected true or false' };
  return undefined;
}

function addEntry(lists: Map<string, StaticEntry[]>, ns: string, e: StaticEntry): void {
  let l = lists.get(ns);
  if (l === undefined) lists.set(ns, (l = []));
  l.push(e);
}

/**
 * Reads and parses a rule file (JSON), see {@link parseRuleBundle}. Throws with the file name on
 * I/O or JSON errors, and {@link RuleBundleError} for objects that do not validate (unless
 * `opts.lenient`).
 */
export function loadRuleFile(path: string, opts: ParseBundleOptions = {}): RuleBundle {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read rules file ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = parseJsonText(text);
  } catch (e) {
    throw new Error(`rules file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  return parseRuleBundle(json, path, opts);
}

/**
 * Reads a score file: `scores.txt` (`TAG = number|reject|discard`) or JSON (an array of SpamTag
 * objects, or a bundle with `SpamTag`). Throws {@link RuleBundleError} for SpamTags that do not
 * validate (a score outside −999999..999999, an unknown `@type`, …), the `fs` error for a file that
 * cannot be read, a `SyntaxError` for JSON that does not parse, and `parseScoresTxt`'s `Error` (naming
 * the line) for a malformed text line.
 */
export function loadScoresFile(path: string): SpamTagInput[] {
  const text = readFileSync(path, 'utf8');
  const t = text.trimStart();
  if (t.startsWith('[') || t.startsWith('{')) {
    const json: unknown = parseJsonText(text);
    if (!Array.isArray(json)) return parseRuleBundle(json, path).tags;
    // The same SpamTag schema as a bundle's (and JMAP's).
    const bundle: RuleBundle = { rules: [], tags: json as SpamTagInput[], lists: new Map(), dnsblServers: [], httpLookups: [], fileExtensions: [] };
    const problems = validateBundle(bundle);
    if (problems.length > 0) throw new RuleBundleError(path, problems);
    return bundle.tags;
  }
  return parseScoresTxt(text);
}

/**
 * Parses a list file (`--list NS=FILE`, a `lists` namespace): one key per line, trimmed; blank lines and
 * `#` comments skipped; a key with `*`/`?` is a glob pattern (`StaticLookupList`). Never throws.
 */
export function parseListText(text: string): StaticEntry[] {
  const out: StaticEntry[] = [];
  for (const line of text.split(/\r?\n/)) {
    const k = line.trim();
    if (k === '' || k.startsWith('#')) continue;
    out.push({ key: k });
  }
  return out;
}
