/**
 * A resolver answering from a fixed map: tests, Stalwart's suite mocks, air-gapped sites (`--dns static:FILE`).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseJsonText } from '../util/index.js';
import { DnsConfigError } from './errors.js';
import { DNS_TYPES, normalizeName, parseIpStrict, ptrQueryName } from './names.js';
import type { DnsAnswer, DnsRecordMap, DnsType, MxRecord, Resolver } from './types.js';

/**
 * Records of one name. A/AAAA: addresses; MX: `"10 mx.example"` or `{preference, exchange}`; PTR: host names
 * (the map key is the IP address, or its `in-addr.arpa`/`ip6.arpa` name); TXT: one string per record.
 * `DNSBL` (the format of Stalwart's suite mocks): addresses answered to A queries when the name has no `A`.
 */
export interface StaticRecords {
  A?: readonly string[];
  AAAA?: readonly string[];
  MX?: readonly (string | MxRecord)[];
  PTR?: readonly string[];
  TXT?: readonly string[];
  DNSBL?: readonly string[];
}

/** name → records. Names are case-insensitive and a trailing dot is ignored. */
export type StaticZone = Readonly<Record<string, StaticRecords>>;

export interface StaticResolverOptions {
  /** Names (normalized: lowercase, no trailing dot) for which every query answers `error`. */
  errorWhen?: (name: string, type: DnsType) => boolean;
  /** `ttlMs` reported with positive answers (default: none). */
  ttlMs?: number;
}

/**
 * Stalwart's test build: names containing `_dns_error.`, `_parse_error.` or `_invalid_record.` answer an
 * error (Stalwart's resolver behaviour under its `test_mode` feature). Use as `errorWhen`.
 */
export function stalwartTestErrors(name: string): boolean {
  return name.includes('_dns_error.') || name.includes('_parse_error.') || name.includes('_invalid_record.');
}

/**
 * zod and the zone schema, built on the first StaticResolver: zod is about 95 modules that start-up
 * (`spamrule classify` with the system resolver) need not load. Its CommonJS build is loaded with
 * `require`, so the constructor stays synchronous.
 */
function buildZoneSchema() {
  const { z } = createRequire(import.meta.url)('zod') as typeof import('zod');
  const ipv4 = z.string().refine((s) => parseIpStrict(s)?.kind() === 'ipv4', 'not an IPv4 address');
  const ipv6 = z.string().refine((s) => parseIpStrict(s)?.kind() === 'ipv6', 'not an IPv6 address');
  const mxText = z.string().regex(/^\s*\d{1,5}\s+\S*\s*$/, 'MX must be "<preference> <exchange>"');
  const recordsSchema = z.strictObject({
    A: z.array(ipv4).optional(),
    AAAA: z.array(ipv6).optional(),
    MX: z
      .array(z.union([mxText, z.strictObject({ preference: z.number().int().min(0).max(65535), exchange: z.string() })]))
      .optional(),
    PTR: z.array(z.string()).optional(),
    TXT: z.array(z.string()).optional(),
    DNSBL: z.array(ipv4).optional(),
  });
  const zoneSchema = z.record(z.string(), recordsSchema);
  return { z, zoneSchema };
}

let zoneValidation: ReturnType<typeof buildZoneSchema> | undefined;

type Answers = { [T in DnsType]?: DnsRecordMap[T][] };

const stripDot = (h: string): string => (h.endsWith('.') ? h.slice(0, -1) : h);

function parseMx(mx: string | MxRecord): MxRecord {
  if (typeof mx !== 'string') return { preference: mx.preference, exchange: normalizeName(mx.exchange) };
  const [pref, exchange = ''] = mx.trim().split(/\s+/);
  return { preference: Number(pref), exchange: normalizeName(exchange) };
}

/** The key a name is stored under: normalized, and an IP address in its canonical text (so `2001:DB8::1` matches). */
function keyOf(name: string): string {
  const n = normalizeName(name);
  const ip = parseIpStrict(n);
  return ip ? ip.toString() : n;
}

export class StaticResolver implements Resolver {
  private readonly names = new Map<string, Answers>();

  /** @throws DnsConfigError when the map does not have the shape of StaticZone. */
  constructor(
    zone: StaticZone,
    private readonly options: StaticResolverOptions = {},
  ) {
    const { z, zoneSchema } = (zoneValidation ??= buildZoneSchema());
    const parsed = zoneSchema.safeParse(zone);
    if (!parsed.success) throw new DnsConfigError(`invalid static DNS map: ${z.prettifyError(parsed.error)}`);
    for (const [name, recs] of Object.entries(parsed.data)) {
      const answers: Answers = {
        A: recs.A ?? recs.DNSBL,
        AAAA: recs.AAAA,
        MX: recs.MX?.map(parseMx),
        PTR: recs.PTR?.map((p) => stripDot(p).toLowerCase()),
        TXT: recs.TXT,
      };
      const key = keyOf(name);
      // A name given twice (e.g. `Example.com` and `example.com.`) merges its records.
      const prev = this.names.get(key);
      if (prev) for (const t of Object.keys(answers) as DnsType[]) (answers[t] as unknown[] | undefined) ??= prev[t];
      this.names.set(key, answers);
    }
  }

  /** Reads a JSON file holding a StaticZone. @throws DnsConfigError when unreadable, not JSON, or not a StaticZone. */
  static fromFile(path: string, options?: StaticResolverOptions): StaticResolver {
    let data: unknown;
    try {
      data = parseJsonText(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new DnsConfigError(`cannot read static DNS file ${path}: ${(e as Error).message}`, { cause: e });
    }
    try {
      return new StaticResolver(data as StaticZone, options);
    } catch (e) {
      throw new DnsConfigError(`${path}: ${(e as Error).message}`, { cause: e });
    }
  }

  query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
    return Promise.resolve(this.answer(name, type));
  }

  private answer<T extends DnsType>(name: string, type: T): DnsAnswer<T> {
    if (typeof name !== 'string') return { status: 'error', error: 'query name is not a string' };
    if (!DNS_TYPES.includes(type)) return { status: 'error', error: `unsupported record type ${String(type)}` };
    const n = normalizeName(name);
    if (this.options.errorWhen?.(n, type)) return { status: 'error', error: `static error for ${n}` };
    let entry = this.names.get(keyOf(n));
    if (type === 'PTR') {
      const arpa = ptrQueryName(n);
      if (arpa === undefined) return { status: 'error', error: `PTR query needs an IP address, got "${name}"` };
      entry = entry?.PTR ? entry : this.names.get(arpa);
    }
    const records = entry?.[type] as DnsRecordMap[T][] | undefined;
    if (!records || records.length === 0) return { status: 'nxdomain' };
    const ok: DnsAnswer<T> = { status: 'ok', records: [...records] };
    if (this.options.ttlMs !== undefined) ok.ttlMs = this.options.ttlMs;
    return ok;
  }
}
