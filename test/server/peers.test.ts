/**
 * Connection caps (security review F5): one peer may hold at most `maxConnectionsPerPeer` connections
 * of a listener, so that a host that opens idle connections by the thousand cannot shut the MTA out;
 * the MTA, from another address, is still served. Over `maxConnections` (all peers) connections are
 * refused too, and both refusals are counted. The metrics listener has the same caps. Peers are
 * told apart by address: here 127.0.0.2 plays the attacker, 127.0.0.1 the MTA.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerKey } from '../../src/net/index.js';
import { createLogger, SpamEnginePool, startScanServer } from '../../src/server/index.js';
import { http, milterOptneg, milterReplies, startAll, type Started } from './harness.js';

const PER_PEER = 3;
const MAX = 5;
let s: Started;

beforeAll(async () => {
  s = await startAll({ workers: 1, limits: { maxConnectionsPerPeer: PER_PEER, maxConnections: MAX } });
}, 60_000);

afterAll(async () => {
  await s?.close();
});

async function refused(protocol: string, reason: string): Promise<number> {
  return (await s.server.metrics.connectionsRefused.get()).values.find((v) => v.labels.protocol === protocol && v.labels.reason === reason)?.value ?? 0;
}

async function openConnections(protocol: string): Promise<number> {
  return (await s.server.metrics.connections.get()).values.find((v) => v.labels.protocol === protocol)?.value ?? 0;
}

/** An idle connection from `from`; resolves once the server has it (or closed it at once). */
function idle(port: number, from: string): Promise<{ sock: Socket; closed: Promise<void> }> {
  return new Promise((resolve) => {
    const sock = connect({ port, host: '127.0.0.1', localAddress: from });
    sock.on('error', () => undefined);
    sock.on('data', () => undefined);
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.once('connect', () => resolve({ sock, closed }));
  });
}

/** The first reply of a client from `from` that sends `data`, or '' when the server closes first. */
function ask(port: number, from: string, data: Buffer | string): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect({ port, host: '127.0.0.1', localAddress: from });
    let out = Buffer.alloc(0);
    sock.on('error', () => undefined);
    sock.on('data', (d: Buffer) => {
      out = Buffer.concat([out, d]);
      sock.destroy();
    });
    sock.on('close', () => resolve(out.toString('latin1')));
    sock.once('connect', () => sock.write(data));
  });
}

describe('per-peer and per-listener connection caps', () => {
  const probes: { listener: 'milter' | 'spamd' | 'rspamd'; hello: Buffer | string; answer: (r: string) => boolean }[] = [
    { listener: 'milter', hello: milterOptneg(), answer: (r) => milterReplies(Buffer.from(r, 'latin1'))[0]?.[0] === 'O' },
    { listener: 'spamd', hello: 'PING SPAMC/1.5\r\n\r\n', answer: (r) => r.startsWith('SPAMD/1.5 0 PONG') },
    { listener: 'rspamd', hello: 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n', answer: (r) => r.endsWith('pong\r\n') },
  ];

  for (const p of probes) {
    it(`${p.listener}: a peer past maxConnectionsPerPeer is closed at once; another peer is served`, async () => {
      const { port } = s.hostPort(p.listener);
      const before = await refused(p.listener, 'per_peer');
      const held = await Promise.all(Array.from({ length: PER_PEER }, () => idle(port, '127.0.0.2')));
      while ((await openConnections(p.listener)) < PER_PEER) await new Promise((r) => setTimeout(r, 20));
      const extra = await idle(port, '127.0.0.2');
      await extra.closed;
      expect(await refused(p.listener, 'per_peer')).toBe(before + 1);
      // The MTA, from its own address, gets its answer meanwhile.
      expect(p.answer(await ask(port, '127.0.0.1', p.hello))).toBe(true);
      for (const h of held) h.sock.destroy();
      await Promise.all(held.map((h) => h.closed));
      // The peer's slots are free again once its connections close.
      while ((await openConnections(p.listener)) > 0) await new Promise((r) => setTimeout(r, 20));
      expect(p.answer(await ask(port, '127.0.0.2', p.hello))).toBe(true);
    });
  }

  it('past maxConnections (all peers together) a connection is closed at once and counted', async () => {
    const { port } = s.hostPort('spamd');
    const before = await refused('spamd', 'max');
    const held = [...(await Promise.all(Array.from({ length: PER_PEER }, () => idle(port, '127.0.0.2')))), ...(await Promise.all(Array.from({ length: MAX - PER_PEER }, () => idle(port, '127.0.0.3'))))];
    while ((await openConnections('spamd')) < MAX) await new Promise((r) => setTimeout(r, 20));
    expect(await ask(port, '127.0.0.1', 'PING SPAMC/1.5\r\n\r\n')).toBe('');
    expect(await refused('spamd', 'max')).toBe(before + 1);
    for (const h of held) h.sock.destroy();
    await Promise.all(held.map((h) => h.closed));
  });
});

describe('the metrics listener', () => {
  it('has the same caps, and a unix-socket listener counts no peers', async () => {
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-peers-'));
    const server = await startScanServer({
      pool,
      metrics: { host: '127.0.0.1', port: 0 },
      spamd: { path: join(dir, 'spamd.sock') },
      limits: { maxConnectionsPerPeer: 2, maxConnections: 10 },
      logger: createLogger({ level: 'silent' }),
    });
    try {
      const port = Number(server.addresses.metrics!.split(':').pop());
      const held = await Promise.all([idle(port, '127.0.0.2'), idle(port, '127.0.0.2')]);
      const extra = await idle(port, '127.0.0.2');
      await extra.closed;
      const count = (await server.metrics.connectionsRefused.get()).values.find((v) => v.labels.protocol === 'metrics' && v.labels.reason === 'per_peer');
      expect(count?.value).toBe(1);
      const health = await http(`${server.addresses.metrics}/healthz`);
      expect(health.status).toBe(200);
      for (const h of held) h.sock.destroy();
      // Three unix-socket clients at once: no address, no per-peer cap.
      const unix = await Promise.all(
        Array.from({ length: 3 }, () => new Promise<string>((resolve) => {
          const c = connect(join(dir, 'spamd.sock'));
          let out = '';
          c.on('data', (d: Buffer) => (out += d.toString()));
          c.on('close', () => resolve(out));
          c.on('error', () => resolve('error'));
          c.write('PING SPAMC/1.5\r\n\r\n');
        })),
      );
      expect(unix.every((r) => r.startsWith('SPAMD/1.5 0 PONG'))).toBe(true);
    } finally {
      await server.close(1000);
      await pool.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('peerKey', () => {
  it('counts IPv4 by address (also IPv4-mapped) and IPv6 by /64; no address is no peer', () => {
    expect(peerKey('203.0.113.7')).toBe('203.0.113.7');
    expect(peerKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(peerKey('2001:db8:1:2:aaaa::1')).toBe(peerKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(peerKey('2001:db8:1:2::1')).not.toBe(peerKey('2001:db8:1:3::1'));
    expect(peerKey(undefined)).toBeUndefined();
    expect(peerKey('not an address')).toBeUndefined();
  });
});
