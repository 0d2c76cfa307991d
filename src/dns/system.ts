/**
 * The system resolver: `node:dns/promises` (c-ares) with a per-query time limit, an LRU cache that honours
 * record TTLs, negative caching and de-duplication of concurrent identical queries. Each query goes out on
 * its own c-ares channel, so from its own UDP socket and source port (docs/dns.md, "Trust").
 */
import { Resolver as NodeResolver } from 'node:dns/promises';
import { LRUCache } from 'lru-cache';
import { DnsConfigError } from './errors.js';
import { DNS_TYPES, normalizeName, ptrQueryName } from './names.js';
import type { DnsAnswer, DnsRecordMap, DnsType, MxRecord, Resolver } from './types.js';
import { detach } from '../util/index.js';

export interface SystemResolverOptions {
  /**
   * DNS servers as `ip` or `ip:port` (`[v6]:port`), e.g. `['127.0.0.1:5353']`. Default: the system's
   * (`/etc/resolv.conf`). Invalid addresses throw DnsConfigError.
   */
  servers?: readonly string[];
  /** Upper bound on one query, in ms, retries included (default 2000). The answer is then `error` "timeout". */
  timeoutMs?: number;
  /**
   * UDP tries per server (default 2). c-ares doubles the wait at each try, so the first try gets
   * timeoutMs / (2^tries − 1) and all tries together fit in `timeoutMs`.
   */
  tries?: number;
  /** Cache capacity in answers (default 10,000); 0 disables the cache (in-flight de-duplication stays). */
  cacheSize?: number;
  /**
   * Cache capacity in bytes of answer data, about (default 32 MiB): an answer's names and texts count their
   * length, each record 32 bytes more. The senders' zones decide how large answers are (a 60 KB TXT, thousands of
   * MX or PTR names), so counting answers alone let 10,000 of them hold over a gigabyte.
   */
  cacheBytes?: number;
  /** TTL in ms for MX, TXT and PTR answers, whose record TTLs node does not report (default 300,000 = 5 min). */
  defaultTtlMs?: number;
  /** Cap on any positive answer's cache lifetime, in ms (default 3,600,000 = 1 h). */
  maxTtlMs?: number;
  /**
   * How long an NXDOMAIN/NODATA answer is cached, in ms (default 300,000 = 5 min; Stalwart keeps DNSBL
   * "no record" answers 24 h: 86,400,000). 0: not cached.
   */
  negativeTtlMs?: number;
  /** How long an error answer (timeout, SERVFAIL, …) is cached, in ms (default 0: not cached). */
  errorTtlMs?: number;
  /**
   * Queries handed to c-ares at once (default 200); more wait in a queue, their wait counted in `timeoutMs`.
   * Measured with node 20's c-ares 1.34 over loopback: past ~256 concurrent queries answers stall about a second,
   * and past 512 the extra queries are never sent and time out.
   */
  maxInFlight?: number;
  /**
   * Send each query on a fresh c-ares channel: its own UDP socket, so its own random source port beside the
   * random 16-bit query ID (RFC 5452 §9.2). A shared channel sends every query in flight from one socket, so
   * a burst of a message's queries shares one port and only the ID varies. Default: true with one DNS
   * server, false with several, since a channel remembers which server does not answer and a fresh one does
   * not: with a silent first server every query would wait its first try (measured: 0.67–1.3 s per query at
   * the default timeouts, against once per channel shared).
   */
  socketPerQuery?: boolean;
}

/** An answer's size for the cache's byte bound ({@link SystemResolverOptions.cacheBytes}): at least 1. */
function answerBytes(a: DnsAnswer): number {
  if (a.status !== 'ok') return 64;
  let n = 64;
  for (const r of a.records) n += 32 + (typeof r === 'string' ? r.length : r.exchange.length);
  return n;
}

/** Counters since the resolver was created. */
export interface SystemResolverStats {
  /** Queries sent to the DNS servers (after cache and de-duplication). */
  sent: number;
  /** Queries answered from the cache. */
  cacheHits: number;
  /** Queries that joined an identical query already in flight. */
  joined: number;
}

const DEFAULTS = {
  timeoutMs: 2000,
  tries: 2,
  cacheSize: 10_000,
  cacheBytes: 32 * 1024 * 1024,
  defaultTtlMs: 300_000,
  maxTtlMs: 3_600_000,
  negativeTtlMs: 300_000,
  errorTtlMs: 0,
  maxInFlight: 200,
};

/** Node/c-ares error codes that mean "no such name" or "no record of this type" (RFC 2308 NXDOMAIN/NODATA). */
const NEGATIVE_CODES = new Set(['ENOTFOUND', 'ENODATA']);

const stripDot = (h: string): string => (h.endsWith('.') ? h.slice(0, -1) : h);

export class SystemResolver implements Resolver {
  /** The shared channel (`socketPerQuery: false`), and the template of the per-query ones. */
  private readonly resolver: NodeResolver;
  private readonly channelOpts: { timeout: number; tries: number };
  private readonly servers: string[] | undefined;
  private readonly socketPerQuery: boolean;
  /** Per-query channels with a query in flight, for {@link cancel}. */
  private readonly live = new Set<NodeResolver>();
  private readonly opts: typeof DEFAULTS;
  private readonly cache: LRUCache<string, DnsAnswer> | undefined;
  private readonly inflight = new Map<string, Promise<DnsAnswer>>();
  private readonly counters: SystemResolverStats = { sent: 0, cacheHits: 0, joined: 0 };
  /** Queries inside c-ares, and the starts of those waiting for a slot (FIFO). */
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  /** @throws DnsConfigError for an invalid server address or a negative/non-finite option. */
  constructor(options: SystemResolverOptions = {}) {
    const opts = { ...DEFAULTS };
    for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
      const v = options[key];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new DnsConfigError(`DNS option ${key} must be a non-negative number, got ${String(v)}`);
      }
      opts[key] = v;
    }
    if (opts.timeoutMs < 1) throw new DnsConfigError('DNS option timeoutMs must be at least 1 ms');
    opts.tries = Math.max(1, Math.floor(opts.tries));
    opts.maxInFlight = Math.max(1, Math.floor(opts.maxInFlight));
    this.opts = opts;
    const perTry = Math.max(1, Math.floor(opts.timeoutMs / (2 ** opts.tries - 1)));
    this.channelOpts = { timeout: perTry, tries: opts.tries };
    this.resolver = new NodeResolver(this.channelOpts);
    if (options.servers) {
      try {
        this.resolver.setServers([...options.servers]);
        // As c-ares normalised them (checked once, above), for the per-query channels.
        this.servers = this.resolver.getServers();
      } catch (e) {
        throw new DnsConfigError(`invalid DNS server in ${JSON.stringify(options.servers)}: ${(e as Error).message}`, {
          cause: e,
        });
      }
    }
    this.socketPerQuery = options.socketPerQuery ?? this.resolver.getServers().length === 1;
    this.cache =
      opts.cacheSize > 0
        ? new LRUCache<string, DnsAnswer>({ max: Math.floor(opts.cacheSize), maxSize: Math.max(1, Math.floor(opts.cacheBytes)), sizeCalculation: answerBytes })
        : undefined;
  }

  query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
    if (!DNS_TYPES.includes(type)) {
      return Promise.resolve({ status: 'error', error: `unsupported record type ${String(type)}` });
    }
    if (typeof name !== 'string') return Promise.resolve({ status: 'error', error: 'query name is not a string' });
    const key = `${type} ${normalizeName(name)}`;
    const cached = this.cache?.get(key);
    if (cached) {
      this.counters.cacheHits++;
      return Promise.resolve(copy(cached) as DnsAnswer<T>);
    }
    const pending = this.inflight.get(key);
    if (pending) {
      this.counters.joined++;
      return pending.then(copy) as Promise<DnsAnswer<T>>;
    }
    const p = this.lookup(normalizeName(name), type).then((answer) => {
      this.inflight.delete(key);
      this.store(key, answer);
      return answer;
    });
    this.inflight.set(key, p);
    return p.then(copy) as Promise<DnsAnswer<T>>;
  }

  /** Counters since creation (a copy). */
  stats(): SystemResolverStats {
    return { ...this.counters };
  }

  /** Empties the answer cache (queries in flight are not affected). */
  clearCache(): void {
    this.cache?.clear();
  }

  /** Cancels every query in flight: each answers `error` at once (e.g. on shutdown). */
  cancel(): void {
    this.resolver.cancel();
    for (const r of this.live) r.cancel();
  }

  private store(key: string, answer: DnsAnswer): void {
    if (!this.cache) return;
    const ttl =
      answer.status === 'ok'
        ? Math.min(answer.ttlMs ?? this.opts.defaultTtlMs, this.opts.maxTtlMs)
        : answer.status === 'nxdomain'
          ? this.opts.negativeTtlMs
          : this.opts.errorTtlMs;
    // A TTL of 0 means "do not cache" (RFC 1035 §3.2.1); lru-cache would read ttl 0 as "forever".
    if (ttl >= 1) this.cache.set(detach(key), answer, { ttl: Math.floor(ttl) });
  }

  /** One query to the servers, bounded by `timeoutMs` (queueing included) even if c-ares overruns its timers. */
  private lookup(name: string, type: DnsType): Promise<DnsAnswer> {
    const timedOut: DnsAnswer = { status: 'error', error: `timeout after ${this.opts.timeoutMs} ms` };
    let expired = false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<DnsAnswer>((resolve) => {
      timer = setTimeout(() => {
        expired = true;
        resolve(timedOut);
      }, this.opts.timeoutMs);
    });
    const answer = this.acquire().then(async () => {
      // Timed out while queued: nobody waits for the answer any more, so do not send.
      if (expired) {
        this.release();
        return timedOut;
      }
      this.counters.sent++;
      try {
        return await this.send(name, type);
      } catch (e) {
        return toFailure(e);
      } finally {
        // The slot is held until c-ares gives up, even after the outer timer answered: the query is still in there.
        this.release();
      }
    });
    return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
  }

  private acquire(): Promise<void> {
    if (this.active < this.opts.maxInFlight) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Passes the slot to the next waiting query, or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  /**
   * One query on its channel: a fresh one (about 15 µs to make; c-ares closes its socket once no query is
   * pending) unless `socketPerQuery` is false.
   */
  private async send(name: string, type: DnsType): Promise<DnsAnswer> {
    if (!this.socketPerQuery) return this.sendOn(this.resolver, name, type);
    const r = new NodeResolver(this.channelOpts);
    if (this.servers !== undefined) r.setServers(this.servers);
    this.live.add(r);
    try {
      return await this.sendOn(r, name, type);
    } finally {
      this.live.delete(r);
    }
  }

  private async sendOn(r: NodeResolver, name: string, type: DnsType): Promise<DnsAnswer> {
    switch (type) {
      case 'A':
      case 'AAAA': {
        const recs = type === 'A' ? await r.resolve4(name, { ttl: true }) : await r.resolve6(name, { ttl: true });
        if (recs.length === 0) return { status: 'nxdomain' };
        const ttlMs = Math.min(...recs.map((x) => x.ttl)) * 1000;
        return { status: 'ok', records: recs.map((x) => x.address), ttlMs };
      }
      case 'MX': {
        const recs = await r.resolveMx(name);
        const records: MxRecord[] = recs.map((m) => ({
          preference: m.priority,
          exchange: stripDot(m.exchange).toLowerCase(),
        }));
        return records.length ? { status: 'ok', records } : { status: 'nxdomain' };
      }
      case 'TXT': {
        // A record's character-strings form one text (RFC 7208 §3.3).
        const records: DnsRecordMap['TXT'][] = (await r.resolveTxt(name)).map((chunks) => chunks.join(''));
        return records.length ? { status: 'ok', records } : { status: 'nxdomain' };
      }
      case 'PTR': {
        // The reverse name is built here and sent as a plain PTR query: `Resolver.reverse` would answer
        // from /etc/hosts first (c-ares' gethostbyaddr), which is not DNS.
        const qname = ptrQueryName(name);
        if (qname === undefined) return { status: 'error', error: `PTR query needs an IP address, got "${name}"` };
        const records = (await r.resolvePtr(qname)).map((p) => stripDot(p).toLowerCase());
        return records.length ? { status: 'ok', records } : { status: 'nxdomain' };
      }
    }
  }
}

/** Each caller gets its own records array, so one caller changing it cannot alter the cache or other callers. */
function copy(answer: DnsAnswer): DnsAnswer {
  return answer.status === 'ok' ? { ...answer, records: [...answer.records] as typeof answer.records } : answer;
}

function toFailure(e: unknown): DnsAnswer {
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && NEGATIVE_CODES.has(code)) return { status: 'nxdomain' };
  return { status: 'error', error: typeof code === 'string' ? code : String((e as Error).message ?? e) };
}
