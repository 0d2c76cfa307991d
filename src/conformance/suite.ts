/**
 * The `stalwart-antispam-suite/v1` file format (Stalwart's own spam-filter test cases written out as
 * JSON: message, session, DNS mocks, lookup lists, expected tags) and the mocks it implies: a
 * resolver answering from the file's `dns` map, and lookup lists with the file's match kinds.
 */
import type { SessionInput } from '../analysis/types.js';
import type { DnsAnswer, DnsType, MxRecord, Resolver } from '../dns/types.js';
import { Glob } from '../lookup/glob.js';
import type { LookupStore } from '../lookup/types.js';

export interface SuiteCase {
  id: string;
  file: string;
  index: number;
  modules: string[];
  rules?: boolean;
  compare: 'tags' | 'header';
  envelope?: {
    remoteIp?: string;
    heloDomain?: string;
    mailFrom?: string;
    rcptTo?: string[];
    authenticatedAs?: string;
    tlsVersion?: string;
    isTls?: boolean;
  };
  auth?: {
    spf?: string;
    dkim?: { result: string; domains?: string[] };
    arc?: string;
    dmarc?: { result?: string; policy?: string };
    iprev?: { result?: string; ptr?: string | string[] };
  };
  params?: { smtputf8?: boolean; '8bitmime'?: boolean };
  message: string;
  expect?: string[];
  expectHeader?: string;
}

export interface SuiteListEntry {
  value: string;
  match: 'glob' | 'suffix' | 'contains' | 'exact';
}

export interface SuiteFile {
  format: string;
  sessionDefaults?: Record<string, unknown>;
  settings?: { spam?: { scoreSpam?: number } };
  dns?: Record<string, Partial<Record<string, string[]>>>;
  lists?: Record<string, { replacesRealList?: boolean; entries: SuiteListEntry[] }>;
  testMode?: Record<string, unknown>;
  cases: SuiteCase[];
}

/** Throws `TypeError` when the JSON is not a `stalwart-antispam-suite/v1` file. */
export function parseSuite(json: unknown, source = 'suite'): SuiteFile {
  const o = json as SuiteFile;
  if (o === null || typeof o !== 'object' || o.format !== 'stalwart-antispam-suite/v1' || !Array.isArray(o.cases)) {
    throw new TypeError(`${source}: not a stalwart-antispam-suite/v1 file (need "format" and "cases")`);
  }
  return o;
}

/** Names for which Stalwart's test build answers a DNS error instead of NXDOMAIN. */
const ERROR_MARKERS = ['_parse_error.', '_invalid_record.', '_dns_error.'];

/**
 * The suite's DNS: `A` and `DNSBL` entries answer A queries, `MX` entries (`"10 127.0.0.1"`) MX
 * queries; names containing `_dns_error.` (and the other markers) answer an error; every other
 * name is NXDOMAIN, as the suite's expectations assume.
 */
export class SuiteResolver implements Resolver {
  private readonly map = new Map<string, Partial<Record<string, string[]>>>();
  constructor(dns: SuiteFile['dns'] = {}) {
    for (const [name, types] of Object.entries(dns)) this.map.set(name.toLowerCase().replace(/\.$/, ''), types);
  }
  async query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
    const n = name.toLowerCase().replace(/\.$/, '');
    if (ERROR_MARKERS.some((m) => n.includes(m))) return { status: 'error', error: 'mocked DNS error' };
    const e = this.map.get(n);
    let records: unknown[] = [];
    if (e !== undefined) {
      if (type === 'A') records = [...new Set([...(e.A ?? []), ...(e.DNSBL ?? [])])];
      else if (type === 'MX') {
        records = (e.MX ?? []).map((v): MxRecord => {
          const [pref, exchange] = v.trim().split(/\s+/);
          return { preference: Number(pref), exchange: (exchange ?? '').toLowerCase().replace(/\.$/, '') };
        });
      } else records = e[type] ?? [];
    }
    if (records.length === 0) return { status: 'nxdomain' };
    return { status: 'ok', records: records as DnsAnswer<T> extends { records: infer R } ? R : never, ttlMs: 3_600_000 } as DnsAnswer<T>;
  }
}

function entryMatches(e: SuiteListEntry, key: string, glob: Glob | undefined): boolean {
  switch (e.match) {
    case 'exact': return key === e.value;
    case 'suffix': return key.endsWith(e.value);
    case 'contains': return key.includes(e.value);
    case 'glob': return glob!.matches(key);
  }
}

/**
 * A read-only lookup list with the suite's match kinds; `base` (the rule set's own keys for the
 * namespace) is consulted as well when the suite's list adds to the real one.
 */
export class SuiteList implements LookupStore {
  readonly type = 'Memory';
  private readonly globs: (Glob | undefined)[];
  constructor(
    private readonly entries: readonly SuiteListEntry[],
    private readonly base?: LookupStore,
  ) {
    this.globs = entries.map((e) => (e.match === 'glob' ? new Glob(e.value) : undefined));
  }
  private has(key: string): boolean {
    return this.entries.some((e, i) => entryMatches(e, key, this.globs[i]));
  }
  async keyExists(key: string): Promise<boolean> {
    return this.has(key) || (this.base !== undefined && (await this.base.keyExists(key)));
  }
  async keyGet(key: string): Promise<string | number | null> {
    if (this.has(key)) return 1;
    return this.base !== undefined ? this.base.keyGet(key) : null;
  }
  async keySet(): Promise<void> {
    throw new Error('suite lists are read-only');
  }
  async counterGet(): Promise<number> {
    throw new Error('suite lists are read-only');
  }
  async counterIncr(): Promise<number> {
    throw new Error('suite lists are read-only');
  }
  async close(): Promise<void> {}
}

/** The session a case describes, with the file's defaults (the harness's rules, as its README says). */
export function caseSession(suite: SuiteFile, c: SuiteCase): SessionInput {
  const d = (suite.sessionDefaults ?? {}) as Record<string, unknown>;
  const env = c.envelope ?? {};
  const s: SessionInput = {
    remoteIp: env.remoteIp ?? (d.remoteIp as string | undefined) ?? '127.0.0.1',
    localIp: (d.localIp as string | undefined) ?? '127.0.0.1',
    hostname: (d.hostname as string | undefined) ?? 'localhost',
    heloDomain: env.heloDomain ?? (d.heloDomain as string | undefined) ?? '',
    mailFrom: env.mailFrom ?? (d.mailFrom as string | undefined) ?? '',
    rcptTo: env.rcptTo ?? [],
    tls: env.isTls === true ? (env.tlsVersion ?? 'TLS') : false,
    smtputf8: c.params?.smtputf8 ?? false,
    eightBitMime: c.params?.['8bitmime'] ?? false,
  };
  if (env.authenticatedAs !== undefined) s.authenticatedAs = env.authenticatedAs;
  const a = c.auth ?? {};
  if (a.spf !== undefined) s.spf = { mailFrom: a.spf as never };
  if (a.dkim !== undefined) {
    s.dkim = (a.dkim.domains ?? ['unknown.org']).map((domain) => ({ result: a.dkim!.result as never, domain }));
  }
  if (a.arc !== undefined) s.arc = { result: a.arc as never };
  if (a.dmarc !== undefined) {
    s.dmarc = {};
    if (a.dmarc.result !== undefined) s.dmarc.result = a.dmarc.result as never;
    if (a.dmarc.policy !== undefined) s.dmarc.policy = a.dmarc.policy as never;
  }
  if (a.iprev !== undefined) {
    s.iprev = { result: (a.iprev.result ?? 'none') as never };
    // The suite writes the PTR names as a list (one name per `iprev.ptr` line).
    if (a.iprev.ptr !== undefined) s.iprev.ptr = Array.isArray(a.iprev.ptr) ? a.iprev.ptr : [a.iprev.ptr];
  }
  return s;
}
