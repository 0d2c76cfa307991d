/**
 * The JMAP listener's connection caps, as the mail-path listeners have them (src/net ConnectionCaps): one
 * peer (here 127.0.0.2) may hold at most `maxConnectionsPerPeer` connections; one more is closed as soon as
 * it is accepted, before any token is read, while that peer's open connections and other peers (127.0.0.1)
 * are still served; once one closes, the peer may connect again. Each refusal is reported with its reason.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionRefusal } from '../../src/net/index.js';
import { startHarness, type Harness } from './harness.js';

const PER_PEER = 3;
let h: Harness;
let port: number;
const refusals: ConnectionRefusal[] = [];

beforeAll(async () => {
  h = await startHarness({ maxConnectionsPerPeer: PER_PEER, onConnectionRefused: (r) => refusals.push(r) });
  port = Number(new URL(h.server.url).port);
});
afterAll(async () => {
  await h?.close();
});

/** A connection from `from`, once connected. */
function open(from: string): Promise<Socket> {
  return new Promise((resolve) => {
    const c = connect({ port, host: '127.0.0.1', localAddress: from }, () => resolve(c));
    c.on('error', () => undefined);
  });
}

/** Sends a Session request on `c` and resolves with the status line, or '' when the server closes without a reply. */
function session(c: Socket): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const onData = (d: Buffer): void => {
      out += d.toString('latin1');
      if (out.includes('\r\n\r\n')) {
        c.off('data', onData);
        resolve(out.slice(0, out.indexOf('\r\n')));
      }
    };
    c.on('data', onData);
    c.once('close', () => resolve(out.slice(0, out.indexOf('\r\n') >= 0 ? out.indexOf('\r\n') : out.length)));
    c.write(`GET /jmap/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.admin}\r\n\r\n`);
  });
}

describe('JMAP maxConnectionsPerPeer', () => {
  it('closes the connection one over the cap from that peer; its open ones and other peers are served; a freed slot takes a new one', async () => {
    const mine = await Promise.all(Array.from({ length: PER_PEER }, () => open('127.0.0.2')));
    // Let the server count them (the accept runs after the client's connect).
    await new Promise((r) => setTimeout(r, 50));
    const over = await open('127.0.0.2');
    expect(await session(over)).toBe('');
    expect(refusals).toEqual(['per_peer']);
    // The peer's open connections still work (keep-alive: the same socket again), and so do other peers.
    for (const c of mine) expect(await session(c)).toBe('HTTP/1.1 200 OK');
    const other = await open('127.0.0.1');
    expect(await session(other)).toBe('HTTP/1.1 200 OK');
    other.destroy();
    // One closes: the peer may connect again.
    const closed = new Promise((r) => mine[0]!.once('close', r));
    mine[0]!.destroy();
    await closed;
    await new Promise((r) => setTimeout(r, 50));
    const again = await open('127.0.0.2');
    expect(await session(again)).toBe('HTTP/1.1 200 OK');
    expect(refusals).toEqual(['per_peer']);
    for (const c of [...mine, again]) c.destroy();
  });

  it('reports a refusal over maxConnections as "max"', async () => {
    const seen: ConnectionRefusal[] = [];
    const small = await startHarness({ maxConnections: 1, onConnectionRefused: (r) => seen.push(r) });
    try {
      const p = Number(new URL(small.server.url).port);
      const first = await new Promise<Socket>((resolve) => {
        const c = connect(p, '127.0.0.1', () => resolve(c));
        c.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => {
        const c = connect(p, '127.0.0.1');
        c.on('error', () => undefined);
        c.on('close', () => resolve());
      });
      expect(seen).toEqual(['max']);
      first.destroy();
    } finally {
      await small.close();
    }
  });

  it('refuses a cap that is not a positive integer', async () => {
    await expect(startHarness({ maxConnectionsPerPeer: 0 })).rejects.toThrow(/maxConnectionsPerPeer must be a positive integer, not 0/);
  });
});
