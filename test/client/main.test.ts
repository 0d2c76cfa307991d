/** The client commands through the real `spamrule` entry point in a child process (exit codes, env vars). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/shared-data.js';
import { startServer, type ClientHarness } from './harness.js';

function spamrule(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Async spawn: the server answering the child lives in this process, so spawnSync would deadlock.
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, SPAMRULE_SERVER: '', SPAMRULE_TOKEN: '', ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('spamrule rules|stores through main', () => {
  let h: ClientHarness;
  beforeAll(async () => {
    h = await startServer();
  });
  afterAll(() => h?.close());

  it('creates and lists a rule with SPAMRULE_SERVER/SPAMRULE_TOKEN; errors exit 1', async () => {
    const env = { SPAMRULE_SERVER: h.server.url, SPAMRULE_TOKEN: h.admin };
    const c = await spamrule(['rules', 'create', '--name', 'proc rule', '--priority', '7'], env);
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(/^created PROCRULE \(id [a-z0-9]+\)\n$/);
    const l = await spamrule(['rules', 'list'], env);
    expect(l.code).toBe(0);
    expect(l.stdout).toBe('NAME      SCOPE  PRIORITY  ENABLED\nPROCRULE  Any           7  yes\n');
    const s = await spamrule(['stores', 'list'], env);
    expect(s.stdout).toBe('ID  NAMESPACE  TYPE  TARGET\n');
    const bad = await spamrule(['rules', 'get', 'missing'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('spamrule rules get: no rule named MISSING\n');
    const none = await spamrule(['stores', 'list']);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe('spamrule stores list: no server: pass --server URL or set SPAMRULE_SERVER\n');
  });

  it('rules create --file - reads the rule from stdin', async () => {
    const env = { SPAMRULE_SERVER: h.server.url, SPAMRULE_TOKEN: h.admin };
    const rule = { '@type': 'Body', name: 'from stdin', condition: { match: { '0': { if: 'true', then: "'STDIN'" } }, else: 'false' } };
    const c = await spamrule(['rules', 'create', '--file', '-'], env, JSON.stringify(rule));
    expect(c.stderr).toBe('');
    expect(c.stdout).toMatch(/^created FROMSTDIN \(id [a-z0-9]+\)\n$/);
    const g = await spamrule(['rules', 'get', 'FROMSTDIN', '--json'], env);
    expect(JSON.parse(g.stdout)).toMatchObject({ '@type': 'Body', condition: { match: [{ if: 'true', then: "'STDIN'" }], else: 'false' } });
  });
});
