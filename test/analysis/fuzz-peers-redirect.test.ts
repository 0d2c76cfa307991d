/**
 * Property-based fuzzing of what a redirector answers (docs/analysis.md, "Redirects"): a stand-in for a public
 * redirector on 127.0.0.2 (the one address these tests allow) answers every hop with a generated `Location`: more
 * hops on itself (loops included), relative and scheme-relative references, other schemes, userinfo tricks, the
 * many spellings of a loopback or metadata address (127.1, 0x7f000001, 2130706433, [::ffff:127.0.0.1], %-escapes,
 * backslashes), names that resolve there, long and non-ASCII values, bytes 0x80–0xFF. An "internal service" listens
 * on the same port at 127.0.0.1. Invariants: the url module finishes, makes at most `maxHops` requests per
 * redirector URL, never a single one to the internal service, and its warnings carry no control character.
 * Campaign: SPAMRULE_FUZZ_RUNS=3000 SPAMRULE_FUZZ_SEED=n npx vitest run test/analysis/fuzz-peers-redirect.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzParams } from '../helpers/fuzz.js';
import { mail, runModules } from './dnsbl-harness.js';

const MAX_HOPS = 3;
let port = 0;
let internal: Server;
let outside: Server;
const internalHits: string[] = [];
const outsideHits: string[] = [];
/** Location per hop, `{port}` replaced by the servers' port; past the end, a 404 without Location. */
let chain: string[] = [];

beforeAll(async () => {
  internal = createServer((req, res) => {
    internalHits.push(req.url ?? '');
    res.writeHead(302, { location: 'https://secret.corp.example/admin' }).end();
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  port = (internal.address() as AddressInfo).port;
  outside = createServer((req, res) => {
    const i = outsideHits.push(req.url ?? '') - 1;
    const loc = chain[i];
    try {
      if (loc === undefined) res.writeHead(404);
      else res.writeHead(302, { location: loc.replaceAll('{port}', String(port)) });
    } catch {
      res.writeHead(400); // a value node refuses to send (CR, LF, NUL): the hop gets no Location
    }
    res.end();
  });
  await new Promise<void>((resolve) => outside.listen(port, '127.0.0.2', resolve));
});
afterAll(async () => {
  for (const s of [internal, outside]) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
});

const loopbackSpellings = [
  'http://127.0.0.1:{port}/x',
  'http://127.1:{port}/x',
  'http://0x7f000001:{port}/x',
  'http://2130706433:{port}/x',
  'http://017700000001:{port}/x',
  'http://0177.0.0.1:{port}/x',
  'http://[::1]:{port}/x',
  'http://[::ffff:127.0.0.1]:{port}/x',
  'http://[::ffff:7f00:1]:{port}/x',
  'http://%31%32%37.0.0.1:{port}/x',
  'http:\\\\127.0.0.1:{port}\\x',
  'http://127.0.0.1.:{port}/x',
  'http://internal.example:{port}/x',
  'http://INTERNAL.example.:{port}/x',
  'http://mapped.example:{port}/x',
  'http://short.example:{port}@127.0.0.1:{port}/x',
  'http://127.0.0.1:{port}#@short.example:{port}/x',
  'http://169.254.169.254:{port}/latest/meta-data',
  'http://0:{port}/x',
  'http://localhost:{port}/x',
];
const hopToOutside = fc.oneof(
  fc.nat({ max: 5 }).map((n) => `http://short.example:{port}/h${n}`),
  fc.constantFrom('http://SHORT.example:{port}/h0', 'http://user:pw@short.example:{port}/h1', '//short.example:{port}/h2', 'http://short.example.:{port}/h3', 'http://short.example:80/h4'),
);
const odd = fc.oneof(
  fc.constantFrom('', '/relative', 'h1', '?q', '#f', 'http://', 'http:///x', 'file:///etc/passwd', 'gopher://short.example:{port}/', 'javascript:alert(1)', 'data:text/plain,x', 'ftp://short.example/'),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u0085', '\u009b', 'é', 'ÿ', 'a', '/', ':', '@', '.', '%'), maxLength: 20 }).map((s) => `http://short.example:{port}/${s}`),
  fc.nat({ max: 20_000 }).map((n) => `http://short.example:{port}/${'a'.repeat(n)}`),
  fc.constantFrom('https://landing.example.org/welcome', 'http://xn--caf-dma.example/', 'http://café.example/'),
);
const location = fc.oneof({ weight: 4, arbitrary: hopToOutside }, { weight: 3, arbitrary: fc.constantFrom(...loopbackSpellings) }, { weight: 3, arbitrary: odd });

const lists = { 'url-redirectors': ['short.example', 'internal.example', 'mapped.example', '127.0.0.1', 'localhost'] };
const zone = {
  'short.example': { A: ['127.0.0.2'] },
  'internal.example': { A: ['127.0.0.1'] },
  'mapped.example': { AAAA: ['::ffff:127.0.0.1'] },
  localhost: { A: ['127.0.0.1'] },
};

describe('hostile redirectors', () => {
  it('bounded hops, no request to the internal service, clean warnings', async () => {
    /** Runs whose chain went past its first hop, and runs refused with a warning: the property must exercise both. */
    let chained = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(location, { maxLength: 6 }), fc.constantFrom('http://short.example:{port}/start', 'http://short.example:{port}/a http://short.example:{port}/b'), async (locs, start) => {
        chain = locs;
        internalHits.length = 0;
        outsideHits.length = 0;
        const urls = start.replaceAll('{port}', String(port));
        const r = await runModules(['url'], mail(['Subject: x'], `click ${urls} now`), {
          lists,
          zone,
          config: { followRedirects: { allowedNetworks: ['127.0.0.2'], ports: [port], maxHops: MAX_HOPS, timeoutMs: 1_000 } },
        });
        expect(internalHits).toEqual([]);
        expect(outsideHits.length).toBeLessThanOrEqual(MAX_HOPS * urls.split(' ').length);
        expect(r.errors).toEqual([]);
        for (const w of r.warnings) expect(w, JSON.stringify(w)).not.toMatch(/[\p{Cc}\u2028\u2029]/u);
        if (outsideHits.length > urls.split(' ').length) chained++;
        if (r.warnings.some((w) => w.includes('redirect not followed'))) refused++;
      }),
      fuzzParams(400),
    );
    expect(chained).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});
