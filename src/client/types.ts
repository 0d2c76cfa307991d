/**
 * Wire shapes of the JMAP management API as the client sees them (RFC 8620 §5.1/§5.3/§5.5 with the
 * x:SpamRule / x:StoreLookup objects of Stalwart's registry, docs/jmap.md).
 */

/** One method call or response: `[name, arguments, callId]` (RFC 8620 §3.2). */
export type Invocation = [string, Record<string, unknown>, string];

/** The RFC 8620 §2 Session resource, reduced to what the client uses. */
export interface JmapSession {
  apiUrl: string;
  username?: string;
  state?: string;
  capabilities: Record<string, Record<string, unknown>>;
  accounts?: Record<string, unknown>;
  primaryAccounts: Record<string, string>;
}

/** Scopes of a SpamRule: its `@type` (Stalwart's registry schema). */
export type SpamRuleScope = 'Any' | 'Url' | 'Domain' | 'Email' | 'Ip' | 'Header' | 'Body';
export const SPAM_RULE_SCOPES: readonly SpamRuleScope[] = ['Any', 'Url', 'Domain', 'Email', 'Ip', 'Header', 'Body'];

export interface ExpressionMatch {
  if: string;
  then: string;
}

/** `condition` of a SpamRule. On input `match` may also be Stalwart's index-keyed object `{"0": {...}}`. */
export interface Expression {
  match?: ExpressionMatch[] | Record<string, ExpressionMatch>;
  else: string;
}

/** x:SpamRule as read back (`match` always an array). */
export interface SpamRule {
  id: string;
  '@type': SpamRuleScope;
  name: string;
  description: string | null;
  enable: boolean;
  priority: number;
  condition: { match: ExpressionMatch[]; else: string };
}

/** x:StoreLookup as read back; `store` is a variant keyed by `@type` (PostgreSql, Sqlite, Redis, …). */
export interface StoreLookup {
  id: string;
  namespace: string;
  store: { '@type': string; [property: string]: unknown };
}

/** A SetError (RFC 8620 §5.3): `properties` holds JSON-pointer paths such as `condition/match/0/if`. */
export interface SetError {
  type: string;
  description?: string;
  properties?: string[];
  existingId?: string;
  [extra: string]: unknown;
}

/** `/get` response (RFC 8620 §5.1). */
export interface GetResponse<T> {
  accountId: string;
  state: string;
  list: T[];
  notFound: string[];
}

/** `/query` response (RFC 8620 §5.5). */
export interface QueryResponse {
  accountId: string;
  queryState: string;
  canCalculateChanges: boolean;
  position: number;
  ids: string[];
  total?: number;
  limit?: number;
}

/** `/set` response (RFC 8620 §5.3). */
export interface SetResponse<T> {
  accountId: string;
  oldState: string | null;
  newState: string;
  created: Record<string, Partial<T> & { id: string }> | null;
  updated: Record<string, Partial<T> | null> | null;
  destroyed: string[] | null;
  notCreated: Record<string, SetError> | null;
  notUpdated: Record<string, SetError> | null;
  notDestroyed: Record<string, SetError> | null;
}

/** `/set` arguments: creation id → object, id → PatchObject, ids to destroy. */
export interface SetRequest {
  create?: Record<string, Record<string, unknown>>;
  update?: Record<string, Record<string, unknown>>;
  destroy?: string[];
  ifInState?: string;
}

/** RFC 8620 §5.5 FilterCondition or FilterOperator. */
export type Filter = Record<string, unknown> | { operator: 'AND' | 'OR' | 'NOT'; conditions: Filter[] };

export interface QueryOptions {
  filter?: Filter;
  sort?: { property: string; isAscending?: boolean }[];
  position?: number;
  limit?: number;
  calculateTotal?: boolean;
}
