/**
 * Lookup stores over TLS check the server's certificate against the host name they were given, against real
 * servers on 127.0.0.1 that speak TLS with certificates from a test CA (test/servers/tls.ts): a TLS-only
 * Redis Cluster (three masters announcing a host name, and one announcing its address), a TLS Sentinel with
 * TLS masters, and MariaDB with `ssl-cert`. The stores run in a child process that trusts the CA
 * (test/lookup/tls-client.ts), so a certificate is refused only for its name: the man in the middle with a
 * valid certificate for his own domain. Pinned stores (src/lookup/store-pins.ts) reach 127.0.0.1 through
 * names that resolve nowhere but in their pins, so a store that works by name did check the name, not the
 * address it connected to.
 */
import { execFile } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConnection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestCa,
  redisTlsCli,
  startMariaDb,
  startRedisTlsCluster,
  startRedisTlsSentinel,
  type MariaDbServer,
  type RedisTlsCluster,
  type RedisTlsSentinel,
  type TestCa,
  type TestCert,
} from '../servers/index.js';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLIENT = join(REPO_ROOT, 'test/lookup/tls-client.ts');

/** The name the servers' good certificates carry; the pins send it (and OTHER) to 127.0.0.1. */
const NAME = 'store.tls.test';
/** A name the pins also send to 127.0.0.1, which no certificate carries. */
const OTHER = 'other.tls.test';
const pinned = { addresses: { [NAME]: '127.0.0.1', [OTHER]: '127.0.0.1' }, allowedHosts: ['127.0.0.1'] };
/** Node's refusal of a certificate that does not name the host (tls.checkServerIdentity). */
const NAME_MISMATCH = /Hostname\/IP does not match certificate's altnames/;

type Result = { ok: true; rows?: unknown } | { ok: false; error: string };
interface Case {
  namespace: string;
  config: Record<string, unknown>;
  pinned?: typeof pinned;
  sql?: string;
}

let ca: TestCa;
beforeAll(() => {
  ca = makeTestCa();
});
afterAll(() => ca?.remove());

/** Runs the cases in a child process trusting the test CA; their results, in order. */
function runStores(cases: Case[]): Promise<Result[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', CLIENT, JSON.stringify(cases)],
      { cwd: REPO_ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: ca.caFile }, timeout: 120_000, encoding: 'utf8' },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Result[])),
    );
  });
}

const errorOf = (r: Result | undefined): string => (r !== undefined && !r.ok ? r.error : `no error: ${JSON.stringify(r)}`);

describe('Redis Cluster over TLS (rediss://)', () => {
  let named: RedisTlsCluster;
  let byAddress: RedisTlsCluster;
  beforeAll(async () => {
    // Three masters whose certificate names only NAME and which announce NAME (not 127.0.0.1) in CLUSTER SLOTS.
    named = await startRedisTlsCluster({ cert: ca.issue('cluster-named', [NAME]), masters: 3, announceHostname: NAME });
    // One master announcing 127.0.0.1, with a valid certificate for another name (and for that address).
    byAddress = await startRedisTlsCluster({ cert: ca.issue('cluster-other', ['other.example', '127.0.0.1']) });
  });
  afterAll(async () => {
    await named?.stop();
    await byAddress?.stop();
  });
  const cluster = (urls: string[]) => ({ '@type': 'RedisCluster', urls, authUsername: null, timeout: 4000 });

  it('a pinned cluster connects over TLS to the checked address with the name as server name, seed and announced nodes alike', async () => {
    const [r] = await runStores([{ namespace: 'tls-cluster', config: cluster([`rediss://${NAME}:${named.ports[0]}`]), pinned }]);
    expect(r).toEqual({ ok: true });
    // The 20 keys went to the masters owning their slots: the redirected connections were TLS and checked too.
    const sizes = named.ports.map((p) => Number(redisTlsCli(p, 'DBSIZE')));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(20);
    expect(sizes.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
  });

  it('refuses a certificate that does not name the host; rediss://…#insecure accepts it', async () => {
    const results = await runStores([
      // The MITM: a valid certificate, but for other.example.
      { namespace: 'tls-cluster-mitm', config: cluster([`rediss://${NAME}:${byAddress.ports[0]}`]), pinned },
      { namespace: 'tls-cluster-insecure', config: cluster([`rediss://${NAME}:${byAddress.ports[0]}#insecure`]), pinned },
      // By address: checked against the certificate's IP addresses (this one has 127.0.0.1) ...
      { namespace: 'tls-cluster-ip', config: cluster([`rediss://127.0.0.1:${byAddress.ports[0]}`]) },
      // ... and refused by a certificate that names only a host name.
      { namespace: 'tls-cluster-ip-mismatch', config: cluster([`rediss://127.0.0.1:${named.ports[0]}`]) },
    ]);
    expect(errorOf(results[0])).toMatch(NAME_MISMATCH);
    expect(errorOf(results[0])).toContain(`Host: ${NAME}. is not in the cert's altnames: DNS:other.example`);
    expect(results[1]).toEqual({ ok: true });
    expect(results[2]).toEqual({ ok: true });
    expect(errorOf(results[3])).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  it('a Redis store takes rediss://…#insecure too (the one-node cluster owns every slot, so it serves one)', async () => {
    const redis = (url: string) => ({ '@type': 'Redis', url, timeout: 4000 });
    const results = await runStores([
      { namespace: 'tls-redis-mitm', config: redis(`rediss://${NAME}:${byAddress.ports[0]}`), pinned },
      { namespace: 'tls-redis-insecure', config: redis(`rediss://${NAME}:${byAddress.ports[0]}#insecure`), pinned },
      { namespace: 'tls-redis-ip', config: redis(`rediss://127.0.0.1:${byAddress.ports[0]}`) },
    ]);
    expect(errorOf(results[0])).toContain(`Host: ${NAME}. is not in the cert's altnames: DNS:other.example`);
    expect(results[1]).toEqual({ ok: true });
    expect(results[2]).toEqual({ ok: true });
  });
});

describe('Redis Sentinel over TLS (rediss://)', () => {
  let sentinel: RedisTlsSentinel;
  beforeAll(async () => {
    sentinel = await startRedisTlsSentinel({
      // The sentinel's certificate names only NAME; the masters are named by the sentinel as 127.0.0.1.
      sentinelCert: ca.issue('sentinel', [NAME]),
      masters: { good: ca.issue('master-good', ['data.example', '127.0.0.1']), mitm: ca.issue('master-mitm', ['other.example']) },
    });
  });
  afterAll(async () => {
    await sentinel?.stop();
  });
  const store = (url: string, serviceName: string) => ({ '@type': 'RedisSentinel', urls: [url], serviceName, authUsername: null, timeout: 4000 });

  it('TLS to the sentinel (checked against its name) and to the master it names (checked against that address)', async () => {
    const results = await runStores([
      { namespace: 'tls-sentinel', config: store(`rediss://${NAME}:${sentinel.sentinelPort}`, 'good'), pinned },
      // A master whose certificate names another host.
      { namespace: 'tls-sentinel-mitm-master', config: store(`rediss://${NAME}:${sentinel.sentinelPort}`, 'mitm'), pinned },
      // A sentinel whose certificate names another host (NAME, not 127.0.0.1).
      { namespace: 'tls-sentinel-mitm', config: store(`rediss://127.0.0.1:${sentinel.sentinelPort}`, 'good') },
      // #insecure: neither is checked.
      { namespace: 'tls-sentinel-insecure', config: store(`rediss://127.0.0.1:${sentinel.sentinelPort}#insecure`, 'mitm') },
    ]);
    expect(results[0]).toEqual({ ok: true });
    expect(errorOf(results[1])).toMatch(NAME_MISMATCH);
    expect(errorOf(results[1])).toContain("IP: 127.0.0.1 is not in the cert's list");
    expect(errorOf(results[2])).toMatch(NAME_MISMATCH);
    expect(results[3]).toEqual({ ok: true });
  });
});

describe('MySQL/MariaDB over TLS (useTls)', () => {
  let db: MariaDbServer;
  let serverCert: TestCert;
  beforeAll(async () => {
    serverCert = ca.issue('mariadb', [NAME]);
    db = await startMariaDb({ tls: serverCert });
  });
  /** Gives the server a certificate for `names` (its files replaced, then FLUSH SSL). */
  const reissue = async (names: string[]): Promise<void> => {
    const next = ca.issue(`mariadb-${names.join('-')}`, names);
    copyFileSync(next.certFile, serverCert.certFile);
    copyFileSync(next.keyFile, serverCert.keyFile);
    const admin = await createConnection({ host: db.host, port: db.port, user: db.user, password: db.password });
    try {
      await admin.query('FLUSH SSL');
    } finally {
      await admin.end();
    }
  };
  afterAll(async () => {
    await db?.stop();
  });
  /** The TLS version of the session (MariaDB's status variable; empty without TLS). */
  const SSL_VERSION = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_version'";
  const mysql = (host: string, more: Record<string, unknown> = {}) => ({
    '@type': 'MySql',
    host,
    port: db.port,
    database: db.database,
    authUsername: db.user,
    authSecret: { '@type': 'Value', secret: db.password },
    useTls: true,
    timeout: 4000,
    ...more,
  });

  it('checks the certificate against the host name (mysql2 verifyIdentity), also when pinned; allowInvalidCerts turns the checks off', async () => {
    const results = await runStores([
      { namespace: 'tls-mysql', config: mysql(NAME), pinned, sql: SSL_VERSION },
      // The MITM: the socket reaches a server with a valid certificate, for another name. Before, accepted.
      { namespace: 'tls-mysql-mitm', config: mysql(OTHER), pinned },
      { namespace: 'tls-mysql-insecure', config: mysql(OTHER, { allowInvalidCerts: true }), pinned, sql: SSL_VERSION },
      // By address: the certificate names no address.
      { namespace: 'tls-mysql-ip', config: mysql('127.0.0.1') },
    ]);
    expect(results[0]).toMatchObject({ ok: true, rows: expect.stringMatching(/^TLSv1\.[23]$/) });
    expect(errorOf(results[1])).toMatch(NAME_MISMATCH);
    expect(errorOf(results[1])).toContain(`Host: ${OTHER}. is not in the cert's altnames: DNS:${NAME}`);
    expect(results[2]).toMatchObject({ ok: true, rows: expect.stringMatching(/^TLSv1\.[23]$/) });
    expect(errorOf(results[3])).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  it('an IP address host is checked against the certificate\'s IP addresses, not as "localhost"', async () => {
    // mysql2 sends no server name for an address, and Node's TLS would check the certificate as "localhost".
    await reissue(['localhost']);
    const [asLocalhost] = await runStores([{ namespace: 'tls-mysql-localhost', config: mysql('127.0.0.1') }]);
    expect(errorOf(asLocalhost)).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/);
    await reissue(['db.example', '127.0.0.1']);
    const [byAddress] = await runStores([{ namespace: 'tls-mysql-address', config: mysql('127.0.0.1'), sql: SSL_VERSION }]);
    expect(byAddress).toMatchObject({ ok: true, rows: expect.stringMatching(/^TLSv1\.[23]$/) });
  });
});
