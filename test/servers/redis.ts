/**
 * Throwaway Redis servers on 127.0.0.1: a single server, a cluster of N masters, and a Sentinel setup
 * (master + replica + 3 sentinels). No persistence; temp dirs are removed on stop.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, HOST, Proc, run, tempDir, waitFor } from './common.js';

/** `redis-cli` against 127.0.0.1:port; returns its output. */
export function redisCli(port: number, ...args: string[]): string {
  const pw = passwords.get(port);
  return run('redis-cli', ['-h', HOST, '-p', String(port), ...(pw ? ['--no-auth-warning', '-a', pw] : []), ...args], { timeoutMs: 10_000 }).trim();
}
/** Port → password, for servers started with one, so `redisCli` authenticates by itself. */
const passwords = new Map<number, string>();

async function ping(port: number): Promise<boolean> {
  try {
    return redisCli(port, 'PING') === 'PONG';
  } catch {
    return false;
  }
}

interface Node {
  port: number;
  proc: Proc;
}

function spawnRedis(dir: string, name: string, port: number, extra: string[]): Proc {
  return new Proc(
    'redis-server',
    ['--port', String(port), '--bind', HOST, '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--dbfilename', `${name}.rdb`, ...extra],
    join(dir, `${name}.log`),
  );
}

async function startNode(dir: string, name: string, extra: string[] = [], port?: number, password?: string): Promise<Node> {
  port ??= await freePort();
  if (password) {
    passwords.set(port, password);
    extra = [...extra, '--requirepass', password, '--masterauth', password];
  }
  const proc = spawnRedis(dir, name, port, extra);
  await waitFor(`redis ${name} on ${port}`, async () => {
    if (!proc.running) throw new Error(`redis-server exited: ${proc.log()}`);
    return ping(port);
  });
  return { port, proc };
}

export interface RedisServer {
  host: string;
  port: number;
  url: string;
  /** Kills the server (SIGKILL): for fault tests. */
  kill(): Promise<void>;
  /** Freezes the server (SIGSTOP): it keeps its connections and answers nothing, until `resume`. */
  pause(): void;
  resume(): void;
  /** Starts it again on the same port (empty: no persistence). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = tempDir('redis');
  let node = await startNode(dir, 'redis');
  const port = node.port;
  return {
    host: HOST,
    port,
    url: `redis://${HOST}:${port}`,
    kill: () => node.proc.kill('SIGKILL'),
    pause: () => void node.proc.child.kill('SIGSTOP'),
    resume: () => void node.proc.child.kill('SIGCONT'),
    async start() {
      node = await startNode(dir, 'redis', [], port);
    },
    async stop() {
      await node.proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisClusterServer {
  host: string;
  ports: number[];
  urls: string[];
  stop(): Promise<void>;
}

/** A Redis Cluster of `masters` (≥ 3) master nodes sharing the 16384 slots, no replicas. */
export async function startRedisCluster(opts: { masters?: number } = {}): Promise<RedisClusterServer> {
  const n = Math.max(3, opts.masters ?? 3);
  const dir = tempDir('redis-cluster');
  const nodes: Node[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const busPort = await freePort();
      nodes.push(
        await startNode(dir, `node${i}`, [
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(dir, `nodes-${i}.conf`),
          '--cluster-port', String(busPort),
          '--cluster-node-timeout', '2000',
        ]),
      );
    }
    run('redis-cli', ['--cluster', 'create', ...nodes.map((x) => `${HOST}:${x.port}`), '--cluster-yes'], { timeoutMs: 60_000 });
    await waitFor('cluster_state:ok on every node', () => nodes.every((x) => redisCli(x.port, 'CLUSTER', 'INFO').includes('cluster_state:ok')), 30_000, 200);
  } catch (e) {
    await Promise.all(nodes.map((x) => x.proc.kill('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    host: HOST,
    ports: nodes.map((x) => x.port),
    urls: nodes.map((x) => `redis://${HOST}:${x.port}`),
    async stop() {
      await Promise.all(nodes.map((x) => x.proc.kill('SIGKILL')));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisSentinelServer {
  host: string;
  /** The master's port at start. */
  masterPort: number;
  replicaPort: number;
  sentinelPorts: number[];
  /** Sentinel URLs, as a RedisSentinel store's `urls`. */
  urls: string[];
  serviceName: string;
  /** The port of the current master as the sentinels report it. */
  currentMasterPort(): number;
  /** Kills the current master (SIGKILL) so the sentinels fail over to the replica. */
  killMaster(): Promise<void>;
  /** Waits (bounded) until the sentinels name a master other than `oldPort`. */
  waitForFailover(oldPort: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A master, one replica and three sentinels (quorum 2, down-after 1000 ms) monitoring `mymaster`.
 * `password` protects the data nodes (requirepass/masterauth; sentinels get it as auth-pass),
 * `sentinelPassword` the sentinels themselves, so the two credentials can be tested apart.
 */
export async function startRedisSentinel(opts: { serviceName?: string; password?: string; sentinelPassword?: string } = {}): Promise<RedisSentinelServer> {
  const serviceName = opts.serviceName ?? 'mymaster';
  const dir = tempDir('redis-sentinel');
  const procs: Proc[] = [];
  const byPort = new Map<number, Proc>();
  try {
    const master = await startNode(dir, 'master', [], undefined, opts.password);
    const replica = await startNode(dir, 'replica', ['--replicaof', HOST, String(master.port)], undefined, opts.password);
    procs.push(master.proc, replica.proc);
    byPort.set(master.port, master.proc).set(replica.port, replica.proc);
    await waitFor('replica in sync', () => redisCli(replica.port, 'INFO', 'replication').includes('master_link_status:up'));
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      if (opts.sentinelPassword) passwords.set(port, opts.sentinelPassword);
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          `bind ${HOST}`,
          'protected-mode no',
          `dir ${dir}`,
          `sentinel monitor ${serviceName} ${HOST} ${master.port} 2`,
          `sentinel down-after-milliseconds ${serviceName} 1000`,
          `sentinel failover-timeout ${serviceName} 5000`,
          `sentinel parallel-syncs ${serviceName} 1`,
          ...(opts.password ? [`sentinel auth-pass ${serviceName} ${opts.password}`] : []),
          ...(opts.sentinelPassword ? [`requirepass ${opts.sentinelPassword}`, `sentinel sentinel-pass ${opts.sentinelPassword}`] : []),
          '',
        ].join('\n'),
      );
      const proc = new Proc('redis-sentinel', [conf], join(dir, `sentinel-${i}.log`));
      procs.push(proc);
      await waitFor(`sentinel on ${port}`, async () => {
        if (!proc.running) throw new Error(`redis-sentinel exited: ${proc.log()}`);
        return ping(port);
      });
      sentinelPorts.push(port);
    }
    // Sentinels discover the replica and each other through the master; failover needs both.
    await waitFor(
      'sentinels to see the replica and each other',
      () =>
        sentinelPorts.every(
          (p) => redisCli(p, 'SENTINEL', 'REPLICAS', serviceName).includes(String(replica.port)) && redisCli(p, 'SENTINEL', 'SENTINELS', serviceName).split('\n').filter((l) => l === 'ip').length >= 2,
        ),
      30_000,
      200,
    );
    const currentMasterPort = () => Number(redisCli(sentinelPorts[0]!, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', serviceName).split('\n')[1]);
    return {
      host: HOST,
      masterPort: master.port,
      replicaPort: replica.port,
      sentinelPorts,
      urls: sentinelPorts.map((p) => `redis://${HOST}:${p}`),
      serviceName,
      currentMasterPort,
      async killMaster() {
        await byPort.get(currentMasterPort())?.kill('SIGKILL');
      },
      async waitForFailover(oldPort: number, timeoutMs = 30_000) {
        let now = oldPort;
        await waitFor('sentinel failover', () => {
          now = currentMasterPort();
          return now !== oldPort && redisCli(now, 'ROLE').startsWith('master');
        }, timeoutMs, 200);
        return now;
      },
      async stop() {
        await Promise.all(procs.map((p) => p.kill('SIGKILL')));
        for (const p of [master.port, replica.port, ...sentinelPorts]) passwords.delete(p);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
