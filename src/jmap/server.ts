/**
 * The HTTP side of the JMAP facade on `node:http`: session resource (`GET /.well-known/jmap`,
 * `GET /jmap/session`), API endpoint (`POST /jmap`, `/jmap/`, `/api`), blob upload and download
 * (`POST /jmap/upload/{accountId}/`, `GET /jmap/download/{accountId}/{blobId}/{name}`, RFC 8620
 * §6.1–6.2; the blobs are messages for `x:SpamTrainingSample`), Bearer authentication,
 * request-level problem JSON (RFC 8620 §3.6.1, RFC 7807), request limits, engine reloads after
 * every committed change, and push of state changes (`GET /jmap/eventsource/`, RFC 8620 §7.3, push.ts)
 * (docs/jmap.md).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, resolve } from 'node:path';
import { ConnectionCaps, type ConnectionRefusal } from '../net/index.js';
import { resolveHostNames, resolveStorePolicy, type StoreHostResolver, type StorePolicy, type StorePolicyOptions } from '../lookup/store-policy.js';
import { systemHostResolver } from '../net/index.js';
import type { PinnedHosts } from '../lookup/store-pins.js';
import { storeHostCandidates, storePolicyValidator } from './store-hosts.js';
import { storeSync } from './store-sync.js';
import { runMethodCalls, parseRequest, responseText, CORE_CAPABILITY } from './api.js';
import { TokenStore, type TokenInfo } from './auth.js';
import { applyRegistryObjects, engineValidators, loadEngineModule, loadLookupModule, objectsForEngine, rulesForEngine, type EngineLike } from './bridge.js';
import { HttpError, problem, RequestError } from './errors.js';
import { IdGenerator } from './ids.js';
import { DEFAULT_LIMITS, type Limits, type MethodContext } from './methods.js';
import { BlobCache } from './blobs.js';
import type { TrainingSampleSink } from './kind.js';
import { expireSamples } from './training-samples.js';
import { OBJECT_TYPES, type ObjectType } from './objects.js';
import { PostgresRepository, SqliteRepository, type ObjectRepository } from './repo.js';
import { ChangeFeed, EventSources, publishChanges, resolvePushOptions, type PushOptions } from './push.js';

export interface JmapServerOptions {
  /** SQLite database: tokens always; objects too unless `pg` is given. */
  db: string;
  /** PostgreSQL connection URL: objects live there and other servers on it are told of changes. */
  pg?: string;
  /** Listen address; default 127.0.0.1 and a random port. */
  host?: string;
  port?: number;
  /** The management capability URN, default `urn:stalwart:jmap` (docs/jmap.md). */
  capability?: string;
  limits?: Partial<Limits>;
  /** Most ids one `/query` returns (Stalwart `queryMaxResults`, default 5000). */
  queryMaxResults?: number;
  /** The engine to reload after each change; default a new `SpamEngine` when the engine module loads. */
  engine?: EngineLike;
  /**
   * Compiles a SpamRule condition for a scope; default the engine's `validateCondition`. Returns
   * problems with paths such as `condition/match/0/if`.
   */
  validateCondition?: (scope: string, condition: { match: { if: string; then: string }[]; else: string }) => { path: string; message: string }[];
  /**
   * Builds a lookup store from a StoreLookup `store` config; default `createLookupStore` of src/lookup.
   * `opts.pinned`: the addresses the store policy checked for the store's host names, which its connections
   * are to go to (CreateLookupStoreOptions.pinned, src/lookup/store-pins.ts).
   */
  createLookupStore?: (namespace: string, config: unknown, opts: { pinned: PinnedHosts }) => { close(): Promise<void> } | Promise<{ close(): Promise<void> }>;
  /** Diagnostics (internal errors, rule load problems); default stderr. */
  log?: (line: string) => void;
  /**
   * The classifier's sample store: `x:SpamTrainingSample` creates put their message there (and
   * typically schedule a training run). Without it, creating a sample is `forbidden`.
   */
  trainingSamples?: TrainingSampleSink;
  /** Event source push (RFC 8620 §7.3): most open streams (64, 8 per token) and ping interval bounds (30–300 s). */
  push?: PushOptions;
  /**
   * What a StoreLookup written over JMAP may reach on this host (docs/jmap.md "Store policy";
   * src/lookup/store-policy.ts): `secretFileDirs` and `secretEnvPrefixes` (default none: `File` and
   * `EnvironmentVariable` secrets are refused), `sqliteDir` (default the directory of `db`; none for
   * `:memory:`), `protectedFiles` (besides `db`, which is always protected: e.g. the classifier's model),
   * `allowedHosts` (default `["*"]`: any host, but never a link-local or cloud metadata address unless listed).
   * Checked on every create and update, and again when a stored store is started.
   */
  storePolicy?: StorePolicyOptions;
  /**
   * Most open connections (default 1024); more are closed as soon as they are accepted, before
   * any token is read: otherwise connections that never authenticate could use up the process's
   * file descriptors.
   */
  maxConnections?: number;
  /**
   * Most open connections from one peer, an IPv4 address or an IPv6 /64 (default 256, as the mail-path
   * listeners' `limits.maxConnectionsPerPeer`); more from that peer are closed as soon as they are
   * accepted, so that one host holding idle connections cannot shut the others out of
   * `maxConnections`. Behind a reverse proxy every client is the proxy's address: raise it there.
   */
  maxConnectionsPerPeer?: number;
  /**
   * Resolves a StoreLookup's host names for the store policy's address check (docs/jmap.md, "Secrets and
   * the store policy"), at each `/set` that names them and when the store starts; the store's connections
   * then go to the addresses found at the start. Default: the system's resolver (`getaddrinfo`).
   */
  resolveStoreHost?: StoreHostResolver;
  /**
   * How long a StoreLookup whose host name gave no address when it started waits before it is resolved and
   * tried again (ms; default 30,000, `UNRESOLVED_RETRY_MS` of src/jmap/store-sync.ts). Meanwhile its lookups fail.
   */
  storeRetryMs?: number;
  /** Called for each connection closed on accept: `max` ({@link maxConnections}) or `per_peer` ({@link maxConnectionsPerPeer}). */
  onConnectionRefused?: (reason: ConnectionRefusal) => void;
}

export interface JmapServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  engine?: EngineLike;
  repo: ObjectRepository;
  tokens: TokenStore;
  /** Resolves once the engine reflects every change committed so far (store adapters are async). */
  settled(): Promise<void>;
  /** Event streams (`GET /jmap/eventsource/`) open now. */
  openEventStreams(): number;
  /** Ends the event streams, then stops listening and closes the databases. */
  close(): Promise<void>;
}

export const DEFAULT_CAPABILITY = 'urn:stalwart:jmap';
/** The default of {@link JmapServerOptions.maxConnections}, as the mail-path listeners' `limits.maxConnections`. */
const DEFAULT_MAX_CONNECTIONS = 1024;
/** The default of {@link JmapServerOptions.maxConnectionsPerPeer}, as the mail-path listeners' `limits.maxConnectionsPerPeer`. */
const DEFAULT_MAX_CONNECTIONS_PER_PEER = 256;
const ACCOUNT_ID = 'a';

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json; charset=utf-8', headers: Record<string, string> = {}): void {
  sendText(res, status, JSON.stringify(body), contentType, headers);
}

/** {@link send} of a body already serialized. */
function sendText(res: ServerResponse, status: number, text: string, contentType = 'application/json; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Reads the body, refusing more than `max` bytes with the `limit` error naming the limit. */
function readBody(req: IncomingMessage, max: number, limit: 'maxSizeRequest' | 'maxSizeUpload' = 'maxSizeRequest'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? -1);
    const tooLarge = () => new RequestError('limit', 400, `the ${limit === 'maxSizeUpload' ? 'upload' : 'request'} is larger than ${limit} (${max} bytes)`, limit);
    if (declared > max) {
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max && !failed) {
        failed = true;
        reject(tooLarge());
      }
      if (!failed) chunks.push(c);
    });
    req.on('end', () => failed || resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Starts the facade. Opens the SQLite database (and PostgreSQL when `pg` is set), loads the stored
 * rules and stores into the engine, and listens. Throws when a database cannot be opened or the
 * address is taken.
 */
export async function createJmapServer(opts: JmapServerOptions): Promise<JmapServer> {
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  const limits: Limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const capability = opts.capability ?? DEFAULT_CAPABILITY;
  const capabilities = [CORE_CAPABILITY, capability];
  const pushOptions = resolvePushOptions(opts.push);
  const maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (!Number.isInteger(maxConnections) || maxConnections < 1) throw new RangeError(`maxConnections must be a positive integer, not ${maxConnections}`);
  const maxConnectionsPerPeer = opts.maxConnectionsPerPeer ?? DEFAULT_MAX_CONNECTIONS_PER_PEER;
  if (!Number.isInteger(maxConnectionsPerPeer) || maxConnectionsPerPeer < 1) throw new RangeError(`maxConnectionsPerPeer must be a positive integer, not ${maxConnectionsPerPeer}`);
  const tokens = new TokenStore(opts.db);
  const stored: ObjectRepository = opts.pg ? await PostgresRepository.open(opts.pg) : new SqliteRepository(opts.db);
  // Every write goes through `repo`, which announces each committed change to the event streams.
  const feed = new ChangeFeed((t) => stored.snapshot(t).state);
  const repo = publishChanges(stored, feed);
  const eventSources = new EventSources(feed, ACCOUNT_ID, pushOptions);
  const engineModule = await loadEngineModule();
  const lookupModule = await loadLookupModule();
  if (engineModule instanceof Error)
    log(`spamrule serve: rule engine unavailable (${engineModule.message}); conditions are checked for shape only and no engine is reloaded`);
  const engine = opts.engine ?? (engineModule instanceof Error ? undefined : new engineModule.SpamEngine());
  const fromEngine = engineValidators(engineModule);
  const policy = storePolicyOf(opts);
  const validate = { ...fromEngine, condition: opts.validateCondition ?? fromEngine.condition, storePolicy: storePolicyValidator(policy) };
  const resolveStoreHost = opts.resolveStoreHost ?? systemHostResolver;
  const createLookupStore = opts.createLookupStore ?? lookupModule.createLookupStore;
  const ids = new IdGenerator();
  const blobs = new BlobCache();
  // RFC 8620 §2 leaves open what maxConcurrentRequests and maxConcurrentUpload count. Here: per token, so
  // that one client's slow requests cannot lock the others out; an upload counts only as an upload.
  const uploads = new KeyCounter();
  const verified = new WeakMap<IncomingMessage, TokenInfo>();
  /** `authenticate`, once per request. */
  const auth = (req: IncomingMessage): TokenInfo => {
    let who = verified.get(req);
    if (who === undefined) verified.set(req, (who = authenticate(req, tokens)));
    return who;
  };

  const stores = storeSync({ engine, createLookupStore, policy, resolve: resolveStoreHost, log, ...(opts.storeRetryMs !== undefined ? { retryMs: opts.storeRetryMs } : {}) });
  const reload = (type: ObjectType, startup = false): void => {
    if (type === 'SpamRule') {
      const report = engine?.loadRules(rulesForEngine(repo.snapshot('SpamRule').objects)) as { errors?: { rule: string; message: string }[] } | undefined;
      for (const e of report?.errors ?? []) log(`spamrule serve: rule ${e.rule} not loaded: ${e.message}`);
    } else if (type === 'StoreLookup') stores.sync(() => repo.snapshot('StoreLookup').objects.values());
    else if (engine !== undefined) {
      // At start-up an empty registry type leaves what the engine was given (e.g. --scores) alone.
      const objects = objectsForEngine(repo.snapshot(type).objects);
      if (!startup || objects.length > 0) applyRegistryObjects(engine, type, objects);
    }
  };
  for (const t of OBJECT_TYPES) reload(t, true);
  repo.onExternalChange((t) => reload(t));

  // Samples whose expiresAt has passed are destroyed (at start, then hourly), as Stalwart lets them lapse.
  let expiry: NodeJS.Timeout | undefined;
  if (opts.trainingSamples !== undefined) {
    const sink = opts.trainingSamples;
    const expire = (): void =>
      void expireSamples(repo, sink).then(
        (n) => n > 0 && log(`spamrule serve: ${n} expired training sample${n > 1 ? 's' : ''} removed`),
        (e: unknown) => log(`spamrule serve: expiring training samples failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    expire();
    expiry = setInterval(expire, 3_600_000);
    expiry.unref();
  }

  const active = new KeyCounter();
  /** RFC 8620 §6.1: the body becomes a blob; 201 with its id, type and size. */
  const upload = async (req: IncomingMessage, res: ServerResponse, accountId: string): Promise<void> => {
    if (req.method !== 'POST') throw new HttpError(405, problem(405, 'Method Not Allowed', 'use POST to upload'), { allow: 'POST' });
    const who = auth(req);
    if (accountId !== ACCOUNT_ID) throw new HttpError(404, problem(404, 'Not Found', `account "${accountId}" does not exist`));
    if (!uploads.take(who.id, limits.maxConcurrentUpload)) {
      req.resume();
      throw new RequestError('limit', 400, `more than maxConcurrentUpload (${limits.maxConcurrentUpload}) uploads at once with this token`, 'maxConcurrentUpload');
    }
    try {
      const data = await readBody(req, limits.maxSizeUpload, 'maxSizeUpload');
      const type = (req.headers['content-type'] ?? 'application/octet-stream').split(';')[0]!.trim() || 'application/octet-stream';
      send(res, 201, { accountId, ...blobs.put(data, type) });
    } finally {
      uploads.release(who.id);
    }
  };
  /** RFC 8620 §6.2: an uploaded blob's bytes, with the `accept` type asked for. */
  const download = (req: IncomingMessage, res: ServerResponse, accountId: string, blobId: string, name: string, query: URLSearchParams): void => {
    if (req.method !== 'GET') throw new HttpError(405, problem(405, 'Method Not Allowed', 'use GET to download'), { allow: 'GET' });
    auth(req);
    const blob = accountId === ACCOUNT_ID ? blobs.get(blobId) : undefined;
    if (blob === undefined) throw new HttpError(404, problem(404, 'Not Found', `no blob "${blobId}" (blobs are kept an hour after upload)`));
    const type = query.get('accept') ?? blob.type;
    // A header value cannot hold control or non-ASCII characters (RFC 9110 §5.5): refuse them rather
    // than fail while writing the response.
    if (!/^[\x20-\x7e]*$/.test(type)) throw new HttpError(400, problem(400, 'Bad Request', 'the accept type must be printable ASCII'));
    const file = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
    res.writeHead(200, { 'content-type': type, 'content-length': blob.data.length, 'content-disposition': `attachment; filename="${file}"`, 'cache-control': 'private, immutable, max-age=31536000' });
    res.end(blob.data);
  };

  /**
   * RFC 8620 §7.3. Not counted in maxConcurrentRequests: a stream lasts as long as the client wants
   * and has its own bound (push.maxConnections).
   */
  const eventSource = (req: IncomingMessage, res: ServerResponse, search: string): void => {
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { allow: 'GET, OPTIONS' }).end();
      return;
    }
    if (req.method !== 'GET') throw new HttpError(405, problem(405, 'Method Not Allowed', 'use GET on the event source'), { allow: 'GET' });
    const who = auth(req);
    req.resume();
    const stillAuthorized = (): boolean => {
      try {
        // Not the per-request memo: a token revoked since the stream opened must end it.
        authenticate(req, tokens);
        return true;
      } catch {
        return false;
      }
    };
    eventSources.serve(req, res, new URLSearchParams(search), who.permissions, stillAuthorized, who.id);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const [path = '/', search = ''] = (req.url ?? '/').split('?', 2);
    const dec = (s: string): string => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new HttpError(400, problem(400, 'Bad Request', `malformed percent-encoding in ${path}`));
      }
    };
    const up = /^\/jmap\/upload\/([^/]+)\/?$/.exec(path);
    if (up) return upload(req, res, dec(up[1]!));
    const down = /^\/jmap\/download\/([^/]+)\/([^/]+)\/([^/]*)$/.exec(path);
    if (down) return download(req, res, dec(down[1]!), dec(down[2]!), dec(down[3]!), new URLSearchParams(search));
    const isSession = path === '/.well-known/jmap' || path === '/jmap/session';
    const isApi = path === '/jmap' || path === '/jmap/' || path === '/api';
    if (!isSession && !isApi) throw new HttpError(404, problem(404, 'Not Found', `no resource at ${path}`));
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { allow: isApi ? 'POST, OPTIONS' : 'GET, OPTIONS' }).end();
      return;
    }
    if ((isSession && req.method !== 'GET') || (isApi && req.method !== 'POST'))
      throw new HttpError(405, problem(405, 'Method Not Allowed', `use ${isApi ? 'POST' : 'GET'} on ${path}`), { allow: isApi ? 'POST' : 'GET' });

    const who = auth(req);
    const base = `http://${req.headers.host ?? 'localhost'}`;
    if (isSession) {
      send(res, 200, session(base, who, limits, capability));
      return;
    }
    const type = req.headers['content-type'];
    if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type))
      throw new RequestError('notJSON', 400, `Content-Type must be application/json, not ${type}`);
    const raw = await readBody(req, limits.maxSizeRequest);
    let text: string;
    try {
      // I-JSON (RFC 8620 §3.6.1, RFC 7493): UTF-8, not bytes quietly replaced by U+FFFD.
      text = UTF8_STRICT.decode(raw);
    } catch {
      throw new RequestError('notJSON', 400, 'the request body is not valid UTF-8');
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new RequestError('notJSON', 400, `the request body is not valid JSON: ${(e as Error).message}`);
    }
    const request = parseRequest(body, capabilities, limits.maxCallsInRequest);
    // Host names a StoreLookup /set names, resolved now: the store policy runs inside the transaction.
    const names = storeHostCandidates(request.methodCalls);
    const resolved = names.length > 0 ? await resolveHostNames(names, resolveStoreHost) : undefined;
    const ctx: MethodContext = {
      accountId: ACCOUNT_ID,
      permissions: new Set(who.permissions),
      createdIds: new Map(Object.entries(request.createdIds ?? {})),
      repo,
      ids,
      validate: resolved === undefined ? validate : { ...validate, storePolicy: storePolicyValidator(policy, resolved) },
      limits,
      queryMaxResults: opts.queryMaxResults ?? 5000,
      afterChange: reload,
      hooks: { blobs, ...(opts.trainingSamples !== undefined ? { samples: opts.trainingSamples } : {}) },
    };
    const methodResponses = await runMethodCalls(request.methodCalls, ctx, (e) => log(`spamrule serve: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
    const rest: Record<string, unknown> = { sessionState: SESSION_STATE };
    if (request.createdIds !== undefined) rest.createdIds = Object.fromEntries(ctx.createdIds);
    sendText(res, 200, responseText(methodResponses, rest));
  };

  const fail = (res: ServerResponse, e: unknown): void => {
    // A client that hung up mid-request (its body cut: "aborted", ECONNRESET) is no server fault.
    if (res.headersSent || res.socket === null || res.socket.destroyed) return;
    if (e instanceof RequestError) send(res, e.status, e.toProblem(), 'application/problem+json');
    else if (e instanceof HttpError) send(res, e.status, e.body, 'application/problem+json', e.headers);
    else {
      log(`spamrule serve: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      send(res, 500, problem(500, 'Internal Server Error', 'the server failed to process the request'), 'application/problem+json');
    }
  };

  const server = createServer((req, res) => {
    const [path = '/', search = ''] = (req.url ?? '/').split('?', 2);
    if (path === '/jmap/eventsource' || path === '/jmap/eventsource/') {
      try {
        eventSource(req, res, search);
      } catch (e) {
        req.resume();
        fail(res, e);
      }
      return;
    }
    // Uploads have their own limit; a request without a valid token is counted under no token (-1),
    // and the handler answers it 401 before reading anything.
    if (!path.startsWith('/jmap/upload/')) {
      let key = -1;
      try {
        key = auth(req).id;
      } catch {
        /* answered by the handler */
      }
      if (!active.take(key, limits.maxConcurrentRequests)) {
        req.resume();
        const e = new RequestError('limit', 400, `more than maxConcurrentRequests (${limits.maxConcurrentRequests}) requests at once with this token`, 'maxConcurrentRequests');
        send(res, 400, e.toProblem(), 'application/problem+json');
        return;
      }
      res.on('close', () => active.release(key));
    }
    handle(req, res).catch((e: unknown) => fail(res, e));
  });
  // Before any request is read (no token needed to open a connection): the mail-path listeners' caps.
  const caps = new ConnectionCaps(server, maxConnections, maxConnectionsPerPeer, opts.onConnectionRefused);
  server.prependListener('connection', (socket: Socket) => void caps.admit(socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    engine,
    repo,
    tokens,
    settled: () => stores.settled(),
    openEventStreams: () => eventSources.size,
    async close() {
      // First, so that clients see their streams end rather than break.
      await eventSources.close();
      clearInterval(expiry);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await stores.close();
      await repo.close();
      tokens.close();
    },
  };
}

const UTF8_STRICT = new TextDecoder('utf-8', { fatal: true });

/** The server's store policy: `opts.storePolicy` over the defaults (see JmapServerOptions.storePolicy). */
function storePolicyOf(opts: JmapServerOptions): StorePolicy {
  const given = opts.storePolicy ?? {};
  const memory = opts.db === ':memory:';
  return resolveStorePolicy({
    ...given,
    sqliteDir: given.sqliteDir ?? (memory ? undefined : dirname(resolve(opts.db))),
    protectedFiles: [...(memory ? [] : [opts.db]), ...(given.protectedFiles ?? [])],
  });
}

/** Things under way per key (a token id), for the per-token concurrency limits. */
class KeyCounter {
  private readonly n = new Map<number, number>();
  /** Counts one more under `key` unless `max` are under way already; false then. */
  take(key: number, max: number): boolean {
    const now = this.n.get(key) ?? 0;
    if (now >= max) return false;
    this.n.set(key, now + 1);
    return true;
  }
  release(key: number): void {
    const left = (this.n.get(key) ?? 1) - 1;
    if (left === 0) this.n.delete(key);
    else this.n.set(key, left);
  }
}

// The session object only changes with the server's configuration, which is fixed per process.
const SESSION_STATE = 'c0';

/** 401 unless `Authorization: Bearer <token>` names a known token (RFC 6750; Stalwart's registry schema). */
function authenticate(req: IncomingMessage, tokens: TokenStore): TokenInfo {
  const h = req.headers.authorization ?? '';
  const sp = h.indexOf(' ');
  const scheme = sp < 0 ? h : h.slice(0, sp);
  const token = sp < 0 ? '' : h.slice(sp + 1).trim();
  const info = scheme.toLowerCase() === 'bearer' && token !== '' ? tokens.verify(token) : undefined;
  if (info === undefined)
    throw new HttpError(401, problem(401, 'Unauthorized', h === '' ? 'You have to authenticate first.' : 'The token is unknown or revoked.'), {
      'www-authenticate': h === '' ? 'Bearer realm="spamrule"' : 'Bearer realm="spamrule", error="invalid_token"',
    });
  return info;
}

/** The RFC 8620 §2 Session object. */
function session(base: string, who: TokenInfo, limits: Limits, capability: string): Record<string, unknown> {
  return {
    capabilities: { [CORE_CAPABILITY]: limits, [capability]: {} },
    accounts: {
      [ACCOUNT_ID]: { name: who.name, isPersonal: false, isReadOnly: false, accountCapabilities: { [capability]: {} } },
    },
    primaryAccounts: { [capability]: ACCOUNT_ID },
    username: who.name,
    apiUrl: `${base}/jmap/`,
    downloadUrl: `${base}/jmap/download/{accountId}/{blobId}/{name}?accept={type}`,
    uploadUrl: `${base}/jmap/upload/{accountId}/`,
    eventSourceUrl: `${base}/jmap/eventsource/?types={types}&closeafter={closeafter}&ping={ping}`,
    state: SESSION_STATE,
  };
}
