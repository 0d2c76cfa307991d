/**
 * A store pinned to a checked address (src/lookup/store-pins.ts) still speaks TLS to the host name: the
 * ClientHello's SNI, which Node's TLS also checks the certificate against, is the name the store was written
 * with, not the address. TLS servers on 127.0.0.2 (a certificate made with openssl for the name) record the
 * SNI each client sends: PostgreSQL's SSLRequest, MySQL's SSL handshake request and Redis's `rediss://` are
 * answered just far enough to reach the TLS handshake. The name resolves nowhere but in the pins.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLookupStore, type LookupStore } from '../../src/lookup/index.js';

const NAME = 'tls.pinned.test';
let key: Buffer;
let cert: Buffer;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'spamrule-pin-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', `/CN=${NAME}`, '-addext', `subjectAltName=DNS:${NAME}`], { stdio: 'ignore' });
  key = readFileSync(join(dir, 'k.pem'));
  cert = readFileSync(join(dir, 'c.pem'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A server on 127.0.0.2 that runs `preamble` on each connection (the protocol's plain-text part before TLS),
 * then a TLS handshake, recording the SNI of each ClientHello that has one.
 */
async function sniServer(preamble: (s: Socket) => Promise<void>): Promise<{ port: number; sni: string[]; close(): Promise<void> }> {
  const sni: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    void preamble(s).then(() => {
      // An undefined context keeps the socket's own (key, cert); the client's verdict on it does not matter here.
      const t = new TLSSocket(s, { isServer: true, key, cert, SNICallback: (name, cb) => (sni.push(name), cb(null, undefined as never)) });
      t.on('error', () => undefined);
      s.resume();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
  const close = (): Promise<void> => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  };
  return { port: (server.address() as { port: number }).port, sni, close };
}

/** The next `n` bytes a socket receives. */
function read(s: Socket, n: number): Promise<Buffer> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    const on = (d: Buffer): void => {
      got = Buffer.concat([got, d]);
      if (got.length >= n) {
        s.off('data', on);
        s.pause();
        if (got.length > n) s.unshift(got.subarray(n));
        resolve(got.subarray(0, n));
      }
    };
    s.on('data', on);
  });
}

/** MySQL's HandshakeV10 offering SSL (CLIENT_SSL), as a server's first packet. */
function mysqlGreeting(): Buffer {
  const caps = 0x0200 | 0x0800 | 0x8000 | 0x80000; // PROTOCOL_41, SSL, SECURE_CONNECTION, PLUGIN_AUTH
  const body = Buffer.concat([
    Buffer.from([10]),
    Buffer.from('5.7.0\0'),
    Buffer.from([1, 0, 0, 0]),
    Buffer.from('abcdefgh'),
    Buffer.from([0]),
    Buffer.from([caps & 0xff, (caps >> 8) & 0xff]),
    Buffer.from([45, 2, 0]),
    Buffer.from([(caps >> 16) & 0xff, (caps >> 24) & 0xff]),
    Buffer.from([21]),
    Buffer.alloc(10),
    Buffer.from('ijklmnopqrst\0'),
    Buffer.from('mysql_native_password\0'),
  ]);
  return Buffer.concat([Buffer.from([body.length & 0xff, (body.length >> 8) & 0xff, body.length >> 16, 0]), body]);
}

const pinned = { addresses: { [NAME]: '127.0.0.2' }, allowedHosts: [NAME] };
const noBreaker = { breaker: { enabled: false }, cache: { enabled: false } } as const;

/** The SNI names the server saw while `store` made its first call. */
async function sniOf(server: Awaited<ReturnType<typeof sniServer>>, store: LookupStore): Promise<string[]> {
  try {
    await store.keyGet('k').catch(() => undefined);
    const until = Date.now() + 3000;
    while (server.sni.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    return server.sni;
  } finally {
    await store.close();
    await server.close();
  }
}

describe('a pinned store sends the host name, not the address, as its TLS server name', () => {
  it('PostgreSQL (useTls): SSLRequest, then TLS to 127.0.0.2 with SNI the name', async () => {
    const server = await sniServer(async (s) => {
      await read(s, 8); // SSLRequest
      s.write('S');
    });
    const store = createLookupStore('pg', { '@type': 'PostgreSql', host: NAME, port: server.port, useTls: true, allowInvalidCerts: true, timeout: 2000 }, { ...noBreaker, pinned });
    expect(new Set(await sniOf(server, store))).toEqual(new Set([NAME]));
  });

  it('MySQL (useTls): mysql2 keeps the name as its host, the socket goes to 127.0.0.2', async () => {
    const server = await sniServer(async (s) => {
      s.write(mysqlGreeting());
      await read(s, 4 + 32); // SSLRequest packet
    });
    const store = createLookupStore('my', { '@type': 'MySql', host: NAME, port: server.port, useTls: true, allowInvalidCerts: true, timeout: 2000 }, { ...noBreaker, pinned });
    expect(new Set(await sniOf(server, store))).toEqual(new Set([NAME]));
  });

  it('Redis (rediss://): TLS from the first byte, SNI the name', async () => {
    const server = await sniServer(async () => undefined);
    const store = createLookupStore('redis', { '@type': 'Redis', url: `rediss://${NAME}:${server.port}`, timeout: 2000 }, { ...noBreaker, pinned });
    expect(new Set(await sniOf(server, store))).toEqual(new Set([NAME]));
  });
});
