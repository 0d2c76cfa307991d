/**
 * Remote lists (Stalwart's `HttpLookup` objects: the freemail, disposable-domain and phishing feeds
 * the public rules read with `key_exists`): downloaded from their URL with a timeout and a size
 * cap, parsed as a plain list or CSV, kept in an on-disk cache, refreshed on their interval
 * (stale while revalidating), and served from the cache when the network is down.
 *
 * Matching is an exact, case-sensitive lookup of the whole key, as in Stalwart.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { AddressPolicy, AddressRefusedError, guardedFetch } from '../net/index.js';
import type { LookupStore } from './types.js';
import { LookupNotSupportedError } from './types.js';

/** An `HttpLookup` object as Stalwart's rule set writes it (durations in milliseconds, sizes in bytes). */
export interface HttpLookupInput {
  namespace: string;
  url: string;
  format?: { '@type': 'List' } | { '@type': 'Csv'; indexKey?: number; indexValue?: number | null; separator?: string; skipFirst?: boolean };
  enable?: boolean;
  isGzipped?: boolean;
  /** Largest download, bytes (default 100 MiB). */
  maxSize?: number;
  /** Keys kept at most (default 900,000). */
  maxEntries?: number;
  /** Longest CSV key, bytes (default 512). */
  maxEntrySize?: number;
  /** Refresh interval after a successful download, ms (default 12 h). */
  refresh?: number;
  /** Retry interval after a failed download, ms (default 1 h). */
  retry?: number;
  /** Download timeout, ms (default 30 s). */
  timeout?: number;
}

/** Thrown when a download fails (HTTP status, timeout, size cap, invalid UTF-8, gzip error). */
export class ListDownloadError extends Error {
  constructor(
    readonly namespace: string,
    message: string,
  ) {
    super(`list ${namespace}: ${message}`);
    this.name = 'ListDownloadError';
  }
}

const DEFAULTS = { maxSize: 100 * 1024 * 1024, maxEntries: 900_000, maxEntrySize: 512, refresh: 43_200_000, retry: 3_600_000, timeout: 30_000 };

/** Stalwart sends one of a few fixed browser user agents (some feeds refuse unknown clients). */
const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36',
];

/** The default on-disk cache folder: `$XDG_CACHE_HOME/spamrule/lists`, else `~/.cache/spamrule/lists`. */
export function defaultListCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== '' ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'spamrule', 'lists');
}

/**
 * Parses one CSV line into its key column (Stalwart's quoting rules); `undefined` for an empty key. The line is
 * read by characters (code points), as Stalwart's Rust reads `char`s: a key that grows past `maxEntrySize` UTF-8
 * bytes ends with the whole character that crossed the bound, never with half of a surrogate pair (which is no
 * character, and which the on-disk cache, written as UTF-8, would turn into U+FFFD).
 */
function csvKey(line: string, indexKey: number, sep: string, maxEntrySize: number): string | undefined {
  let col = 0;
  let quoted = false;
  let key = '';
  let bytes = 0;
  let prev = '';
  for (const c of line) {
    const escaped = prev === '\\';
    prev = c;
    if (c === '"' && !escaped) quoted = !quoted;
    else if (c === '\\' && !escaped) continue;
    else if (c === sep && !quoted) {
      if (col === indexKey) break;
      col++;
    } else if (col === indexKey) {
      key += c;
      bytes += Buffer.byteLength(c);
      if (bytes > maxEntrySize) break;
    }
  }
  return key === '' ? undefined : key;
}

/**
 * Parses a downloaded list body into keys: `List`: each trimmed non-empty line; `Csv`: the key
 * column of each line (after the first when `skipFirst`). Stops at `maxEntries`. Returns the keys
 * and whether the cap cut the list.
 */
export function parseListBody(text: string, cfg: HttpLookupInput): { keys: Set<string>; capped: boolean } {
  const maxEntries = cfg.maxEntries ?? DEFAULTS.maxEntries;
  const keys = new Set<string>();
  const fmt = cfg.format ?? { '@type': 'List' };
  let pos = 0;
  let first = true;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    let line = text.slice(pos, nl);
    pos = nl + 1;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (fmt['@type'] === 'Csv') {
      if (first && fmt.skipFirst) {
        first = false;
        continue;
      }
      first = false;
      const k = csvKey(line, fmt.indexKey ?? 0, fmt.separator ?? ',', cfg.maxEntrySize ?? DEFAULTS.maxEntrySize);
      if (k !== undefined) keys.add(k);
    } else {
      const k = line.trim();
      if (k !== '') keys.add(k);
    }
    if (keys.size >= maxEntries) return { keys, capped: pos < text.length };
  }
  return { keys, capped: false };
}

/** Options of a download. */
export interface DownloadOptions {
  /**
   * A `fetch` to use instead of the built-in one (tests, a proxy): it does its own connecting, so the
   * address check below is then its business.
   */
  fetch?: typeof fetch;
  /**
   * Addresses or CIDR ranges a download may connect to although they are not public (an internal list
   * server: `["10.20.0.0/16"]`). Default none: a list URL, and every redirect it takes, must resolve to
   * a public unicast address. An entry that is neither an address nor a range throws `TypeError`.
   */
  allowedNetworks?: readonly string[];
}

/** The default download `fetch` of each allowed-network list, built once per list of networks. */
const fetchers = new WeakMap<readonly string[], typeof fetch>();
const publicOnly = guardedFetch({ policy: new AddressPolicy() });

function fetchOf(opts: DownloadOptions): typeof fetch {
  if (opts.fetch !== undefined) return opts.fetch;
  const nets = opts.allowedNetworks;
  if (nets === undefined || nets.length === 0) return publicOnly;
  let f = fetchers.get(nets);
  if (f === undefined) fetchers.set(nets, (f = guardedFetch({ policy: new AddressPolicy(nets) })));
  return f;
}

/**
 * Downloads and parses one list. Rejects with {@link ListDownloadError} on a non-2xx status, a
 * timeout, a body over `maxSize` bytes (compressed or not), invalid UTF-8, a gzip error, or a host
 * (of the URL or of a redirect) that resolves to no public address outside `opts.allowedNetworks`.
 */
export async function downloadList(cfg: HttpLookupInput, opts: DownloadOptions = {}): Promise<{ keys: Set<string>; capped: boolean }> {
  const maxSize = cfg.maxSize ?? DEFAULTS.maxSize;
  const timeout = cfg.timeout ?? DEFAULTS.timeout;
  const ns = cfg.namespace;
  const f = fetchOf(opts);
  const signal = AbortSignal.timeout(timeout);
  const init: RequestInit = { signal, headers: { 'user-agent': USER_AGENTS[Math.floor(Math.random() * USER_AGENTS.length)]! }, redirect: 'follow' };
  let body: Buffer;
  try {
    let res: Response;
    try {
      res = await f(cfg.url, init);
    } catch (e) {
      // A pooled connection the server closed in the meantime fails at once: retry once on a new one.
      // A refused address or a timeout would fail the same way again.
      const name = (e as Error).name;
      if (name === 'TimeoutError' || name === 'AbortError' || e instanceof AddressRefusedError) throw e;
      res = await f(cfg.url, init);
    }
    if (!res.ok) throw new ListDownloadError(ns, `HTTP ${res.status} from ${cfg.url}`);
    body = await readCapped(res, maxSize, ns);
    if (cfg.isGzipped) body = await gunzipCapped(body, maxSize, ns);
  } catch (e) {
    if (e instanceof ListDownloadError) throw e;
    const name = (e as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') throw new ListDownloadError(ns, `timed out after ${timeout} ms`);
    if (e instanceof AddressRefusedError && e.reason === 'policy') {
      throw new ListDownloadError(ns, `download refused: ${e.message} (an internal list server needs its network in the allowed list networks: docs/lookup-stores.md, "Remote lists")`);
    }
    throw new ListDownloadError(ns, `download failed: ${(e as Error).message}`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new ListDownloadError(ns, 'the list is not valid UTF-8');
  }
  return parseListBody(text, cfg);
}

async function readCapped(res: Response, maxSize: number, ns: string): Promise<Buffer> {
  const len = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(len) && len > maxSize) throw new ListDownloadError(ns, `list is ${len} bytes, over the ${maxSize}-byte cap`);
  const chunks: Buffer[] = [];
  let size = 0;
  if (res.body === null) return Buffer.alloc(0);
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxSize) {
      await reader.cancel().catch(() => {});
      throw new ListDownloadError(ns, `list is over the ${maxSize}-byte cap`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

function gunzipCapped(data: Buffer, maxSize: number, ns: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const z = createGunzip();
    const chunks: Buffer[] = [];
    let size = 0;
    z.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxSize) {
        z.destroy();
        reject(new ListDownloadError(ns, `decompressed list is over the ${maxSize}-byte cap`));
      } else chunks.push(c);
    });
    z.on('error', (e) => reject(new ListDownloadError(ns, `gzip: ${e.message}`)));
    z.on('end', () => resolve(Buffer.concat(chunks)));
    z.end(data);
  });
}

/** What the on-disk cache keeps beside a list's keys. */
interface CacheMeta {
  url: string;
  fetchedAt: number;
  entries: number;
}

function safeName(ns: string): string {
  return ns.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** Options of an {@link HttpListStore}. */
export interface HttpListOptions extends DownloadOptions {
  /** On-disk cache folder (default {@link defaultListCacheDir}). */
  cacheDir?: string;
  /**
   * Download in the background when the list is stale (stale while revalidating). Default false:
   * `classify` makes no HTTP request and serves the cache; `spamrule lists update` and the server refresh.
   */
  autoRefresh?: boolean;
  /** Clock, ms (tests). */
  now?: () => number;
  /** Called when a background refresh fails (the cache stays in use). */
  onError?: (e: Error) => void;
  /** Called once, at the first lookup, when there is no cached copy and none will be downloaded (no `autoRefresh`). */
  onNeverDownloaded?: () => void;
}

/**
 * A remote list as a read-only lookup store. Loads its on-disk cache on first use; answers from
 * memory; with `autoRefresh`, a lookup at or after expiry starts one background download and
 * answers from the current keys (empty before the first download, as in Stalwart).
 */
export class HttpListStore implements LookupStore {
  readonly type = 'HttpLookup';
  private keys: Set<string> | undefined;
  private expiresAt = 0;
  private fetchedAt = 0;
  private inFlight: Promise<void> | undefined;
  private readonly cacheDir: string;
  private readonly now: () => number;

  constructor(
    readonly config: HttpLookupInput,
    private readonly opts: HttpListOptions = {},
  ) {
    this.cacheDir = opts.cacheDir ?? defaultListCacheDir();
    this.now = opts.now ?? Date.now;
  }

  private get files(): { keys: string; meta: string } {
    const n = safeName(this.config.namespace);
    return { keys: join(this.cacheDir, `${n}.txt`), meta: join(this.cacheDir, `${n}.json`) };
  }

  /** Loads the on-disk cache once; a missing or unreadable cache leaves the list empty. */
  private load(): Set<string> {
    if (this.keys !== undefined) return this.keys;
    this.keys = new Set();
    try {
      const meta = JSON.parse(readFileSync(this.files.meta, 'utf8')) as CacheMeta;
      if (meta.url === this.config.url) {
        const text = readFileSync(this.files.keys, 'utf8');
        for (const k of text.split('\n')) if (k !== '') this.keys.add(k);
        this.fetchedAt = meta.fetchedAt;
        this.expiresAt = meta.fetchedAt + (this.config.refresh ?? DEFAULTS.refresh);
      }
    } catch {
      /* no cache yet */
    }
    if (this.fetchedAt === 0 && !this.opts.autoRefresh) this.opts.onNeverDownloaded?.();
    return this.keys;
  }

  /** Keys in memory; `fetchedAt` 0 when the list was never downloaded. */
  status(): { namespace: string; url: string; entries: number; fetchedAt: number; stale: boolean } {
    const keys = this.load();
    return { namespace: this.config.namespace, url: this.config.url, entries: keys.size, fetchedAt: this.fetchedAt, stale: this.now() >= this.expiresAt };
  }

  /**
   * Downloads the list now and replaces the keys and the on-disk cache (written atomically).
   * Rejects with {@link ListDownloadError}; the previous keys stay in use then.
   */
  async update(): Promise<{ entries: number; capped: boolean }> {
    this.load();
    try {
      const { keys, capped } = await downloadList(this.config, this.opts);
      this.keys = keys;
      this.fetchedAt = this.now();
      this.expiresAt = this.fetchedAt + (this.config.refresh ?? DEFAULTS.refresh);
      this.writeCache(keys);
      return { entries: keys.size, capped };
    } catch (e) {
      this.expiresAt = this.now() + (this.config.retry ?? DEFAULTS.retry);
      throw e;
    }
  }

  private writeCache(keys: Set<string>): void {
    mkdirSync(this.cacheDir, { recursive: true });
    const { keys: kf, meta } = this.files;
    writeFileSync(`${kf}.tmp`, [...keys].join('\n'));
    renameSync(`${kf}.tmp`, kf);
    const m: CacheMeta = { url: this.config.url, fetchedAt: this.fetchedAt, entries: keys.size };
    writeFileSync(`${meta}.tmp`, JSON.stringify(m));
    renameSync(`${meta}.tmp`, meta);
  }

  private maybeRefresh(): void {
    if (!this.opts.autoRefresh || this.inFlight !== undefined || this.now() < this.expiresAt) return;
    this.inFlight = this.update()
      .then(
        () => {},
        (e: Error) => this.opts.onError?.(e),
      )
      .finally(() => {
        this.inFlight = undefined;
      });
  }

  /** Resolves when a background refresh in flight (if any) has ended. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  /** Exact, case-sensitive membership. */
  hasSync(key: string): boolean {
    const keys = this.load();
    this.maybeRefresh();
    return keys.has(key);
  }

  async keyExists(key: string): Promise<boolean> {
    return this.hasSync(key);
  }
  /** Integer 1 for a present key (as Stalwart's key sets), `null` otherwise. */
  async keyGet(key: string): Promise<number | null> {
    return this.hasSync(key) ? 1 : null;
  }
  async keySet(): Promise<void> {
    throw new LookupNotSupportedError(this.config.namespace, 'key_set');
  }
  async counterGet(): Promise<number> {
    throw new LookupNotSupportedError(this.config.namespace, 'counter_get');
  }
  async counterIncr(): Promise<number> {
    throw new LookupNotSupportedError(this.config.namespace, 'counter_incr');
  }
  async close(): Promise<void> {
    await this.inFlight;
  }
}

