/**
 * Where a redirector URL points (Stalwart's url module, `http_get_header`): one HTTP GET per hop that
 * reads only the `Location` response header (any status), with a per-hop time limit, no automatic
 * redirect following and no connection reuse. In Stalwart's test mode (the suite's `testMode.httpHeader`)
 * a URL containing `redirect.` "redirects" to the text after its first `/?`, without any network.
 *
 * Unlike Stalwart, a hop connects only to a public unicast address on port 80 or 443 (docs/analysis.md,
 * "Redirects"): the message chooses the URL, and a re-registered shortener domain may point at
 * 127.0.0.1, a private network or a cloud metadata address. The host is resolved through the engine's
 * resolver (the message's DNS budget), checked, and the connection pinned to the checked address.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { MAX_TIMER_MS } from '../util/index.js';
import { AddressPolicy, AddressRefusedError, pinnedLookup, resolveAllowed, type HostResolver, type PinnedAddress } from '../net/index.js';

/** Stalwart's user agent for redirect requests. */
export const REDIRECT_USER_AGENT = 'Mozilla/5.0 (X11; Linux i686; rv:109.0) Gecko/20100101 Firefox/118.0';
/** Stalwart's bounds: 3 requests per redirector URL, 5 s each. */
export const DEFAULT_MAX_HOPS = 3;
export const DEFAULT_HOP_TIMEOUT_MS = 5_000;

/** Location a URL answers; `undefined` when none, on an error, or past the time limit. Never rejects. */
export type LocationFetcher = (url: string) => Promise<string | undefined>;

/** The test-mode fetcher: `…redirect.…/?TARGET` answers TARGET; anything else has no Location. */
export const testModeFetcher: LocationFetcher = (url) => {
  if (!url.includes('redirect.')) return Promise.resolve(undefined);
  const i = url.indexOf('/?');
  return Promise.resolve(i < 0 ? undefined : url.slice(i + 2));
};

/** Ports a hop may connect to unless the configuration names others: the http and https defaults. */
export const DEFAULT_REDIRECT_PORTS: readonly number[] = [80, 443];

/** What an {@link httpFetcher} connects to, and how it reports a hop it refuses. */
export interface HttpFetcherOptions {
  /** Per-hop time limit for the HTTP request, ms (default {@link DEFAULT_HOP_TIMEOUT_MS}); DNS has the message's own. */
  timeoutMs?: number;
  /** Resolves a hop's host name (the engine's resolver with the message's DNS budget). */
  resolve: HostResolver;
  /** Which addresses a hop may connect to. */
  policy: AddressPolicy;
  /** Ports a hop may connect to (default {@link DEFAULT_REDIRECT_PORTS}); a URL without a port uses its scheme's. */
  ports?: readonly number[];
  /** Wraps the HTTP request's wait (the engine leaves it out of the classify time budget). */
  wait?: <T>(p: Promise<T>) => Promise<T>;
  /** Called when a hop is not made because of its port or address (not when its name does not resolve). */
  onRefused?: (url: string, why: string) => void;
}

/**
 * An HTTP fetcher: GET `url` (http or https only) on an allowed port at an allowed address, resolve with
 * its `Location` header as soon as the response head arrives (the body is never read), `undefined` after
 * `timeoutMs` ms, on any error, or when the hop is refused.
 */
export function httpFetcher(opts: HttpFetcherOptions): LocationFetcher {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_HOP_TIMEOUT_MS;
  const ports = opts.ports ?? DEFAULT_REDIRECT_PORTS;
  const wait = opts.wait ?? (<T>(p: Promise<T>): Promise<T> => p);
  return async (url) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return undefined;
    }
    const https = target.protocol === 'https:';
    if (!https && target.protocol !== 'http:') return undefined;
    const port = target.port === '' ? (https ? 443 : 80) : Number(target.port);
    if (!ports.includes(port)) {
      opts.onRefused?.(url, `port ${port} is not one redirects may use (${ports.join(', ')})`);
      return undefined;
    }
    let pinned: PinnedAddress;
    try {
      pinned = await resolveAllowed(target.hostname, opts.resolve, opts.policy);
    } catch (e) {
      // A name that does not resolve ends the chain silently, as a failed request does in Stalwart.
      if (e instanceof AddressRefusedError && e.reason === 'policy') opts.onRefused?.(url, e.message);
      return undefined;
    }
    return wait(getLocation(target, https, pinned, timeoutMs));
  };
}

/** One GET to `target` on a connection to `pinned`; its Location, or `undefined`. Never rejects. */
function getLocation(target: URL, https: boolean, pinned: PinnedAddress, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (v: string | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(v);
    };
    const timer = setTimeout(() => {
      finish(undefined);
      r.destroy();
    }, timeoutMs);
    const r = (https ? httpsRequest : httpRequest)(
      target,
      { method: 'GET', agent: false, lookup: pinnedLookup(pinned), headers: { 'user-agent': REDIRECT_USER_AGENT, connection: 'close' } },
      (res) => {
        const loc = res.headers.location;
        finish(typeof loc === 'string' && loc !== '' ? loc : undefined);
        res.destroy();
      },
    );
    r.on('error', () => finish(undefined));
    r.end();
  });
}

const FOLLOW_KEYS = ['maxHops', 'timeoutMs', 'allowedNetworks', 'ports'];

/**
 * What is wrong with an `analysis.followRedirects` value (`true`/`false` or `{ maxHops, timeoutMs,
 * allowedNetworks, ports }`), for an error at start; `undefined` when it is usable. Never throws.
 */
export function followRedirectsProblem(v: unknown): string | undefined {
  if (v === undefined || typeof v === 'boolean') return undefined;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `expected true, false or an object, got ${JSON.stringify(v)}`;
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!FOLLOW_KEYS.includes(k) && o[k] !== undefined) return `unknown field "${k}" (the fields are ${FOLLOW_KEYS.join(', ')})`;
  for (const k of ['maxHops', 'timeoutMs'] as const) {
    const n = o[k];
    if (n !== undefined && (typeof n !== 'number' || !Number.isFinite(n) || n <= 0)) return `${k} must be a positive number, got ${JSON.stringify(n)}`;
  }
  // At most what a timer can wait: a longer timeout fired after 1 ms (MAX_TIMER_MS).
  if (typeof o.timeoutMs === 'number' && o.timeoutMs > MAX_TIMER_MS) return `timeoutMs must be at most ${MAX_TIMER_MS}, got ${o.timeoutMs}`;
  if (o.allowedNetworks !== undefined) {
    if (!Array.isArray(o.allowedNetworks)) return 'allowedNetworks must be an array of addresses or CIDR ranges';
    try {
      new AddressPolicy(o.allowedNetworks as string[]);
    } catch (e) {
      return (e as Error).message;
    }
  }
  if (o.ports !== undefined) {
    const ports = o.ports;
    if (!Array.isArray(ports) || ports.some((p) => typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535)) {
      return `ports must be an array of port numbers (1–65535), got ${JSON.stringify(ports)}`;
    }
  }
  return undefined;
}
