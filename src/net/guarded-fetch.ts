/**
 * A `fetch` for remote list downloads that connects only where an {@link AddressPolicy} allows: each
 * request (the first and every redirect) resolves its host once, checks the addresses and pins the
 * connection to the one that passed (src/net/pinned.ts). Built on `node:http`/`node:https`, since the
 * built-in `fetch` offers no hook between resolving a name and connecting to it.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { AddressPolicy } from './address-policy.js';
import { pinnedLookup, resolveAllowed, systemHostResolver, type HostResolver, type PinnedAddress } from './pinned.js';

/** Options of {@link guardedFetch}. */
export interface GuardedFetchOptions {
  /** Which addresses a request may connect to. */
  policy: AddressPolicy;
  /** Resolves host names (default: the operating system's resolver, {@link systemHostResolver}). */
  resolve?: HostResolver;
  /** Redirects followed at most (default 10, as reqwest, the HTTP client of Stalwart's list downloads). */
  maxRedirects?: number;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * A GET-only `fetch`: `init.headers`, `init.signal` (an abort or timeout rejects with the signal's reason,
 * as `fetch` does) and `init.redirect` (`follow`, the default; `manual` returns the 3xx response; `error`
 * rejects) are honoured, the method and body are not. Redirects to schemes other than http and https are
 * refused. A body the server sent with a `Content-Encoding` of gzip, deflate or br is decoded, as `fetch` decodes it
 * (a server or a bucket that stores lists compressed sends them so whatever the request asks); other codings are
 * passed on as they came. Rejects with `AddressRefusedError` when a host's addresses are refused or it does not resolve,
 * with an `Error` `fetch failed: CODE` when the connection fails.
 */
export function guardedFetch(opts: GuardedFetchOptions): typeof fetch {
  const resolve = opts.resolve ?? systemHostResolver;
  const maxRedirects = opts.maxRedirects ?? 10;
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input));
    const signal = init?.signal ?? undefined;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    for (let redirects = 0; ; redirects++) {
      signal?.throwIfAborted();
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`fetch failed: ${url.protocol} URLs are not fetched (${url.href})`);
      const pinned = await resolveAllowed(url.hostname, resolve, opts.policy);
      signal?.throwIfAborted();
      const res = await get(url, pinned, headers, signal);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (!REDIRECT_STATUSES.has(status) || location === undefined || init?.redirect === 'manual') return toResponse(res);
      res.destroy();
      if (init?.redirect === 'error') throw new Error(`fetch failed: redirected to ${location}`);
      if (redirects >= maxRedirects) throw new Error(`fetch failed: more than ${maxRedirects} redirects`);
      url = new URL(location, url);
    }
  };
}

/** One GET on a connection pinned to `pinned`; resolves with the response head, its body unread. */
function get(url: URL, pinned: PinnedAddress, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method: 'GET', agent: false, lookup: pinnedLookup(pinned), headers }, (res) => {
      signal?.removeEventListener('abort', onAbort);
      // An abort while the body is read ends the body stream with the signal's reason.
      if (signal !== undefined) {
        const bodyAbort = (): void => {
          res.destroy(signal.reason as Error);
        };
        signal.addEventListener('abort', bodyAbort, { once: true });
        res.once('close', () => signal.removeEventListener('abort', bodyAbort));
      }
      resolve(res);
    });
    const onAbort = (): void => {
      req.destroy();
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (e: NodeJS.ErrnoException) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new Error(`fetch failed: ${e.code ?? e.message}`));
    });
    req.end();
  });
}

function toResponse(res: IncomingMessage): Response {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) headers.append(k, one);
  }
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) {
    res.destroy();
    throw new Error(`fetch failed: HTTP status ${status} is not a final response status`);
  }
  if (NULL_BODY_STATUSES.has(status)) {
    res.destroy();
    return new Response(null, { status, statusText: res.statusMessage ?? '', headers });
  }
  return new Response(Readable.toWeb(decoded(res)) as ReadableStream<Uint8Array>, { status, statusText: res.statusMessage ?? '', headers });
}

/** Content codings decoded at most: a longer chain only multiplies the work a server can ask for (undici caps it too). */
const MAX_CODINGS = 5;

/**
 * `res`'s body with its `Content-Encoding` undone, last coding first (RFC 9110 §8.4): gzip (x-gzip), deflate
 * (zlib-wrapped, RFC 9110 §8.4.1.2) and br, as the built-in `fetch` does; the body as it came when a
 * coding is another one or there are more than {@link MAX_CODINGS}. A corrupt coding makes the stream fail.
 * The decoded size is the caller's to cap (downloadList counts the bytes it reads from this stream).
 */
function decoded(res: IncomingMessage): Readable {
  const header = res.headers['content-encoding'];
  if (header === undefined) return res;
  const codings = header
    .toLowerCase()
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0 || codings.length > MAX_CODINGS || !codings.every((c) => ['gzip', 'x-gzip', 'deflate', 'br'].includes(c))) return res;
  let out: Readable = res;
  for (const c of codings.reverse()) {
    const z = c === 'br' ? createBrotliDecompress() : c === 'deflate' ? createInflate() : createGunzip();
    const from = out;
    from.on('error', (e) => z.destroy(e));
    out = from.pipe(z);
  }
  // Closing the decoded stream (a size cap, an abort) closes the connection too.
  out.once('close', () => res.destroy());
  return out;
}
