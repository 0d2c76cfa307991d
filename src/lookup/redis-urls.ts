/**
 * Redis URLs as the Redis stores read them: the address of a node (`redis://[user:pass@]host:port`, a bare
 * `host:port`), the checks a URL passes before any connection, and what it asks of TLS. Internal to the Redis
 * adapter (src/lookup/redis.ts).
 * @internal
 */
import type { ClusterNode } from 'ioredis';
import { LookupConfigError } from './config.js';
import { maskUrlPassword } from './secret.js';

/** The host and port of a node URL (`redis://host:port`, or a bare `host:port`). */
export function node(url: string): ClusterNode & { host: string; port: number } {
  const u = new URL(url.includes('://') ? url : `redis://${url}`);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 6379) };
}

/**
 * What a Redis URL asks of TLS, as redis-rs (Stalwart's Redis client) reads it: `rediss://` is TLS with the
 * certificate checked (chain and host name), `rediss://…#insecure` TLS accepting any certificate (redis-rs
 * `TlsMode::Insecure`: the Redis stores' counterpart of `allowInvalidCerts`), anything else plain text.
 */
export type TlsMode = 'plain' | 'verify' | 'insecure';

/** The {@link TlsMode} of one URL (one that passed {@link checkRedisUrl}). */
export function tlsMode(url: string): TlsMode {
  if (!/^rediss:\/\//i.test(url)) return 'plain';
  return new URL(url).hash === '#insecure' ? 'insecure' : 'verify';
}

/** The ioredis `tls` option of a mode (undefined: plain text). */
export function tlsOptions(mode: TlsMode): { rejectUnauthorized: boolean } | undefined {
  return mode === 'plain' ? undefined : { rejectUnauthorized: mode === 'verify' };
}

/**
 * The one TLS mode of a Cluster's or Sentinel's `urls`. A mix (some `rediss://`, some `redis://`, or some
 * with `#insecure`) is refused, as Stalwart refuses it for Sentinel ("All Redis Sentinel URLs must use the
 * same scheme and TLS settings"); redis-rs would take a Cluster's from its first URL and silently apply it
 * to the others, so a `rediss://` URL could end up in plain text.
 * @throws LookupConfigError naming `urls` and the URLs (passwords masked).
 */
export function storeTlsMode(namespace: string, urls: readonly string[]): TlsMode {
  const modes = new Set(urls.map(tlsMode));
  if (modes.size > 1) {
    const shown = urls.map((u) => `"${maskUrlPassword(u)}"`).join(', ');
    throw new LookupConfigError(
      namespace,
      `urls: all URLs must use the same scheme and TLS setting (all redis://, all rediss://, or all rediss://…#insecure), not a mix: ${shown}`,
    );
  }
  return modes.values().next().value ?? 'plain';
}

/**
 * Checks a server address before any connection: ioredis takes `redis://` and `rediss://` URLs (or a bare
 * `host:port` in a cluster or sentinel list, or a Unix socket path for `Redis`); anything else would
 * only fail at the first lookup, with a connect error that names no URL. A `rediss://` URL's fragment is
 * `#insecure` or none (redis-rs). Throws `LookupConfigError`.
 */
export function checkRedisUrl(namespace: string, field: string, url: string, bare: boolean): void {
  if (url.startsWith('/') && !bare) return;
  // The message reaches logs and JMAP clients: never with the URL's password.
  const shown = maskUrlPassword(url);
  let u: URL;
  try {
    u = new URL(url.includes('://') || !bare ? url : `redis://${url}`);
  } catch {
    throw new LookupConfigError(namespace, `${field}: "${shown}" is not a URL (redis://host:port, rediss:// for TLS)`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new LookupConfigError(namespace, `${field}: "${shown}" is not a Redis URL: the scheme is redis:// or rediss:// (TLS), not ${u.protocol}//`);
  }
  // redis-rs refuses any other fragment on a rediss:// URL; ignoring it could hide a typo of #insecure.
  if (u.protocol === 'rediss:' && u.hash !== '' && u.hash !== '#insecure') {
    throw new LookupConfigError(namespace, `${field}: "${shown}": the only fragment a rediss:// URL takes is #insecure (accept any certificate), not ${u.hash}`);
  }
}

/**
 * The credentials written in a Cluster store's `urls` (`redis://user:password@host:port`), used when the store
 * has no `authSecret`: redis-rs (Stalwart's Redis client) takes the first URL's for every node when its builder
 * has none. The URLs must agree: redis-rs refuses initial nodes with another password ("Cannot use different
 * password among initial nodes"), and so does this, whether or not the first URL has one. Percent-escapes are
 * decoded. `{}` when no URL carries a password (a user name alone sends no AUTH, as {@link credentials} of
 * redis.ts).
 * @throws LookupConfigError naming `urls` (passwords masked) when the URLs carry different credentials.
 */
export function urlCredentials(namespace: string, urls: readonly string[]): { username?: string; password?: string } {
  const creds = urls.map((url) => {
    const u = new URL(url.includes('://') ? url : `redis://${url}`);
    return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  });
  if (creds.every((c) => c.password === '')) return {};
  const first = creds[0]!;
  if (creds.some((c) => c.password !== first.password || c.username !== first.username)) {
    const shown = urls.map((u) => `"${maskUrlPassword(u)}"`).join(', ');
    throw new LookupConfigError(namespace, `urls: the URLs carry different user names or passwords; give every URL the same ones, or set authSecret: ${shown}`);
  }
  return { password: first.password, ...(first.username !== '' ? { username: first.username } : {}) };
}
