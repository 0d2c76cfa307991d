/**
 * JMAP error shapes (RFC 8620 §3.6, §5.3) as docs/jmap.md fixes them for this facade.
 */

/** RFC 8620 §5.3 SetError. `properties` holds JSON-pointer paths (`store/port`, `condition/match/0/if`). */
export interface SetError {
  type:
    | 'invalidProperties'
    | 'notFound'
    | 'forbidden'
    | 'invalidPatch'
    | 'tooLarge'
    | 'willDestroy'
    | 'alreadyExists'
    | 'blobNotFound';
  description?: string;
  properties?: string[];
  /** For `alreadyExists`: the id of the object holding the unique value (RFC 8620 §5.4 wording). */
  existingId?: string;
  /** For `blobNotFound`: the blob ids that do not exist (RFC 8621 §4.8 wording). */
  notFound?: string[];
}

/** Thrown inside a method to produce `["error", {type, description}, callId]` (RFC 8620 §3.6.2). */
export class MethodError extends Error {
  constructor(
    readonly type:
      | 'unknownMethod'
      | 'invalidArguments'
      | 'invalidResultReference'
      | 'forbidden'
      | 'stateMismatch'
      | 'requestTooLarge'
      | 'accountNotFound'
      | 'unsupportedFilter'
      | 'unsupportedSort'
      | 'anchorNotFound'
      | 'cannotCalculateChanges'
      | 'tooManyChanges'
      | 'serverFail',
    description?: string,
  ) {
    super(description ?? type);
  }

  toJSON(): { type: string; description: string } {
    // Descriptions quote the client's input (a path, a name): a 200 KB path must not come back whole.
    const d = this.message;
    return { type: this.type, description: d.length > MAX_DESCRIPTION ? `${d.slice(0, MAX_DESCRIPTION)}… (${d.length} characters)` : d };
  }
}

/** Longest method-error description sent, in UTF-16 code units. */
const MAX_DESCRIPTION = 1_000;

/** Thrown while validating an object: becomes one SetError for that create/update. */
export class SetErrorException extends Error {
  constructor(readonly error: SetError) {
    super(error.description ?? error.type);
  }
}

/** Request-level problem types (RFC 8620 §3.6.1), sent as RFC 7807 `application/problem+json`. */
export type RequestErrorType = 'notJSON' | 'notRequest' | 'limit' | 'unknownCapability';

export class RequestError extends Error {
  constructor(
    readonly type: RequestErrorType,
    readonly status: number,
    detail: string,
    readonly limit?: string,
  ) {
    super(detail);
  }

  /** The problem JSON body: `{type: urn:ietf:params:jmap:error:<t>, status, detail, limit?}`. */
  toProblem(): Record<string, unknown> {
    const body: Record<string, unknown> = { type: `urn:ietf:params:jmap:error:${this.type}`, status: this.status, detail: this.message };
    if (this.limit !== undefined) body.limit = this.limit;
    return body;
  }
}

/** An HTTP-level refusal with an RFC 7807 body (built with {@link problem}) and extra headers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(String(body.detail ?? body.title));
  }
}

/** An `about:blank` problem JSON body (RFC 7807 §4.2). */
export function problem(status: number, title: string, detail: string): Record<string, unknown> {
  return { type: 'about:blank', status, title, detail };
}

export function invalidProperties(problems: { path: string; message: string }[]): SetErrorException {
  return new SetErrorException({
    type: 'invalidProperties',
    description: problems.map((p) => (p.path === '' ? p.message : `${p.path}: ${p.message}`)).join('; '),
    properties: [...new Set(problems.map((p) => p.path))],
  });
}
