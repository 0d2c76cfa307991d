/**
 * The rest of a server's spam-filter configuration as managed objects beside `x:SpamRule` and
 * `x:StoreLookup`: `x:SpamTag` (scores and actions), `x:SpamDnsblServer` (DNS blocklists),
 * `x:HttpLookup` (remote lists) and `x:SpamFileExtension` (the mime module's table), so a
 * server's whole filter configuration lives in one registry. Validation is the shared schema of
 * src/engine/schema.ts (the one `lint` and `loadRuleFile` apply); properties and defaults are
 * Stalwart's. Permissions are named like the seed's (`sysSpamTagGet`, …, `sysSpamFileExtensionQuery`).
 */
import { validateRegistryObject, type RegistryType } from '../engine/schema.js';
import { invalidProperties, MethodError, SetErrorException } from './errors.js';
import { MAX_OBJECT_BYTES, type Data, type ObjectKind, type RegistryObjectType, type Validators } from './kind.js';
import { applyPatch } from './pointer.js';
import type { Problem } from './schema.js';
import { isObject } from '../util/index.js';

export type { RegistryObjectType } from './kind.js';

interface KindSpec {
  type: RegistryObjectType & RegistryType;
  permissionPrefix: string;
  properties: readonly string[];
  /** Unique among objects of the type; what lookups, scores or DNSBL results name. */
  uniqueProperty: string;
  /** Other types that must not use the same value (see ObjectKind.alsoUniqueIn). */
  alsoUniqueIn?: ObjectKind['alsoUniqueIn'];
  /** Text filters (case-insensitive substring), by filter name → property. */
  textFilters: Record<string, string>;
  /** Extra server-side checks after the schema (compiling expressions). */
  check?: (data: Data, validate: Validators) => Problem[];
}

function validate(spec: KindSpec, input: unknown, validators: Validators): Data {
  if (!isObject(input)) throw new SetErrorException({ type: 'invalidPatch', description: `a ${spec.type} must be a JSON object`, properties: [''] });
  const r = validateRegistryObject(spec.type, input);
  if (!r.ok) throw invalidProperties(r.problems);
  const data = r.value as Data;
  const more = spec.check?.(data, validators) ?? [];
  if (more.length > 0) throw invalidProperties(more);
  const bytes = Buffer.byteLength(JSON.stringify(data));
  if (bytes > MAX_OBJECT_BYTES)
    throw new SetErrorException({ type: 'tooLarge', description: `object is ${bytes} bytes, more than the maximum of ${MAX_OBJECT_BYTES}` });
  return data;
}

function registryKind(spec: KindSpec): ObjectKind {
  const filters = [...Object.keys(spec.textFilters), ...(spec.properties.includes('@type') ? ['type'] : [])];
  return {
    type: spec.type,
    permissionPrefix: spec.permissionPrefix,
    properties: ['id', ...spec.properties],
    uniqueProperty: spec.uniqueProperty,
    ...(spec.alsoUniqueIn ? { alsoUniqueIn: spec.alsoUniqueIn } : {}),
    create: (input, _id, v) => validate(spec, input, v),
    update(old, patch, _id, v) {
      if (!isObject(patch)) throw new SetErrorException({ type: 'invalidPatch', description: 'a PatchObject must be a JSON object', properties: [''] });
      return validate(spec, applyPatch(old, patch), v);
    },
    toWire: (id, data) => ({ id, ...data }),
    // Everything the server filled in (defaults) or changed (normalised values).
    createdEcho: (input, data) =>
      Object.fromEntries(Object.entries(data).filter(([k, x]) => !(k in input) || JSON.stringify(input[k]) !== JSON.stringify(x))),
    matches(cond, _id, data) {
      return Object.entries(cond).every(([k, v]) => {
        if (typeof v !== 'string') throw new MethodError('unsupportedFilter', `filter "${k}" needs a string`);
        if (k === 'type' && filters.includes('type')) return data['@type'] === v;
        const prop = spec.textFilters[k];
        if (prop === undefined) throw new MethodError('unsupportedFilter', `cannot filter x:${spec.type} on "${k}"`);
        return String(data[prop]).toLowerCase().includes(v.toLowerCase());
      });
    },
    filterProperties: filters,
    sortKeys: {
      id: (id) => id,
      [spec.uniqueProperty]: (_id, d) => String(d[spec.uniqueProperty]),
    },
  };
}

export const SpamTagKind = registryKind({
  type: 'SpamTag',
  permissionPrefix: 'sysSpamTag',
  properties: ['@type', 'tag', 'score'],
  uniqueProperty: 'tag',
  textFilters: { tag: 'tag' },
});

export const SpamDnsblServerKind = registryKind({
  type: 'SpamDnsblServer',
  permissionPrefix: 'sysSpamDnsblServer',
  properties: ['@type', 'name', 'enable', 'zone', 'tag'],
  uniqueProperty: 'name',
  textFilters: { name: 'name' },
  // The zone expression compiles for the server's scope, as a SpamRule condition does (the schema
  // already made `match` an array); the tag expression over the answer's Ip variables, as the DNSBL
  // module compiles it.
  check: (data, v) => [
    ...v.condition(data['@type'] as string, data.zone as { match: { if: string; then: string }[]; else: string }).map((p) => ({ path: p.path.replace(/^condition/, 'zone'), message: p.message })),
    ...(v.dnsblTag?.(data.tag) ?? []),
  ],
});

export const HttpLookupKind = registryKind({
  type: 'HttpLookup',
  permissionPrefix: 'sysHttpLookup',
  properties: ['namespace', 'url', 'format', 'enable', 'isGzipped', 'maxSize', 'maxEntries', 'maxEntrySize', 'refresh', 'retry', 'timeout'],
  uniqueProperty: 'namespace',
  alsoUniqueIn: [{ type: 'StoreLookup', property: 'namespace' }],
  textFilters: { namespace: 'namespace', url: 'url' },
});

export const SpamFileExtensionKind = registryKind({
  type: 'SpamFileExtension',
  permissionPrefix: 'sysSpamFileExtension',
  properties: ['extension', 'contentTypes', 'isArchive', 'isBad', 'isNz'],
  uniqueProperty: 'extension',
  textFilters: { extension: 'extension' },
});

export const REGISTRY_KINDS: Record<RegistryObjectType, ObjectKind> = {
  SpamTag: SpamTagKind,
  SpamDnsblServer: SpamDnsblServerKind,
  HttpLookup: HttpLookupKind,
  SpamFileExtension: SpamFileExtensionKind,
};
