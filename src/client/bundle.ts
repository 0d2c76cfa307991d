/**
 * Stalwart's published spam-filter bundle (`spam-filter-rules.json`: keys `SpamRule`, `SpamTag`,
 * `MemoryLookupKey`, `HttpLookup`, …): reading it, normalising its SpamRules for x:SpamRule/set, and
 * writing the parts the server does not manage over JMAP (SpamTag scores, MemoryLookupKey lists)
 * to files the engine loads (`--scores FILE`, `--list NS=FILE`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseJsonText } from '../util/index.js';
import { validateRegistryObject, type RegistryType } from '../engine/schema.js';
import type { SpamRule } from './types.js';

/** A SpamRule ready for `/set` create: Stalwart defaults applied, `match` as an array. */
export type RuleInput = Omit<SpamRule, 'id'>;

export interface StalwartBundle {
  rules: RuleInput[];
  /** SpamTag objects as published (`{"@type": "Score", tag, score}` / `Reject` / `Discard`). */
  tags: Record<string, unknown>[];
  /** MemoryLookupKey objects: `{namespace, key, isGlobPattern}`. */
  memoryKeys: { namespace: string; key: string; isGlobPattern?: boolean }[];
  /** SpamDnsblServer, HttpLookup and SpamFileExtension objects as published (validated). */
  dnsblServers: Record<string, unknown>[];
  httpLookups: Record<string, unknown>[];
  fileExtensions: Record<string, unknown>[];
  /** Other top-level keys and their sizes: not imported. */
  other: Record<string, number>;
}

/**
 * Stalwart's index-keyed list (`{"0": {...}, "1": {...}}`, Stalwart's registry schema) or an array →
 * an array in index order.
 */
export function listFromWire<T>(v: T[] | Record<string, T> | undefined | null): T[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v;
  return Object.keys(v)
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => v[k]!);
}

/**
 * One SpamRule of the bundle checked against the schema the server applies (src/engine/schema.ts),
 * with Stalwart's defaults (`enable` true, `priority` 500, `description` null, `@type` Any) and its
 * name normalised as the server will store it. Throws `Error` naming each invalid property.
 */
export function normalizeRule(raw: Record<string, unknown>, where = 'rule'): RuleInput {
  const r = validateRegistryObject('SpamRule', { '@type': 'Any', ...raw });
  if (!r.ok) {
    const name = typeof raw.name === 'string' ? ` (${raw.name})` : '';
    throw new Error(`${where}${name}: ${r.problems.map((p) => (p.path === '' ? p.message : `${p.path}: ${p.message}`)).join('; ')}`);
  }
  return r.value as RuleInput;
}

/** Objects of one type, validated against the server's schema. Throws `Error` naming the first invalid ones. */
function validated(type: RegistryType, list: Record<string, unknown>[], file: string): Record<string, unknown>[] {
  const errors: string[] = [];
  list.forEach((o, i) => {
    const r = validateRegistryObject(type, o);
    if (!r.ok) errors.push(`${type}[${i}]: ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
  });
  if (errors.length > 0) throw new Error(`${file}: ${errors.slice(0, 10).join('; ')}`);
  return list;
}

/**
 * Parses a bundle. Accepts the published object form or a bare array of SpamRules. Throws `Error`
 * naming the file when it is not JSON or has neither shape.
 */
export function parseStalwartBundle(json: unknown, file = 'bundle'): StalwartBundle {
  if (Array.isArray(json)) json = { SpamRule: json };
  if (json === null || typeof json !== 'object') throw new Error(`${file}: expected a JSON object with a "SpamRule" list`);
  const o = json as Record<string, unknown>;
  const arr = (k: string): Record<string, unknown>[] => {
    const v = o[k];
    if (v === undefined) return [];
    if (!Array.isArray(v)) throw new Error(`${file}: "${k}" must be an array`);
    return v as Record<string, unknown>[];
  };
  const rules = arr('SpamRule').map((r, i) => normalizeRule(r, `${file}: SpamRule[${i}]`));
  const memoryKeys = arr('MemoryLookupKey').map((k, i) => {
    if (typeof k.namespace !== 'string' || typeof k.key !== 'string') throw new Error(`${file}: MemoryLookupKey[${i}] needs string "namespace" and "key"`);
    return { namespace: k.namespace, key: k.key, isGlobPattern: k.isGlobPattern === true };
  });
  const other: Record<string, number> = {};
  const known = ['SpamRule', 'SpamTag', 'MemoryLookupKey', 'SpamDnsblServer', 'HttpLookup', 'SpamFileExtension'];
  for (const [k, v] of Object.entries(o)) if (!known.includes(k)) other[k] = Array.isArray(v) ? v.length : 1;
  return {
    rules,
    tags: validated('SpamTag', arr('SpamTag'), file),
    memoryKeys,
    dnsblServers: validated('SpamDnsblServer', arr('SpamDnsblServer'), file),
    httpLookups: validated('HttpLookup', arr('HttpLookup'), file),
    fileExtensions: validated('SpamFileExtension', arr('SpamFileExtension'), file),
    other,
  };
}

/** Reads and parses a bundle file. Throws `Error` with the file name on I/O or JSON errors. */
export function readStalwartBundle(path: string): StalwartBundle {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = parseJsonText(text);
  } catch (e) {
    throw new Error(`${path} is not valid JSON: ${(e as Error).message}`);
  }
  return parseStalwartBundle(json, path);
}

/**
 * Writes the SpamTags as a JSON array, the form `spamrule classify|lint --scores FILE` reads
 * (`loadScoresFile`). Returns the number written.
 */
export function writeTagsFile(path: string, tags: Record<string, unknown>[]): number {
  writeFileSync(path, JSON.stringify(tags, null, 2) + '\n');
  return tags.length;
}

/**
 * True when a key cannot be written to a list file with its meaning kept: `parseListText` treats a
 * line starting with `#` as a comment and an unescaped `*`/`?` as a glob, and `StaticLookupList`
 * does not unescape exact keys. None of the published keys is affected.
 */
export function isUnrepresentableKey(key: string, isGlobPattern: boolean): boolean {
  return key.trim() !== key || key === '' || key.startsWith('#') || /[\r\n]/u.test(key) || (!isGlobPattern && /[*?]/u.test(key));
}

/**
 * Writes one `NAMESPACE.txt` per MemoryLookupKey namespace into `dir` (created if missing), keys in
 * bundle order, for `--list NAMESPACE=DIR/NAMESPACE.txt`. Returns namespace → key count and the
 * keys left out because a list file cannot express them ({@link isUnrepresentableKey}). Throws
 * `Error` for a namespace that is not a safe file name.
 */
export function writeListsDir(dir: string, keys: StalwartBundle['memoryKeys']): { counts: Record<string, number>; skipped: StalwartBundle['memoryKeys'] } {
  const byNs = new Map<string, string[]>();
  const skipped: StalwartBundle['memoryKeys'] = [];
  for (const k of keys) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/u.test(k.namespace)) throw new Error(`MemoryLookupKey namespace "${k.namespace}" is not a safe file name`);
    if (isUnrepresentableKey(k.key, k.isGlobPattern === true)) {
      skipped.push(k);
      continue;
    }
    let lines = byNs.get(k.namespace);
    if (!lines) byNs.set(k.namespace, (lines = []));
    lines.push(k.key);
  }
  mkdirSync(dir, { recursive: true });
  const counts: Record<string, number> = {};
  for (const [ns, lines] of byNs) {
    writeFileSync(join(dir, `${ns}.txt`), lines.join('\n') + '\n');
    counts[ns] = lines.length;
  }
  return { counts, skipped };
}
