/**
 * Where a redirector URL points (Stalwart's url module, `http_get_header`): one HTTP GET per hop that
 * reads only the `Location` response header (any status), with a per-hop time limit, no automatic
 * redirect following and no connection reuse. In Stalwart's test mode (the suite's `testMode.httpHeader`)
 * a URL containing `redirect.` "redirects" to the text after its first `/?`, without any network.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

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

/**
 * An HTTP fetcher: GET `url` (http or https only), resolve with its `Location` header as soon as the
 * response head arrives (the body is never read), `undefined` after `timeoutMs` ms or on any error.
 */
export function httpFetcher(timeoutMs: number = DEFAULT_HOP_TIMEOUT_MS): LocationFetcher {
  return (url) =>
    new Promise((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        resolve(undefined);
        return;
      }
      const req = target.protocol === 'https:' ? httpsRequest : target.protocol === 'http:' ? httpRequest : undefined;
      if (req === undefined) {
        resolve(undefined);
        return;
      }
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
      const r = req(
        target,
        { method: 'GET', agent: false, headers: { 'user-agent': REDIRECT_USER_AGENT, connection: 'close' } },
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
