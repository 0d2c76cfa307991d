/**
 * Stalwart's `UrlParts` (`stalwart:crates/spam-filter/src/analysis/url.rs`, docs/message-analysis.md):
 * a URL as found, its normalised form and the parts `hyper::Uri` (http 1.x) gives for it.
 */
import { hostname, sldOrDefault } from './hostname.js';

export interface UrlParts {
  /** The raw string as found. */
  readonly original: string;
  /** Trimmed and lower-cased; scheme-less URLs get `https://` prepended after lower-casing. */
  readonly url: string;
  /** Parts; all `""`/0 when the URI does not parse or has no host. */
  readonly scheme: string;
  readonly authority: string;
  readonly host: string;
  readonly sld: string;
  readonly port: number;
  readonly path: string;
  readonly query: string;
  readonly pathQuery: string;
}

/** Characters `http::Uri` accepts in an authority (unreserved, sub-delims, `:`, `@`, `[`, `]`, `%`). */
const AUTHORITY_RE = /^[A-Za-z0-9\-._~!$&'()*+,;=:@[\]%]*$/;
/** Path and query: visible ASCII except `#` (which starts the dropped fragment). */
const PATH_RE = /^[\x21-\x7e]*$/;
const SCHEME_RE = /^[a-z][a-z0-9+\-.]{0,63}$/;

/**
 * The port of an authority as `http::Uri::port_u16` gives it: the digits after the colon when they make
 * a u16, else 0 (no port). http::Uri does not check the port when it parses (`cid:image1` has the host
 * `cid`, `example.com:abc` the host `example.com`).
 */
function portNumber(p: string): number {
  if (!/^[0-9]{1,5}$/.test(p)) return 0;
  const n = Number(p);
  return n <= 65535 ? n : 0;
}

/**
 * Builds the parts of a URL element. `schemeless` marks tokens found without a scheme (they get
 * `https://`). Non-ASCII or unparsable URLs keep `url`/`original` and get empty parts. Never throws.
 */
export function urlParts(original: string, schemeless: boolean): UrlParts {
  let url = original.trim().toLowerCase();
  if (schemeless) url = 'https://' + url;
  const empty: UrlParts = { original, url, scheme: '', authority: '', host: '', sld: '', port: 0, path: '', query: '', pathQuery: '' };
  // hyper::Uri rejects anything outside visible ASCII.
  if (url.length === 0 || url.length > 65_534 || !PATH_RE.test(url)) return empty;
  let scheme = '';
  let rest = url;
  const sep = url.indexOf('://');
  if (sep >= 0) {
    scheme = url.slice(0, sep);
    if (!SCHEME_RE.test(scheme)) return empty;
    rest = url.slice(sep + 3);
  } else if (url.startsWith('/')) {
    return empty; // origin-form: no host
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  let authEnd = rest.length;
  for (let k = 0; k < rest.length; k++) {
    const ch = rest.charCodeAt(k);
    if (ch === 47 || ch === 63) {
      authEnd = k;
      break;
    }
  }
  const authority = rest.slice(0, authEnd);
  if (sep < 0 && authEnd !== rest.length) return empty; // authority-form must be the whole string
  if (authority.length === 0 || !AUTHORITY_RE.test(authority)) return empty;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  // A `%` is allowed in the userinfo and in an IPv6 literal's zone, not in a host name (http::Uri).
  if ((hostPort.startsWith('[') ? hostPort.slice(hostPort.indexOf(']') + 1) : hostPort).includes('%')) return empty;
  let host = hostPort;
  let port = 0;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) return empty;
    host = hostPort.slice(0, close + 1);
    const after = hostPort.slice(close + 1);
    if (after.indexOf(':') !== after.lastIndexOf(':')) return empty;
    const colon = after.indexOf(':');
    if (colon >= 0) port = portNumber(after.slice(colon + 1));
  } else {
    const colon = hostPort.indexOf(':');
    if (colon >= 0) {
      const p = hostPort.slice(colon + 1);
      // http::Uri refuses two port colons ("localhost:8080:3030") but not a port that is no number.
      if (p.includes(':')) return empty;
      host = hostPort.slice(0, colon);
      port = portNumber(p);
    }
  }
  if (host.length === 0) return empty;
  const pq = rest.slice(authEnd);
  const q = pq.indexOf('?');
  let path = q < 0 ? pq : pq.slice(0, q);
  const query = q < 0 ? '' : pq.slice(q + 1);
  // http::Uri reports "/" for an empty path when there is a scheme, "" for authority-form.
  if (path.length === 0 && sep >= 0) path = '/';
  const pathQuery = q < 0 ? path : path + '?' + query;
  const h = hostname(host);
  return { original, url, scheme, authority, host: h.fqdn, sld: sldOrDefault(h), port, path, query, pathQuery };
}
