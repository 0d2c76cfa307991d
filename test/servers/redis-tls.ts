/**
 * Throwaway Redis servers that speak only TLS (`port 0`, `tls-port`), on 127.0.0.1: a Redis Cluster whose
 * nodes announce either their address or a host name, and a Sentinel setup. Certificates come from
 * test/servers/tls.ts; clients are not asked for one (`tls-auth-clients no`). Admin commands go through
 * `redis-cli --tls --insecure` (the admin side checks nothing; the tests check the store's client).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, HOST, Proc, run, tempDir, waitFor } from './common.js';
import type { TestCert } from './tls.js';

/** `redis-cli` over TLS against 127.0.0.1:port; returns its output. */
export function redisTlsCli(port: number, ...args: string[]): string {
  return run('redis-cli', ['--tls', '--insecure', '-h', HOST, '-p', String(port), ...args], { timeoutMs: 10_000 }).trim();
}

const tlsArgs = (port: number, cert: TestCert): string[] => [
  '--port', '0',
  '--tls-port', String(port),
  '--tls-cert-file', cert.certFile,
  '--tls-key-file', cert.keyFile,
  '--tls-ca-cert-file', cert.caFile,
  '--tls-auth-clients', 'no',
  '--tls-replication', 'yes',
];

async function startTlsNode(dir: string, name: string, cert: TestCert, extra: string[] = []): Promise<{ port: number; proc: Proc }> {
  const port = await freePort();
  const proc = new Proc(
    'redis-server',
    [...tlsArgs(port, cert), '--bind', HOST, '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--dbfilename', `${name}.rdb`, ...extra],
    join(dir, `${name}.log`),
  );
  await waitFor(`TLS redis ${name} on ${port}`, () => {
    if (!proc.running) throw new Error(`redis-server exited: ${proc.log()}`);
    return redisTlsCli(port, 'PING') === 'PONG';
  });
  return { port, proc };
}

export interface RedisTlsCluster {
  ports: number[];
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of `masters` TLS nodes (the cluster bus over TLS too) sharing the 16384 slots. With
 * `announceHostname`, every node announces that name as its endpoint (`cluster-announce-hostname`,
 * `cluster-preferred-endpoint-type hostname`: CLUSTER SLOTS and redirections name it instead of 127.0.0.1).
 */
export async function startRedisTlsCluster(opts: { cert: TestCert; masters?: number; announceHostname?: string }): Promise<RedisTlsCluster> {
  const n = Math.max(1, opts.masters ?? 1);
  const dir = tempDir('redis-tls-cluster');
  const nodes: { port: number; proc: Proc }[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((x) => x.proc.kill('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < n; i++) {
      nodes.push(
        await startTlsNode(dir, `node${i}`, opts.cert, [
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, `nodes-${i}.conf`),
          '--cluster-port', String(await freePort()),
          '--cluster-node-timeout', '2000',
          '--tls-cluster', 'yes',
          '--cluster-announce-ip', HOST,
          ...(opts.announceHostname !== undefined ? ['--cluster-announce-hostname', opts.announceHostname, '--cluster-preferred-endpoint-type', 'hostname'] : []),
        ]),
      );
    }
    if (n === 1) redisTlsCli(nodes[0]!.port, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    else run('redis-cli', ['--tls', '--insecure', '--cluster', 'create', ...nodes.map((x) => `${HOST}:${x.port}`), '--cluster-yes'], { timeoutMs: 60_000 });
    await waitFor('cluster_state:ok on every node', () => nodes.every((x) => redisTlsCli(x.port, 'CLUSTER', 'INFO').includes('cluster_state:ok')), 30_000, 200);
  } catch (e) {
    await stop();
    throw e;
  }
  return { ports: nodes.map((x) => x.port), stop };
}

export interface RedisTlsSentinel {
  /** The sentinel's TLS port. */
  sentinelPort: number;
  stop(): Promise<void>;
}

/**
 * One TLS sentinel (certificate `sentinelCert`) monitoring, with quorum 1, one TLS master per entry of
 * `masters` (service name → the master's certificate), over TLS (`tls-replication yes`).
 */
export async function startRedisTlsSentinel(opts: { sentinelCert: TestCert; masters: Record<string, TestCert> }): Promise<RedisTlsSentinel> {
  const dir = tempDir('redis-tls-sentinel');
  const procs: Proc[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const monitors: string[] = [];
    for (const [service, cert] of Object.entries(opts.masters)) {
      const m = await startTlsNode(dir, `master-${service}`, cert);
      procs.push(m.proc);
      monitors.push(`sentinel monitor ${service} ${HOST} ${m.port} 1`, `sentinel down-after-milliseconds ${service} 1000`);
    }
    const port = await freePort();
    const c = opts.sentinelCert;
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        'port 0',
        `tls-port ${port}`,
        `tls-cert-file ${c.certFile}`,
        `tls-key-file ${c.keyFile}`,
        `tls-ca-cert-file ${c.caFile}`,
        'tls-auth-clients no',
        'tls-replication yes',
        `bind ${HOST}`,
        'protected-mode no',
        `dir ${dir}`,
        ...monitors,
        '',
      ].join('\n'),
    );
    const proc = new Proc('redis-sentinel', [conf], join(dir, 'sentinel.log'));
    procs.push(proc);
    await waitFor(`TLS sentinel on ${port} sees its masters`, () => {
      if (!proc.running) throw new Error(`redis-sentinel exited: ${proc.log()}`);
      return Object.keys(opts.masters).every((s) => redisTlsCli(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', s).startsWith(HOST));
    });
    return { sentinelPort: port, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
