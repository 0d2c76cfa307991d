/**
 * `spamrule classify` follows the conventions of mail tools: it goes on past unreadable paths (exit 1 at
 * the end), skips files in folders that are not mail, exits 5 under `-e` when a message is spam
 * (SpamAssassin's `-e`), prints SpamAssassin-like JSON fields, refuses bad flag values, and shows
 * progress for a large single mbox. Also: the default rule SR_URL_USERINFO leaves `mailto:` links alone.
 */
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { DEFAULT_RULES, DEFAULT_TAGS, SpamEngine } from '../../src/index.js';
import { capture } from '../helpers/capture.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

const MAIL = join(REPO_ROOT, 'examples', 'mail');
const HAM = join(MAIL, 'ham-meeting.eml');
const SPAM = join(MAIL, 'spam-lottery.eml');

const tmp = () => mkdtempSync(join(tmpdir(), 'spamrule-cli-'));
const lines = (s: string) => s.trim().split('\n').filter((l) => l !== '');

describe('classify: unreadable paths', () => {
  it('reports a missing file, classifies the others, exits 1 at the end', async () => {
    const missing = join(tmp(), 'nope.eml');
    const r = await capture(() => classify([missing, HAM, SPAM]));
    expect(r.result).toBe(1);
    expect(lines(r.stdout).map((l) => l.split('\t')[0])).toEqual([HAM, SPAM]);
    expect(r.stderr).toContain(`spamrule classify: ${missing}: ENOENT`);
    expect(r.stderr).toMatch(/^2 messages in /m);
    expect(r.stderr).toMatch(/^1 path could not be read$/m);
  });

  it('a link inside a folder (dangling or not) is skipped with a warning, not followed; the folder is still classified', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'a.eml'), readFileSync(HAM));
    symlinkSync(join(dir, 'gone.eml'), join(dir, 'b.eml'));
    symlinkSync(SPAM, join(dir, 'c.eml'));
    const r = await capture(() => classify([dir]));
    expect(r.result).toBe(0);
    expect(lines(r.stdout).map((l) => l.split('\t')[0])).toEqual([join(dir, 'a.eml')]);
    for (const link of ['b.eml', 'c.eml']) {
      expect(r.stderr).toContain(`spamrule classify: ${join(dir, link)}: skipped: a symbolic link: links inside folders are not followed (name the file itself to read it)`);
    }
  });
});

describe('classify: folders', () => {
  it('skips files that are not mail (the corpus .json sidecars) and says how many', async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, '00001.abc.txt'), readFileSync(HAM));
    writeFileSync(join(dir, '00001.abc.json'), JSON.stringify({ id: '00001', text: readFileSync(HAM, 'utf8') }));
    writeFileSync(join(dir, 'sub', '00002.def.txt'), `From someone@example.net Tue Nov  3 09:12:44 2026\n${readFileSync(SPAM, 'utf8')}`);
    writeFileSync(join(dir, 'sub', '00002.def.json'), '{"id":"00002"}');
    writeFileSync(join(dir, 'notes.md'), '# not mail\n');
    const r = await capture(() => classify([dir]));
    expect(r.result).toBe(0);
    expect(lines(r.stdout).map((l) => l.split('\t')[0])).toEqual([join(dir, '00001.abc.txt'), join(dir, 'sub', '00002.def.txt')]);
    expect(r.stderr).toMatch(/^skipped 3 files that are not mail$/m);
  });

  it('a file named on the command line is read whatever it looks like', async () => {
    const f = join(tmp(), 'odd.json');
    writeFileSync(f, '{"not": "mail"}');
    const r = await capture(() => classify([f]));
    expect(r.result).toBe(0);
    expect(lines(r.stdout)).toHaveLength(1);
  });
});

describe('classify: -e / --exit-code', () => {
  it('exits 5 when a message is spam, reject or discard; 0 otherwise; 0 without -e', async () => {
    expect((await capture(() => classify(['-e', HAM]))).result).toBe(0);
    expect((await capture(() => classify(['-e', HAM, SPAM]))).result).toBe(5);
    expect((await capture(() => classify(['--exit-code', join(MAIL, 'gtube.eml')]))).result).toBe(5); // reject
    expect((await capture(() => classify([SPAM]))).result).toBe(0);
  });

  it('an unreadable path (exit 1) takes precedence over 5', async () => {
    expect((await capture(() => classify(['-e', join(tmp(), 'nope.eml'), SPAM]))).result).toBe(1);
  });
});

describe('classify --json', () => {
  it('rows carry required_score, each tag score and the verdict headers', async () => {
    const r = await capture(() => classify(['--json', SPAM]));
    const row = JSON.parse(r.stdout.trim()) as {
      tags: string[];
      score: number;
      required_score: number;
      scores: Record<string, number>;
      headers: Record<string, string>;
    };
    expect(row.required_score).toBe(5);
    expect(Object.keys(row.scores)).toEqual(row.tags);
    expect(row.scores.LOTTERY_WORDS).toBe(2);
    expect(Object.values(row.scores).reduce((a, b) => a + b, 0)).toBeCloseTo(row.score, 2);
    expect(row.headers['X-Spam-Score']).toMatch(/^spam, score=/);
    expect(row.headers['X-Spam-Result']).toContain('LOTTERY_WORDS');
    const custom = await capture(() => classify(['--json', '--score-spam', '7.5', SPAM]));
    expect((JSON.parse(custom.stdout.trim()) as { required_score: number }).required_score).toBe(7.5);
    // A negative value may follow its flag as a separate word (parseArgs alone calls it ambiguous).
    const negative = await capture(() => classify(['--json', '--score-spam', '-1', HAM]));
    expect(negative.result).toBe(0);
    const neg = JSON.parse(negative.stdout.trim()) as { required_score: number; action: string };
    expect(neg.required_score).toBe(-1);
    expect(neg.action).toBe('spam');
  });
});

describe('classify: bad flag values are errors', () => {
  it.each([
    [['--remote-ip', 'notanip'], /notanip/],
    [['--score-spam', 'lots'], /--score-spam expects a number/],
    // Before, --json silently won over --explain, and --quiet over --json (nothing printed at all).
    [['--json', '--explain'], /--json and --explain cannot be used together: --json already gives each tag's score and source/],
    [['--json', '--quiet'], /--json and --quiet cannot be used together: --quiet prints no verdicts/],
    [['--explain', '--quiet'], /--explain and --quiet cannot be used together/],
  ])('%j exits 2 before reading any message', async (flags, message) => {
    const r = await capture(() => classify([...flags, HAM]));
    expect(r.result).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});

describe('classify: progress', () => {
  it('a large single mbox shows progress on a terminal (and not with --no-progress)', async () => {
    const body = `${'All work and no play makes a dull message. '.repeat(1000)}\n`; // ~43 KB
    const one = readFileSync(HAM, 'utf8').replace(/\r?\n\r?\n/, (sep) => `${sep}${body}`);
    expect(one.length).toBeGreaterThan(40_000);
    const mbox = join(tmp(), 'big.mbox');
    writeFileSync(mbox, Array.from({ length: 60 }, (_, i) => `From jane@example.net Tue Nov  3 09:12:${String(i % 60).padStart(2, '0')} 2026\n${one}\n`).join(''));
    const tty = Object.getOwnPropertyDescriptor(process.stderr, 'isTTY');
    Object.defineProperty(process.stderr, 'isTTY', { value: true, configurable: true });
    try {
      const shown = await capture(() => classify(['--quiet', mbox]));
      expect(shown.result).toBe(0);
      expect(shown.stderr).toMatch(/\r\[=+ *\] 25 messages, \d+ msg\/s/);
      expect(shown.stderr).toMatch(/\r\[=+ *\] 50 messages/);
      expect(shown.stderr).toMatch(/(?:^|\x1b\[K)60 messages in /m);
      const hidden = await capture(() => classify(['--quiet', '--no-progress', mbox]));
      expect(hidden.stderr).not.toContain('\r[');
    } finally {
      if (tty) Object.defineProperty(process.stderr, 'isTTY', tty);
      else delete (process.stderr as { isTTY?: boolean }).isTTY;
    }
  });
});

describe('default rule SR_URL_USERINFO', () => {
  const html = (href: string) =>
    Buffer.from(
      'From: Shop <news@shop.example>\r\nTo: a@example.org\r\nSubject: Hello\r\nDate: Tue, 3 Nov 2026 09:12:40 +0000\r\n' +
        'Message-ID: <m1@shop.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n' +
        `<html><body><p>Questions? <a href="${href}">write to us</a></p></body></html>\r\n`,
    );
  const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });

  it('does not fire on mailto: links', async () => {
    const r = await engine.classify(html('mailto:support@shop.example'));
    expect(r.tags).not.toContain('URL_HAS_USERINFO');
    expect(r.matches.filter((m) => m.rule === 'SR_URL_USERINFO')).toEqual([]);
  });

  it('still fires on a web link with userinfo', async () => {
    const r = await engine.classify(html('https://bank.example@evil.example/login'));
    expect(r.tags).toContain('URL_HAS_USERINFO');
  });
});

describe('classify --follow-redirects', () => {
  it('follows a redirector URL over HTTP, so that Url rules see its target; a loopback hop needs allowing', async () => {
    const seen: string[] = [];
    const srv = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(302, { location: 'https://landing.example.org/offer' }).end();
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    try {
      const port = (srv.address() as AddressInfo).port;
      const dir = tmp();
      const redirectors = join(dir, 'redirectors.txt');
      writeFileSync(redirectors, 'localhost\n');
      // The host resolves through --dns, here a static map.
      const zone = join(dir, 'zone.json');
      writeFileSync(zone, JSON.stringify({ localhost: { A: ['127.0.0.1'] } }));
      const rules = join(dir, 'rules.json');
      writeFileSync(rules, JSON.stringify([{ '@type': 'Url', name: 'LANDED', priority: 1, condition: { match: [{ if: "host == 'landing.example.org'", then: "'LANDED'" }], else: 'false' } }]));
      const msg = join(dir, 'm.eml');
      writeFileSync(msg, `Subject: x\r\n\r\nsee http://localhost:${port}/r now\r\n`);
      const args = ['--json', '--dns', `static:${zone}`, '--rules', rules, '--list', `url-redirectors=${redirectors}`, msg];
      const off = JSON.parse((await capture(() => classify(args))).stdout) as { tags: string[] };
      expect(off.tags).not.toContain('LANDED');
      // Loopback is not a public address: refused, and no request reaches the server.
      const refused = JSON.parse((await capture(() => classify(['--follow-redirects', '--redirect-port', String(port), ...args]))).stdout) as { tags: string[]; warnings: string[] };
      expect(refused.tags).not.toContain('LANDED');
      expect(refused.warnings).toContain(`url: redirect not followed: http://localhost:${port}/r: localhost resolves to 127.0.0.1 (loopback), not a public address`);
      expect(seen).toEqual([]);
      const on = JSON.parse((await capture(() => classify(['--follow-redirects', '--redirect-allow-network', '127.0.0.1', '--redirect-port', String(port), ...args]))).stdout) as { tags: string[] };
      expect(on.tags).toContain('LANDED');
      expect(seen).toEqual(['/r']);
    } finally {
      srv.close();
    }
  });

  it('needs --dns system or static:FILE, and its allow flags need it', async () => {
    const dir = tmp();
    const msg = join(dir, 'm.eml');
    writeFileSync(msg, 'Subject: x\r\n\r\nhi\r\n');
    const noDns = await capture(() => classify(['--follow-redirects', msg]));
    expect(noDns.result).toBe(2);
    expect(noDns.stderr).toMatch(/--follow-redirects needs --dns system \(or --dns static:FILE\): redirector hosts are resolved through it/);
    const alone = await capture(() => classify(['--redirect-port', '8080', msg]));
    expect(alone.result).toBe(2);
    expect(alone.stderr).toMatch(/--redirect-port needs --follow-redirects/);
    const bad = await capture(() => classify(['--dns', 'off', '--follow-redirects', '--redirect-allow-network', 'intranet', msg]));
    expect(bad.result).toBe(2);
    expect(bad.stderr).toMatch(/--redirect-allow-network: allowed network "intranet" is neither an IP address nor a CIDR range/);
  });
});
