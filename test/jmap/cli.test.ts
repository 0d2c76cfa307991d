/**
 * `spamrule token` and `spamrule serve` as separate processes, including a `kill -9` of the server
 * in the middle of a stream of `/set` calls: every acknowledged change must survive, and an
 * unacknowledged call must be there completely or not at all.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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

function startServe(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...NODE_ARGS, 'serve', '--db', db, '--listen', '127.0.0.1:0'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
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
