/**
 * Generators of hostile peer answers for the fuzz-peers tests: DNS replies a sender's own zone (or a forger)
 * may send, as raw wire-format datagrams for {@link TestDnsServer.raw}, and the messages and sessions that
 * make classify ask about the names those replies answer.
 */
import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import type { SessionInput } from '../../src/analysis/types.js';

/** Record types the hostile server writes (CNAME besides the five the resolver asks). */
const TYPE_CODES = { A: 1, CNAME: 5, PTR: 12, MX: 15, TXT: 16, AAAA: 28 } as const;
type RecType = keyof typeof TYPE_CODES;

/** One answer record; `owner` undefined: the question name (a pointer to offset 12). */
export interface HostileRecord {
  type: RecType;
  ttl: number;
  /** A/AAAA address, MX "pref exchange", PTR/CNAME target, TXT character-strings. */
  value: string | string[];
}

/** What the server does with a query (chosen per name and type, see {@link behaviourFor}). */
export type HostileBehaviour =
  | { kind: 'records'; records: HostileRecord[] }
  | { kind: 'rcode'; rcode: number }
  | { kind: 'drop' }
  | { kind: 'garbage'; bytes: Uint8Array; keepId: boolean }
  | { kind: 'truncated'; records: HostileRecord[]; cut: number }
  | { kind: 'tc' }
  | { kind: 'wrongId'; records: HostileRecord[] }
  | { kind: 'pointerLoop' }
  | { kind: 'countLies'; records: HostileRecord[]; ancount: number };

/** Names the CNAMEs, MX exchanges, PTRs and SPF includes point at: each answers by its own behaviour (chains, loops). */
export const HOSTILE_NAMES = ['c0.example.net', 'c1.example.net', 'mx.example.com', 'example.com', 'evil.example'];

const ttl = fc.oneof(fc.constant(0), fc.constant(300), fc.constant(0x7fffffff), fc.constant(0xffffffff), fc.nat({ max: 100_000 }));
const ipv4 = fc.oneof(
  fc.nat({ max: 255 }).map((x) => `127.0.0.${x}`),
  fc.constantFrom('127.0.1.2', '127.255.255.255', '0.0.0.0', '255.255.255.255', '10.0.0.1', '169.254.169.254', '192.0.2.1'),
  fc.ipV4(),
);
const ipv6 = fc.oneof(fc.constantFrom('::', '::1', '::ffff:127.0.0.2', 'fe80::1', '2001:db8::1', 'ff02::1'), fc.ipV6());
/** A host name, sometimes with bytes a host name cannot have (the wire format allows any octet in a label). */
const hostName = fc.oneof(
  fc.constantFrom(...HOSTILE_NAMES, '', '.', 'LOCALHOST', 'a..b', 'x'.repeat(63) + '.example'),
  fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 30 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }).map((s) => `${s}.example`),
);
const spfText = fc.oneof(
  fc.constantFrom(
    'v=spf1 -all',
    'v=spf1 include:c0.example.net include:c1.example.net ~all',
    'v=spf1 redirect=c0.example.net',
    'v=spf1 a mx ptr exists:%{i}.c1.example.net ip4:0.0.0.0/0 +all',
    'v=spf1 include:',
    'v=spf1 ip4:999.1.1.1/77 ip6:zz::/300 -all',
    'v=spf1 exp=%{z}%{h',
    'v=spf1 v=spf1 v=spf1',
    'v=DMARC1; p=reject; sp=bogus; pct=1000; rua=mailto:',
    'v=DMARC1',
    'v=DMARC1; p=',
    'v=DKIM1; k=rsa; p=',
    'v=DKIM1; k=ed25519; p=AAAA',
    'v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQ!!!',
    'v=DKIM1; h=sha1; t=y:s; p=MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAK',
  ),
  fc.array(fc.constantFrom('v=spf1', 'include:c0.example.net', 'redirect=c1.example.net', 'a:evil.example', 'mx', '-all', '?all', 'ip4:127.0.0.1', 'exists:%{l}.evil.example', 'v=DMARC1;', 'p=none;', 'v=DKIM1;', 'p=;', ';;;'), { maxLength: 12 }).map((w) => w.join(' ')),
);
const txtValue = fc.oneof(
  spfText.map((s) => [s]),
  fc.array(fc.string({ unit: 'binary', maxLength: 255 }), { maxLength: 6 }),
  fc.nat({ max: 12 }).map((n) => Array.from({ length: n }, () => 'x'.repeat(255))),
  fc.constant<string[]>(['']),
);

const record: fc.Arbitrary<HostileRecord> = fc.oneof(
  fc.record({ type: fc.constant<RecType>('A'), ttl, value: ipv4 }),
  fc.record({ type: fc.constant<RecType>('AAAA'), ttl, value: ipv6 }),
  fc.record({ type: fc.constant<RecType>('TXT'), ttl, value: txtValue }),
  fc.record({ type: fc.constant<RecType>('MX'), ttl, value: fc.tuple(fc.nat({ max: 65535 }), hostName).map(([p, h]) => `${p} ${h}`) }),
  fc.record({ type: fc.constant<RecType>('PTR'), ttl, value: hostName }),
  fc.record({ type: fc.constant<RecType>('CNAME'), ttl, value: fc.constantFrom(...HOSTILE_NAMES) }),
);
const records = fc.array(record, { minLength: 0, maxLength: 8 });

export const behaviourArb: fc.Arbitrary<HostileBehaviour> = fc.oneof(
  { weight: 6, arbitrary: records.map((r) => ({ kind: 'records' as const, records: r })) },
  { weight: 2, arbitrary: fc.constantFrom(1, 2, 3, 4, 5, 9, 15).map((rcode) => ({ kind: 'rcode' as const, rcode })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'drop' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('garbage' as const), bytes: fc.uint8Array({ maxLength: 600 }), keepId: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncated' as const), records, cut: fc.nat({ max: 400 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'tc' as const }) },
  { weight: 1, arbitrary: records.map((r) => ({ kind: 'wrongId' as const, records: r })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'pointerLoop' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('countLies' as const), records, ancount: fc.nat({ max: 65535 }) }) },
);

/** A zone policy: behaviours, one picked per (name, type) by a hash, so every name classify asks about gets one. */
export const policyArb = fc.array(behaviourArb, { minLength: 1, maxLength: 6 });

/** FNV-1a of `s`: which behaviour of the policy answers `s`. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The policy's behaviour for a query. */
export function behaviourFor(policy: readonly HostileBehaviour[], name: string, qtype: number): HostileBehaviour {
  return policy[hash(`${qtype} ${name}`) % policy.length]!;
}

function encodeName(name: string): Buffer {
  const parts = name
    .split('.')
    .filter(Boolean)
    .map((l) => {
      const b = Buffer.from(l, 'utf8').subarray(0, 63);
      return Buffer.concat([Buffer.from([b.length]), b]);
    });
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function rdata(r: HostileRecord): Buffer {
  switch (r.type) {
    case 'A':
    case 'AAAA':
      return Buffer.from(ipaddr.parse(r.value as string).toByteArray());
    case 'MX': {
      const v = r.value as string;
      const sp = v.indexOf(' ');
      const b = Buffer.alloc(2);
      b.writeUInt16BE(Number(v.slice(0, sp)));
      return Buffer.concat([b, encodeName(v.slice(sp + 1))]);
    }
    case 'PTR':
    case 'CNAME':
      return encodeName(r.value as string);
    case 'TXT':
      return Buffer.concat(
        (r.value as string[]).map((s) => {
          const b = Buffer.from(s, 'utf8').subarray(0, 255);
          return Buffer.concat([Buffer.from([b.length]), b]);
        }),
      );
  }
}

/** Header + the query's question section; `ancount` as given (it may lie). */
function header(query: Buffer, questionEnd: number, rcode: number, ancount: number, flags = 0): Buffer {
  const h = Buffer.from(query.subarray(0, questionEnd));
  h[2] = 0x80 | 0x04 | (query[2]! & 0x01) | flags;
  h[3] = 0x80 | rcode;
  h.writeUInt16BE(1, 4);
  h.writeUInt16BE(ancount, 6);
  h.writeUInt16BE(0, 8);
  h.writeUInt16BE(0, 10); // no additional section (the query's EDNS OPT is not echoed)
  return h;
}

function answers(recs: readonly HostileRecord[]): Buffer[] {
  return recs.map((r) => {
    const data = rdata(r);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0);
    rr.writeUInt16BE(TYPE_CODES[r.type], 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(r.ttl >>> 0, 6);
    rr.writeUInt16BE(data.length, 10);
    return Buffer.concat([rr, data]);
  });
}

/** End of the question section of `query` (name, type, class); `undefined` when it does not parse. */
function questionEnd(query: Buffer): number | undefined {
  let off = 12;
  while (off < query.length && query[off] !== 0) off += 1 + query[off]!;
  return off + 5 <= query.length ? off + 5 : undefined;
}

/** The reply datagram a behaviour sends to `query`; `'drop'` for none. Replies stay under 60 KB (one UDP datagram). */
export function hostileReply(b: HostileBehaviour, query: Buffer): Buffer | 'drop' {
  const qend = questionEnd(query);
  if (qend === undefined || b.kind === 'drop') return 'drop';
  const build = (recs: readonly HostileRecord[], rcode = 0, flags = 0): Buffer => {
    const rrs = answers(recs);
    return Buffer.concat([header(query, qend, rcode, rrs.length, flags), ...rrs]).subarray(0, 60_000);
  };
  switch (b.kind) {
    case 'records':
      return build(b.records);
    case 'rcode':
      return build([], b.rcode);
    case 'garbage': {
      const g = Buffer.from(b.bytes);
      if (b.keepId && g.length >= 2) query.copy(g, 0, 0, 2);
      return g;
    }
    case 'truncated':
      return build(b.records).subarray(0, Math.min(b.cut, 60_000));
    case 'tc':
      return build([], 0, 0x02); // TC: c-ares asks again over TCP, where nothing listens
    case 'wrongId': {
      const r = build(b.records);
      r.writeUInt16BE((r.readUInt16BE(0) + 1) & 0xffff, 0);
      return r;
    }
    case 'pointerLoop': {
      // One answer whose owner name is a compression pointer to itself.
      const h = header(query, qend, 0, 1);
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc000 | h.length, 0);
      rr.writeUInt16BE(query.readUInt16BE(qend - 4), 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(4, 10);
      return Buffer.concat([h, rr]);
    }
    case 'countLies': {
      const r = build(b.records);
      r.writeUInt16BE(b.ancount, 6);
      return r;
    }
  }
}

/** Messages that make the modules ask DNS: From/Reply-To domains, URLs, a DKIM signature (its key), Received hops. */
export const DNS_MESSAGES: readonly string[] = [
  [
    'Received: from mx.example.com (mx.example.com [192.0.2.1]) by mx.example.org; Mon, 1 Jan 2024 00:00:00 +0000',
    'DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=sel; c=relaxed/relaxed; h=from:subject; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=AAAA',
    'From: Sender <sender@example.com>',
    'Reply-To: x@evil.example',
    'To: rcpt@example.org',
    'Subject: offer',
    'Message-ID: <1@example.com>',
    'Date: Mon, 1 Jan 2024 00:00:00 +0000',
    '',
    'Visit http://c0.example.net/a and https://evil.example/b or mailto:x@c1.example.net',
    '',
  ].join('\r\n'),
  ['From: a@c1.example.net', 'To: b@example.org', 'Subject: hi', '', 'http://127.0.0.2/ http://[::1]/ www.example.com', ''].join('\r\n'),
];

export const dnsSessionArb: fc.Arbitrary<SessionInput> = fc.record({
  remoteIp: fc.constantFrom('203.0.113.7', '192.0.2.1', '2001:db8::1', '127.0.0.2'),
  heloDomain: fc.constantFrom('mx.example.com', 'evil.example', 'c0.example.net', '[192.0.2.1]'),
  mailFrom: fc.constantFrom('sender@example.com', 'x@evil.example', ''),
  rcptTo: fc.constant(['rcpt@example.org']),
});
