/**
 * The connection caps of the mail-path listeners and the metrics listener (src/net
 * {@link ConnectionCaps}: `limits.maxConnections` in all, `limits.maxConnectionsPerPeer` from one
 * peer), with each refusal counted in `spamrule_connections_refused_total{protocol,reason}`. A
 * connection over a cap is closed as soon as it is accepted, without a reply, which the client (an
 * MTA) takes as a filter that is down (Postfix then applies `milter_default_action`, spamc passes
 * the message on unscanned, rspamc reports the error).
 */
import type { Server } from 'node:net';
import { ConnectionCaps } from '../net/index.js';
import type { CappedListener, ServerMetrics } from './metrics.js';

/** Caps for `server`, the `listener` of that name, counting refusals in `metrics`. */
export function listenerCaps(server: Server, listener: CappedListener, max: number, maxPerPeer: number, metrics: ServerMetrics): ConnectionCaps {
  return new ConnectionCaps(server, max, maxPerPeer, (reason) => metrics.connectionsRefused.inc({ protocol: listener, reason }));
}
