/**
 * Connection caps of one listening server: `max` open connections in all, and `maxPerPeer` from one
 * peer, so that one host cannot take every slot (1,024 idle milter connections from one client shut
 * the MTA out for the two-hour idle timeout; idle HTTP connections to the JMAP API, which need no
 * token to be opened, would shut out its managers). A connection over a cap is closed as soon as it
 * is accepted, without a reply: the same as Node's own `maxConnections` does, so the client sees one
 * behaviour for both caps (a mail-path client takes it as a filter that is down, an HTTP client as a
 * connection reset).
 */
import type { Server, Socket } from 'node:net';
import ipaddr from '../dns/ipaddr.js';

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

/** Why a connection was closed on accept: the server's `max` was reached, or its peer's `per_peer` cap. */
export type ConnectionRefusal = 'max' | 'per_peer';

/** The open connections of one server, per peer. */
export class ConnectionCaps {
  private readonly perPeer = new Map<string, number>();

  /**
   * `server`'s `maxConnections` is set to `max` (Node closes the connections over it; each is
   * reported to `onRefused` as `max`); {@link admit} applies `maxPerPeer`. Both are positive integers.
   *
   * @throws RangeError for a cap that is not a positive integer.
   */
  constructor(
    server: Server,
    max: number,
    private readonly maxPerPeer: number,
    private readonly onRefused: (reason: ConnectionRefusal) => void = () => undefined,
  ) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxConnections must be a positive integer, not ${max}`);
    if (!Number.isInteger(maxPerPeer) || maxPerPeer < 1) throw new RangeError(`maxConnectionsPerPeer must be a positive integer, not ${maxPerPeer}`);
    server.maxConnections = max;
    server.on('drop', () => onRefused('max'));
  }

  /**
   * Counts `socket` under its peer until it closes, or, when the peer has `maxPerPeer` open already,
   * destroys it (reported as `per_peer`) and returns false: the caller then leaves it alone.
   * Connections without a peer address (unix sockets) are always admitted.
   */
  admit(socket: Socket): boolean {
    const key = peerKey(socket.remoteAddress);
    if (key === undefined) return true;
    const open = this.perPeer.get(key) ?? 0;
    if (open >= this.maxPerPeer) {
      this.onRefused('per_peer');
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
