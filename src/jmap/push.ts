/**
 * Push over EventSource (RFC 8620 §7.3): `GET /jmap/eventsource/?types={types}&closeafter={closeafter}&ping={ping}`
 * answers `text/event-stream` with a `state` event (a StateChange object) each time the state of a
 * subscribed type changes, and `ping` events when asked. docs/jmap.md "Push (EventSource)".
 *
 * Changes are observed in one place: {@link publishChanges} wraps the object repository, so every
 * committed transaction (`/set`, the expiry of training samples, anything else writing through the
 * repository) and every change another server committed (PostgreSQL NOTIFY) reaches the
 * {@link ChangeFeed}, which the open streams subscribe to.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Permission } from './auth.js';
import { HttpError, problem } from './errors.js';
import { stateString } from './methods.js';
import { KINDS, OBJECT_TYPES, type ObjectType } from './objects.js';
import type { ObjectRepository } from './repo.js';

export interface PushOptions {
  /** Most event streams open at once on this server; beyond it a request gets 503 (default 64). */
  maxConnections?: number;
  /**
   * Most event streams open at once with one token (default 8); beyond it a request gets 429
   * (503 first when the server has `maxConnections` open). Any token that may read one type (a `sys…Get` permission) may open a
   * stream, so without it one such token could hold every stream of the server.
   */
  maxConnectionsPerToken?: number;
  /**
   * Bounds of the ping interval in seconds (defaults 30 and 300): a requested interval outside them
   * is clamped, and the `ping` events carry the interval used. RFC 8620 §7.3 forbids a minimum above
   * 30 and a maximum below 300, so `minPing` is 1..30 and `maxPing` at least 300.
   */
  minPing?: number;
  maxPing?: number;
}

export const DEFAULT_PUSH: Required<PushOptions> = { maxConnections: 64, maxConnectionsPerToken: 8, minPing: 30, maxPing: 300 };

/** Bytes a stream may have waiting for a client that does not read before it is cut off. */
const MAX_BUFFERED = 256 * 1024;

/** Checks and completes the options; throws `RangeError` naming a bad one. */
export function resolvePushOptions(opts: PushOptions = {}): Required<PushOptions> {
  const o = { ...DEFAULT_PUSH, ...opts };
  const int = (name: string, v: number, min: number, max: number): void => {
    if (!Number.isInteger(v) || v < min || v > max) throw new RangeError(`push.${name} must be an integer from ${min} to ${max}, not ${v}`);
  };
  int('maxConnections', o.maxConnections, 1, 1_000_000);
  int('maxConnectionsPerToken', o.maxConnectionsPerToken, 1, 1_000_000);
  int('minPing', o.minPing, 1, 30);
  int('maxPing', o.maxPing, 300, 86_400);
  return o;
}

/** The type name of method calls, `types` and StateChange objects: `x:SpamRule`, … */
export const pushTypeName = (t: ObjectType): string => `x:${t}`;
const BY_NAME = new Map(OBJECT_TYPES.map((t) => [pushTypeName(t), t]));

type Listener = (type: ObjectType, state: number) => void;

/**
 * The state of every type as last announced, and who wants to hear of the next change. States
 * only move forward: a change announced twice (a commit seen again through NOTIFY) or late (a
 * slower PostgreSQL commit finishing after a newer one) is not announced again.
 */
export class ChangeFeed {
  private readonly states = new Map<ObjectType, number>();
  private readonly listeners = new Set<Listener>();

  constructor(initial: (type: ObjectType) => number) {
    for (const t of OBJECT_TYPES) this.states.set(t, initial(t));
  }

  state(type: ObjectType): number {
    return this.states.get(type) ?? 0;
  }

  /** Announces that `type` is now at `state` (nothing when it was there already). */
  publish(type: ObjectType, state: number): void {
    if (state <= this.state(type)) return;
    this.states.set(type, state);
    for (const l of [...this.listeners]) {
      try {
        l(type, state);
      } catch {
        // A listener's failure is its stream's business, not the writer's.
      }
    }
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => void this.listeners.delete(l);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }
}

/**
 * The repository, announcing to `feed` the new state of a type after every transaction that
 * committed a change and after every change loaded from another server.
 */
export function publishChanges(inner: ObjectRepository, feed: ChangeFeed): ObjectRepository {
  inner.onExternalChange((t) => feed.publish(t, inner.snapshot(t).state));
  return {
    snapshot: (type) => inner.snapshot(type),
    async transact(type, fn, reads) {
      const result = await inner.transact(type, fn, reads);
      feed.publish(type, inner.snapshot(type).state);
      return result;
    },
    onExternalChange: (cb) => inner.onExternalChange(cb),
    changesSince: (type, since, until) => inner.changesSince(type, since, until),
    close: () => inner.close(),
  };
}

export interface EventSourceParams {
  /** Requested types, in the order given (every type for `*`). */
  types: ObjectType[];
  closeAfterState: boolean;
  /** Seconds between pings after clamping; 0 = no pings. */
  ping: number;
}

const badRequest = (detail: string): HttpError => new HttpError(400, problem(400, 'Bad Request', detail));

/**
 * Parses the query of an event source request. All three variables of the URL template are
 * required, once each; other parameters are ignored. Throws HttpError 400.
 */
export function parseEventSourceParams(query: URLSearchParams, bounds: { minPing: number; maxPing: number } = DEFAULT_PUSH): EventSourceParams {
  const one = (name: string): string => {
    const all = query.getAll(name);
    if (all.length === 0) throw badRequest(`the "${name}" parameter is required (RFC 8620 §7.3)`);
    if (all.length > 1) throw badRequest(`the "${name}" parameter is given more than once`);
    return all[0]!;
  };
  const rawTypes = one('types');
  let types: ObjectType[];
  if (rawTypes.trim() === '*') types = [...OBJECT_TYPES];
  else {
    types = [];
    for (const item of rawTypes.split(',').map((s) => s.trim())) {
      const t = BY_NAME.get(item);
      if (t === undefined)
        throw badRequest(
          item === '' ? '"types" has an empty item: give type names separated by commas, or *' : `unknown type "${item.slice(0, 100)}" in "types" (known: ${[...BY_NAME.keys()].join(', ')}, or *)`,
        );
      if (!types.includes(t)) types.push(t);
    }
  }
  const closeafter = one('closeafter');
  if (closeafter !== 'state' && closeafter !== 'no') throw badRequest(`"closeafter" must be "state" or "no", not "${closeafter.slice(0, 100)}"`);
  const rawPing = one('ping');
  if (!/^[0-9]+$/.test(rawPing)) throw badRequest(`"ping" must be a number of seconds (0 = no pings), not "${rawPing.slice(0, 100)}"`);
  const asked = Number(rawPing);
  const ping = asked === 0 ? 0 : Math.min(Math.max(asked, bounds.minPing), bounds.maxPing);
  return { types, closeAfterState: closeafter === 'state', ping };
}

/** An event id: the state of each subscribed type once the event is sent (`x:SpamRule=s4,x:SpamTag=s0`). */
function eventId(types: Iterable<ObjectType>, feed: ChangeFeed): string {
  return [...types].map((t) => `${pushTypeName(t)}=${stateString(feed.state(t))}`).join(',');
}

/** The states a `Last-Event-ID` names; undefined when it is not one of our ids. */
function parseEventId(id: string): Map<ObjectType, string> | undefined {
  const out = new Map<ObjectType, string>();
  for (const part of id.split(',')) {
    const eq = part.lastIndexOf('=');
    const t = BY_NAME.get(part.slice(0, eq));
    const state = part.slice(eq + 1);
    if (eq < 0 || t === undefined || !/^s[0-9]{1,15}$/.test(state)) return undefined;
    out.set(t, state);
  }
  return out;
}

interface OpenStream {
  /** Ends the response; resolves once it is finished or the connection gone (at most ~1 s). */
  end(): Promise<void>;
}

/** The open event streams of one server. */
export class EventSources {
  private readonly streams = new Set<OpenStream>();
  /** Open streams per token id. */
  private readonly perToken = new Map<number, number>();
  private closing = false;
  private readonly opts: Required<PushOptions>;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly accountId: string,
    opts: PushOptions = {},
  ) {
    this.opts = resolvePushOptions(opts);
  }

  /** Event streams open now. */
  get size(): number {
    return this.streams.size;
  }

  /**
   * Answers an authenticated `GET` with an event stream, or throws HttpError: 400 for bad
   * parameters, 403 when the token may read none of the requested types, 429 beyond
   * `maxConnectionsPerToken` streams of token `tokenId`, 503 beyond `maxConnections` or while the
   * server closes. `stillAuthorized` is asked before each event is sent: a revoked token ends its
   * streams.
   */
  serve(req: IncomingMessage, res: ServerResponse, query: URLSearchParams, permissions: readonly Permission[], stillAuthorized: () => boolean, tokenId: number): void {
    const params = parseEventSourceParams(query, this.opts);
    const readable = OBJECT_TYPES.filter((t) => permissions.includes(`${KINDS[t].permissionPrefix}Get` as Permission));
    const types = new Set(params.types.filter((t) => readable.includes(t)));
    if (types.size === 0)
      throw new HttpError(
        403,
        problem(
          403,
          'Forbidden',
          readable.length === 0
            ? 'the token may read no object type (push needs the sys…Get permission of a type)'
            : `the token may read none of the requested types (it may read ${readable.map(pushTypeName).join(', ')})`,
        ),
      );
    if (this.closing) throw new HttpError(503, problem(503, 'Service Unavailable', 'the server is shutting down'), { 'retry-after': '5' });
    if (this.streams.size >= this.opts.maxConnections)
      throw new HttpError(
        503,
        {
          type: 'urn:ietf:params:jmap:error:limit',
          status: 503,
          detail: `more than ${this.opts.maxConnections} event streams open at once; try again later`,
          limit: 'maxEventSourceConnections',
        },
        { 'retry-after': '30' },
      );
    const mine = this.perToken.get(tokenId) ?? 0;
    if (mine >= this.opts.maxConnectionsPerToken)
      throw new HttpError(
        429,
        {
          type: 'urn:ietf:params:jmap:error:limit',
          status: 429,
          detail: `more than ${this.opts.maxConnectionsPerToken} event streams open at once with this token; close one first`,
          limit: 'maxEventSourceConnectionsPerToken',
        },
        { 'retry-after': '30' },
      );

    // What the client saw last, when it reconnects (WHATWG EventSource sends Last-Event-ID).
    const last = req.headers['last-event-id'];
    const since = typeof last === 'string' && last !== '' ? parseEventId(last) : undefined;

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    // A peer that vanished without a word is noticed by TCP even on a stream without pings.
    req.socket.setKeepAlive(true, 60_000);
    req.socket.setNoDelay(true);
    res.on('error', () => undefined);

    let timer: NodeJS.Timeout | undefined;
    let finished = false;
    const cleanup = (): void => {
      if (finished) return;
      finished = true;
      unsubscribe();
      clearTimeout(timer);
      this.streams.delete(stream);
      const left = (this.perToken.get(tokenId) ?? 1) - 1;
      if (left <= 0) this.perToken.delete(tokenId);
      else this.perToken.set(tokenId, left);
    };
    const end = (): void => {
      cleanup();
      if (!res.writableEnded) res.end();
    };
    /** Writes one event; false when the stream is over (ended, revoked, or the client stopped reading). */
    const send = (text: string): boolean => {
      if (finished || res.writableEnded || res.destroyed) return false;
      if (!stillAuthorized()) {
        end();
        return false;
      }
      res.write(text);
      if (res.writableLength > MAX_BUFFERED) {
        cleanup();
        res.destroy();
        return false;
      }
      // RFC 8620 §7.3: a ping is due when the interval elapses since the previous event.
      timer?.refresh();
      return true;
    };
    const sendState = (changed: Record<string, string>): void => {
      const data = JSON.stringify({ '@type': 'StateChange', changed: { [this.accountId]: changed } });
      if (send(`event: state\nid: ${eventId(types, this.feed)}\ndata: ${data}\n\n`) && params.closeAfterState) end();
    };

    const unsubscribe = this.feed.subscribe((type, state) => {
      if (types.has(type)) sendState({ [pushTypeName(type)]: stateString(state) });
    });
    const stream: OpenStream = {
      end: () =>
        new Promise<void>((resolve) => {
          if (finished && (res.writableFinished || res.destroyed)) return resolve();
          const t = setTimeout(resolve, 1000);
          t.unref();
          const done = (): void => {
            clearTimeout(t);
            resolve();
          };
          res.once('finish', done);
          res.once('close', done);
          end();
        }),
    };
    this.streams.add(stream);
    this.perToken.set(tokenId, mine + 1);
    res.on('close', cleanup);

    if (params.ping > 0) {
      const ping = `event: ping\ndata: ${JSON.stringify({ interval: params.ping })}\n\n`;
      timer = setTimeout(() => void send(ping), params.ping * 1000);
      timer.unref();
    }
    if (since !== undefined) {
      const changed: Record<string, string> = {};
      for (const t of types) {
        const seen = since.get(t);
        const now = stateString(this.feed.state(t));
        if (seen !== undefined && seen !== now) changed[pushTypeName(t)] = now;
      }
      if (Object.keys(changed).length > 0) sendState(changed);
    }
  }

  /** Ends every stream and refuses new ones. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.streams].map((s) => s.end()));
  }
}
