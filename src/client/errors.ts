/**
 * Client-side errors for the three failure levels of RFC 8620: request-level problem JSON (§3.6.1,
 * RFC 7807), method errors (§3.6.2) and per-object SetErrors (§5.3). Each message is meant to be shown
 * to a person as is.
 */
import type { SetError } from './types.js';

/** Base class so callers can catch every client failure at once. */
export class JmapError extends Error {
  override name = 'JmapError';
}

/**
 * The server refused the HTTP request: network failure, non-2xx status, or a problem JSON body
 * (`type` such as `urn:ietf:params:jmap:error:limit`, `status`, `detail`, optional `limit`).
 */
export class JmapRequestError extends JmapError {
  override name = 'JmapRequestError';
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly problem?: Record<string, unknown>,
  ) {
    super(message);
  }

  /** Short problem type (`notJSON`, `limit`, …) when the body was RFC 8620 problem JSON. */
  get type(): string | undefined {
    const t = this.problem?.type;
    return typeof t === 'string' ? t.replace(/^urn:ietf:params:jmap:error:/u, '') : undefined;
  }
}

/** `["error", {type, description}, callId]` for one method call. */
export class JmapMethodError extends JmapError {
  override name = 'JmapMethodError';
  constructor(
    readonly method: string,
    readonly type: string,
    readonly description?: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(`${method} failed: ${type}${description ? `: ${description}` : ''}`);
  }
}

/**
 * One line for a SetError: `type (properties: a, b): description`, plus `existingId` for
 * `alreadyExists`. `what` names the object (`rule FOO`, `create r3`).
 */
export function formatSetError(what: string, err: SetError): string {
  let s = `${what}: ${err.type}`;
  if (err.properties && err.properties.length > 0) s += ` [${err.properties.join(', ')}]`;
  if (err.description) s += `: ${err.description}`;
  // The server's description may name the id already ("already used by ID"): then it is not repeated.
  if (err.existingId && !(err.description ?? '').includes(err.existingId)) s += ` (existing id ${err.existingId})`;
  return s;
}

/** One or more objects of a `/set` were refused; `errors` maps the creation id or id to its SetError. */
export class JmapSetError extends JmapError {
  override name = 'JmapSetError';
  constructor(
    readonly method: string,
    readonly errors: Record<string, SetError>,
    label: (key: string) => string = (k) => k,
  ) {
    super(Object.entries(errors).map(([k, e]) => formatSetError(label(k), e)).join('\n'));
  }
}
