/**
 * The rspamd and spamd listeners against the real clients from Debian (`rspamc` from the `rspamd`
 * package, `spamc`), scanning corpus mail: the same score, symbols and verdict as `spamrule classify`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as classifyCli } from '../../src/cli/classify.js';
import { capture } from '../helpers/capture.js';
import { loadCorpus } from '../helpers/corpus.js';
import { http, raw, run, startAll, type Started } from './harness.js';

const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
const dir = mkdtempSync(join(tmpdir(), 'spamrule-clients-'));
let s: Started;
let files: string[];
let expected: Map<string, { tags: string[]; score: number; action: string }>;

beforeAll(async () => {
  s = await startAll({ workers: 2 });
  // A spread of the corpus (ham and spam groups), plus one GTUBE message the default rules reject.
  const corpus = loadCorpus({ step: 601 });
  files = corpus.map((m, i) => {
    const f = join(dir, `${String(i).padStart(2, '0')}-${m.group}.eml`);
    writeFileSync(f, m.raw);
    return f;
  });
  const gtube = join(dir, 'gtube.eml');
  writeFileSync(gtube, `From: a@example.org\nTo: b@example.com\nSubject: test\nMessage-ID: <g@example.org>\n\n${GTUBE}\n`);
  files.push(gtube);
  const out = await capture(() => classifyCli(['--json', '--no-progress', ...files]));
  expected = new Map(
    out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { file: string; tags: string[]; score: number; action: string })
      .map((r) => [r.file, r]),
  );
}, 120_000);

afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

const RSPAMD_ACTION: Record<string, string> = { allow: 'no action', spam: 'add header', reject: 'reject', discard: 'reject' };

describe('rspamc (Debian rspamd package)', () => {
  it('prints the same action, score and symbols as spamrule classify', async () => {
    const { host, port } = s.hostPort('rspamd');
    const { stdout } = await run('rspamc', ['-h', `${host}:${port}`, ...files], { timeout: 60_000 });
    // rspamc prints one block per file: "Results for file: F (…)", "Action: …", "Score: S / T", "Symbol: NAME (score)[options]".
    const blocks = stdout.split(/^Results for file: /m).slice(1);
    expect(blocks).toHaveLength(files.length);
    for (const block of blocks) {
      const file = block.slice(0, block.indexOf(' ('));
      const want = expected.get(file)!;
      expect(want, file).toBeDefined();
      expect(/^Action: (.*)$/m.exec(block)?.[1], file).toBe(RSPAMD_ACTION[want.action]);
      const score = /^Score: (-?[\d.]+) \/ ([\d.]+)$/m.exec(block);
      expect(Number(score?.[1]), file).toBeCloseTo(want.score, 2);
      expect(Number(score?.[2])).toBe(5);
      const symbols = [...block.matchAll(/^Symbol: (\S+) \(/gm)].map((m) => m[1]);
      expect(symbols.sort(), file).toEqual([...want.tags].sort());
    }
    expect(expected.get(files.at(-1)!)!.action).toBe('reject');
  }, 90_000);

  it('passes the SMTP session (--ip, --helo, --from, --rcpt) as classify --remote-ip/--helo/… does', async () => {
    const { host, port } = s.hostPort('rspamd');
    const sample = files.slice(0, 4);
    const session = ['--ip', '198.51.100.23', '--helo', 'mail.example.net', '--from', 'sender@example.net', '--rcpt', 'one@example.com', '--rcpt', 'two@example.com'];
    const { stdout } = await run('rspamc', ['-h', `${host}:${port}`, ...session, ...sample], { timeout: 60_000 });
    const out = await capture(() =>
      classifyCli(['--json', '--no-progress', '--remote-ip', '198.51.100.23', '--helo', 'mail.example.net', '--mail-from', 'sender@example.net', '--rcpt-to', 'one@example.com', '--rcpt-to', 'two@example.com', ...sample]),
    );
    const want = new Map(out.stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; tags: string[]; score: number }).map((r) => [r.file, r]));
    const blocks = stdout.split(/^Results for file: /m).slice(1);
    expect(blocks).toHaveLength(sample.length);
    let differs = 0;
    for (const block of blocks) {
      const file = block.slice(0, block.indexOf(' ('));
      const symbols = [...block.matchAll(/^Symbol: (\S+) \(/gm)].map((m) => m[1]).sort();
      expect(symbols, file).toEqual([...want.get(file)!.tags].sort());
      expect(Number(/^Score: (-?[\d.]+)/m.exec(block)?.[1]), file).toBeCloseTo(want.get(file)!.score, 2);
      if (JSON.stringify(symbols) !== JSON.stringify([...expected.get(file)!.tags].sort())) differs++;
    }
    // The session really reached the analysis: the verdicts differ from the session-less ones.
    expect(differs).toBeGreaterThan(0);
  }, 90_000);

  it('answers rspamc ping-style requests and the JSON reply carries milter headers', async () => {
    const url = s.server.addresses.rspamd!;
    const ping = await http(`${url}/ping`);
    expect(ping).toMatchObject({ status: 200, body: 'pong\r\n' });
    const r = await http(`${url}/checkv2`, { method: 'POST', body: `Subject: hi\r\nFrom: a@example.org\r\n\r\n${GTUBE}\r\n`, headers: { 'Queue-Id': 'Q1', Rcpt: ['a@example.com', 'b@example.com'], IP: '192.0.2.1', From: '<x@example.org>', Helo: 'mx.example.org' } });
    expect(r.status).toBe(200);
    const j = JSON.parse(r.body);
    expect(j).toMatchObject({ action: 'reject', required_score: 5, is_skipped: false, messages: { smtp_message: 'Message rejected as spam' } });
    expect(j.symbols.GTUBE).toMatchObject({ name: 'GTUBE', score: 0 });
    expect(j.milter.add_headers['X-Spam-Score'].value).toMatch(/^spam, score=/);
    // The per-scan log line names the queue id.
    expect(s.logs.some((l) => l.msg === 'scan' && l.queueId === 'Q1' && l.action === 'reject' && typeof l.ms === 'number')).toBe(true);
    // The protocol-1 endpoints answer in rspamd's protocol-1 shape: the verdict and symbols under "default".
    for (const path of ['/check', '/symbols']) {
      const v1 = await http(`${url}${path}`, { method: 'POST', body: `Subject: hi\r\nFrom: a@example.org\r\n\r\n${GTUBE}\r\n` });
      const o = JSON.parse(v1.body);
      expect(o.default).toMatchObject({ is_spam: true, is_skipped: false, action: 'reject', required_score: 5 });
      expect(o.default.score).toBeTypeOf('number');
      expect(o.default.GTUBE).toMatchObject({ name: 'GTUBE', score: 0 });
      expect(o.symbols).toBeUndefined();
      expect(o.messages).toEqual({ smtp_message: 'Message rejected as spam' });
    }
  });
});

describe('rspamc stat and uptime (rspamd controller commands)', () => {
  it('count scans by action, as rspamd does', async () => {
    const { host, port } = s.hostPort('rspamd');
    const hp = `${host}:${port}`;
    const stat = async (): Promise<{ scanned: number; reject: number; text: string }> => {
      const { stdout } = await run('rspamc', ['-h', hp, 'stat'], { timeout: 30_000 });
      return {
        scanned: Number(/^Messages scanned: (\d+)$/m.exec(stdout)?.[1]),
        reject: Number(/^Messages with action reject: (\d+), /m.exec(stdout)?.[1] ?? 0), // not printed before the first scan
        text: stdout,
      };
    };
    const before = await stat();
    await run('rspamc', ['-h', hp, files.at(-1)!], { timeout: 30_000 }); // GTUBE: reject
    const after = await stat();
    expect(after.scanned).toBe(before.scanned + 1);
    expect(after.reject).toBe(before.reject + 1);
    expect(after.text).toMatch(/^Messages treated as spam: \d+, [\d.]+%$/m);
    expect(after.text).toMatch(/^Average scan time: [\d.]+ sec$/m);
    const { stdout: up } = await run('rspamc', ['-h', hp, 'uptime'], { timeout: 30_000 });
    expect(up).toMatch(/uptime: \d+ (second|minute|hour)/i);
  }, 60_000);
});

describe("rspamd's legacy text protocol, as Exim's spam = … variant=rspamd speaks it", () => {
  it('answers CHECK RSPAMC/1.3 with the session headers in a reply Exim parses', async () => {
    const { host, port } = s.hostPort('rspamd');
    const { connect } = await import('node:net');
    const { readFileSync } = await import('node:fs');
    const file = files.at(-1)!; // GTUBE: reject
    const body = readFileSync(file);
    // Exim's request (src/spam.c): no half-close; it reads until the server closes.
    const head = `CHECK RSPAMC/1.3\r\nContent-length: ${body.length}\r\nQueue-Id: 1abcDE-000001-XY\r\nFrom: <a@example.org>\r\nRecipient-Number: 1\r\nRcpt: <b@example.com>\r\nHelo: mx.example.org\r\nIP: 192.0.2.9\r\n\r\n`;
    const reply = await new Promise<string>((resolve, reject) => {
      const c = connect(port, host);
      let out = '';
      c.on('data', (d: Buffer) => (out += d.toString('latin1')));
      c.on('close', () => resolve(out));
      c.on('error', reject);
      c.write(Buffer.concat([Buffer.from(head), body]));
    });
    // Exim: sscanf("RSPAMD/%7s 0 EX_OK\r\nMetric: default; %7s %lf / %lf / %lf\r\n%n") == 5, then "Action: ".
    const m = /^RSPAMD\/(\S{1,7}) 0 EX_OK\r\nMetric: default; (\S{1,7}) (-?[\d.]+) \/ ([\d.]+) \/ ([\d.]+)\r\nAction: ([^\r]*)\r\n/.exec(reply);
    expect(m, reply).not.toBeNull();
    expect(m![2]).toBe('True;');
    expect(Number(m![4])).toBe(5);
    expect(m![6]).toBe('reject');
    expect(reply).toMatch(/^Symbol: GTUBE\(0\.00\)\r$/m);
    expect(s.logs.some((l) => l.msg === 'scan' && l.queueId === '1abcDE-000001-XY' && l.remoteIp === '192.0.2.9')).toBe(true);
  });
});

describe('spamc (Debian spamc package)', () => {
  const args = (): string[] => {
    const { host, port } = s.hostPort('spamd');
    return ['-d', host, '-p', String(port)];
  };

  /** spamc reads the message on stdin. */
  async function spamc(extra: string[], file: string): Promise<{ stdout: string; code: number }> {
    const { spawn } = await import('node:child_process');
    const { createReadStream } = await import('node:fs');
    return new Promise((resolve, reject) => {
      const p = spawn('spamc', [...args(), ...extra], { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString('latin1')));
      p.on('error', reject);
      p.on('close', (code) => resolve({ stdout: out, code: code ?? -1 }));
      // spamc -K does not read its input: the pipe then breaks (EPIPE), which is no failure here.
      p.stdin.on('error', () => undefined);
      createReadStream(file).pipe(p.stdin);
    });
  }

  it('spamc -c prints score/threshold and exits with the spam status', async () => {
    for (const f of [...files.slice(0, 6), files.at(-1)!]) {
      const want = expected.get(f)!;
      const r = await spamc(['-c'], f);
      const [score, threshold] = r.stdout.trim().split('/').map(Number);
      expect(score, f).toBeCloseTo(want.score, 1);
      expect(threshold).toBe(5);
      expect(r.code, f).toBe(want.action === 'allow' ? 0 : 1);
    }
  }, 60_000);

  it('SYMBOLS, REPORT and PROCESS replies', async () => {
    const gtube = files.at(-1)!;
    const sym = await spamc(['-y'], gtube);
    expect(sym.stdout.split(',')).toContain('GTUBE');
    const report = await spamc(['-R'], gtube);
    expect(report.stdout).toContain('GTUBE');
    expect(report.stdout).toMatch(/rule SR_GTUBE/);
    const ham = files[0]!;
    const processed = await spamc([], ham);
    expect(processed.stdout).toMatch(/^X-Spam-Result: /m);
    expect(processed.stdout).toMatch(/^X-Spam-Score: (ham|spam), score=/m);
    // The message itself comes back after our headers.
    expect(processed.stdout).toContain(expected.get(ham) ? 'Subject:' : '');
    const ping = await spamc(['-K'], ham);
    expect(ping.code).toBe(0);
    // SpamAssassin sorts the SYMBOLS list.
    const names = sym.stdout.trim().split(',');
    expect(names).toEqual([...names].sort());
  }, 60_000);

  it("adds SpamAssassin's X-Spam-Flag, X-Spam-Status and X-Spam-Level, and removes forged copies", async () => {
    const headerOf = (out: string, name: string): string | undefined =>
      new RegExp(`^${name}: (.*(?:\\r?\\n[ \\t].*)*)`, 'm').exec(out.slice(0, out.search(/\r?\n\r?\n/)))?.[1]?.replace(/\r?\n\t/g, ' ');
    const gtube = files.at(-1)!;
    const spam = (await spamc([], gtube)).stdout;
    const symbols = (await spamc(['-y'], gtube)).stdout.trim().split(',');
    expect(headerOf(spam, 'X-Spam-Flag')).toBe('YES');
    const status = headerOf(spam, 'X-Spam-Status')!;
    const m = /^Yes, score=(-?\d+\.\d) required=5\.0 tests=(\S+(?: \S+)*) version=spamrule$/.exec(status);
    expect(m, status).not.toBeNull();
    expect(m![2]!.split(/,\s*/)).toEqual(symbols);
    expect(headerOf(spam, 'X-Spam-Level')).toBe('*'.repeat(Math.max(0, Math.floor(Number(m![1])))));
    for (const line of spam.slice(0, spam.search(/\r?\n\r?\n/)).split(/\r?\n/)) if (/^(X-Spam-Status|\t)/.test(line)) expect(line.length).toBeLessThanOrEqual(78);

    // Ham, with forged SpamAssassin headers from upstream: they are gone, ours say No.
    const forged = join(dir, 'forged.eml');
    writeFileSync(forged, 'X-Spam-Flag: YES\nX-Spam-Status: Yes, score=99.0\n\ttests=FORGED\nFrom: a@example.org\nTo: b@example.com\nSubject: hi\n\nhello\n');
    const ham = (await spamc([], forged)).stdout;
    expect(ham).not.toMatch(/^X-Spam-Flag:/m);
    expect(ham).not.toContain('FORGED');
    expect(headerOf(ham, 'X-Spam-Status')).toMatch(/^No, score=-?\d+\.\d required=5\.0 tests=\S+/);
  }, 60_000);

  it('spamc --headers gives the same message as PROCESS (the blank line after the headers kept), for CRLF, LF and header-only mail', async () => {
    const bareLf = join(dir, 'bare-lf.eml');
    writeFileSync(bareLf, 'From: a@example.org\nTo: b@example.com\nSubject: lf\n\nhello\nworld\n');
    const headerOnly = join(dir, 'header-only.eml');
    writeFileSync(headerOnly, 'From: a@example.org\r\nTo: b@example.com\r\nSubject: no body\r\n');
    for (const f of [files[0]!, files[3]!, files.at(-1)!, bareLf]) {
      const processed = await spamc([], f);
      const headers = await spamc(['--headers'], f);
      expect(headers.stdout, f).toBe(processed.stdout);
      const { readFileSync } = await import('node:fs');
      const original = readFileSync(f, 'latin1');
      const body = original.slice(original.search(/\r?\n\r?\n/));
      expect(processed.stdout.endsWith(body), f).toBe(true);
    }
    const p = await spamc([], headerOnly);
    expect(p.stdout).toMatch(/^X-Spam-Result: [^]*\r\nSubject: no body\r\n\r\n$/);
  }, 60_000);

  it('keeps an mbox From_ line first, as procmail hands it to spamc', async () => {
    const mbox = join(dir, 'mbox-line.eml');
    writeFileSync(mbox, 'From someone@example.org  Thu Aug 22 12:00:00 2002\nFrom: a@example.org\nTo: b@example.com\nSubject: mbox\n\nhi\n');
    const r = await spamc([], mbox);
    expect(r.stdout).toMatch(/^From someone@example\.org {2}Thu Aug 22 12:00:00 2002\nX-Spam-Result: /);
    expect(r.stdout).toMatch(/\nFrom: a@example\.org\nTo: b@example\.com\nSubject: mbox\n\nhi\n$/);
  }, 60_000);

  it("answers protocol 1.2 clients without Content-length, in the form Exim's spamd support parses", async () => {
    const { host, port } = s.hostPort('spamd');
    const msg = `From: a@example.org\r\nTo: b@example.com\r\nSubject: test\r\n\r\n${GTUBE}\r\n`;
    // Exim sends REPORT SPAMC/1.2 and reads `Spam: … ; score / threshold` right after the status line
    // (its fallback sscanf pattern), then the report.
    const old = await raw(host, port, `REPORT SPAMC/1.2\r\nContent-length: ${msg.length}\r\n\r\n${msg}`, { halfClose: true });
    expect(old.reply.toString('latin1')).toMatch(/^SPAMD\/1\.1 0 EX_OK\r\nSpam: True ; -?\d+\.\d+ \/ 5\.00\r\n\r\n[^]*GTUBE/);
    const current = await raw(host, port, `REPORT SPAMC/1.5\r\nContent-length: ${msg.length}\r\n\r\n${msg}`, { halfClose: true });
    const text = current.reply.toString('latin1');
    const length = /^SPAMD\/1\.1 0 EX_OK\r\nContent-length: (\d+)\r\nSpam: True ; /.exec(text);
    expect(length).not.toBeNull();
    expect(Buffer.byteLength(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1')).toBe(Number(length![1]));
  }, 60_000);
});
