/**
 * The pyzor module against a real Pyzor server: a private `pyzord` (Debian's `pyzor` package) on loopback,
 * fed with the real `pyzor` client's `report` and `whitelist`, then `SpamEngine.classify` and `spamrule
 * classify --pyzor`. Also what happens when no usable answer comes: a frozen server (timeout), a closed
 * port, a reply that is not Pyzor's, a refusal (code 403).
 */
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PyzorSettings } from '../../src/analysis/index.js';
import { run as classifyCli } from '../../src/cli/classify.js';
import { SpamEngine, type EngineOptions, type SpamRuleInput } from '../../src/engine/index.js';
import { capture } from '../helpers/capture.js';
import { tempDir } from '../servers/common.js';
import { freeUdpPort, startPyzord, type PyzorServer } from '../servers/index.js';

let server: PyzorServer;
beforeAll(async () => {
  server = await startPyzord();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

/** A message of its own per test (its digest is new to the server): five words of random letters per line. */
function freshMessage(): string {
  const word = (): string => randomBytes(4).toString('hex').replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)]!);
  const lines = Array.from({ length: 3 }, () => Array.from({ length: 5 }, word).join(' '));
  return ['From: Sender <sender@example.org>', 'To: rcpt@example.com', 'Subject: offer', '', ...lines, ''].join('\r\n');
}

const SEEN: SpamRuleInput = { '@type': 'Any', name: 'ALWAYS', priority: 1, condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } };
const engineWith = (pyzor: boolean | PyzorSettings, extra: Partial<EngineOptions> = {}): SpamEngine => new SpamEngine({ rules: [SEEN], analysis: { pyzor }, ...extra });
const pyzorWarnings = (w: readonly string[]): string[] => w.filter((x) => x.startsWith('pyzor:'));

describe('pyzor module with a real pyzord', () => {
  it('sets PYZOR once the digest has more than blockCount reports, not before', async () => {
    const msg = freshMessage();
    const engine = engineWith({ host: server.host, port: server.port, blockCount: 2 });
    let r = await engine.classify(msg);
    expect(r.tags).not.toContain('PYZOR');
    expect(pyzorWarnings(r.warnings)).toEqual([]);
    server.pyzor('report', msg);
    server.pyzor('report', msg);
    // 2 reports: not more than blockCount.
    expect(server.pyzor('check', msg)).toMatch(/\(200, 'OK'\)\t2\t0/);
    r = await engine.classify(msg);
    expect(r.tags).not.toContain('PYZOR');
    server.pyzor('report', msg);
    r = await engine.classify(msg);
    expect(r.tags).toContain('PYZOR');
    expect(r.analysis).toContainEqual({ module: 'pyzor', tag: 'PYZOR' });
    expect(pyzorWarnings(r.warnings)).toEqual([]);
  });

  it('does not set PYZOR for a message whitelisted often enough (allowCount and ratio)', async () => {
    const msg = freshMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    const engine = engineWith({ host: server.host, port: server.port, allowCount: 2 });
    expect((await engine.classify(msg)).tags).toContain('PYZOR'); // 6 reports > 5, no whitelisting
    server.pyzor('whitelist', msg);
    // 1 whitelisting < allowCount 2: still spam.
    expect((await engine.classify(msg)).tags).toContain('PYZOR');
    server.pyzor('whitelist', msg);
    // 2 whitelistings: not < allowCount, and 2/6 is not < ratio 0.2.
    expect(server.pyzor('check', msg)).toMatch(/\t6\t2\n/);
    expect((await engine.classify(msg)).tags).not.toContain('PYZOR');
    // With Stalwart's defaults (allowCount 10), 2 whitelistings < 10: spam again.
    expect((await engineWith({ host: server.host, port: server.port }).classify(msg)).tags).toContain('PYZOR');
  });

  it('is off unless configured, and sends nothing for a message without a text part', async () => {
    const msg = freshMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    const off = await new SpamEngine({ rules: [SEEN] }).classify(msg);
    expect(off.tags).not.toContain('PYZOR');
    expect(pyzorWarnings(off.warnings)).toEqual([]);
    // A frozen server would give a warning for any request made: there is none for an image-only message.
    server.pause();
    try {
      const image = 'From: a@example.org\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n';
      const r = await engineWith({ host: server.host, port: server.port, timeoutMs: 300 }).classify(image);
      expect(pyzorWarnings(r.warnings)).toEqual([]);
    } finally {
      server.resume();
    }
  });

  it('spamrule classify --pyzor HOST:PORT tags it and names the module', async () => {
    const msg = freshMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    const file = join(tempDir('pyzor-cli'), 'm.eml');
    writeFileSync(file, msg);
    const { result, stdout } = await capture(() => classifyCli(['--json', '--no-progress', '--pyzor', `${server.host}:${server.port}`, '--pyzor-timeout', '3000', file]));
    expect(result).toBe(0);
    const rec = JSON.parse(stdout.trim()) as { tags: string[]; matches: { module?: string; tag: string }[] };
    expect(rec.tags).toContain('PYZOR');
    expect(rec.matches).toContainEqual({ module: 'pyzor', tag: 'PYZOR' });
  });
});

describe("digest: 'pyzor' with a real pyzord fed by the pyzor client", () => {
  // HTML text with line breaks inside a run of text: pyzor samples 6 of its 9 lines, Stalwart's digest makes
  // it one line and hashes all of it, so only the pyzor digest is the one the client reported.
  const htmlMessage = (): string => {
    const lines = [1, 2, 3].flatMap(() => freshMessage().split('\r\n').slice(4, 7));
    return ['From: a@example.org', 'Subject: offer', 'Content-Type: text/html', '', `<html><body><p>${lines.join('\n')}</p>`,
      '<p>and one more line of text</p><p>then a last line to hash</p></body></html>', ''].join('\r\n');
  };

  it("finds the client's reports with digest 'pyzor', not with Stalwart's digest", async () => {
    const msg = htmlMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    expect(server.pyzor('check', msg)).toMatch(/\t6\t0\n/);
    const pyzorMode = await engineWith({ host: server.host, port: server.port, digest: 'pyzor' }).classify(msg);
    expect(pyzorMode.tags).toContain('PYZOR');
    expect(pyzorWarnings(pyzorMode.warnings)).toEqual([]);
    const stalwart = await engineWith({ host: server.host, port: server.port }).classify(msg);
    expect(stalwart.tags).not.toContain('PYZOR');
    expect(pyzorWarnings(stalwart.warnings)).toEqual([]); // asked, and the server did not know the digest
  });

  it('spamrule classify --pyzor-digest pyzor tags it', async () => {
    const msg = htmlMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    const file = join(tempDir('pyzor-cli'), 'm.eml');
    writeFileSync(file, msg);
    const args = ['--json', '--no-progress', '--pyzor', `${server.host}:${server.port}`, '--pyzor-timeout', '3000'];
    const tags = async (extra: string[]): Promise<string[]> => {
      const { result, stdout } = await capture(() => classifyCli([...args, ...extra, file]));
      expect(result).toBe(0);
      return (JSON.parse(stdout.trim()) as { tags: string[] }).tags;
    };
    expect(await tags(['--pyzor-digest', 'pyzor'])).toContain('PYZOR');
    expect(await tags([])).not.toContain('PYZOR');
  });

  it('sends nothing when pyzor hashes no line, and warns when pyzor cannot digest the message', async () => {
    server.pause(); // any request would time out with a warning
    try {
      const engine = engineWith({ host: server.host, port: server.port, timeoutMs: 300, digest: 'pyzor' });
      // Every line shorter than 8 characters once normalised: the digest of nothing, which every such message has.
      const short = await engine.classify('From: a@example.org\r\nSubject: hi\r\n\r\nhi there\r\nok\r\n');
      expect(pyzorWarnings(short.warnings)).toEqual([]);
      // A marked section Python's HTMLParser raises on: pyzor fails on the message (no digest, no report possible).
      const broken = await engine.classify('From: a@example.org\r\nContent-Type: text/html\r\n\r\n<p>some text here</p><![foo[ x ]]>\r\n');
      expect(pyzorWarnings(broken.warnings)).toEqual(['pyzor: no pyzor digest (unknown status keyword "foo" in marked section); PYZOR not checked']);
      expect(broken.tags).toContain('SEEN');
    } finally {
      server.resume();
    }
  });
});

describe('pyzor module without a usable answer: no tag, a warning, the rest runs', () => {
  it('a server that does not answer: the check gives up after timeoutMs, outside the classify time budget', async () => {
    const msg = freshMessage();
    for (let i = 0; i < 6; i++) server.pyzor('report', msg);
    // Warm-up (first compile and parse), so that the budget below measures the message's own work only.
    await new SpamEngine({ rules: [SEEN] }).classify(msg);
    const engine = engineWith({ host: server.host, port: server.port, timeoutMs: 1_500 }, { timeBudgetMs: 500 });
    server.pause();
    try {
      const t0 = performance.now();
      const r = await engine.classify(msg);
      const ms = performance.now() - t0;
      expect(ms).toBeGreaterThanOrEqual(1_450);
      expect(ms).toBeLessThan(4_000);
      expect(r.tags).not.toContain('PYZOR');
      expect(pyzorWarnings(r.warnings)).toEqual([`pyzor: no answer from ${server.host}:${server.port} within 1500 ms; PYZOR not checked`]);
      // The modules before it and the rules after it ran: the 1.5 s wait was not charged to the 500 ms budget.
      expect(r.tags).toEqual(expect.arrayContaining(['SEEN', 'MISSING_DATE', 'MISSING_MID']));
      expect(r.errors).toEqual([]);
    } finally {
      server.resume();
    }
    // Answers again once thawed.
    expect((await engine.classify(msg)).tags).toContain('PYZOR');
  });

  it('a closed port (ICMP port unreachable) and a name that does not resolve', async () => {
    const msg = freshMessage();
    const closed = await freeUdpPort();
    const r = await engineWith({ host: '127.0.0.1', port: closed, timeoutMs: 2_000 }).classify(msg);
    expect(r.tags).toContain('SEEN');
    expect(pyzorWarnings(r.warnings)).toEqual([expect.stringMatching(new RegExp(`^pyzor: 127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED; PYZOR not checked$`))]);
    const n = await engineWith({ host: 'pyzor.invalid', timeoutMs: 2_000 }).classify(msg);
    expect(pyzorWarnings(n.warnings)).toEqual([expect.stringMatching(/^pyzor: (cannot resolve pyzor\.invalid: |no answer from pyzor\.invalid:24441 within 2000 ms)/)]);
  });

  describe('a UDP server that answers something else', () => {
    let fake: Socket;
    let reply: (request: string) => string[] = () => [];
    beforeAll(async () => {
      fake = createSocket('udp4');
      fake.on('message', (m, from) => {
        for (const out of reply(m.toString())) fake.send(out, from.port, from.address);
      });
      await new Promise<void>((resolve) => fake.bind(0, '127.0.0.1', () => resolve()));
    });
    afterAll(() => fake.close());
    const engine = (): SpamEngine => engineWith({ host: '127.0.0.1', port: fake.address().port, timeoutMs: 1_000 });
    const thread = (request: string): string => /^Thread: (\d+)$/m.exec(request)![1]!;

    it('a malformed reply', async () => {
      reply = () => ['HTTP/1.1 400 Bad Request\r\n\r\n'];
      let r = await engine().classify(freshMessage());
      expect(r.tags).not.toContain('PYZOR');
      expect(pyzorWarnings(r.warnings)).toEqual([expect.stringMatching(/^pyzor: 127\.0\.0\.1:\d+: reply without Code, Count, WL-Count: "HTTP\/1\.1 400 Bad Request\\r\\n\\r\\n"; PYZOR not checked$/)]);
      reply = (req) => [`Code: 200\nDiag: OK\nThread: ${thread(req)}\nCount: many\nWL-Count: 0\n`];
      r = await engine().classify(freshMessage());
      expect(pyzorWarnings(r.warnings)).toEqual([expect.stringMatching(/reply with an invalid line: "Count: many"; PYZOR not checked$/)]);
      expect(r.tags).toContain('SEEN');
    });

    // Found by test/analysis/fuzz-peers-steps.test.ts: the excerpt was JSON.stringify'd only, which leaves C1
    // controls (U+0085, U+009B: a terminal's CSI), DEL and U+2028 as they came, into a warning that reaches logs.
    it('what the server wrote shows in the warning with every control character escaped', async () => {
      reply = () => ['Diag: \u00e4x\u009b31mi\u0085\u007f\u2028\u001b\r\n'];
      const r = await engine().classify(freshMessage());
      expect(pyzorWarnings(r.warnings)).toEqual([
        expect.stringMatching(/: reply without Code, Count, WL-Count: "Diag: \u00e4x\\u009b31mi\\u0085\\u007f\\u2028\\u001b\\r\\n"; PYZOR not checked$/),
      ]);
      expect(r.warnings.join('')).not.toMatch(/[\p{Cc}\u2028\u2029]/u);
    });

    it('an answer to another request (another Thread) is not taken; the right one is', async () => {
      reply = (req) => [
        `Code: 200\nDiag: OK\nThread: ${(Number(thread(req)) + 1) % 65536}\nCount: 0\nWL-Count: 0\n`,
        `Code: 200\nDiag: OK\nThread: ${thread(req)}\nCount: 99\nWL-Count: 0\n`,
      ];
      const r = await engine().classify(freshMessage());
      expect(r.tags).toContain('PYZOR');
      expect(pyzorWarnings(r.warnings)).toEqual([]);
    });
  });

  it('a server that refuses the check (pyzord ACL: code 403)', async () => {
    // A second pyzord whose ACL lets the anonymous account ping (the start-up probe) and nothing else.
    const denied = await startPyzord({ access: 'ping : anonymous : allow\n' });
    try {
      const r = await engineWith({ host: denied.host, port: denied.port }).classify(freshMessage());
      expect(r.tags).not.toContain('PYZOR');
      expect(pyzorWarnings(r.warnings)).toEqual([
        `pyzor: ${denied.host}:${denied.port}: answered code 403 ("Forbidden: User is not authorized to request the operation."); PYZOR not checked`,
      ]);
    } finally {
      await denied.stop();
    }
  }, 60_000);
});
