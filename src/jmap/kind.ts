/**
 * The shape every managed JMAP object type implements (objects.ts: SpamRule, StoreLookup;
 * registry-kinds.ts: the other four). Kept apart so that neither file imports the other's module.
 */
import type { Problem } from './schema.js';

/** The four registry object types beside SpamRule and StoreLookup (registry-kinds.ts). */
export type RegistryObjectType = 'SpamTag' | 'SpamDnsblServer' | 'HttpLookup' | 'SpamFileExtension';
export type ObjectType = 'SpamRule' | 'StoreLookup' | RegistryObjectType | 'SpamTrainingSample';
export type Data = Record<string, unknown>;

/** Compiles a condition for a scope: `[]` or problems with paths `condition/match/0/if`. */
export type ConditionValidator = (scope: string, condition: { match: { if: string; then: string }[]; else: string }) => Problem[];


/** The server-side compilers/validators an object passes before it is stored. */
export interface Validators {
  condition: ConditionValidator;
  /** Compiles a `SpamDnsblServer` `tag` expression; problems with paths under `tag/`. */
  dnsblTag?: (tag: unknown) => Problem[];
  /**
   * The server's policy for a StoreLookup's validated `store` (src/lookup/store-policy.ts): the store to
   * keep (a `Sqlite` path made absolute) or problems with paths relative to the store (`authSecret`,
   * `path`). Absent: any store is kept as validated.
   */
  storePolicy?: (store: Data) => { ok: true; store: Data } | { ok: false; problems: Problem[] };
}

/** Where `x:SpamTrainingSample` messages go: the classifier's store (src/classifier), adapted by the server's owner. */
export interface TrainingSampleSink {
  /** Stores a message as a sample; resolves with its id once it is durable. Rejects when the store fails. */
  add(raw: Uint8Array, spam: boolean, opts: { account?: number; deleteAfterUse?: boolean }): Promise<number>;
  /** Forgets a sample (nothing happens when it is already gone). */
  remove(id: number): Promise<void>;
}

/** What a kind's asynchronous hooks may use (the method context carries it). */
export interface KindHookContext {
  /** Uploaded blobs (RFC 8620 §6.1). */
  blobs?: { get(blobId: string): { data: Buffer } | undefined };
  samples?: TrainingSampleSink;
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
  /**
   * Asynchronous work before a create's transaction (storing a training sample's message); its
   * result is what `create` receives. Throws SetErrorException (that create fails) or MethodError.
   */
  prepareCreate?(input: unknown, ctx: KindHookContext): Promise<Data>;
  /** Undoes a prepared create that was not stored (the transaction refused it or failed). */
  discardCreate?(prepared: Data, ctx: KindHookContext): Promise<void>;
  /** Runs after a destroy was committed, with the destroyed object's data. */
  afterDestroy?(data: Data, ctx: KindHookContext): Promise<void>;
}
