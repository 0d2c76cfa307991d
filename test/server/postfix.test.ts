/**
 * The milter listener behind a real Postfix (Debian `postfix`): a private instance configured under
 * a temporary directory (own config, queue and data directories, loopback only, a random smtpd
 * port, `smtpd_milters` pointed at spamrule, relaying to an SMTP sink the test runs). Mail sent
 * over SMTP arrives with `X-Spam-Result`/`X-Spam-Score`; GTUBE mail is rejected at end of DATA. Two more
 * smtpd ports use two more spamrule servers whose only scan slot a test fills: one with the default
 * `milterBusyAction` (the message is deferred, 451), one with `accept` (delivered with `X-Spam-Note`). Two
 * more behind two more ports have a 1.5 s scan time limit that a test's message runs over (and a worker
 * thread a test ends mid-scan): one with `milterErrorAction: 'tempfail'` (deferred, 451), one with the
 * default `accept` (delivered unscanned with `X-Spam-Note`).
 *
 * Postfix's master runs in the foreground (`postfix start-fg`) as a child of the test, so it ends
 * with the test even when `postfix stop` is not reached. It must start as root (it drops to
 * `mail_owner` itself): the test runs it directly as root, else through `sudo -n`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import {
  freePort,
  HOLD_SUBJECT,
  holdSlot,
  killWorkersMidScan,
  milterOptneg,
  milterPacket,
  waitForPort,
  run,
  sendSmtp,
  slotHolderSpec,
  startAll,
  startSilentRedis,
  startSmtpSink,
  threadsLoaded,
  type Started,
} from './harness.js';

const POSTFIX = '/usr/sbin/postfix';
const MB = 1024 * 1024;
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
const isRoot = userInfo().uid === 0;
/** Postfix is started as root (it drops to mail_owner itself); without root, through `sudo -n`. */
const asRoot = (cmd: string, args: string[]): [string, string[]] => (isRoot ? [cmd, args] : ['sudo', ['-n', cmd, ...args]]);
const canSudo = (): boolean => spawnSync('sudo', ['-n', 'true']).status === 0;
// Outside CI a machine without Postfix (or without root) skips; under CI=true that is a failure.
const available = process.env.CI === 'true' || (existsSync(POSTFIX) && (isRoot || canSudo()));

const dir = mkdtempSync(join(tmpdir(), 'spamrule-postfix-'));
let s: Started;
let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let master: ChildProcess | undefined;
let smtpPort: number;
/** spamrule servers with one scan slot and no waiting room, and the smtpd ports whose milter each is. */
let busy: Started;
let open: Started;
let redis: Awaited<ReturnType<typeof startSilentRedis>>;
let busyPort: number;
let openPort: number;
/** spamrule servers whose scans of a HOLD_SUBJECT message run over their time limit, and their smtpd ports. */
let failClosed: Started;
let failOpen: Started;
let failClosedPort: number;
let failOpenPort: number;
const SCAN_TIMEOUT_MS = 1_500;
let readLog = (): string => '';
let exited = '';
const log = (): string => `${readLog()}\n${exited}`;



beforeAll(async () => {
  if (!available) return;
  // A small buffer budget, so that one raw client can fill it (the last test).
  s = await startAll({ workers: 1, limits: { maxSize: MB, maxBufferedBytes: MB } });
  sink = await startSmtpSink();
  smtpPort = await freePort();
  redis = await startSilentRedis();
  const oneSlot = { workers: 1, limits: { maxConcurrentScans: 1, maxWaitingScans: 0 }, spec: slotHolderSpec(redis.port, 4_000) };
  busy = await startAll(oneSlot);
  open = await startAll({ ...oneSlot, milterBusyAction: 'accept' });
  busyPort = await freePort();
  openPort = await freePort();
  const slow = { workers: 1, timeoutMs: SCAN_TIMEOUT_MS, spec: slotHolderSpec(redis.port, 8_000) };
  failClosed = await startAll({ ...slow, milterErrorAction: 'tempfail' });
  failOpen = await startAll(slow);
  failClosedPort = await freePort();
  failOpenPort = await freePort();
  const milterOf = (x: Started): string => `inet:${x.hostPort('milter').host}:${x.hostPort('milter').port}`;
  const conf = join(dir, 'conf');
  const queue = join(dir, 'queue');
  const data = join(dir, 'data');
  for (const d of [conf, queue, data]) mkdirSync(d, { recursive: true });
  // mkdtemp makes a 0700 directory; Postfix's daemons run as mail_owner and must reach the queue.
  chmodSync(dir, 0o755);
  await run(...asRoot('chown', ['postfix:postfix', data]));
  const milter = s.hostPort('milter');
  writeFileSync(
    join(conf, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${queue}`,
      `data_directory = ${data}`,
      'mail_owner = postfix',
      'myhostname = mx.spamrule.test',
      'mydomain = spamrule.test',
      'mydestination =',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      `relayhost = [127.0.0.1]:${sink.port}`,
      'smtp_dns_support_level = disabled',
      `smtpd_milters = inet:${milter.host}:${milter.port}`,
      'milter_default_action = tempfail',
      'milter_protocol = 6',
      'maillog_file = /dev/stdout',
      'alias_maps =',
      'alias_database =',
      'local_recipient_maps =',
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      'smtp_tls_security_level = none',
      'smtpd_tls_security_level = none',
      'biff = no',
      '',
    ].join('\n'),
  );
  // Only the services this test needs, none chrooted (the queue is not a chroot jail).
  writeFileSync(
    join(conf, 'master.cf'),
    [
      `127.0.0.1:${smtpPort} inet n - n - - smtpd`,
      `127.0.0.1:${busyPort} inet n - n - - smtpd -o smtpd_milters=${milterOf(busy)}`,
      `127.0.0.1:${openPort} inet n - n - - smtpd -o smtpd_milters=${milterOf(open)}`,
      `127.0.0.1:${failClosedPort} inet n - n - - smtpd -o smtpd_milters=${milterOf(failClosed)}`,
      `127.0.0.1:${failOpenPort} inet n - n - - smtpd -o smtpd_milters=${milterOf(failOpen)}`,
      'pickup    fifo  n - n 60 1 pickup',
      'cleanup   unix  n - n - 0 cleanup',
      'qmgr      unix  n - n 300 1 qmgr',
      'rewrite   unix  - - n - - trivial-rewrite',
      'bounce    unix  - - n - 0 bounce',
      'defer     unix  - - n - 0 bounce',
      'trace     unix  - - n - 0 bounce',
      'verify    unix  - - n - 1 verify',
      'flush     unix  n - n 1000? 0 flush',
      'proxymap  unix  - - n - - proxymap',
      'smtp      unix  - - n - - smtp',
      'relay     unix  - - n - - smtp',
      'showq     unix  n - n - - showq',
      'error     unix  - - n - - error',
      'retry     unix  - - n - - error',
      'discard   unix  - - n - - discard',
      'anvil     unix  - - n - 1 anvil',
      'scache    unix  - - n - 1 scache',
      'postlog   unix-dgram n - n - 1 postlogd',
      '',
    ].join('\n'),
  );
  // Postfix logs to its stdout (maillog_file = /dev/stdout), which must be a file: with a pipe
  // there, `start-fg` exits at once with status 1 and no message.
  const logFile = join(dir, 'postfix.log');
  const fd = openSync(logFile, 'w');
  master = spawn(...asRoot(POSTFIX, ['-c', conf, 'start-fg']), { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  readLog = () => readFileSync(logFile, 'utf8');
  master.on('exit', (code) => (exited = `(postfix exited with ${code})`));
  await waitForPort(smtpPort, 30_000, () => `Postfix: ${log()}`);
}, 90_000);

afterAll(async () => {
  if (master !== undefined) {
    await run(...asRoot(POSTFIX, ['-c', join(dir, 'conf'), 'stop'])).catch(() => undefined);
    if (master.exitCode === null) master.kill('SIGTERM');
  }
  await sink?.close();
  await s?.close();
  await busy?.close();
  await open?.close();
  await failClosed?.close();
  await failOpen?.close();
  redis?.close();
  // The queue belongs to Postfix's users; without root, sudo removes it.
  if (isRoot) rmSync(dir, { recursive: true, force: true });
  else await run(...asRoot('rm', ['-rf', dir])).catch(() => undefined);
});

async function delivered(n: number, ms = 20_000): Promise<string> {
  const until = Date.now() + ms;
  while (sink.messages.length < n) {
    if (Date.now() > until) throw new Error(`nothing delivered; postfix log:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return sink.messages[n - 1]!;
}

describe.skipIf(!available)('Postfix with smtpd_milters = spamrule', () => {
  it('delivers mail with X-Spam-Result and X-Spam-Score, replacing forged copies', async () => {
    const msg = [
      'From: Alice <alice@example.org>',
      'To: bob@example.com',
      'Subject: quarterly figures',
      'Date: Mon, 23 Nov 2026 18:00:00 +0000',
      'Message-ID: <q1@example.org>',
      'X-Spam-Score: ham, score=-100.00',
      '',
      'Please find the figures below.',
      '',
    ].join('\r\n');
    const replies = await sendSmtp(smtpPort, 'alice@example.org', 'bob@example.com', msg);
    expect(replies.some((l) => /^250 .*queued as/.test(l)), replies.join('\n')).toBe(true);
    const got = await delivered(1);
    expect(got).toMatch(/^X-Spam-Result: \S/m);
    expect(got).toMatch(/^X-Spam-Score: ham, score=\d/m);
    expect(got.match(/^X-Spam-Score:/gm)).toHaveLength(1);
    expect(got).not.toContain('score=-100.00');
    expect(got).toContain('Please find the figures below.');
    // The scan was logged with Postfix's queue id.
    const queued = /queued as (\w+)/.exec(replies.join('\n'))![1];
    expect(s.logs.some((l) => l.msg === 'scan' && l.protocol === 'milter' && l.queueId === queued)).toBe(true);
  }, 60_000);

  it('rejects GTUBE mail at end of DATA with 550 5.7.1', async () => {
    const msg = ['From: spammer@example.net', 'To: bob@example.com', 'Subject: offer', '', GTUBE, ''].join('\r\n');
    const before = sink.messages.length;
    const replies = await sendSmtp(smtpPort, 'spammer@example.net', 'bob@example.com', msg);
    expect(replies.some((l) => l.startsWith('550 5.7.1 Message rejected as spam')), replies.join('\n')).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.messages.length).toBe(before);
  }, 60_000);

  it('defers a message (451 4.7.1) whose bytes do not fit in the buffer budget, and delivers it once there is room', async () => {
    // Another milter client holds 900 KB of a message it never finishes.
    const milter = s.hostPort('milter');
    const holder = connect(milter.port, milter.host);
    holder.on('error', () => undefined);
    holder.on('data', () => undefined);
    const chunks = Array.from({ length: 15 }, () => milterPacket('B', Buffer.alloc(60 * 1024, 'h')));
    holder.write(Buffer.concat([milterOptneg(), milterPacket('M', '<h@example.org>\x00'), milterPacket('L', 'Subject\x00hold\x00'), milterPacket('N'), ...chunks]));
    while (s.server.scanner.budget.used < 900 * 1024) await new Promise((r) => setTimeout(r, 20));
    const body = Array.from({ length: 4000 }, (_, i) => `line ${i} of a longer report, padded to some length for the test`).join('\r\n');
    const msg = ['From: Alice <alice@example.org>', 'To: bob@example.com', 'Subject: big report', 'Message-ID: <big@example.org>', '', body, ''].join('\r\n');
    const before = sink.messages.length;
    const deferred = await sendSmtp(smtpPort, 'alice@example.org', 'bob@example.com', msg);
    expect(deferred.some((l) => /^451 4\.7\.1 /.test(l)), `${deferred.join('\n')}\n${log()}`).toBe(true);
    expect(sink.messages.length).toBe(before);
    holder.destroy();
    while (s.server.scanner.budget.used > 0) await new Promise((r) => setTimeout(r, 20));
    // The client retries, as it does after any 4xx: now it goes through, scanned.
    const retried = await sendSmtp(smtpPort, 'alice@example.org', 'bob@example.com', msg);
    expect(retried.some((l) => /^250 .*queued as/.test(l)), retried.join('\n')).toBe(true);
    const got = await delivered(before + 1);
    expect(got).toMatch(/^X-Spam-Score: \S/m);
    expect(got).toContain('line 3999 of a longer report');
  }, 60_000);

  it('defers a message (451 4.7.1) while every scan slot is taken (milterBusyAction tempfail, the default), and delivers it scanned on retry', async () => {
    const msg = ['From: Alice <alice@example.org>', 'To: bob@example.com', 'Subject: at a busy time', 'Message-ID: <busy@example.org>', '', 'Hello.', ''].join('\r\n');
    const before = sink.messages.length;
    const held = await holdSlot(busy);
    const deferred = await sendSmtp(busyPort, 'alice@example.org', 'bob@example.com', msg);
    expect(deferred.some((l) => /^451 4\.7\.1 /.test(l)), `${deferred.join('\n')}\n${log()}`).toBe(true);
    expect(deferred.some((l) => /queued as/.test(l))).toBe(false);
    expect((await busy.server.metrics.scans.get()).values.find((v) => v.labels.protocol === 'milter' && v.labels.action === 'busy')?.value).toBe(1);
    await held.done;
    // The sender retries, as after any 4xx: the slot is free now, and the message is scanned.
    const retried = await sendSmtp(busyPort, 'alice@example.org', 'bob@example.com', msg);
    expect(retried.some((l) => /^250 .*queued as/.test(l)), retried.join('\n')).toBe(true);
    const got = await delivered(before + 1);
    expect(got).toMatch(/^X-Spam-Score: ham, score=/m);
    expect(got).not.toMatch(/^X-Spam-Note:/m);
  }, 60_000);

  it('with milterBusyAction accept, delivers the message unscanned with X-Spam-Note (the old behaviour)', async () => {
    const msg = ['From: Alice <alice@example.org>', 'To: bob@example.com', 'Subject: at a busy time', 'Message-ID: <open@example.org>', '', 'Hello again.', ''].join('\r\n');
    const before = sink.messages.length;
    const held = await holdSlot(open);
    const replies = await sendSmtp(openPort, 'alice@example.org', 'bob@example.com', msg);
    expect(replies.some((l) => /^250 .*queued as/.test(l)), replies.join('\n')).toBe(true);
    const got = await delivered(before + 1);
    expect(got).toMatch(/^X-Spam-Note: not scanned: too many scans at once; try again later/m);
    expect(got).not.toMatch(/^X-Spam-Score:/m);
    expect(got).toContain('Hello again.');
    await held.done;
  }, 60_000);

  it('defers a message whose scan runs over the time limit, or whose worker thread ends mid-scan (451 4.7.1), with milterErrorAction tempfail', async () => {
    const msg = ['From: Alice <alice@example.org>', 'To: bob@example.com', `Subject: ${HOLD_SUBJECT}`, 'Message-ID: <slow@example.org>', '', 'Slow to scan.', ''].join('\r\n');
    const before = sink.messages.length;
    const scans = async (action: string): Promise<number | undefined> =>
      (await failClosed.server.metrics.scans.get()).values.find((v) => v.labels.protocol === 'milter' && v.labels.action === action)?.value;
    const timedOut = await sendSmtp(failClosedPort, 'alice@example.org', 'bob@example.com', msg);
    expect(timedOut.some((l) => /^451 4\.7\.1 /.test(l)), `${timedOut.join('\n')}\n${log()}`).toBe(true);
    expect(timedOut.some((l) => /queued as/.test(l))).toBe(false);
    expect(await scans('timeout')).toBe(1);
    // The thread the time-out ended has been replaced; this one ends under the next scan.
    await threadsLoaded(failClosed, 2);
    const failing = sendSmtp(failClosedPort, 'alice@example.org', 'bob@example.com', msg);
    await killWorkersMidScan(failClosed);
    const failed = await failing;
    expect(failed.some((l) => /^451 4\.7\.1 /.test(l)), `${failed.join('\n')}\n${log()}`).toBe(true);
    expect(await scans('error')).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.messages.length).toBe(before);
  }, 60_000);

  it('with milterErrorAction accept (the default), delivers a message whose scan ran over the time limit unscanned, with X-Spam-Note', async () => {
    const msg = ['From: Alice <alice@example.org>', 'To: bob@example.com', `Subject: ${HOLD_SUBJECT}`, 'Message-ID: <slow-open@example.org>', '', 'Slow to scan, again.', ''].join('\r\n');
    const before = sink.messages.length;
    const replies = await sendSmtp(failOpenPort, 'alice@example.org', 'bob@example.com', msg);
    expect(replies.some((l) => /^250 .*queued as/.test(l)), replies.join('\n')).toBe(true);
    const got = await delivered(before + 1);
    expect(got).toMatch(new RegExp(`^X-Spam-Note: not scanned: scan timed out after ${SCAN_TIMEOUT_MS} ms`, 'm'));
    expect(got).not.toMatch(/^X-Spam-Score:/m);
    expect(got).toContain('Slow to scan, again.');
  }, 60_000);
});
