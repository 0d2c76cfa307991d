/**
 * Connection caps of one listener: `limits.maxConnections` in all, and `limits.maxConnectionsPerPeer`
 * from one peer, so that one host cannot take every slot (1,024 idle milter connections from one
 * client shut the MTA out for the two-hour idle timeout). A connection over a cap is closed as soon
 * as it is accepted, without a reply: the same as Node's own `maxConnections`, which the client (an
 * MTA) takes as a filter that is down (Postfix then applies `milter_default_action`, spamc passes the
 * message on unscanned, rspamc reports the error).
 */
import type { Server, Socket } from 'node:net';
import ipaddr from '../dns/ipaddr.js';
import type { Protocol, ServerMetrics } from './metrics.js';

/**
 * The peer a remote address counts under: an IPv4 address itself (also written as IPv4-mapped
 * IPv6), an IPv6 address by its /64 (what one host or one customer usually gets, so that the 2^64
 * addresses of one /64 are one peer). Undefined for no address (a unix socket) or one that does not
 * parse.
 */
export function peerKey(address: string | undefined): string | undefined {
  if (address === undefined || address === '') return undefined;
  try {
    const a = ipaddr.process(address);
    if (a.kind() === 'ipv4') return a.toString();
    const parts = (a as ipaddr.IPv6).parts.slice(0, 4);
    return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return undefined;
  }
}

/** Listeners whose connections the caps count: the mail-path protocols, and the metrics listener. */
export type CappedListener = Protocol | 'metrics';

/** The open connections of one listener, per peer. */
export class ConnectionCaps {
  private readonly perPeer = new Map<string, number>();

  /**
   * `server`'s `maxConnections` is set to `max` (Node closes the connections over it; they are
   * counted as `max` refusals); {@link admit} applies `maxPerPeer`.
   */
  constructor(
    server: Server,
    private readonly listener: CappedListener,
    max: number,
    private readonly maxPerPeer: number,
    private readonly metrics: ServerMetrics,
  ) {
    server.maxConnections = max;
    server.on('drop', () => metrics.connectionsRefused.inc({ protocol: listener, reason: 'max' }));
  }

  /**
   * Counts `socket` under its peer until it closes, or, when the peer has `maxPerPeer` open already,
   * destroys it (counted as a `per_peer` refusal) and returns false: the caller then leaves it alone.
   * Connections without a peer address (unix sockets) are always admitted.
   */
  admit(socket: Socket): boolean {
    const key = peerKey(socket.remoteAddress);
    if (key === undefined) return true;
    const open = this.perPeer.get(key) ?? 0;
    if (open >= this.maxPerPeer) {
      this.metrics.connectionsRefused.inc({ protocol: this.listener, reason: 'per_peer' });
      socket.destroy();
      return false;
    }
    this.perPeer.set(key, open + 1);
    socket.once('close', () => {
      const left = (this.perPeer.get(key) ?? 1) - 1;
      if (left <= 0) this.perPeer.delete(key);
      else this.perPeer.set(key, left);
    });
    return true;
  }

  /** Open connections from the peer of `address` (see {@link peerKey}). */
  openFrom(address: string): number {
    const key = peerKey(address);
    return key === undefined ? 0 : (this.perPeer.get(key) ?? 0);
  }
}
