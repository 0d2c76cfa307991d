/**
 * The ioredis side of {@link HostPins} (src/lookup/store-pins.ts) and of TLS to the host name: a `Connector`
 * that opens each connection of a Redis client or Cluster node where the pins say (or, without pins, to the
 * host as given) with TLS `servername` the host name, a Sentinel connector that opens its sentinel connections
 * through it, and a Sentinel `natMap` that checks the master a sentinel names. Internal to the Redis adapter
 * (its types name ioredis, which the public declarations do not).
 * @internal
 */
import { isIP, createConnection, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { AbstractConnector } from 'ioredis';
import type { Ioredis } from './drivers.js';
import { refusedError, type HostPins, type PinnedRoute } from './store-pins.js';

/** The ioredis connection options a connector reads. */
interface ConnectorOptions {
  host?: string;
  port?: number;
  path?: string;
  family?: number;
  tls?: ConnectionOptions;
  disconnectTimeout?: number;
}

/** An ioredis connector class: what the `Connector` option of a Redis client takes. */
export type ConnectorClass = new (options: unknown) => AbstractConnector;

/**
 * An ioredis `Connector` (the `Connector` option of a Redis client, and of every node of a Cluster through
 * `redisOptions`) that opens each connection where `pins.route` says: a name at its pinned address with TLS
 * `servername` the name, an address only when allowed. A refused host rejects the connect with
 * {@link refusedError}; ioredis reports it as the client's (or node's) connection error. Without `pins` the
 * connection goes to the host as given (a name through the system resolver), and TLS still gets the name as
 * `servername`: ioredis' own connector sends no SNI (Node's `tls.connect` sends none unless told), although
 * the certificate is checked against the name either way. `onSocketError` hears the first error of each socket
 * (a refused certificate, a refused connection), which ioredis does not pass on for every connection.
 */
export function pinnedConnector(io: Ioredis, pins: HostPins | undefined, onSocketError?: (e: Error) => void): ConnectorClass {
  return class PinnedConnector extends io.AbstractConnector {
    private readonly options: ConnectorOptions;
    constructor(options: unknown) {
      const o = options as ConnectorOptions;
      super(o.disconnectTimeout ?? 2000);
      this.options = o;
    }
    connect(): Promise<Socket> {
      const o = this.options;
      this.connecting = true;
      return new Promise((resolve, reject) => {
        // As ioredis' StandaloneConnector: the stream is made on the next tick, once the client listens.
        process.nextTick(() => {
          if (!this.connecting) return reject(new Error('Connection is closed.'));
          const host = o.path ?? o.host ?? '127.0.0.1';
          const route: PinnedRoute = pins === undefined ? { host } : pins.route(host);
          if ('problem' in route) return reject(refusedError(o.path ?? `${host}:${o.port ?? 6379}`, route.problem));
          let stream: Socket;
          try {
            const where = o.path !== undefined ? { path: route.host } : { host: route.host, port: o.port ?? 6379 };
            if (o.tls) {
              // SNI and the certificate check are the name's (never an IP address's, RFC 6066 §3).
              const servername = o.tls.servername ?? route.servername ?? (o.host !== undefined && isIP(o.host) === 0 ? o.host : undefined);
              stream = tlsConnect({ ...o.tls, ...where, ...(servername !== undefined ? { servername } : {}) });
            } else stream = createConnection(where);
          } catch (e) {
            return reject(e);
          }
          this.stream = stream;
          stream.once('error', (err) => {
            this.firstError = err;
            onSocketError?.(err);
          });
          resolve(stream);
        });
      });
    }
  };
}

/**
 * An ioredis `SentinelConnector` whose connections to the sentinels go through `connector` (ioredis opens them
 * with its own connector, which neither follows pins nor sends a TLS server name), so that a sentinel named by
 * a host name is connected to at its pinned address, with `servername` the name. The override is of
 * `connectToSentinel`, which ioredis (6, the version package.json names) calls for every sentinel connection
 * with the options it builds (host, port, credentials, `sentinelTLS`); the class refuses to start without it.
 */
export function sentinelConnector(io: Ioredis, connector: ConnectorClass): ConnectorClass {
  type Overridable = { connectToSentinel(endpoint: unknown, options?: object): unknown };
  return class RoutedSentinelConnector extends io.SentinelConnector {
    constructor(options: unknown) {
      super(options as ConstructorParameters<Ioredis['SentinelConnector']>[0]);
      const self = this as unknown as Partial<Overridable>;
      const own = self.connectToSentinel;
      if (typeof own !== 'function') throw new TypeError('ioredis SentinelConnector has no connectToSentinel: unsupported ioredis version');
      self.connectToSentinel = (endpoint, options) => own.call(this, endpoint, { ...options, Connector: connector });
    }
  };
}

/**
 * A Sentinel `natMap` for the master a sentinel names. With `pins`, it lets the address through only when
 * `pins.route` allows it (a name goes to its pinned address); otherwise it throws the refusal, which ioredis'
 * sentinel connector catches and reports as that sentinel's failure ("failed to connect to sentinel … because
 * …"), going on to the next one. A name (announced by a sentinel with `announce-hostnames yes`) keeps it as
 * the TLS `servername`: ioredis passes the mapped address to `tls.connect` as it is (with `enableTLSForSentinelMode`).
 */
export function sentinelNatCheck(pins: HostPins | undefined): (key: string) => { host: string; port: number; servername?: string } | null {
  return (key) => {
    const i = key.lastIndexOf(':');
    const host = key.slice(0, i);
    const port = Number(key.slice(i + 1));
    if (pins === undefined) return isIP(host) === 0 ? { host, port, servername: host } : null;
    const route = pins.route(host);
    if ('problem' in route) throw refusedError(key, route.problem);
    if (route.servername !== undefined) return { host: route.host, port, servername: route.servername };
    return route.host === host ? null : { host: route.host, port };
  };
}
