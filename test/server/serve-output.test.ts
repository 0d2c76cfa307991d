/**
 * What `spamrule serve` prints (a separate process, as an operator runs it): JSON log lines only,
 * one "listening" line per listener and a "ready" line, the worker threads' warnings among them, all
 * at `--log-level`; a listener that cannot bind is named with its address; and the rspamd
 * listener's learn commands without `--allow-learn` say what is missing.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { http, spawnServe, type ServeProcess } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-serve-output-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

type LogLine = { level: number; msg: string; listener?: string; address?: string; workers?: number; worker?: number };

type Proc = ServeProcess;
const start = (args: string[]): Proc => spawnServe(args, children);

/** Every complete stdout line, parsed (each must be JSON). */
function logLines(p: Proc): LogLine[] {
  return p.stdout().split('\n').slice(0, -1).map((l) => JSON.parse(l) as LogLine);
}

async function until(what: string, p: Proc, test: () => boolean, ms = 90_000): Promise<void> {
  const t0 = Date.now();
  while (!test()) {
    if (p.child.exitCode !== null) throw new Error(`serve exited with ${p.child.exitCode} while waiting for ${what}: ${p.stderr()}`);
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}: ${p.stdout()} ${p.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP port that is free now (bound, then released). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A rule set whose one rule looks up a remote list that cannot be downloaded (nothing listens at its URL). */
async function rulesWithUnreachableList(): Promise<string> {
  const file = join(dir, 'rules.json');
  writeFileSync(
    file,
    JSON.stringify({
      SpamRule: [{ '@type': 'Any', name: 'LISTED', condition: { match: [{ if: "key_exists('remote_list', from.domain)", then: "'LISTED'" }], else: 'false' } }],
      HttpLookup: [{ namespace: 'remote_list', url: `http://127.0.0.1:${await freePort()}/list.txt`, format: { '@type': 'List' } }],
    }),
  );
  return file;
}

const MESSAGE = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: hi\r\n\r\nbody\r\n';

describe('spamrule serve output', () => {
  it('JSON lines only: one "listening" line per listener, "ready", worker warnings; learn without --allow-learn is a 403 that says so', async () => {
    const rules = await rulesWithUnreachableList();
    // Loopback allowed, so that the download is made and fails (nothing listens) rather than being refused.
    const p = start(['--rules', rules, '--rspamd', '127.0.0.1:0', '--spamd', '127.0.0.1:0', '--workers', '1', '--cache-dir', join(dir, 'cache-info'), '--list-allow-network', '127.0.0.1']);
    await until('ready', p, () => /"msg":"ready"/.test(p.stdout()));
    const lines = logLines(p);
    const listening = lines.filter((l) => l.msg === 'listening');
    expect(listening.map((l) => l.listener).sort()).toEqual(['rspamd', 'spamd']);
    const rspamd = listening.find((l) => l.listener === 'rspamd')!.address!;
    expect(rspamd).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(lines.find((l) => l.msg === 'ready')).toMatchObject({ level: 30, workers: 1 });

    // rspamd controller's learn commands are off unless asked for (--model --allow-learn): 403, as
    // rspamd's controller answers a request without its password.
    for (const path of ['/learnspam', '/learnham']) {
      const learn = await http(`${rspamd}${path}`, { method: 'POST', body: MESSAGE });
      expect(learn.status).toBe(403);
      expect(JSON.parse(learn.body)).toEqual({ error: 'learning is off on this listener: start serve with --model FILE --allow-learn (docs/deployment.md)' });
    }

    // The scan looks the remote list up, and the worker's background download of it fails.
    expect((await http(`${rspamd}/checkv2`, { method: 'POST', body: MESSAGE })).status).toBe(200);
    await until('the worker warning', p, () => /download failed/.test(p.stdout()));
    const warning = logLines(p).find((l) => /download failed/.test(l.msg))!;
    expect(warning).toMatchObject({ level: 40, msg: expect.stringMatching(/^list remote_list: download failed: /) });
    expect(typeof warning.worker).toBe('number');
    expect(p.stderr()).toBe('');
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
  }, 120_000);

  it('--log-level error: neither the start lines nor the worker warnings are printed', async () => {
    const rules = await rulesWithUnreachableList();
    const port = await freePort();
    const p = start(['--rules', rules, '--rspamd', `127.0.0.1:${port}`, '--workers', '1', '--log-level', 'error', '--cache-dir', join(dir, 'cache-error')]);
    const url = `http://127.0.0.1:${port}`;
    let up = false;
    await until('the listener', p, () => {
      void http(`${url}/ping`).then(
        () => (up = true),
        () => undefined,
      );
      return up;
    });
    expect((await http(`${url}/checkv2`, { method: 'POST', body: MESSAGE })).status).toBe(200);
    // The download to a closed port fails within milliseconds; give the warning time to appear.
    await new Promise((r) => setTimeout(r, 1500));
    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    expect(p.stdout()).toBe('');
    expect(p.stderr()).toBe('');
  }, 120_000);
});

describe('spamrule serve: a listener that cannot bind', () => {
  let busy: Server;
  async function occupy(): Promise<number> {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    return (busy.address() as AddressInfo).port;
  }

  it('names the JMAP listener and its address (exit 1, one line)', async () => {
    const port = await occupy();
    try {
      const p = start(['--db', join(dir, 'jmap.db'), '--listen', `127.0.0.1:${port}`]);
      expect(await p.exit).toBe(1);
      expect(p.stderr()).toBe(`spamrule serve: cannot listen on 127.0.0.1:${port} for jmap: address in use\n`);
    } finally {
      busy.close();
    }
  }, 60_000);

  it('names a mail-path listener and its address (exit 1, one line)', async () => {
    const port = await occupy();
    try {
      const p = start(['--rspamd', '127.0.0.1:0', '--spamd', `127.0.0.1:${port}`, '--workers', '1', '--log-level', 'error']);
      expect(await p.exit).toBe(1);
      expect(p.stderr()).toBe(`spamrule serve: cannot listen on 127.0.0.1:${port} for spamd: address in use\n`);
    } finally {
      busy.close();
    }
  }, 60_000);
});
