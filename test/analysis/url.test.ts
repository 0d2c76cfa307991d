/**
 * url module: URL_ONLY, RCPT_DOMAIN_IN_BODY, zero-width/obscured/unparsable URLs, IP hosts, homographs and
 * mixed-script hosts, redirectors (test mode, and real HTTP against a server on loopback), the Domain/Url
 * DNSBLs of URL hosts, and hostile input (Stalwart's url analysis).
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { OffResolver, StaticResolver } from '../../src/dns/index.js';
import { LookupMap, StaticLookupList } from '../../src/lookup/index.js';
import { extractUrls } from '../../src/message/elements.js';
import { mail, runModules, server } from './dnsbl-harness.js';

const tagsOf = async (msg: string, opts: Parameters<typeof runModules>[2] = {}): Promise<string[]> => (await runModules(['url'], msg, opts)).tags;
const urlsOf = (r: Awaited<ReturnType<typeof runModules>>): string[] => extractUrls(r.message, () => {}).map((e) => e.label);

describe('url module: body and URL checks', () => {
  it('tags URL_ONLY for a body of one URL and at most one word', async () => {
    expect(await tagsOf(mail(['Subject: x'], 'https://example.com/offer'))).toEqual(['URL_ONLY']);
    expect(await tagsOf(mail(['Subject: x'], 'Click example.com/offer'))).toEqual(['URL_ONLY']);
    expect(await tagsOf(mail(['Subject: x'], 'Please click https://example.com/offer'))).toEqual([]);
    expect(await tagsOf(mail(['Subject: x'], 'https://example.com/a https://example.org/b'))).toEqual([]);
  });

  it('for HTML, URL_ONLY also needs exactly one <a href>', async () => {
    const html = (body: string): string => mail(['Subject: x', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8'], body);
    expect(await tagsOf(html('<p><a href="https://example.com/x">example.com/x</a></p>'))).toEqual(['URL_ONLY']);
    expect(await tagsOf(html('<a href="https://example.com/x">example.com/x</a><a href="https://example.org/">.</a>'))).toEqual([]);
  });

  it('tags RCPT_DOMAIN_IN_BODY when a body URL is on a recipient\'s registrable domain', async () => {
    expect(await tagsOf(mail(['To: bob@mail.example.net', 'Subject: x'], 'Log in at www.example.net/login today.'))).toEqual(['RCPT_DOMAIN_IN_BODY']);
    expect(await tagsOf(mail(['To: bob@example.net', 'Subject: x'], 'Log in at example.org/login today.'))).toEqual([]);
    // subject URLs do not count
    expect(await tagsOf(mail(['To: bob@example.net', 'Subject: see example.net/x'], 'Hello there.'))).toEqual([]);
  });

  it('tags zero-width and obscured characters, unparsable URLs and IP hosts', async () => {
    const html = (body: string): string => mail(['Subject: x', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8'], body);
    expect(await tagsOf(html('<p>Hello there, <a href="https://exa\u200bmple.com/">our site</a> and more</p>'))).toEqual(['SUSPICIOUS_URL', 'UNPARSABLE_URL', 'ZERO_WIDTH_SPACE_URL']);
    expect(await tagsOf(html('<p>Hello there, <a href="https://exa\u202emple.com/">our site</a> and more</p>'))).toEqual(['SUSPICIOUS_URL', 'UNPARSABLE_URL']);
    expect(await tagsOf(mail(['Subject: x'], 'login to https://bánk.com/ now'))).toEqual(['UNPARSABLE_URL']);
    expect(await tagsOf(mail(['Subject: x'], 'please see http://198.51.100.7/login now'))).toEqual(['SUSPICIOUS_URL']);
    // a bare IP in text is an IP, not a URL
    expect(await tagsOf(mail(['Subject: x'], 'server 198.51.100.7 is down'))).toEqual([]);
  });

  it('keeps U+200B and U+FEFF inside a URL of the text (they are not white space), so the URL is tagged', async () => {
    // Before, both split the text, so "www.pay\u200bpal.com" gave no URL at all.
    const zw = ['SUSPICIOUS_URL', 'UNPARSABLE_URL', 'ZERO_WIDTH_SPACE_URL'];
    expect(await tagsOf(mail(['Subject: x', 'Content-Type: text/plain; charset=utf-8'], 'Log in at www.pay\u200bpal.com today please'))).toEqual(zw);
    expect(await tagsOf(mail(['Subject: x', 'Content-Type: text/plain; charset=utf-8'], 'Log in at https://foo.com/a\ufeffb today please'))).toEqual(zw);
    const html = mail(['Subject: x', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8'], '<p>Log in at www.pay&#8203;pal.com today please</p>');
    expect(await tagsOf(html)).toEqual(zw);
    // Real white space still ends a URL.
    expect(await tagsOf(mail(['Subject: x', 'Content-Type: text/plain; charset=utf-8'], 'Log in at www.paypal.com\u2003today please'))).toEqual([]);
  });

  it('checks the URLs of an attached message and of a text/calendar part (SUSPICIOUS_URL for an IP host)', async () => {
    const inner = ['From: m@phisher.example.net', 'Subject: Urgent', 'Content-Type: text/html; charset=utf-8', '', '<a href="http://198.51.100.23/login">Log in</a>'];
    const attached = mail(['Subject: Fwd', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="f1"'], [
      '--f1', 'Content-Type: text/plain', '', 'Is this phishing?',
      '--f1', 'Content-Type: message/rfc822', 'Content-Disposition: attachment; filename="Urgent.eml"', '', ...inner, '--f1--'].join('\r\n'));
    expect(await tagsOf(attached)).toContain('SUSPICIOUS_URL');
    const calendar = mail(['Subject: Invite', 'MIME-Version: 1.0', 'Content-Type: multipart/alternative; boundary="a1"'], [
      '--a1', 'Content-Type: text/plain', '', 'Invitation',
      '--a1', 'Content-Type: text/calendar; method=REQUEST', '', 'BEGIN:VCALENDAR', 'DESCRIPTION:Verify at http://198.51.100.23/login', 'END:VCALENDAR', '--a1--'].join('\r\n'));
    expect(await tagsOf(calendar)).toContain('SUSPICIOUS_URL');
  });

  it('a dotted quad with a path or query in text is a scheme-less URL with an IP host (SUSPICIOUS_URL)', async () => {
    for (const text of ['see 198.51.100.7/x now', 'see 198.51.100.7/ now', 'see 198.51.100.7?a=1 now', 'see 198.51.100.7:8080/x now']) {
      expect(await tagsOf(mail(['Subject: x'], text)), text).toEqual(['SUSPICIOUS_URL']);
    }
    // A bracketed IPv6 host in text (before, no URL at all).
    expect(await tagsOf(mail(['Subject: x'], 'see http://[2001:db8::4]/y now'))).toEqual(['SUSPICIOUS_URL']);
    // Without one it stays an IP token; with a port and no path, an IP token that parses as no IP.
    expect(await tagsOf(mail(['Subject: x'], 'see 198.51.100.7:8080 now'))).toEqual([]);
  });

  it('tags MIXED_CHARSET_URL for a mixed-script host, and HOMOGRAPH_URL when its look-alike resolves', async () => {
    // xn--ppl-dma503b.com is "аpplé.com": a Cyrillic а and a Latin é (ASCII letters do not count)
    const msg = mail(['Subject: x'], 'please visit https://xn--ppl-dma503b.com/ today');
    expect(await tagsOf(msg)).toEqual(['MIXED_CHARSET_URL']);
    expect(await tagsOf(msg, { zone: { 'apple.com': { A: ['192.0.2.80'] } } })).toEqual(['HOMOGRAPH_URL', 'MIXED_CHARSET_URL']);
    // "gооgle.com" with Cyrillic о: one non-ASCII script (not mixed), folding to a name that has an AAAA record
    const g = mail(['Subject: x'], 'please visit https://xn--ggle-55da.com/ today');
    expect(await tagsOf(g)).toEqual([]);
    expect(await tagsOf(g, { zone: { 'google.com': { AAAA: ['2001:db8::80'] } } })).toEqual(['HOMOGRAPH_URL']);
  });

  it('skips per-URL checks in training mode but still collects the URLs', async () => {
    const r = await runModules(['url'], mail(['Subject: x'], 'see http://198.51.100.7/login'), { train: true });
    expect(r.tags).toEqual([]);
    expect(urlsOf(r)).toEqual(['http://198.51.100.7/login']);
  });
});

describe('url module: DNSBLs of URL hosts', () => {
  it('checks the registrable domain of each host (Domain) and the URL itself (Url), with the URL location', async () => {
    const dom = server('Domain', 'DOM', { else: "value + '.dbl.example'" }, { match: [['!is_empty(ip)', "'DOM_' + location"]], else: 'false' });
    const hashbl = server(
      'Url',
      'HASHBL',
      { match: [["key_exists('surbl-hashbl', host)", "hash(host + path, 'md5') + '.hashbl.example'"]], else: 'false' },
      { match: [['octets[3] == 8', "'HASHBL_PHISH'"]], else: 'false' },
    );
    const md5 = createHash('md5').update('files.example.com/path/x.exe').digest('hex');
    const msg = mail(['Subject: see www.listed.example.org/a', 'MIME-Version: 1.0', 'Content-Type: text/html'], '<a href="https://files.example.com/path/x.exe?q=1">get</a>');
    const r = await runModules(['url'], msg, {
      zone: { 'example.org.dbl.example': { A: ['127.0.0.2'] }, [`${md5}.hashbl.example`]: { A: ['127.0.0.8'] } },
      lists: { 'surbl-hashbl': ['files.example.com'] },
      config: { dnsblServers: [dom, hashbl] },
    });
    expect(r.tags).toEqual(['DOM_subject', 'HASHBL_PHISH']);
  });

  it('runs the Ip DNSBL for IP hosts, and skips trusted hosts before it', async () => {
    const ipSrv = server('Ip', 'IPS', { else: "ip_reverse + '.bl.example'" }, { match: [['!is_empty(ip)', "'IP_' + location"]], else: 'false' });
    const msg = mail(['Subject: x'], 'see http://198.51.100.7/login and https://www.trusted.example/x');
    const r = await runModules(['url'], msg, {
      zone: { '7.100.51.198.bl.example': { A: ['127.0.0.2'] } },
      lists: { 'trusted-domains': ['trusted.example'] },
      config: { dnsblServers: [ipSrv] },
    });
    expect(r.tags).toEqual(['IP_body_text', 'SUSPICIOUS_URL']);
  });
});

describe('url module: redirectors', () => {
  const redirectors = { 'url-redirectors': ['shortener.net', 'redirect.*'] };

  it('tags REDIRECTOR_URL without following it unless redirects are enabled', async () => {
    const r = await runModules(['url'], mail(['Subject: x'], 'please see https://www.shortener.net/abc'), { lists: redirectors });
    expect(r.tags).toEqual(['REDIRECTOR_URL']);
    expect(urlsOf(r)).toEqual(['https://www.shortener.net/abc']);
  });

  it('in test mode, follows `/?` targets, adds the final target with the original location, and stops after 3 hops', async () => {
    const config = { testMode: { httpRedirect: true } };
    const one = await runModules(['url'], mail(['Subject: x'], 'please go https://redirect.example/?https://landing.example.org/p'), { lists: redirectors, config });
    expect(one.tags).toEqual(['REDIRECTOR_URL']);
    expect(urlsOf(one)).toEqual(['https://redirect.example/?https://landing.example.org/p', 'https://landing.example.org/p']);
    expect(extractUrls(one.message, () => {})[1]!.location).toBe('body_text');
    const nested = await runModules(['url'], mail(['Subject: x'], 'please go https://redirect.a/?https://redirect.b/?https://redirect.c/?https://redirect.d/?https://end.example.org/'), { lists: redirectors, config });
    expect(nested.tags).toEqual(['REDIRECTOR_URL', 'URL_REDIRECTOR_NESTED']);
    expect(urlsOf(nested)).toHaveLength(1);
  });

  describe('over HTTP (a server on loopback)', () => {
    let srv: Server;
    let base: string;
    let port = 0;
    const seen: { path: string; ua: string | undefined }[] = [];
    beforeAll(async () => {
      srv = createServer((req, res) => {
        seen.push({ path: req.url ?? '', ua: req.headers['user-agent'] });
        const hop = /^\/hop(\d+)$/.exec(req.url ?? '');
        if (req.url === '/slow') return; // never answers
        if (req.url === '/late') {
          setTimeout(() => res.writeHead(302, { location: 'https://landing.example.org/late' }).end(), 400);
          return;
        }
        if (req.url === '/final') {
          res.writeHead(301, { location: 'https://landing.example.org/welcome' });
        } else if (hop !== null) {
          const n = Number(hop[1]);
          res.writeHead(302, { location: n >= 5 ? 'https://landing.example.org/deep' : `${base}/hop${n + 1}` });
        } else if (req.url === '/none') {
          res.writeHead(200);
        } else res.writeHead(404);
        res.end('body that is never read');
      });
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
      port = (srv.address() as AddressInfo).port;
      base = `http://localhost:${port}`;
    });
    afterAll(async () => {
      srv.closeAllConnections();
      await new Promise<void>((resolve) => srv.close(() => resolve()));
    });
    const lists = { 'url-redirectors': ['localhost'] };
    // The names resolve through the engine's resolver (here a static map), not the system's.
    const zone = { localhost: { A: ['127.0.0.1'] } };
    // Loopback is no public address: these tests allow it, and the server's port, explicitly.
    const allow = (extra: { maxHops?: number; timeoutMs?: number } = {}) => ({ followRedirects: { allowedNetworks: ['127.0.0.1/32'], ports: [port], ...extra } });

    it('reads the Location header and adds the target', async () => {
      const r = await runModules(['url'], mail(['Subject: x'], `go ${base}/final now`), { lists, zone, config: allow() });
      expect(r.tags).toEqual(['REDIRECTOR_URL']);
      expect(urlsOf(r)).toEqual([`${base}/final`, 'https://landing.example.org/welcome']);
      expect(seen.at(-1)).toEqual({ path: '/final', ua: 'Mozilla/5.0 (X11; Linux i686; rv:109.0) Gecko/20100101 Firefox/118.0' });
      // The hop's name was resolved through the message's resolver (its DNS budget counts it).
      expect(r.queries).toContain('A localhost');
    });

    it('follows redirector hops up to the limit, then tags URL_REDIRECTOR_NESTED', async () => {
      const before = seen.length;
      const r = await runModules(['url'], mail(['Subject: x'], `go ${base}/hop1 now`), { lists, zone, config: allow() });
      expect(r.tags).toEqual(['REDIRECTOR_URL', 'URL_REDIRECTOR_NESTED']);
      expect(seen.slice(before).map((s) => s.path)).toEqual(['/hop1', '/hop2', '/hop3']);
      const more = await runModules(['url'], mail(['Subject: x'], `go ${base}/hop1 now`), { lists, zone, config: allow({ maxHops: 6 }) });
      expect(more.tags).toEqual(['REDIRECTOR_URL']);
      expect(urlsOf(more)).toContain('https://landing.example.org/deep');
    });

    it("a slow hop does not use up the classify time budget: the modules and rules after the url module still run", async () => {
      // Before, a hop that answered after the budget (5 s by default) got mime, html and every rule skipped.
      const lookups = new LookupMap();
      lookups.set('url-redirectors', new StaticLookupList('url-redirectors', ['localhost']));
      const after: SpamRuleInput = { '@type': 'Any', name: 'after', priority: 500, condition: { match: [{ if: 'true', then: "'AFTER'" }], else: 'false' } };
      const engine = new SpamEngine({ analysis: allow({ timeoutMs: 3_000 }), dns: new StaticResolver(zone), timeBudgetMs: 150, lookups, rules: [after] });
      const before = seen.length;
      const r = await engine.classify(mail(['Subject: x', 'MIME-Version: 1.0', 'Content-Type: text/html; charset=utf-8'], `<p>go <a href="${base}/late">${base}/late</a> now</p>`));
      expect(seen.slice(before).map((s) => s.path)).toEqual(['/late']);
      expect(r.errors).toEqual([]);
      expect(r.tags).toEqual(expect.arrayContaining(['REDIRECTOR_URL', 'MIME_HTML_ONLY', 'AFTER']));
      expect(r.analysis.find((m) => m.tag === 'MIME_HTML_ONLY')?.module).toBe('html');
    });

    it('gives up on a hop after its time limit, and on a response without Location', async () => {
      const t0 = Date.now();
      const slow = await runModules(['url'], mail(['Subject: x'], `go ${base}/slow now`), { lists, zone, config: allow({ timeoutMs: 200 }) });
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(urlsOf(slow)).toEqual([`${base}/slow`]);
      const none = await runModules(['url'], mail(['Subject: x'], `go ${base}/none now`), { lists, zone, config: allow() });
      expect(urlsOf(none)).toEqual([`${base}/none`]);
    });
  });

  describe('only to public addresses on ports 80 and 443 (an internal server on loopback)', () => {
    // The "internal service" of the security report: anything that reaches it is an SSRF.
    let internal: Server;
    let iport = 0;
    const hits: string[] = [];
    // A stand-in for a public redirector (on 127.0.0.2, which the tests allow) and its log.
    let outside: Server;
    let oport = 0;
    const outsideHits: string[] = [];
    let redirectTo = '';
    beforeAll(async () => {
      internal = createServer((req, res) => {
        hits.push(req.url ?? '');
        res.writeHead(302, { location: 'https://secret-internal-name.corp.example/admin?token=abc' }).end();
      });
      await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
      iport = (internal.address() as AddressInfo).port;
      outside = createServer((req, res) => {
        outsideHits.push(req.url ?? '');
        res.writeHead(302, { location: redirectTo }).end();
      });
      // The same port on another loopback address, so that only the address tells the two apart.
      await new Promise<void>((resolve) => outside.listen(iport, '127.0.0.2', resolve));
      oport = iport;
    });
    afterAll(async () => {
      for (const s of [internal, outside]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    });
    const lists = { 'url-redirectors': ['short.example', 'internal.example', '127.0.0.1'] };
    const zone = {
      'short.example': { A: ['127.0.0.2'] },
      'internal.example': { A: ['127.0.0.1'] },
      'mapped.example': { AAAA: ['::ffff:127.0.0.1'] },
    };
    const run = async (url: string, followRedirects: object, extraLists: string[] = []) =>
      runModules(['url'], mail(['Subject: x'], `click ${url} now`), {
        lists: { 'url-redirectors': [...lists['url-redirectors'], ...extraLists] },
        zone,
        config: { followRedirects },
      });

    it('refuses a redirector whose name resolves to loopback: no request reaches the internal server, a warning says why', async () => {
      const before = hits.length;
      const r = await run(`http://internal.example:${iport}/internal/api/delete?all=1`, { ports: [iport] });
      expect(hits.slice(before)).toEqual([]);
      expect(r.tags).toEqual(['REDIRECTOR_URL']);
      expect(urlsOf(r)).toEqual([`http://internal.example:${iport}/internal/api/delete?all=1`]);
      expect(r.warnings).toEqual([
        `url: redirect not followed: http://internal.example:${iport}/internal/api/delete?all=1: internal.example resolves to 127.0.0.1 (loopback), not a public address`,
      ]);
    });

    it('refuses a redirect chain into 127.0.0.1: the allowed first hop is made, the internal hop is not', async () => {
      for (const [target, extra] of [
        [`http://internal.example:${iport}/internal/api/delete?all=1`, []],
        [`http://127.0.0.1:${iport}/internal/api/delete?all=1`, []],
        [`http://mapped.example:${iport}/internal/api/delete?all=1`, ['mapped.example']],
      ] as const) {
        redirectTo = target;
        const before = { hits: hits.length, outside: outsideHits.length };
        const r = await run(`http://short.example:${oport}/abc`, { allowedNetworks: ['127.0.0.2'], ports: [oport] }, [...extra]);
        expect(outsideHits.slice(before.outside)).toEqual(['/abc']);
        expect(hits.slice(before.hits)).toEqual([]);
        expect(r.warnings).toHaveLength(1);
        expect(r.warnings[0]).toMatch(/^url: redirect not followed: .*: .*127\.0\.0\.1 \(loopback\)/);
      }
    });

    it('connects to the address it checked, never resolving the name again (the system resolver would say 127.0.0.1)', async () => {
      // "localhost" resolves to 127.0.0.2 in the message's resolver; the system's /etc/hosts says 127.0.0.1,
      // where the internal server listens on the same port.
      redirectTo = 'https://landing.example.org/welcome';
      const before = { hits: hits.length, outside: outsideHits.length };
      const r = await runModules(['url'], mail(['Subject: x'], `click http://localhost:${oport}/pinned now`), {
        lists: { 'url-redirectors': ['localhost'] },
        zone: { localhost: { A: ['127.0.0.2'] } },
        config: { followRedirects: { allowedNetworks: ['127.0.0.2'], ports: [oport] } },
      });
      expect(outsideHits.slice(before.outside)).toEqual(['/pinned']);
      expect(hits.slice(before.hits)).toEqual([]);
      expect(urlsOf(r)).toContain('https://landing.example.org/welcome');
    });

    it('refuses other ports than 80 and 443 unless configured, even at an allowed address', async () => {
      const before = outsideHits.length;
      const r = await run(`http://short.example:${oport}/abc`, { allowedNetworks: ['127.0.0.2'] });
      expect(outsideHits.slice(before)).toEqual([]);
      expect(r.warnings).toEqual([`url: redirect not followed: http://short.example:${oport}/abc: port ${oport} is not one redirects may use (80, 443)`]);
    });

    it('follows nothing when DNS is off (no fallback to the system resolver), and says so once', async () => {
      const before = { hits: hits.length, outside: outsideHits.length };
      const r = await runModules(['url'], mail(['Subject: x'], `http://short.example:${oport}/a http://short.example:${oport}/b`), {
        lists,
        resolver: new OffResolver(),
        config: { followRedirects: { allowedNetworks: ['127.0.0.0/8'], ports: [oport] } },
      });
      expect([hits.length, outsideHits.length]).toEqual([before.hits, before.outside]);
      expect(r.warnings).toEqual(['url: redirects are not followed: DNS is off, so redirector hosts cannot be resolved']);
    });

    it('a name that does not resolve ends the chain silently, as a failed request does', async () => {
      const r = await run(`http://nowhere.short.example/x`, {});
      expect(r.warnings).toEqual([]);
      expect(urlsOf(r)).toEqual(['http://nowhere.short.example/x']);
    });
  });
});

describe('url module: hostile input', () => {
  it('finishes 100,000 URLs in seconds, capping the URL set (with a warning) and DNSBL queries', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 100_000; i++) lines.push(`https://h${i}.example${i % 7}.com/p/${i}`);
    const dom = server('Domain', 'DOM', { else: "value + '.dbl.example'" }, { else: "'X'" });
    const t0 = performance.now();
    const r = await runModules(['url'], mail(['Subject: x'], lines.join('\r\n')), { config: { dnsblServers: [dom] } });
    const ms = performance.now() - t0;
    expect(ms).toBeLessThan(20_000);
    expect(r.warnings.some((w) => /URL limit/.test(w))).toBe(true);
    expect(r.queries.length).toBeLessThanOrEqual(50);
  }, 60_000);
});
