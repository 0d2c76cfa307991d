/**
 * Remote (HttpLookup) lists against a real HTTP server on loopback: formats, gzip, timeout, size
 * cap, invalid UTF-8, the on-disk cache served offline, stale-while-revalidate refresh, a 100 MB
 * list, and the `spamrule lists` / `classify --cache-dir` commands.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadList, HttpListStore, ListDownloadError, parseListBody } from '../../src/lookup/http-list.js';
import { buildLookupMap } from '../../src/lookup/index.js';
import { freePort } from '../servers/index.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

type Handler = (res: ServerResponse) => void;
const routes = new Map<string, Handler>();
let server: Server;
let base = '';
let hits = 0;
/** The list server runs on loopback, which is no public address: the downloads here allow it explicitly. */
const local = { allowedNetworks: ['127.0.0.1'] };
const dirs: string[] = [];

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'spamrule-lists-'));
  dirs.push(d);
  return d;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    hits++;
    const h = routes.get(req.url ?? '');
    if (h === undefined) {
      res.statusCode = 404;
      res.end('not found');
    } else h(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  routes.set('/free.txt', (res) => res.end('gmail.com\r\n  outlook.com  \n\n# not a comment\nmailinator.com\n'));
  routes.set('/tank.csv.gz', (res) =>
    res.end(gzipSync('id,url,verified\n1,"https://phish.example/a,b",yes\n2,https://bad.example/x,yes\n3,,no\n')),
  );
  routes.set('/slow', () => {}); // never answers
  routes.set('/big-declared', (res) => {
    res.setHeader('content-length', String(10_000));
    res.end('x'.repeat(10_000));
  });
  routes.set('/big-chunked', (res) => {
    res.write('a\n'.repeat(5_000));
    res.end('b\n'.repeat(5_000));
  });
  routes.set('/latin1', (res) => res.end(Buffer.from([0x61, 0x0a, 0xe9, 0x0a])));
  routes.set('/gone', (res) => {
    res.statusCode = 503;
    res.end();
  });
  routes.set('/huge', (res) => {
    // 100 MB of 16-byte lines, streamed.
    const line = Buffer.from('0123456789abcde\n');
    const chunk = Buffer.concat(Array.from({ length: 65_536 }, () => line)); // 1 MiB
    let sent = 0;
    const pump = (): void => {
      while (sent < 100) {
        sent++;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('parsing', () => {
  it('List: trimmed non-empty lines, exact keys, no comment syntax', () => {
    const { keys } = parseListBody('a.com\r\n b.com \n\n#c\n', { namespace: 'n', url: 'x' });
    expect([...keys]).toEqual(['a.com', 'b.com', '#c']);
  });
  it('Csv: quoted separators, skipFirst, key column, empty keys skipped, maxEntries', () => {
    const cfg = { namespace: 'n', url: 'x', format: { '@type': 'Csv' as const, indexKey: 1, separator: ',', skipFirst: true } };
    const { keys } = parseListBody('h1,h2\n1,"x,y"\n2,z\n3,\n', cfg);
    expect([...keys]).toEqual(['x,y', 'z']);
    expect(parseListBody('a\nb\nc\n', { namespace: 'n', url: 'x', maxEntries: 2 })).toEqual({ keys: new Set(['a', 'b']), capped: true });
  });
  // Found while extending test/lookup/fuzz-http-list.test.ts to CSV lists (its property fails without the fix, e.g.
  // on the key '\ufe60\u2dd0\ud822' of a generated line): the key was read by UTF-16 code units, so a key crossing
  // maxEntrySize inside an emoji kept half of its surrogate pair ('abcdefg\ud83d'), no character at all, which the
  // on-disk cache (UTF-8) wrote as U+FFFD: the list served from the cache was not the one downloaded.
  it('Csv: a key over maxEntrySize keeps the whole character that crossed it (Stalwart reads chars), and stays so in the cache', async () => {
    const cfg = { namespace: 'csv-cut', url: `${base}/csv-cut`, format: { '@type': 'Csv' as const }, maxEntrySize: 8 };
    const body = 'abcdefg\u{1F600}x,1\nab\u{1F600}\\"q,2\n\u{1F600}\u{1F600}\u{1F600},3\n';
    expect([...parseListBody(body, cfg).keys]).toEqual(['abcdefg\u{1F600}', 'ab\u{1F600}"q', '\u{1F600}\u{1F600}\u{1F600}']);
    routes.set('/csv-cut', (res) => res.end(body));
    const dir = tmp();
    await new HttpListStore(cfg, { cacheDir: dir, ...local }).update();
    const cached = new HttpListStore(cfg, { cacheDir: dir });
    expect(cached.hasSync('abcdefg\u{1F600}')).toBe(true);
    expect(cached.status().entries).toBe(3);
  });
});

describe('download', () => {
  it('a plain list and a gzipped CSV', async () => {
    expect([...(await downloadList({ namespace: 'f', url: `${base}/free.txt` }, local)).keys]).toEqual(['gmail.com', 'outlook.com', '# not a comment', 'mailinator.com']);
    const tank = await downloadList({
      namespace: 't',
      url: `${base}/tank.csv.gz`,
      isGzipped: true,
      format: { '@type': 'Csv', indexKey: 1, separator: ',', skipFirst: true },
    }, local);
    expect([...tank.keys]).toEqual(['https://phish.example/a,b', 'https://bad.example/x']);
  });

  it.each([
    ['/slow', { timeout: 300 }, /timed out after 300 ms/],
    ['/big-declared', { maxSize: 1_000 }, /over the 1000-byte cap/],
    ['/big-chunked', { maxSize: 1_000 }, /over the 1000-byte cap/],
    ['/latin1', {}, /not valid UTF-8/],
    ['/gone', {}, /HTTP 503/],
  ])('%s fails with a ListDownloadError', async (path, extra, message) => {
    const t0 = performance.now();
    const p = downloadList({ namespace: 'x', url: `${base}${path}`, ...extra }, local);
    await expect(p).rejects.toBeInstanceOf(ListDownloadError);
    await expect(p).rejects.toThrow(message);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  // Found by test/lookup/fuzz-http-list.test.ts: a server that stores its lists compressed sends them with
  // Content-Encoding whatever the request asks; the built-in fetch decoded them, the address-checking one did not.
  it('a body sent with Content-Encoding gzip, deflate or br is decoded, as fetch does (the list isGzipped or not)', async () => {
    const list = 'a.example\nb.example\n';
    routes.set('/ce-gzip', (res) => res.setHeader('content-encoding', 'gzip').end(gzipSync(list)));
    routes.set('/ce-deflate', (res) => res.setHeader('content-encoding', 'deflate').end(deflateSync(list)));
    routes.set('/ce-br', (res) => res.setHeader('content-encoding', 'br').end(brotliCompressSync(list)));
    routes.set('/ce-both.gz', (res) => res.setHeader('content-encoding', 'x-gzip, br').end(brotliCompressSync(gzipSync(gzipSync(list)))));
    routes.set('/ce-corrupt', (res) => res.setHeader('content-encoding', 'gzip').end('a.example\n'));
    routes.set('/ce-unknown', (res) => res.setHeader('content-encoding', 'zstd-x').end(list));
    routes.set('/ce-bomb', (res) => res.setHeader('content-encoding', 'gzip').end(gzipSync(Buffer.alloc(10_000_000, 0x61))));
    for (const path of ['/ce-gzip', '/ce-deflate', '/ce-br', '/ce-unknown']) {
      expect([...(await downloadList({ namespace: 'ce', url: `${base}${path}` }, local)).keys], path).toEqual(['a.example', 'b.example']);
    }
    expect([...(await downloadList({ namespace: 'ce', url: `${base}/ce-both.gz`, isGzipped: true }, local)).keys]).toEqual(['a.example', 'b.example']);
    await expect(downloadList({ namespace: 'ce', url: `${base}/ce-corrupt` }, local)).rejects.toThrow(/list ce: download failed: .*header/);
    // The size cap counts decoded bytes.
    await expect(downloadList({ namespace: 'ce', url: `${base}/ce-bomb`, maxSize: 100_000 }, local)).rejects.toThrow(/over the 100000-byte cap/);
  });

  it('a 100 MB list finishes in seconds, capped at maxEntries', async () => {
    const t0 = performance.now();
    const r = await downloadList({ namespace: 'h', url: `${base}/huge`, maxEntries: 900_000, maxSize: 200 * 1024 * 1024 }, local);
    // Every line is the same key: the set holds one key, and the whole body was read.
    expect(r.keys.size).toBe(1);
    expect(performance.now() - t0).toBeLessThan(20_000);
  }, 60_000);
});

describe('download: public addresses only, unless allowed', () => {
  // An "internal" server on another loopback address, which no download here allows: its log must stay empty.
  let internal: Server;
  let internalUrl = '';
  const internalHits: string[] = [];
  beforeAll(async () => {
    internal = createServer((req, res) => {
      internalHits.push(req.url ?? '');
      res.end('secret.example\n');
    });
    await new Promise<void>((r) => internal.listen(0, '127.0.0.2', r));
    internalUrl = `http://127.0.0.2:${(internal.address() as AddressInfo).port}`;
    routes.set('/moved', (res) => res.writeHead(301, { location: '/free.txt' }).end());
    routes.set('/to-internal', (res) => res.writeHead(302, { location: `${internalUrl}/secret.txt` }).end());
    routes.set('/to-file', (res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end());
    routes.set('/loop', (res) => res.writeHead(302, { location: '/loop' }).end());
  });
  afterAll(async () => {
    await new Promise<void>((r) => internal.close(() => r()));
  });

  it('refuses a list URL on loopback by default: no request is made, the error says how to allow it', async () => {
    const before = hits;
    const p = downloadList({ namespace: 'x', url: `${base}/free.txt` });
    await expect(p).rejects.toBeInstanceOf(ListDownloadError);
    await expect(p).rejects.toThrow(
      'list x: download refused: 127.0.0.1 (loopback) is not a public address (an internal list server needs its network in the allowed list networks: docs/lookup-stores.md, "Remote lists")',
    );
    expect(hits).toBe(before);
  });

  it('refuses a host name that resolves to loopback only (the system resolver: /etc/hosts)', async () => {
    const before = hits;
    const port = new URL(base).port;
    await expect(downloadList({ namespace: 'x', url: `http://localhost:${port}/free.txt` })).rejects.toThrow(/download refused: localhost resolves to (127\.0\.0\.1|::1) \(loopback\).*, not a public address/);
    expect(hits).toBe(before);
  });

  it('follows redirects inside the allowed networks, and refuses one out of them before connecting', async () => {
    expect([...(await downloadList({ namespace: 'm', url: `${base}/moved` }, local)).keys]).toContain('gmail.com');
    await expect(downloadList({ namespace: 'i', url: `${base}/to-internal` }, local)).rejects.toThrow('list i: download refused: 127.0.0.2 (loopback) is not a public address');
    expect(internalHits).toEqual([]);
    // Allowed, the same redirect is followed: the refusal above was the address check's.
    expect([...(await downloadList({ namespace: 'i', url: `${base}/to-internal` }, { allowedNetworks: ['127.0.0.1', '127.0.0.2'] })).keys]).toEqual(['secret.example']);
    expect(internalHits).toEqual(['/secret.txt']);
  });

  it('refuses redirects to other schemes, and ends a redirect loop', async () => {
    await expect(downloadList({ namespace: 'f', url: `${base}/to-file` }, local)).rejects.toThrow('list f: download failed: fetch failed: file: URLs are not fetched (file:///etc/passwd)');
    await expect(downloadList({ namespace: 'l', url: `${base}/loop` }, local)).rejects.toThrow('list l: download failed: fetch failed: more than 10 redirects');
  });

  it('an allowed network that is neither an address nor a range is an error', async () => {
    await expect(downloadList({ namespace: 'x', url: `${base}/free.txt` }, { allowedNetworks: ['intranet'] })).rejects.toThrow(
      'allowed network "intranet" is neither an IP address nor a CIDR range (such as 10.0.0.0/8)',
    );
  });
});

describe('HttpListStore', () => {
  it('update fills the on-disk cache; a new store serves it with the server gone (offline)', async () => {
    const dir = tmp();
    const s = new HttpListStore({ namespace: 'stwt_free_domains', url: `${base}/free.txt` }, { cacheDir: dir, ...local });
    expect(await s.keyExists('gmail.com')).toBe(false); // never downloaded: empty, as in Stalwart
    expect(await s.update()).toEqual({ entries: 4, capped: false });
    expect(await s.keyExists('gmail.com')).toBe(true);
    expect(await s.keyExists('sub.gmail.com')).toBe(false); // exact match only
    const offline = new HttpListStore({ namespace: 'stwt_free_domains', url: 'http://127.0.0.1:9/free.txt' }, { cacheDir: dir, ...local });
    expect(await offline.keyExists('gmail.com')).toBe(false); // another URL: the cache is not this list's
    const same = new HttpListStore({ namespace: 'stwt_free_domains', url: `${base}/free.txt` }, { cacheDir: dir, ...local });
    const before = hits;
    expect(await same.keyExists('outlook.com')).toBe(true);
    expect(hits).toBe(before); // no HTTP request: served from the cache
  });

  it('a failed update keeps the previous keys', async () => {
    const dir = tmp();
    const ok = new HttpListStore({ namespace: 'n', url: `${base}/free.txt` }, { cacheDir: dir, ...local });
    await ok.update();
    routes.set('/flaky', (res) => {
      res.statusCode = 500;
      res.end();
    });
    const s = new HttpListStore({ namespace: 'n', url: `${base}/free.txt` }, { cacheDir: dir, ...local });
    (s.config as { url: string }).url = `${base}/free.txt`;
    expect(await s.keyExists('gmail.com')).toBe(true);
    const broken = new HttpListStore({ namespace: 'n2', url: `${base}/flaky` }, { cacheDir: dir, ...local });
    await expect(broken.update()).rejects.toThrow(/HTTP 500/);
    expect(await broken.keyExists('gmail.com')).toBe(false);
  });

  it('autoRefresh: stale while revalidating, on the refresh interval', async () => {
    let now = 1_000_000;
    let body = 'one.example\n';
    routes.set('/rotating', (res) => res.end(body));
    const errors: Error[] = [];
    const s = new HttpListStore(
      { namespace: 'r', url: `${base}/rotating`, refresh: 60_000, retry: 5_000 },
      { cacheDir: tmp(), autoRefresh: true, now: () => now, onError: (e) => errors.push(e), ...local },
    );
    expect(await s.keyExists('one.example')).toBe(false); // first lookup answers from the empty list…
    await s.settled(); // …and starts one background download
    expect(await s.keyExists('one.example')).toBe(true);
    body = 'two.example\n';
    now += 30_000; // not stale yet: no download
    const before = hits;
    expect(await s.keyExists('two.example')).toBe(false);
    await s.settled();
    expect(hits).toBe(before);
    now += 31_000; // stale: old answer now, new list after the refresh
    expect(await s.keyExists('one.example')).toBe(true);
    await s.settled();
    expect(await s.keyExists('two.example')).toBe(true);
    expect(errors).toEqual([]);
  });
});

describe('what the lookup map says of a remote list', () => {
  it('a list never downloaded is told once, at its first lookup, without autoRefresh; a failed refresh names the URL', async () => {
    const dir = tmp();
    const said: string[] = [];
    const lists = [{ namespace: 'fresh', url: `${base}/free.txt` }, { namespace: 'cached', url: `${base}/free.txt` }];
    await new HttpListStore(lists[1]!, { cacheDir: dir, ...local }).update();
    const map = buildLookupMap({ httpLookups: lists }, { cacheDir: dir, autoRefresh: false, warn: (m) => said.push(m), ...local });
    expect(said).toEqual([]); // nothing is read before a rule asks
    expect(await map.get('fresh')!.keyExists('gmail.com')).toBe(false);
    expect(await map.get('fresh')!.keyExists('outlook.com')).toBe(false);
    expect(await map.get('cached')!.keyExists('gmail.com')).toBe(true);
    expect(said).toEqual(['remote list fresh was never downloaded: its lookups answer nothing (run "spamrule lists update")']);

    // A server refreshes in the background: no such warning, and a failure says where and why.
    const bad = `http://127.0.0.1:${await freePort()}/gone.txt`;
    const live: string[] = [];
    const served = buildLookupMap({ httpLookups: [{ namespace: 'down', url: bad }] }, { cacheDir: tmp(), autoRefresh: true, warn: (m) => live.push(m), ...local });
    const store = served.get('down') as HttpListStore;
    expect(await store.keyExists('x')).toBe(false);
    await store.settled();
    expect(live).toEqual([`list down: download failed: fetch failed: ECONNREFUSED (${bad})`]);
  });
});

describe('CLI', () => {
  // Asynchronous: the list server runs in this process and must keep answering.
  const cli = (args: string[]): Promise<{ status: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8' }, (err, stdout, stderr) => {
        resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
      });
    });

  it('lists update / status / show, and classify reads the cached list without HTTP', async () => {
    const dir = tmp();
    const rules = join(dir, 'rules.json');
    writeFileSync(
      rules,
      JSON.stringify({
        SpamRule: [{ '@type': 'Email', name: 'FREEMAIL', condition: { match: [{ if: "key_exists('stwt_free_domains', domain)", then: "'FREEMAIL_SENDER'" }], else: 'false' } }],
        HttpLookup: [{ namespace: 'stwt_free_domains', url: `${base}/free.txt`, format: { '@type': 'List' }, enable: true, refresh: 86_400_000 }],
      }),
    );
    const cache = join(dir, 'cache');
    const up = await cli(['lists', 'update', '--rules', rules, '--cache-dir', cache, '--list-allow-network', '127.0.0.1']);
    expect(up.status).toBe(0);
    expect(up.stdout).toMatch(/stwt_free_domains: 4 entries/);
    expect((await cli(['lists', 'show', 'stwt_free_domains', 'gmail.com', '--rules', rules, '--cache-dir', cache])).stdout).toMatch(/: found/);
    expect((await cli(['lists', 'show', 'stwt_free_domains', 'example.org', '--rules', rules, '--cache-dir', cache])).status).toBe(1);
    expect((await cli(['lists', 'status', '--rules', rules, '--cache-dir', cache])).stdout).toMatch(/stwt_free_domains\s+remote\s+4\s+fetched 20/);
    const mail = join(dir, 'm.eml');
    writeFileSync(mail, 'From: a@gmail.com\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nhello\r\n');
    const before = hits;
    const out = (await cli(['classify', '--json', '--rules', rules, '--cache-dir', cache, mail])).stdout;
    expect(JSON.parse(out.trim().split('\n')[0]!).tags).toContain('FREEMAIL_SENDER');
    expect(hits).toBe(before);
    // Unreachable list server: update fails (exit 1), the cached copy stays in use.
    const rules2 = join(dir, 'rules2.json');
    writeFileSync(rules2, JSON.stringify({ HttpLookup: [{ namespace: 'stwt_free_domains', url: `${base}/gone`, enable: true, timeout: 1000 }] }));
    const bad = await cli(['lists', 'update', '--rules', rules2, '--cache-dir', cache, '--list-allow-network', '127.0.0.1']);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(/FAILED: .*HTTP 503/);
  }, 60_000);

  it('lint warns about a namespace nothing provides', async () => {
    const dir = tmp();
    const rules = join(dir, 'rules.json');
    writeFileSync(rules, JSON.stringify([{ '@type': 'Any', name: 'R', condition: { match: [{ if: "key_exists('nowhere', 'x')", then: "'T'" }], else: 'false' } }]));
    const r = await cli(['lint', '--rules', rules]);
    expect(r.stdout).toMatch(/warning R: reads lookup namespace "nowhere", which no list or store in this set provides/);
  });
});
