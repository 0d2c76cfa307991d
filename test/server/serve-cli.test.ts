/**
 * `spamrule serve` as an operator runs it (a separate process): rules from the managed registry,
 * where a JMAP change reaches every worker before the next message; a TOML `--config` file with
 * flags on top; `/healthz` and `/metrics`; graceful shutdown that finishes the scan in flight.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PERMISSIONS, TokenStore } from '../../src/jmap/index.js';
import { readServeConfig } from '../../src/server/config.js';
import { parseListenAddress, parseSize } from '../../src/server/index.js';
import { startLlmServer, startPyzord, startRedis } from '../servers/index.js';
import { http, spawnServe } from './harness.js';

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'spamrule-serve-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Serve {
  child: ChildProcess;
  lines: Record<string, string>;
  exit: Promise<number | null>;
  /** Resolves with the first JSON log line (from the start) that `pred` accepts; rejects after 30 s. */
  logLine(pred: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

/**
 * Starts `spamrule serve ARGS` and waits for its "ready" log line (JSON, at --log-level info);
 * `lines` maps listener (jmap, rspamd, milter, spamd, metrics) → address, from the "listening" lines.
 */
function serve(args: string[]): Promise<Serve> {
  const { child, exit } = spawnServe(args, children);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let started = false;
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 90_000);
    const entries = (): { msg?: string; listener?: string; address?: string }[] =>
      out
        .split('\n')
        .slice(0, -1)
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; listener?: string; address?: string });
    const logLine = async (pred: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
      for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
        const hit = entries().find((e) => pred(e));
        if (hit !== undefined) return hit;
      }
      throw new Error(`no such log line in: ${out.slice(-2000)}`);
    };
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (started) return;
      const all = entries();
      if (all.some((e) => e.msg === 'ready')) {
        started = true;
        clearTimeout(timer);
        const lines: Record<string, string> = {};
        for (const e of all) if (e.msg === 'listening') lines[e.listener!] = e.address!;
        resolve({ child, lines, exit, logLine });
      }
    });
    void exit.then((code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
}

async function symbols(url: string, subject: string): Promise<string[]> {
  const r = await http(`${url}/checkv2`, { method: 'POST', body: `From: a@example.org\r\nTo: b@example.com\r\nSubject: ${subject}\r\n\r\nbody\r\n` });
  expect(r.status).toBe(200);
  return Object.keys(JSON.parse(r.body).symbols);
}

describe('spamrule serve --db (managed rules over JMAP)', () => {
  it('with --model, a JMAP x:SpamTrainingSample stores its uploaded message in the model file', async () => {
    const db = join(dir, 'samples.db');
    const model = join(dir, 'samples-model.sqlite');
    const tokens = new TokenStore(db);
    const token = tokens.create('trainer', ['sysSpamTrainingSampleCreate', 'sysSpamTrainingSampleGet']).token;
    tokens.close();
    const s = await serve(['--db', db, '--model', model, '--listen', '127.0.0.1:0', '--rspamd', '127.0.0.1:0', '--workers', '1', '--log-level', 'info', '--cache-dir', join(dir, 'lists')]);
    const jmapUrl = s.lines.jmap!;
    const message = 'From: lottery@example.net\r\nTo: you@example.com\r\nSubject: You won\r\n\r\nClaim your prize now.\r\n';
    const up = await fetch(`${jmapUrl}/jmap/upload/a/`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'message/rfc822' }, body: message });
    expect(up.status).toBe(201);
    const { blobId } = (await up.json()) as { blobId: string };
    const r = await fetch(`${jmapUrl}/jmap`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ using: ['urn:ietf:params:jmap:core'], methodCalls: [['x:SpamTrainingSample/set', { create: { s: { blobId, isSpam: true } } }, '0']] }),
    });
    const [[, res]] = ((await r.json()) as { methodResponses: [string, any, string][] }).methodResponses;
    expect(res.created.s).toMatchObject({ from: 'lottery@example.net', subject: 'You won' });
    const { openClassifier, sqliteModelConfig } = await import('../../src/classifier/index.js');
    const c = await openClassifier(sqliteModelConfig(model), { refreshMs: 0 });
    try {
      const id = await c.store.lastSampleId();
      expect(id).toBe(1);
      expect((await c.store.getSample(id))?.spam).toBe(true);
    } finally {
      await c.store.store.close();
    }
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  });

  it('--model redis://URL: the workers classify with the model kept in Redis, which another process trained', async () => {
    const redis = await startRedis();
    try {
      const url = `${redis.url}/2`;
      const { openClassifier } = await import('../../src/classifier/index.js');
      const { modelStoreConfig } = await import('../../src/classifier/location.js');
      const { hamMessage, spamMessage } = await import('../classifier/helpers.js');
      const c = await openClassifier(modelStoreConfig({ model: url }), { settings: { minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
      for (let i = 0; i < 10; i++) await c.learn(spamMessage(i), true);
      for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
      expect((await c.train({ seed: 1 })).generation).toBe(1);
      await c.close();
      const s = await serve(['--model', url, '--rspamd', '127.0.0.1:0', '--workers', '1', '--log-level', 'info', '--cache-dir', join(dir, 'lists')]);
      // The worker loads the model in the background: the first scans may come before it.
      let found: string[] = [];
      for (const end = Date.now() + 60_000; Date.now() < end && !found.some((t) => t.startsWith('PROB_SPAM_')); await new Promise((r) => setTimeout(r, 200))) {
        const r = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', body: spamMessage(60) });
        found = Object.keys((JSON.parse(r.body) as { symbols: Record<string, unknown> }).symbols);
      }
      expect(found).toContain('PROB_SPAM_HIGH');
      s.child.kill('SIGTERM');
      expect(await s.exit).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 180_000);

  it('caps the JMAP listener per peer with limits.maxConnectionsPerPeer, counted in /metrics under protocol "jmap"', async () => {
    const db = join(dir, 'peers.db');
    writeFileSync(join(dir, 'peers.json'), JSON.stringify({ limits: { maxConnectionsPerPeer: 2 } }));
    const s = await serve(['--config', join(dir, 'peers.json'), '--db', db, '--listen', '127.0.0.1:0', '--rspamd', '127.0.0.1:0', '--workers', '1', '--cache-dir', join(dir, 'lists')]);
    const port = Number(new URL(s.lines.jmap!).port);
    const opened = (): Promise<{ sock: import('node:net').Socket; closed: Promise<void> }> =>
      new Promise((resolve) => {
        const sock = connect(port, '127.0.0.1');
        sock.on('error', () => undefined);
        const closed = new Promise<void>((r) => sock.once('close', () => r()));
        sock.once('connect', () => resolve({ sock, closed }));
      });
    const held = [await opened(), await opened()];
    const over = await opened();
    await over.closed;
    const metrics = await http(`${s.lines.rspamd}/metrics`);
    expect(metrics.body).toMatch(/^spamrule_connections_refused_total\{protocol="jmap",reason="per_peer"\} 1$/m);
    for (const h of held) h.sock.destroy();
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  }, 120_000);

  it('--store-allow-host limits the hosts a StoreLookup written over JMAP may name', async () => {
    const db = join(dir, 'hosts.db');
    const tokens = new TokenStore(db);
    const token = tokens.create('stores', ['sysStoreLookupCreate']).token;
    tokens.close();
    const s = await serve(['--db', db, '--listen', '127.0.0.1:0', '--rspamd', '127.0.0.1:0', '--workers', '1', '--cache-dir', join(dir, 'lists'), '--store-allow-host', '127.0.0.1']);
    const set = async (host: string): Promise<any> => {
      const r = await fetch(`${s.lines.jmap}/jmap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'], methodCalls: [['x:StoreLookup/set', { create: { k: { namespace: `ns-${host}`, store: { '@type': 'Redis', url: `redis://${host}:6379` } } } }, '0']] }),
      });
      return ((await r.json()) as { methodResponses: [string, any, string][] }).methodResponses[0]![1];
    };
    expect((await set('10.0.0.5')).notCreated.k).toMatchObject({ type: 'invalidProperties', properties: ['store/url'] });
    expect((await set('127.0.0.1')).created.k.id).toBeTypeOf('string');
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  }, 120_000);

  it('a SpamRule change reaches every worker before the next message; shutdown finishes the scan in flight', async () => {
    const db = join(dir, 'managed.db');
    const tokens = new TokenStore(db);
    const token = tokens.create('admin', [...PERMISSIONS]).token;
    tokens.close();
    // The HttpLookup below is served on loopback, which list downloads reach only when allowed.
    const s = await serve(['--db', db, '--listen', '127.0.0.1:0', '--rspamd', '127.0.0.1:0', '--workers', '2', '--log-level', 'info', '--cache-dir', join(dir, 'lists'), '--list-allow-network', '127.0.0.1']);
    const jmapUrl = s.lines.jmap!;
    const rspamd = s.lines.rspamd!;
    const jmap = async (calls: unknown[]): Promise<any[]> => {
      const r = await fetch(`${jmapUrl}/jmap`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'], methodCalls: calls }),
      });
      return ((await r.json()) as { methodResponses: any[] }).methodResponses;
    };
    // Several scans at once, so both workers answer.
    const all = async (subject: string): Promise<string[][]> => Promise.all([1, 2, 3, 4, 5, 6].map(() => symbols(rspamd, subject)));

    expect((await all('xyzzy')).every((t) => !t.includes('XYZZY_MARK'))).toBe(true);
    const created = await jmap([['x:SpamRule/set', { create: { r: { '@type': 'Any', name: 'XYZZY', condition: { match: [{ if: "contains(subject, 'xyzzy')", then: "'XYZZY_MARK'" }], else: 'false' } } } }, '0']]);
    const id = created[0][1].created.r.id as string;
    expect((await all('xyzzy')).every((t) => t.includes('XYZZY_MARK'))).toBe(true);
    await jmap([['x:SpamRule/set', { update: { [id]: { 'condition/match/0/then': "'XYZZY_TWO'" } } }, '1']]);
    expect((await all('xyzzy')).every((t) => t.includes('XYZZY_TWO') && !t.includes('XYZZY_MARK'))).toBe(true);
    await jmap([['x:SpamRule/set', { destroy: [id] }, '2']]);
    expect((await all('xyzzy')).every((t) => !t.includes('XYZZY_TWO'))).toBe(true);

    const health = await http(`${rspamd}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok', workers: 2 });
    const metrics = await http(`${rspamd}/metrics`);
    expect(metrics.body).toMatch(/^spamrule_scans_total\{protocol="rspamd",action="allow"\} 24$/m);
    expect(metrics.body).toMatch(/^spamrule_scan_duration_seconds_count\{protocol="rspamd"\} 24$/m);
    expect(metrics.body).toContain('spamrule_queue_depth');

    // The other registry types reach the workers too: a SpamTag gives a managed rule's tag its score,
    // and an HttpLookup is downloaded (from a list server on loopback) and answers key_exists.
    const lists = createServer((_req, res) => res.end('listed.example\nexample.net\n'));
    await new Promise<void>((resolve) => lists.listen(0, '127.0.0.1', resolve));
    try {
      const listUrl = `http://127.0.0.1:${(lists.address() as AddressInfo).port}/senders.txt`;
      const made = await jmap([
        ['x:SpamTag/set', { create: { t: { '@type': 'Score', tag: 'LISTED_SENDER', score: 7.5 } } }, '3'],
        ['x:HttpLookup/set', { create: { l: { namespace: 'listed_senders', url: listUrl, format: { '@type': 'List' } } } }, '4'],
        ['x:SpamRule/set', { create: { r: { '@type': 'Any', name: 'LISTED', condition: { match: [{ if: "key_exists('listed_senders', from.domain)", then: "'LISTED_SENDER'" }], else: 'false' } } } }, '5'],
      ]);
      expect(made.map((m) => Object.keys(m[1].created ?? {}))).toEqual([['t'], ['l'], ['r']]);
      // The first lookup of a never-downloaded list starts its download and answers from the empty list.
      let verdict: { score: number; symbols: Record<string, { score: number }> } | undefined;
      for (let i = 0; i < 100; i++) {
        const r = await http(`${rspamd}/checkv2`, { method: 'POST', body: 'From: a@listed.example\r\nTo: b@example.com\r\nSubject: listed\r\n\r\nbody\r\n' });
        verdict = JSON.parse(r.body);
        if (verdict!.symbols.LISTED_SENDER !== undefined) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      expect(verdict!.symbols.LISTED_SENDER!.score).toBe(7.5);
      expect(verdict!.score).toBeGreaterThanOrEqual(7.5);
    } finally {
      lists.close();
    }

    // SIGTERM while a large message is being scanned: its verdict still arrives, then the process exits 0.
    const big = `From: a@example.org\r\nSubject: big\r\n\r\n${'some words and http://example.com/x links\r\n'.repeat(200_000)}`;
    const inFlight = http(`${rspamd}/checkv2`, { method: 'POST', body: big });
    for (let i = 0; i < 400; i++) {
      const q = JSON.parse((await http(`${rspamd}/healthz`)).body).queue as number;
      if (q > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    s.child.kill('SIGTERM');
    const r = await inFlight;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).action).toBe('no action');
    expect(await s.exit).toBe(0);
  }, 180_000);
});

describe('spamrule serve --config FILE.toml', () => {
  it('reads listeners, rules, thresholds and limits from the file; flags add to and override it', async () => {
    writeFileSync(
      join(dir, 'rules.json'),
      JSON.stringify({
        SpamRule: [
          { '@type': 'Any', name: 'CFG', condition: { match: [{ if: "contains(subject, 'plugh')", then: "'CFG_MARK'" }], else: 'false' } },
          { '@type': 'Any', name: 'CFG_BROKEN', condition: { match: [{ if: 'contains(subject', then: "'X'" }], else: 'false' } },
        ],
        SpamTag: [{ '@type': 'Score', tag: 'CFG_MARK', score: 2 }],
      }),
    );
    writeFileSync(join(dir, 'zone.json'), '{}');
    writeFileSync(
      join(dir, 'spamrule.toml'),
      [
        'rspamd = "127.0.0.1:0"',
        'workers = 1',
        'rules = ["rules.json"]',
        '[thresholds]',
        'scoreSpam = 1.5',
        '[analysis]',
        'blockedIps = ["192.0.2.0/24"]',
        // Redirect hosts resolve through analysis.dns (relative to this file), so redirects need one.
        'dns = "static:zone.json"',
        'followRedirects = { maxHops = 2 }',
        '[limits]',
        'maxSize = "2k"',
        '[log]',
        'level = "info"',
        '',
      ].join('\n'),
    );
    const s = await serve(['--config', join(dir, 'spamrule.toml'), '--spamd', '127.0.0.1:0', '--head-timeout', '300']);
    expect(Object.keys(s.lines).sort()).toEqual(['rspamd', 'spamd']);
    // A rule that does not compile is named in the log (before, the workers left it out unsaid).
    expect(await s.logLine((l) => l.rule === 'CFG_BROKEN')).toMatchObject({ level: 40, path: 'condition/match/0/if' });
    const r = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', body: 'Subject: plugh\r\n\r\nhi\r\n' });
    expect(JSON.parse(r.body)).toMatchObject({ action: 'add header', score: 2, required_score: 1.5, symbols: { CFG_MARK: { score: 2 } } });
    // analysis.blockedIps reaches the workers' engines (before, the key was refused).
    const blocked = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', headers: { IP: '192.0.2.7' }, body: 'Subject: x\r\n\r\nhi\r\n' });
    expect(Object.keys(JSON.parse(blocked.body).symbols)).toContain('IP_BLOCKED');
    const tooBig = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', body: `Subject: x\r\n\r\n${'x'.repeat(3000)}` });
    expect(tooBig.status).toBe(413);
    // --head-timeout: a spamd request head that never ends is cut off (the idle timeout alone is 60 s).
    const [host, port] = s.lines.spamd!.replace(/^\w+:\/\//, '').split(':');
    const closed = await new Promise<string>((resolve) => {
      const sock = connect(Number(port), host);
      sock.on('connect', () => sock.write('CHECK SPAMC/1.5\r\n'));
      sock.on('error', () => undefined);
      sock.on('close', () => resolve('closed'));
      setTimeout(() => resolve('still open'), 20_000).unref();
    });
    expect(closed).toBe('closed');
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  }, 120_000);

  it('the example configuration file (examples/spamrule.toml) is valid', () => {
    const c = readServeConfig(join(REPO_ROOT, 'examples', 'spamrule.toml'));
    expect(c).toMatchObject({ milter: '127.0.0.1:11332', rspamd: '127.0.0.1:11333', workers: 2, limits: { maxSize: '50M', headTimeoutMs: 30_000, requestTimeoutMs: 300_000 } });
    expect(c.lists).toEqual(['trusted-domains=/etc/spamrule/trusted-domains.txt']);
  });

  it('SIGHUP reads the rule files and the config file again; a broken one is logged and the rules in use stay', async () => {
    const rules = join(dir, 'hup-rules.json');
    const conf = join(dir, 'hup.json');
    const ruleFile = (tag: string): string =>
      JSON.stringify([{ '@type': 'Any', name: tag, priority: 1, condition: { match: [{ if: "contains(subject, 'hup')", then: `'${tag}'` }], else: 'false' } }]);
    writeFileSync(rules, ruleFile('HUP_ONE'));
    writeFileSync(conf, JSON.stringify({ analysis: { ruleWaitMs: 500, timeBudgetMs: 4000 } }));
    const s = await serve(['--config', conf, '--rules', rules, '--rspamd', '127.0.0.1:0', '--workers', '2', '--log-level', 'info', '--cache-dir', join(dir, 'lists')]);
    const all = async (): Promise<string[][]> => Promise.all([1, 2, 3, 4].map(() => symbols(s.lines.rspamd!, 'hup')));
    expect((await all()).every((t) => t.includes('HUP_ONE'))).toBe(true);

    writeFileSync(rules, ruleFile('HUP_TWO'));
    s.child.kill('SIGHUP');
    expect(await s.logLine((l) => String(l.msg).startsWith('reloaded'))).toMatchObject({ rules: 1 });
    // Every worker, before its next message.
    expect((await all()).every((t) => t.includes('HUP_TWO') && !t.includes('HUP_ONE'))).toBe(true);

    // A rule file that does not parse, then a config file with an unknown key: each is named, and the
    // rules in use stay. The process is still up (Node's default for SIGHUP is to end it).
    writeFileSync(rules, '[{"@type": "Any", ');
    s.child.kill('SIGHUP');
    expect(String((await s.logLine((l) => l.msg === 'reload failed: the rule set in use is kept')).err)).toContain('hup-rules.json');
    writeFileSync(rules, ruleFile('HUP_THREE'));
    writeFileSync(conf, JSON.stringify({ analysis: { ruleWait: 500 } }));
    s.child.kill('SIGHUP');
    expect(String((await s.logLine((l) => l.msg === 'reload failed: the rule set in use is kept' && String(l.err).includes('ruleWait'))).err)).toContain('hup.json');
    expect((await all()).every((t) => t.includes('HUP_TWO'))).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.exit).toBe(0);
  }, 120_000);

  it('refuses a --dns it cannot use, a bad --rule-wait, a bad --shutdown-grace and a --model folder at start, naming them', async () => {
    for (const [args, message] of [
      [['--dns', 'bogus:1'], /--dns bogus:1: unknown resolver kind "bogus"/],
      [['--rule-wait', 'soon'], /--rule-wait expects an integer/],
      [['--shutdown-grace', '1.5'], /--shutdown-grace expects an integer ≥ 0/],
      [['--allow-tell'], /--allow-tell needs --model .* and --spamd/],
      [['--allow-learn'], /--allow-learn needs --model .* and --rspamd/],
      [['--model', tmpdir()], /--model .* is a folder: name the model's file/],
      [['--max-size', 'lots'], /--max-size \(limits\.maxSize\): expected a size such as 50M/],
      [['--follow-redirects'], /analysis\.followRedirects needs --dns system .*: redirector hosts are resolved through it/],
      [['--list-allow-network', 'intranet'], /allowed network "intranet" is neither an IP address nor a CIDR range/],
      [['--max-size', '10M', '--max-buffered', '5M'], /limits\.maxBufferedBytes \(5242880 bytes\) must be at least limits\.maxSize \(10485760 bytes\)/],
      [['--milter-busy-action', 'reject'], /--milter-busy-action expects tempfail or accept, got "reject"/],
      [['--store-allow-host', 'redis internal'], /--store-allow-host: allowed host "redis internal" is neither \*/],
    ] as const) {
      const p = spawnServe(['--rspamd', '127.0.0.1:0', ...args], children);
      expect(await p.exit).toBe(2);
      expect(p.stderr()).toMatch(message);
    }
  }, 60_000);

  it("reads the analysis module settings, and refuses an IP list entry that is no address or range, naming it", () => {
    const file = join(dir, 'analysis.json');
    const analysis = {
      followRedirects: { maxHops: 2, timeoutMs: 1000, allowedNetworks: ['10.20.0.0/16'], ports: [80, 443, 8080] }, dnsblLimits: { ip: 10, url: 0 }, allowedIps: ['198.51.100.0/24', '2001:db8::1'], blockedIps: ['203.0.113.9'],
      pyzor: { host: 'pyzor.example.net', blockCount: 10, ratio: 0.5, digest: 'pyzor', breaker: { failureThreshold: 5, initialBackoffMs: 10_000 } },
    };
    writeFileSync(file, JSON.stringify({ analysis }));
    expect(readServeConfig(file).analysis).toEqual(analysis);
    writeFileSync(file, JSON.stringify({ listAllowedNetworks: ['10.0.0.5', 'fd00::/8'] }));
    expect(readServeConfig(file).listAllowedNetworks).toEqual(['10.0.0.5', 'fd00::/8']);
    writeFileSync(file, JSON.stringify({ listAllowedNetworks: ['intranet'] }));
    expect(() => readServeConfig(file)).toThrow('listAllowedNetworks.0');
    for (const [bad, where] of [
      [{ allowedIps: ['10.1'] }, 'analysis.allowedIps.0'], [{ blockedIps: ['192.0.2.0/33'] }, 'analysis.blockedIps.0'], [{ dnsblLimits: { ipp: 1 } }, 'analysis.dnsblLimits'],
      [{ followRedirects: { allowedNetworks: ['intranet'] } }, 'analysis.followRedirects.allowedNetworks.0'],
      [{ followRedirects: { ports: [0] } }, 'analysis.followRedirects.ports.0'],
      [{ pyzor: { port: 'udp' } }, 'analysis.pyzor: "port" must be an integer from 1 to 65535'], [{ pyzor: { servers: [] } }, 'analysis.pyzor: unknown field "servers"'],
      [{ pyzor: { digest: 'razor' } }, 'analysis.pyzor: "digest" must be "stalwart" or "pyzor", got "razor"'],
      [{ pyzor: { breaker: { initialBackoffMs: 0 } } }, 'analysis.pyzor: "breaker.initialBackoffMs" must be milliseconds (a number > 0), got 0'],
      [{ llm: { url: 'http://127.0.0.1:11434/v1/chat/completions', model: 'm', breaker: { failureThreshold: 1.5 } } }, 'analysis.llm: "breaker.failureThreshold" must be an integer from 1 to 1000, got 1.5'],
    ] as const) {
      writeFileSync(file, JSON.stringify({ analysis: bad }));
      expect(() => readServeConfig(file)).toThrow(where);
    }
  });

  it('analysis.pyzor in the file, --pyzor-timeout and --pyzor-digest reach the workers: a message reported to a real pyzord gets PYZOR', async () => {
    const pyzord = await startPyzord();
    try {
      // "sf.net" is hashed by pyzor and cut out by Stalwart's digest: only the pyzor digest finds the reports.
      const msg = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: serve pyzor\r\n\r\nplease buy these fine serve pyzor goods at sf.net\r\n';
      pyzord.pyzor('report', msg);
      pyzord.pyzor('report', msg);
      writeFileSync(join(dir, 'pyzor.json'), JSON.stringify({ analysis: { pyzor: { host: pyzord.host, port: pyzord.port, blockCount: 1 } } }));
      const s = await serve(['--config', join(dir, 'pyzor.json'), '--rspamd', '127.0.0.1:0', '--workers', '1', '--pyzor-timeout', '3000', '--pyzor-digest', 'pyzor', '--cache-dir', join(dir, 'lists')]);
      const r = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', body: msg });
      expect(Object.keys(JSON.parse(r.body).symbols)).toContain('PYZOR');
      s.child.kill('SIGTERM');
      expect(await s.exit).toBe(0);
    } finally {
      await pyzord.stop();
    }
  }, 120_000);

  it('reads milterBusyAction from the file, and refuses a value that is neither tempfail nor accept', () => {
    const file = join(dir, 'busy.json');
    writeFileSync(file, JSON.stringify({ milter: '127.0.0.1:0', milterBusyAction: 'accept' }));
    expect(readServeConfig(file).milterBusyAction).toBe('accept');
    writeFileSync(file, JSON.stringify({ milter: '127.0.0.1:0', milterBusyAction: 'reject' }));
    expect(() => readServeConfig(file)).toThrow('milterBusyAction: expected "tempfail" or "accept"');
  });

  it('reads managedStores.allowedHosts, and refuses an entry that is no host, range or path, naming it', () => {
    const file = join(dir, 'hosts.json');
    const allowedHosts = ['*', '10.0.0.0/8', 'redis.internal', '*.db.example', '/run/postgresql'];
    writeFileSync(file, JSON.stringify({ managedStores: { allowedHosts } }));
    expect(readServeConfig(file).managedStores?.allowedHosts).toEqual(allowedHosts);
    writeFileSync(file, JSON.stringify({ managedStores: { allowedHosts: ['10.0.0.0/8', 'not a host'] } }));
    expect(() => readServeConfig(file)).toThrow(/managedStores\.allowedHosts\.1: allowed host "not a host" is neither/);
  });

  it('analysis.llm in the file and --llm-url/--llm-model reach the workers; the key comes from the environment and is not logged', async () => {
    const llm = await startLlmServer();
    llm.answer = 'Harmful,High,Credential phishing.';
    process.env.SPAMRULE_TEST_SERVE_LLM_KEY = 'sk-serve-secret';
    try {
      const auth = { '@type': 'Bearer', bearerToken: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_SERVE_LLM_KEY' } };
      writeFileSync(join(dir, 'llm.json'), JSON.stringify({ analysis: { llm: { url: 'http://192.0.2.1/never', model: 'file-model', prompt: 'Classify.', httpAuth: auth } } }));
      const s = await serve(['--config', join(dir, 'llm.json'), '--rspamd', '127.0.0.1:0', '--workers', '1', '--llm-url', llm.url(), '--llm-model', 'flag-model', '--cache-dir', join(dir, 'lists'), '--log-level', 'debug']);
      let logged = '';
      s.child.stdout!.on('data', (d: Buffer) => (logged += d.toString()));
      s.child.stderr!.on('data', (d: Buffer) => (logged += d.toString()));
      const r = await http(`${s.lines.rspamd}/checkv2`, { method: 'POST', body: 'From: a@example.org\r\nSubject: verify\r\n\r\nlog in here\r\n' });
      const j = JSON.parse(r.body) as { symbols: Record<string, unknown>; milter: { add_headers: Record<string, { value: string }> } };
      expect(Object.keys(j.symbols)).toContain('LLM_HARMFUL_HIGH');
      expect(j.milter.add_headers['X-Spam-LLM']!.value).toBe('HARMFUL (Credential phishing.)');
      expect(llm.requests.map((q) => [q.json?.model, q.headers.authorization])).toEqual([['flag-model', 'Bearer sk-serve-secret']]);
      s.child.kill('SIGTERM');
      expect(await s.exit).toBe(0);
      expect(logged).toContain('"msg"'); // the debug log of the scan was read
      expect(logged).not.toContain('sk-serve-secret');
    } finally {
      delete process.env.SPAMRULE_TEST_SERVE_LLM_KEY;
      await llm.stop();
    }
  }, 120_000);

  it('refuses a configuration file with an unknown key, naming it', async () => {
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ rspamd: '127.0.0.1:0', limits: { maxSise: 5 } }));
    const p = spawnServe(['--config', join(dir, 'bad.json')], children);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toMatch(/bad\.json: limits: .*maxSise/);
  }, 60_000);
});

describe('listener addresses and sizes', () => {
  it('parses HOST:PORT, [v6]:PORT, a bare port, Postfix and Sendmail milter notation, unix:PATH', () => {
    expect(parseListenAddress('0.0.0.0:11333')).toEqual({ host: '0.0.0.0', port: 11333 });
    expect(parseListenAddress('[::1]:783')).toEqual({ host: '::1', port: 783 });
    expect(parseListenAddress('11332')).toEqual({ host: '127.0.0.1', port: 11332 });
    expect(parseListenAddress('inet:127.0.0.1:11332')).toEqual({ host: '127.0.0.1', port: 11332 });
    expect(parseListenAddress('inet:11332@localhost')).toEqual({ host: 'localhost', port: 11332 });
    expect(parseListenAddress('unix:/run/spamrule/milter.sock')).toEqual({ path: '/run/spamrule/milter.sock' });
    expect(() => parseListenAddress('localhost')).toThrow(/HOST:PORT/);
    expect(() => parseListenAddress('h:70000')).toThrow('port 70000 is out of range (0 to 65535) in "h:70000"');
  });

  it('parses sizes in bytes, k, M and G (binary multiples)', () => {
    expect(parseSize('50M')).toBe(50 * 1024 * 1024);
    expect(parseSize('512k')).toBe(512 * 1024);
    expect(parseSize('1g')).toBe(1024 ** 3);
    expect(parseSize('1048576')).toBe(1048576);
    expect(parseSize(2048)).toBe(2048);
    expect(() => parseSize('lots')).toThrow(/50M/);
  });
});

describe('milter on a unix socket', () => {
  it('replaces a stale socket file, listens there (mode 0660) and negotiates', async () => {
    const { SpamEnginePool, startScanServer, createLogger } = await import('../../src/server/index.js');
    const { statSync } = await import('node:fs');
    const path = join(dir, 'milter.sock');
    writeFileSync(path, ''); // left behind by a process that died
    const pool = new SpamEnginePool({ rules: [], workers: 1 });
    const server = await startScanServer({ pool, milter: { path }, logger: createLogger({ level: 'silent' }) });
    try {
      expect(server.addresses.milter).toBe(`unix:${path}`);
      expect(statSync(path).mode & 0o777).toBe(0o660);
      const reply = await new Promise<Buffer>((resolve, reject) => {
        const c = connect(path);
        const opt = Buffer.alloc(17);
        opt.writeUInt32BE(13, 0);
        opt.write('O', 4);
        opt.writeUInt32BE(6, 5);
        opt.writeUInt32BE(0x1ff, 9);
        opt.writeUInt32BE(0, 13);
        c.once('data', (d: Buffer) => {
          c.destroy();
          resolve(d);
        });
        c.once('error', reject);
        c.write(opt);
      });
      expect(reply.toString('latin1', 4, 5)).toBe('O');
      expect(reply.readUInt32BE(5)).toBe(6);
      // We ask for adding and changing headers only.
      expect(reply.readUInt32BE(9)).toBe(0x11);
    } finally {
      await server.close(1000);
      await pool.close();
    }
  }, 60_000);
});
