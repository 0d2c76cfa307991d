/**
 * The ioredis side of {@link HostPins} (src/lookup/store-pins.ts): a `Connector` that opens each connection
 * of a Redis client or Cluster node where the pins say, and a Sentinel `natMap` that checks the master a
 * sentinel names. Internal to the Redis adapter (its types name ioredis, which the public declarations do not).
 * @internal
 */
import { isIP, createConnection, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { AbstractConnector } from 'ioredis';
import type { Ioredis } from './drivers.js';
import { refusedError, type HostPins } from './store-pins.js';

/** The ioredis connection options a connector reads. */
interface ConnectorOptions {
  host?: string;
  port?: number;
  path?: string;
  family?: number;
  tls?: ConnectionOptions;
  disconnectTimeout?: number;
}

/**
 * An ioredis `Connector` (the `Connector` option of a Redis client, and of every node of a Cluster through
 * `redisOptions`) that opens each connection where `pins.route` says: a name at its pinned address with TLS
 * `servername` the name, an address only when allowed. A refused host rejects the connect with
 * {@link refusedError}; ioredis reports it as the client's (or node's) connection error.
 */
export function pinnedConnector(io: Ioredis, pins: HostPins): new (options: unknown) => AbstractConnector {
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
          const route = pins.route(host);
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
          });
          resolve(stream);
        });
      });
    }
  };
}

/**
 * A Sentinel `natMap` that lets through the master address a sentinel names only when `pins.route` allows it
 * (a name goes to its pinned address); otherwise it throws the refusal, which ioredis' sentinel connector
 * catches and reports as that sentinel's failure ("failed to connect to sentinel … because …"), going on to
 * the next one.
 */
export function sentinelNatCheck(pins: HostPins): (key: string) => { host: string; port: number } | null {
  return (key) => {
    const i = key.lastIndexOf(':');
    const host = key.slice(0, i);
    const port = Number(key.slice(i + 1));
    const route = pins.route(host);
    if ('problem' in route) throw refusedError(key, route.problem);
    return route.host === host ? null : { host: route.host, port };
  };
}
