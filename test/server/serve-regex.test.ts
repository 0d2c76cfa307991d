/**
 * `spamrule serve` as an operator runs it (a separate process): `--regex-work-limit` and the config file's
 * `analysis.regexCacheBytes` reach the worker threads' engines (a `matches` search over the limit fails its
 * rule, the other rules tag; `/metrics` shows the budget given), and bad values of either stop the start
 * with exit 2, naming the flag or key.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { http, spawnServe, type ServeProcess } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-serve-regex-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const rule = (name: string, cond: string) => ({ '@type': 'Any', name, condition: { match: [{ if: cond, then: `'${name}'` }], else: 'false' } });
writeFileSync(
  join(dir, 'rules.json'),
  JSON.stringify([rule('RX_SUBJECT', "matches('(?i)^hello', subject)"), rule('RX_BODY', "matches('(?i)cheap\\s+offer', body.raw)"), rule('PLAIN', "contains(subject, 'hello')")]),
);

const spawn = (args: string[]): ServeProcess => spawnServe(args, children);

describe('spamrule serve: regex bounds from flags and the config file', () => {
  it('--regex-work-limit and analysis.regexCacheBytes reach the workers', async () => {
    writeFileSync(join(dir, 'serve.json'), JSON.stringify({ analysis: { regexCacheBytes: '3M' } }));
    const s = spawn(['--config', join(dir, 'serve.json'), '--rules', join(dir, 'rules.json'), '--rspamd', '127.0.0.1:0', '--workers', '1', '--regex-work-limit', '5000', '--log-level', 'info', '--cache-dir', join(dir, 'lists')]);
    let address: string | undefined;
    for (const end = Date.now() + 90_000; address === undefined && Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      if (s.child.exitCode !== null) throw new Error(`serve exited: ${s.stderr()}`);
      const lines = s.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; listener?: string; address?: string });
      if (lines.some((l) => l.msg === 'ready')) address = lines.find((l) => l.msg === 'listening' && l.listener === 'rspamd')?.address;
    }
    expect(address).toBeDefined();
    const r = await http(`${address}/checkv2`, { method: 'POST', body: `From: a@example.org\r\nSubject: hello\r\n\r\n${'filler text line\r\n'.repeat(1100)}a cheap offer\r\n` });
    const symbols = Object.keys((JSON.parse(r.body) as { symbols: Record<string, unknown> }).symbols);
    expect(symbols).toEqual(expect.arrayContaining(['RX_SUBJECT', 'PLAIN']));
    expect(symbols).not.toContain('RX_BODY');
    const metrics = (await http(`${address}/metrics`)).body;
    expect(metrics).toContain('spamrule_rule_errors_total{reason="regex_work"} 1');
    expect(metrics).toMatch(/^spamrule_regex_cache_budget_bytes 3145728$/m);
    expect(metrics).toMatch(/^spamrule_regex_cache_bytes \d+$/m);
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  }, 120_000);

  it('refuses a bad --regex-work-limit, --regex-cache or config value at start, naming it', async () => {
    const bad = (name: string, analysis: Record<string, unknown>): string => {
      writeFileSync(join(dir, name), JSON.stringify({ analysis }));
      return join(dir, name);
    };
    for (const [args, message] of [
      [['--regex-work-limit', '0'], /^spamrule serve: --regex-work-limit: expected steps per search, an integer from 1 to 68719476736 .*got "0"$/m],
      [['--regex-work-limit', '64k'], /^spamrule serve: --regex-work-limit: expected steps per search.*got "64k"$/m],
      [['--regex-cache', '512k'], /^spamrule serve: --regex-cache: expected a size from 1M to 16G .*got "512k" \(524288 bytes\)$/m],
      [['--config', bad('work.json', { regexWorkLimit: 1.5 })], /work\.json: analysis\.regexWorkLimit: expected steps per search, an integer from 1 to 68719476736 .*got 1\.5$/m],
      [['--config', bad('cache.json', { regexCacheBytes: '20G' })], /cache\.json: analysis\.regexCacheBytes: expected a size from 1M to 16G .*got "20G"/m],
    ] as const) {
      const s = spawn(['--rspamd', '127.0.0.1:0', ...args]);
      expect(await s.exit).toBe(2);
      expect(s.stderr()).toMatch(message);
    }
  }, 120_000);
});
