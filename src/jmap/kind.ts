/**
 * The shape every managed JMAP object type implements (objects.ts: SpamRule, StoreLookup;
 * registry-kinds.ts: the other four). Kept apart so that neither file imports the other's module.
 */
import type { Problem } from './schema.js';

/** The four registry object types beside SpamRule and StoreLookup (registry-kinds.ts). */
export type RegistryObjectType = 'SpamTag' | 'SpamDnsblServer' | 'HttpLookup' | 'SpamFileExtension';
export type ObjectType = 'SpamRule' | 'StoreLookup' | RegistryObjectType;
export type Data = Record<string, unknown>;

/** Compiles a condition for a scope: `[]` or problems with paths `condition/match/0/if`. */
export type ConditionValidator = (scope: string, condition: { match: { if: string; then: string }[]; else: string }) => Problem[];


/** The server-side compilers/validators an object passes before it is stored. */
export interface Validators {
  condition: ConditionValidator;
}

/** Largest stored object, in bytes of JSON (Stalwart's registry limit, Stalwart's registry schema). */
export const MAX_OBJECT_BYTES = 200_000;

export interface ObjectKind {
  readonly type: ObjectType;
  /** Permission prefix (`sysSpamRule`, `sysStoreLookup`), Stalwart's registry schema. */
  readonly permissionPrefix: string;
  /** Every property `/get` can return, `id` included. */
  readonly properties: readonly string[];
  /** The property that must be unique among objects of this type. */
  readonly uniqueProperty: string;
  /**
   * Other types whose objects must not share that value (a lookup namespace is served by one
   * StoreLookup or one HttpLookup, never both, as in Stalwart).
   */
  readonly alsoUniqueIn?: readonly { type: ObjectType; property: string }[];
  /** Validates a create; returns the stored data (without `id`). Throws SetErrorException. */
  create(input: unknown, id: string, validate: Validators): Data;
  /** Applies a PatchObject to stored data and validates the result. Throws SetErrorException. */
  update(old: Data, patch: unknown, id: string, validate: Validators): Data;
  /** The `/get` shape (secrets removed). */
  toWire(id: string, data: Data): Data;
  /** Properties echoed in `created` beside `id`: the ones the server set or changed (RFC 8620 §5.3). */
  createdEcho(input: Data, data: Data): Data;
  /** Tests one FilterCondition (RFC 8620 §5.5); throws MethodError(unsupportedFilter). */
  matches(condition: Record<string, unknown>, id: string, data: Data): boolean;
  /** FilterCondition properties (all take strings). */
  readonly filterProperties: readonly string[];
  /** Sort keys by `property`; unknown → unsupportedSort. */
  readonly sortKeys: Record<string, (id: string, data: Data) => string | number>;
}
