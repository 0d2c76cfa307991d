/**
 * Property-based fuzzing of what DNS servers answer (docs/dns.md): a real loopback DNS server
 * (test/dns/server.ts) sends generated hostile replies (test/analysis/peer-gen.ts): odd A/AAAA addresses among
 * them DNSBL codes 127.0.0.x, many and huge TXT strings, malformed SPF/DMARC/DKIM records with includes and
 * redirects that point back, CNAME chains and loops, host names with any byte, NXDOMAIN/SERVFAIL/REFUSED, silence,
 * garbage, truncated datagrams, the TC bit, a wrong ID, a compression-pointer loop, section counts that lie.
 * Invariants:
 * - the system resolver answers every query, never rejects, within `timeoutMs`, with an answer of the documented
 *   shape (`ok` with at least one record of the type's form, `nxdomain`, or `error` with a text); with its cache and
 *   one shared channel too, where a repeated query (another case) gets the first answer again, whatever the first
 *   caller did to its records;
 * - a full classify (Stalwart's public rules with their DNSBLs, `--verify` so SPF/DKIM/DMARC/iprev ask too)
 *   resolves with a well-formed verdict within the message's DNS deadline plus the rules' time, and a query the
 *   server left unanswered shows as the documented `dns:` warning.
 * Campaign: SPAMRULE_FUZZ_RUNS=2000 SPAMRULE_FUZZ_SEED=n npx vitest run test/analysis/fuzz-peers-dns.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemResolver } from '../../src/dns/index.js';
import type { DnsAnswer, DnsType } from '../../src/dns/types.js';
import { DEFAULT_RULES, DEFAULT_TAGS, engineOptionsFromBundle, loadRuleFile, SpamEngine, type EngineOptions } from '../../src/engine/index.js';
import { TestDnsServer } from '../dns/server.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { assertVerdict } from '../helpers/message-invariants.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { behaviourFor, DNS_MESSAGES, dnsSessionArb, HOSTILE_NAMES, hostileReply, policyArb, type HostileBehaviour } from './peer-gen.js';

const TIMEOUT_MS = 300;
const DEADLINE_MS = 1_000;

const server = new TestDnsServer();
let address = '';
let policy: readonly HostileBehaviour[] = [{ kind: 'rcode', rcode: 3 }];
/** Queries the server left unanswered since the last reset. */
let dropped = 0;

beforeAll(async () => {
  address = await server.start();
  server.raw = (query, name, qtype) => {
    const reply = hostileReply(behaviourFor(policy, name, qtype), query);
    if (reply === 'drop') dropped++;
    return reply;
  };
});
afterAll(async () => {
  await server.stop();
});

/** A fresh resolver (no cache: every query reaches the server and its current policy). */
const resolver = (): SystemResolver => new SystemResolver({ servers: [address], timeoutMs: TIMEOUT_MS, tries: 1, cacheSize: 0 });

/** Throws unless `a` has the shape docs/dns.md gives an answer of `type`. */
function assertAnswer(a: DnsAnswer, type: DnsType): void {
  if (a.status === 'nxdomain') return expect(Object.keys(a)).toEqual(['status']);
  if (a.status === 'error') return expect(typeof a.error === 'string' && a.error !== '').toBe(true);
  expect(a.status).toBe('ok');
  expect(a.records.length).toBeGreaterThan(0);
  if (a.ttlMs !== undefined) expect(Number.isFinite(a.ttlMs) && a.ttlMs >= 0).toBe(true);
  for (const r of a.records as unknown[]) {
    if (type === 'A') expect(isIPv4(r as string), String(r)).toBe(true);
    else if (type === 'AAAA') expect(isIPv6(r as string), String(r)).toBe(true);
    else if (type === 'TXT') expect(typeof r).toBe('string');
    else if (type === 'MX') {
      const m = r as { preference: number; exchange: string };
      expect(Number.isInteger(m.preference) && m.preference >= 0 && m.preference <= 65535).toBe(true);
      expect(m.exchange).toBe(m.exchange.toLowerCase());
      expect(m.exchange.endsWith('.')).toBe(false);
    } else {
      expect(typeof r).toBe('string');
      expect(r).toBe((r as string).toLowerCase());
      expect((r as string).endsWith('.')).toBe(false);
    }
  }
}

const queryArb = fc.tuple(
  fc.oneof(fc.constantFrom(...HOSTILE_NAMES, '2.0.0.127.zen.example', 'sel._domainkey.example.com', '_dmarc.example.com'), fc.ipV4(), fc.ipV6()),
  fc.constantFrom<DnsType>('A', 'AAAA', 'MX', 'TXT', 'PTR'),
);

function makeEngine(): SpamEngine {
  const base: Partial<EngineOptions> = hasSharedData
    ? engineOptionsFromBundle(loadRuleFile(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')), {
        listCacheDir: mkdtempSync(join(tmpdir(), 'fuzz-peers-dns-')),
        warn: () => {},
      })
    : { rules: DEFAULT_RULES, tags: DEFAULT_TAGS };
  return new SpamEngine({
    ...base,
    rules: base.rules ?? DEFAULT_RULES,
    tags: base.tags ?? DEFAULT_TAGS,
    dns: resolver(),
    dnsBudget: { maxQueries: 256, deadlineMs: DEADLINE_MS },
    authResults: { verify: true },
  });
}

describe('hostile DNS answers', () => {
  it('the system resolver answers every query within timeoutMs, in the documented shape', async () => {
    const r = resolver();
    await fc.assert(
      fc.asyncProperty(policyArb, queryArb, async (p, [name, type]) => {
        policy = p;
        const t0 = performance.now();
        const a = await r.query(name, type);
        const took = performance.now() - t0;
        assertAnswer(a, type);
        expect(took).toBeLessThan(TIMEOUT_MS + 150);
      }),
      fuzzParams(150),
    );
  });

  it('a caching resolver on one shared channel: the same shapes, and a cached answer is the one first given', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, queryArb, fc.boolean(), async (p, [name, type], mutate) => {
        policy = p;
        const r = new SystemResolver({ servers: [address], timeoutMs: TIMEOUT_MS, tries: 1, socketPerQuery: false, cacheSize: 100, cacheBytes: 64 * 1024 });
        const first = await r.query(name, type);
        assertAnswer(first, type);
        const snapshot = structuredClone(first);
        // A caller changing its records must not change what the next caller gets.
        if (mutate && first.status === 'ok') (first.records as unknown[]).push('changed');
        const t0 = performance.now();
        const second = await r.query(name.toUpperCase(), type);
        expect(performance.now() - t0).toBeLessThan(TIMEOUT_MS + 150);
        assertAnswer(second, type);
        if (snapshot.status !== 'error') expect(second).toEqual(snapshot);
        r.cancel();
      }),
      fuzzParams(100),
    );
  });

  it('classify resolves with a well-formed verdict within the DNS deadline and reports unanswered queries', async () => {
    const engine = makeEngine();
    try {
      await fc.assert(
        fc.asyncProperty(policyArb, fc.constantFrom(...DNS_MESSAGES), dnsSessionArb, async (p, msg, session) => {
          policy = p;
          dropped = 0;
          const t0 = performance.now();
          const res = await engine.classify(msg, { session });
          const took = performance.now() - t0;
          assertVerdict(res);
          // The DNS wait ends at the deadline; the rest (rules, modules) is quick for these small messages.
          expect(took).toBeLessThan(DEADLINE_MS + 1_500);
          if (dropped > 0) expect(res.warnings.some((w) => w.startsWith('dns: ') && w.includes('got no answer'))).toBe(true);
          for (const w of res.warnings) expect(w).not.toMatch(/[\p{Cc}\u2028\u2029]/u);
        }),
        fuzzParams(20),
      );
    } finally {
      await engine.close();
    }
  });
});
