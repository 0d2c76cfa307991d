/**
 * The rspamd listener behind a real Haraka (npm `Haraka` 3.0.4, the last release for Node 20, with
 * `haraka-plugin-rspamd` 1.5.0, the last release for that Haraka's address objects, pointed at spamrule, as docs/deployment.md and examples/haraka/ set it up):
 * a private Haraka under a temporary directory, listening on loopback, accepts mail for one domain
 * and forwards it (`queue/smtp_forward`) to an SMTP sink the test runs. Mail sent to Haraka over SMTP
 * arrives with the `X-Spam-Result`/`X-Spam-Score` headers spamrule asked for (rspamd's
 * `milter.add_headers`) and Haraka's own `X-Rspamd-Score`; GTUBE mail is rejected at end of DATA.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, waitForPort, sendSmtp, startAll, startSmtpSink, type Started } from './harness.js';

const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
const HARAKA = join(dirname(createRequire(import.meta.url).resolve('Haraka/package.json')), 'bin', 'haraka');

const dir = mkdtempSync(join(tmpdir(), 'spamrule-haraka-'));
let s: Started;
let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let haraka: ChildProcess | undefined;
let output = '';
let smtpPort: number;


beforeAll(async () => {
  s = await startAll({ workers: 1 });
  sink = await startSmtpSink();
  smtpPort = await freePort();
  const rspamd = s.hostPort('rspamd');
  const config = join(dir, 'config');
  mkdirSync(config, { recursive: true });
  const files: Record<string, string> = {
    'smtp.ini': `listen=127.0.0.1:${smtpPort}\nnodes=0\n`,
    'log.ini': '[main]\nlevel=warn\n',
    me: 'haraka.test\n',
    host_list: 'example.com\n',
    plugins: 'rcpt_to.in_host_list\nrspamd\nqueue/smtp_forward\n',
    // Loopback and private clients are scanned too (the plugin skips them by default).
    'rspamd.ini': `host=${rspamd.host}\nport=${rspamd.port}\nadd_headers=always\n\n[check]\nlocal_ip=true\nprivate_ip=true\n\n[reject]\nspam=true\n`,
    'smtp_forward.ini': `host=127.0.0.1\nport=${sink.port}\nenable_tls=false\n`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(config, name), text);
  haraka = spawn(process.execPath, [HARAKA, '-c', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  haraka.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  haraka.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await waitForPort(smtpPort, 60_000, () => `Haraka: ${output}`, () => haraka?.exitCode !== null);
}, 120_000);

afterAll(async () => {
  if (haraka && haraka.exitCode === null) {
    const exited = new Promise((r) => haraka!.once('exit', r));
    haraka.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (haraka.exitCode === null) haraka.kill('SIGKILL');
  }
  await sink?.close();
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Haraka with haraka-plugin-rspamd pointed at spamrule', () => {
  it('delivers ham with spamrule\'s X-Spam headers and the plugin\'s X-Rspamd-Score', async () => {
    const msg = 'From: alice@example.net\r\nTo: bob@example.com\r\nSubject: lunch on friday\r\nMessage-ID: <h1@example.net>\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\n\r\nShall we meet at noon?\r\n';
    const lines = await sendSmtp(smtpPort, 'alice@example.net', 'bob@example.com', msg);
    expect(lines[lines.findIndex((l) => l.startsWith('354')) + 1], `${lines.join('\n')}\n${output}`).toMatch(/^250 /);
    const until = Date.now() + 20_000;
    while (sink.messages.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(sink.messages.length, output).toBe(1);
    const delivered = sink.messages[0]!;
    expect(delivered).toMatch(/^X-Spam-Result: /m);
    expect(delivered).toMatch(/^X-Spam-Score: /m);
    expect(delivered).toMatch(/^X-Rspamd-Score: -?\d/m);
    expect(delivered).toContain('Shall we meet at noon?');
    // spamrule logged the scan Haraka asked for, with the envelope the plugin sent.
    expect(s.logs.some((l) => l.protocol === 'rspamd' && typeof l.score === 'number')).toBe(true);
  });

  it('rejects GTUBE mail at end of DATA with spamrule\'s message, and forwards nothing', async () => {
    const before = sink.messages.length;
    const msg = `From: spammer@example.net\r\nTo: bob@example.com\r\nSubject: offer\r\n\r\n${GTUBE}\r\n`;
    const lines = await sendSmtp(smtpPort, 'spammer@example.net', 'bob@example.com', msg);
    const afterData = lines.slice(lines.findIndex((l) => l.startsWith('354')) + 1);
    expect(afterData[0], lines.join('\n')).toMatch(/^5\d\d .*rejected as spam/i);
    await new Promise((r) => setTimeout(r, 500));
    expect(sink.messages.length).toBe(before);
  });
});
