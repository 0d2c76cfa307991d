/**
 * A small typed JMAP client (RFC 8620) for spamrule's management API: Session discovery with a
 * Bearer token, raw `call(methodCalls)`, and typed helpers for `x:SpamRule/*` and `x:StoreLookup/*`
 * (docs/jmap.md). Uses Node 20's global `fetch`.
 */
import { JmapMethodError, JmapRequestError } from './errors.js';
import type {
  GetResponse,
  Invocation,
  JmapSession,
  QueryOptions,
  QueryResponse,
  SetRequest,
  SetResponse,
  SpamRule,
  StoreLookup,
} from './types.js';

export const CORE_CAPABILITY = 'urn:ietf:params:jmap:core';
/** The management capability URN (docs/jmap.md); `spamrule serve --capability` may change it. */
export const MANAGEMENT_CAPABILITY = 'urn:stalwart:jmap';

export interface JmapClientOptions {
  /** Base URL of the server, e.g. `http://127.0.0.1:8080` (the Session is at `/.well-known/jmap`). */
  server: string;
  /** Bearer token (`spamrule token create`). */
  token: string;
  /** Management capability URN; default `urn:stalwart:jmap`. */
  capability?: string;
  /** Per-request timeout in milliseconds; default 30,000. */
  timeoutMs?: number;
}

/** The core limits of the Session (RFC 8620 §2), with RFC-sane fallbacks when not advertised. */
export interface CoreLimits {
  maxObjectsInGet: number;
  maxObjectsInSet: number;
  maxCallsInRequest: number;
}

/** Stalwart normalises SpamRule names on write: upper-cased, white space removed (Stalwart's registry schema). */
export function normalizeRuleName(name: string): string {
  return name.toUpperCase().replace(/\s+/gu, '');
}

export type ManagedType = 'SpamRule' | 'StoreLookup' | 'SpamTag' | 'SpamDnsblServer' | 'HttpLookup' | 'SpamFileExtension';

export class JmapClient {
  readonly server: string;
  private readonly token: string;
  readonly capability: string;
  private readonly timeoutMs: number;
  private sessionPromise: Promise<JmapSession> | undefined;

  /** Throws `TypeError` when `server` is not an http(s) URL or `token` is empty. */
  constructor(opts: JmapClientOptions) {
    let url: URL;
    try {
      url = new URL(opts.server);
    } catch {
      throw new TypeError(`server "${opts.server}" is not a URL (expected e.g. http://127.0.0.1:8080)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`server "${opts.server}" must be an http(s) URL`);
    if (!opts.token) throw new TypeError('a token is required (spamrule token create)');
    this.server = opts.server.replace(/\/+$/u, '');
    this.token = opts.token;
    this.capability = opts.capability ?? MANAGEMENT_CAPABILITY;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  private async http(url: string, init: { method: string; body?: string }): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(url, {
        method: init.method,
        headers: { authorization: `Bearer ${this.token}`, accept: 'application/json', ...(init.body ? { 'content-type': 'application/json' } : {}) },
        body: init.body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      // fetch hides the socket error in `cause` (ECONNREFUSED, ENOTFOUND…); show it.
      const cause = (e as { cause?: { message?: string } }).cause?.message;
      throw new JmapRequestError(`cannot reach ${url}: ${cause ?? (e as Error).message}`, undefined);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const problem = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
      const type = typeof problem?.type === 'string' && problem.type !== 'about:blank' ? ` ${problem.type.replace(/^urn:ietf:params:jmap:error:/u, '')}` : '';
      const detail = problem?.detail ?? problem?.title ?? (text.slice(0, 200) || res.statusText);
      const limit = typeof problem?.limit === 'string' ? ` (limit ${problem.limit})` : '';
      throw new JmapRequestError(`${url}: HTTP ${res.status}${type}: ${String(detail)}${limit}`, res.status, problem);
    }
    if (body === undefined) throw new JmapRequestError(`${url}: the response is not JSON`, res.status);
    return body;
  }

  /** The Session (fetched once, then cached). Throws {@link JmapRequestError}. */
  session(): Promise<JmapSession> {
    this.sessionPromise ??= (async () => {
      const s = (await this.http(`${this.server}/.well-known/jmap`, { method: 'GET' })) as JmapSession;
      if (typeof s?.apiUrl !== 'string' || typeof s.primaryAccounts !== 'object') throw new JmapRequestError(`${this.server}: the Session has no apiUrl/primaryAccounts`, 200);
      return s;
    })();
    this.sessionPromise.catch(() => (this.sessionPromise = undefined));
    return this.sessionPromise;
  }

  /** `primaryAccounts[capability]` of the Session (falls back to the only account). */
  async accountId(): Promise<string> {
    const s = await this.session();
    const id = s.primaryAccounts[this.capability] ?? Object.values(s.primaryAccounts)[0];
    if (id === undefined) throw new JmapRequestError(`${this.server}: the Session names no account for ${this.capability}`, 200);
    return id;
  }

  /** Core limits advertised by the Session. */
  async limits(): Promise<CoreLimits> {
    const core = (await this.session()).capabilities[CORE_CAPABILITY] ?? {};
    const n = (k: string, d: number) => (typeof core[k] === 'number' && (core[k] as number) > 0 ? (core[k] as number) : d);
    return { maxObjectsInGet: n('maxObjectsInGet', 500), maxObjectsInSet: n('maxObjectsInSet', 500), maxCallsInRequest: n('maxCallsInRequest', 16) };
  }

  /**
   * Sends one JMAP Request and returns its `methodResponses` (method errors included, as
   * `["error", …]`). `accountId` is filled in for calls that lack it. Throws {@link JmapRequestError}
   * for transport failures and request-level problems.
   */
  async call(methodCalls: Invocation[]): Promise<Invocation[]> {
    const session = await this.session();
    const accountId = await this.accountId();
    const calls = methodCalls.map(([n, a, id]): Invocation => [n, 'accountId' in a ? a : { accountId, ...a }, id]);
    const apiUrl = new URL(session.apiUrl, this.server + '/').toString();
    const body = (await this.http(apiUrl, {
      method: 'POST',
      body: JSON.stringify({ using: [CORE_CAPABILITY, this.capability], methodCalls: calls }),
    })) as { methodResponses?: Invocation[] };
    if (!Array.isArray(body.methodResponses)) throw new JmapRequestError(`${apiUrl}: the response has no methodResponses`, 200);
    return body.methodResponses;
  }

  /** One method call; returns its response arguments. Throws {@link JmapMethodError} on `["error", …]`. */
  async invoke<T>(method: string, args: Record<string, unknown>): Promise<T> {
    const responses = await this.call([[method, args, 'c0']]);
    return responseOf<T>(responses, 'c0', method);
  }

  get<T>(type: ManagedType, ids: string[] | null, properties?: string[]): Promise<GetResponse<T>> {
    return this.invoke(`x:${type}/get`, properties ? { ids, properties } : { ids });
  }

  query(type: ManagedType, opts: QueryOptions = {}): Promise<QueryResponse> {
    return this.invoke(`x:${type}/query`, { ...opts });
  }

  set<T>(type: ManagedType, req: SetRequest): Promise<SetResponse<T>> {
    return this.invoke(`x:${type}/set`, { ...req });
  }

  /**
   * Every object matching `opts` (all when no filter), in query order: `/query` pages (by `position`,
   * while `total` says more ids exist than the server's per-query cap returned), then one `/get` per
   * `maxObjectsInGet` ids, so it works past both server limits. Not a snapshot: objects changed
   * between the pages may be missed or repeated.
   */
  async getAll<T>(type: ManagedType, opts: QueryOptions = {}): Promise<T[]> {
    const { maxObjectsInGet } = await this.limits();
    const ids: string[] = [];
    for (;;) {
      const q = await this.query(type, { ...opts, position: ids.length, calculateTotal: true });
      ids.push(...q.ids);
      if (q.ids.length === 0 || q.total === undefined || ids.length >= q.total) break;
    }
    const out: T[] = [];
    for (let i = 0; i < ids.length; i += maxObjectsInGet) {
      const chunk = ids.slice(i, i + maxObjectsInGet);
      const r = await this.get<T>(type, chunk);
      // Keep query order whatever order /get answers in.
      const byId = new Map(r.list.map((o) => [(o as { id: string }).id, o]));
      for (const id of chunk) {
        const o = byId.get(id);
        if (o !== undefined) out.push(o);
      }
    }
    return out;
  }

  getRules(ids: string[] | null, properties?: string[]): Promise<GetResponse<SpamRule>> {
    return this.get<SpamRule>('SpamRule', ids, properties);
  }
  queryRules(opts: QueryOptions = {}): Promise<QueryResponse> {
    return this.query('SpamRule', opts);
  }
  setRules(req: SetRequest): Promise<SetResponse<SpamRule>> {
    return this.set<SpamRule>('SpamRule', req);
  }
  getStores(ids: string[] | null, properties?: string[]): Promise<GetResponse<StoreLookup>> {
    return this.get<StoreLookup>('StoreLookup', ids, properties);
  }
  queryStores(opts: QueryOptions = {}): Promise<QueryResponse> {
    return this.query('StoreLookup', opts);
  }
  setStores(req: SetRequest): Promise<SetResponse<StoreLookup>> {
    return this.set<StoreLookup>('StoreLookup', req);
  }

  /**
   * The rule with this name (compared after Stalwart's normalisation), or `undefined`. The server's
   * `name` filter is a substring match (docs/jmap.md), so candidates are narrowed client-side.
   */
  async findRule(name: string): Promise<SpamRule | undefined> {
    const want = normalizeRuleName(name);
    if (want === '') return undefined;
    const list = await this.getAll<SpamRule>('SpamRule', { filter: { name: want } });
    return list.find((r) => r.name === want);
  }

  /** The store whose `namespace` or `id` equals `key`, or `undefined`. */
  async findStore(key: string): Promise<StoreLookup | undefined> {
    const byNs = await this.getAll<StoreLookup>('StoreLookup', { filter: { namespace: key } });
    const hit = byNs.find((s) => s.namespace === key);
    if (hit) return hit;
    const r = await this.getStores([key]);
    return r.list[0];
  }
}

/** Picks the response for `callId`; throws {@link JmapMethodError} when it is `["error", …]`. */
export function responseOf<T>(responses: Invocation[], callId: string, method: string): T {
  const r = responses.find((x) => x[2] === callId);
  if (r === undefined) throw new JmapMethodError(method, 'missingResponse', `no response for call ${callId}`);
  if (r[0] === 'error') {
    const { type, description, ...rest } = r[1] as { type?: string; description?: string };
    throw new JmapMethodError(method, type ?? 'error', description, rest);
  }
  return r[1] as T;
}
