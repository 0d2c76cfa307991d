/**
 * `spamrule token` and `spamrule serve` as separate processes, including a `kill -9` of the server
 * in the middle of a stream of `/set` calls: every acknowledged change must survive, and an
 * unacknowledged call must be there completely or not at all.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/shared-data.js';
import { createJmapServer } from '../../src/jmap/index.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-jmap-cli-'));
const db = join(dir, 'serve.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// `node --import tsx` (not `npx tsx`) so the pid we kill is the server itself, not a wrapper.
const NODE_ARGS = ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts')];

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...NODE_ARGS, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function startServe(args: string[] = ['--db', db]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...NODE_ARGS, 'serve', ...args, '--listen', '127.0.0.1:0'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 60_000);
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
}

describe('spamrule token', () => {
  it('creates (printing the token once), lists and revokes tokens; refuses unknown permissions', () => {
    const created = cli(['token', 'create', '--db', db, '--permissions', 'all', '--name', 'ops']);
    expect(created.status).toBe(0);
    expect(created.stdout).toMatch(/^srt_[A-Za-z0-9_-]{43}\n$/);
    expect(created.stderr).toContain('shown only this once');
    const other = cli(['token', 'create', '--db', db, '--permissions', 'sysSpamRuleGet,sysSpamRuleQuery', '--name', 'reader', '--json']);
    const info = JSON.parse(other.stdout);
    expect(info).toMatchObject({ name: 'reader', permissions: ['sysSpamRuleGet', 'sysSpamRuleQuery'] });
    const list = cli(['token', 'list', '--db', db, '--json']);
    const tokens = JSON.parse(list.stdout);
    expect(tokens.map((t: any) => t.name)).toEqual(['ops', 'reader']);
    expect(list.stdout).not.toContain(created.stdout.trim()); // only hashes are stored
    expect(cli(['token', 'revoke', '--db', db, 'reader']).stdout).toBe('revoked 1 token\n');
    expect(cli(['token', 'revoke', '--db', db, 'reader']).status).toBe(1);
    const bad = cli(['token', 'create', '--db', db, '--permissions', 'sysEverything']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('unknown permission "sysEverything"');
  }, 120_000);
});

describe('spamrule serve durability', () => {
  it('keeps every acknowledged change across kill -9, and no half-written call', async () => {
    const token = cli(['token', 'create', '--db', db, '--permissions', 'all', '--name', 'stream']).stdout.trim();
    const { child, url } = await startServe();
    const acked: number[] = [];
    let inFlight = -1;
    const BATCH = 3;
    const send = (i: number) =>
      fetch(`${url}/jmap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          using: [],
          methodCalls: [
            [
              'x:SpamRule/set',
              {
                create: Object.fromEntries(
                  Array.from({ length: BATCH }, (_, j) => [`c${j}`, { '@type': 'Any', name: `B${i}_${j}`, priority: i, condition: { else: 'false' } }]),
                ),
              },
              's',
            ],
          ],
        }),
      });
    const exited = new Promise((r) => child.on('exit', r));
    // Sequential stream; the kill lands while call 40 (or a later one) is in flight.
    for (let i = 0; i < 1000; i++) {
      inFlight = i;
      const p = send(i);
      if (i === 40) {
        child.kill('SIGKILL');
        await p.catch(() => undefined);
        break;
      }
      const res = await p;
      const body = (await res.json()) as any;
      expect(Object.keys(body.methodResponses[0][1].created)).toHaveLength(BATCH);
      acked.push(i);
    }
    await exited;
    expect(child.signalCode).toBe('SIGKILL');

    const server = await createJmapServer({ db, log: () => undefined });
    try {
      const names = [...server.repo.snapshot('SpamRule').objects.values()].map((d) => d.name as string);
      const batches = new Map<number, number>();
      for (const n of names) {
        const [, b] = /^B(\d+)_\d+$/.exec(n)!;
        batches.set(Number(b), (batches.get(Number(b)) ?? 0) + 1);
      }
      for (const i of acked) expect(batches.get(i)).toBe(BATCH);
      for (const [i, count] of batches) {
        expect(count).toBe(BATCH); // all or nothing per call
        if (!acked.includes(i)) expect(i).toBe(inFlight); // nothing but the call in flight
      }
      expect(acked).toHaveLength(40);
      // The restarted server continues: state and new writes work.
      const stored = server.repo.snapshot('SpamRule');
      expect(stored.state).toBe(batches.size);
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe('spamrule serve: the store policy of its config file and flags', () => {
  it('managedStores in the file and --secret-file-dir decide what StoreLookups written over JMAP may use', async () => {
    const conf = join(dir, 'policy');
    const secrets = join(dir, 'secrets');
    mkdirSync(join(conf, 'stores'), { recursive: true });
    mkdirSync(secrets);
    writeFileSync(join(secrets, 'pg.pw'), 'pw\n');
    const pdb = join(conf, 'registry.db');
    // Relative paths of the file are taken from the file's folder, as for its other paths.
    writeFileSync(join(conf, 'serve.toml'), `db = "registry.db"\nmodel = "stores/model.db"\n[managedStores]\nsecretEnvPrefixes = ["SPAMRULE_OK_"]\nsqliteDir = "stores"\n`);
    const token = cli(['token', 'create', '--db', pdb, '--permissions', 'sysStoreLookupCreate', '--name', 'stores']).stdout.trim();
    const { child, url } = await startServe(['--config', join(conf, 'serve.toml'), '--secret-file-dir', secrets]);
    const exited = new Promise((r) => child.on('exit', r));
    try {
      const create = async (store: unknown) => {
        const res = await fetch(`${url}/jmap`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'], methodCalls: [['x:StoreLookup/set', { create: { k: { store } } }, '0']] }),
        });
        const r = ((await res.json()) as any).methodResponses[0][1];
        return r.created?.k ?? r.notCreated.k;
      };
      const pg = (authSecret: unknown) => ({ '@type': 'PostgreSql', host: 'db', authSecret });
      expect((await create(pg({ '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_OK_PG' }))).id).toBeTypeOf('string');
      expect((await create(pg({ '@type': 'EnvironmentVariable', variableName: 'HOME' }))).description).toContain('does not start with a prefix the server allows');
      expect((await create(pg({ '@type': 'File', filePath: join(secrets, 'pg.pw') }))).id).toBeTypeOf('string');
      expect((await create(pg({ '@type': 'File', filePath: '/etc/passwd' }))).description).toContain('outside the directories the server allows');
      expect((await create({ '@type': 'Sqlite', path: 'lists.db' })).store.path).toBe(join(conf, 'stores', 'lists.db'));
      expect((await create({ '@type': 'Sqlite', path: 'model.db' })).description).toContain("the server's own registry or model file");
      expect((await create({ '@type': 'Sqlite', path: pdb })).description).toContain('outside the directory for Sqlite stores');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 120_000);
});
