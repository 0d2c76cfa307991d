/**
 * A small authoritative DNS server on loopback UDP (RFC 1035 wire format) for the DNS layer's tests:
 * answers A/AAAA/MX/TXT/PTR from a map with per-name TTLs, NXDOMAIN for unknown names, NODATA (NOERROR,
 * no answers) for a known name without records of the asked type; can be told to drop queries (never answer)
 * or to answer SERVFAIL, per name or for everything; counts the queries it receives and notes their source ports.
 */
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import ipaddr from 'ipaddr.js';

export const QTYPE = { A: 1, PTR: 12, MX: 15, TXT: 16, AAAA: 28 } as const;
export type QTypeName = keyof typeof QTYPE;
const TYPE_NAMES = new Map<number, QTypeName>(Object.entries(QTYPE).map(([k, v]) => [v, k as QTypeName]));

/** Records of one name. MX as "preference exchange"; PTR names are the targets; `ttl` in seconds (default 300). */
export interface ZoneEntry {
  A?: string[];
  AAAA?: string[];
  MX?: string[];
  TXT?: string[];
  PTR?: string[];
  ttl?: number;
}

export type Behaviour = 'answer' | 'drop' | 'servfail';

export class TestDnsServer {
  /** Lowercased name (no trailing dot) → records; editable while the server runs. */
  readonly zone = new Map<string, ZoneEntry>();
  /** Behaviour for every query not matched by `behaviourFor`. */
  mode: Behaviour = 'answer';
  /** Per-name behaviour (lowercased name), checked before `mode`. */
  readonly behaviourFor = new Map<string, Behaviour>();
  /** Every query received, in order, as "TYPE name" (lowercased name; unknown types as their number). */
  readonly received: string[] = [];
  /** The UDP source ports the queries for each name (lowercased) came from, in order. */
  readonly sourcePorts = new Map<string, number[]>();
  /**
   * Hostile answers (test/analysis/fuzz-peers-dns.test.ts): called for every query before the zone; a Buffer is
   * sent as the whole reply, as is (any bytes), `'drop'` answers nothing, `undefined` falls through to the zone.
   */
  raw: ((query: Buffer, name: string, qtype: number) => Buffer | 'drop' | undefined) | undefined;
  private socket: Socket | undefined;

  constructor(zone: Record<string, ZoneEntry> = {}) {
    for (const [name, entry] of Object.entries(zone)) this.zone.set(name.toLowerCase(), entry);
  }

  /** Starts listening on 127.0.0.1 (random port); resolves to "127.0.0.1:PORT". */
  async start(): Promise<string> {
    const socket = createSocket('udp4');
    this.socket = socket;
    socket.on('message', (msg, rinfo) => {
      const reply = this.handle(msg, rinfo.port);
      if (reply) socket.send(reply, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(socket.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    const s = this.socket;
    this.socket = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** How many queries of `type` for `name` arrived (any type when omitted). */
  count(name: string, type?: QTypeName): number {
    const n = name.toLowerCase();
    return this.received.filter((q) => (type ? q === `${type} ${n}` : q.endsWith(` ${n}`))).length;
  }

  private handle(msg: Buffer, port: number): Buffer | undefined {
    if (msg.length < 12) return undefined;
    const qdcount = msg.readUInt16BE(4);
    if (qdcount !== 1) return header(msg, 1 /* FORMERR */, 0, Buffer.alloc(0));
    let off = 12;
    const labels: string[] = [];
    while (off < msg.length && msg[off] !== 0) {
      const len = msg[off]!;
      labels.push(msg.subarray(off + 1, off + 1 + len).toString('latin1'));
      off += 1 + len;
    }
    off += 1;
    const qtype = msg.readUInt16BE(off);
    const question = msg.subarray(12, off + 4);
    const name = labels.join('.').toLowerCase();
    const typeName = TYPE_NAMES.get(qtype);
    this.received.push(`${typeName ?? qtype} ${name}`);
    this.sourcePorts.set(name, [...(this.sourcePorts.get(name) ?? []), port]);

    const raw = this.raw?.(msg, name, qtype);
    if (raw === 'drop') return undefined;
    if (raw !== undefined) return raw;
    const behaviour = this.behaviourFor.get(name) ?? this.mode;
    if (behaviour === 'drop') return undefined;
    if (behaviour === 'servfail') return header(msg, 2, 0, question);
    const entry = this.zone.get(name);
    if (!entry) return header(msg, 3 /* NXDOMAIN */, 0, question);
    const values = typeName ? (entry[typeName] ?? []) : [];
    const ttl = entry.ttl ?? 300;
    const answers = values.map((v) => resourceRecord(qtype, ttl, rdata(typeName!, v)));
    return Buffer.concat([header(msg, 0, answers.length, question), ...answers]);
  }
}

/** Response header + question section: id and RD copied from the query, QR and RA set, AA set. */
function header(query: Buffer, rcode: number, ancount: number, question: Buffer): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(query.readUInt16BE(0), 0);
  const rd = query[2]! & 0x01;
  h[2] = 0x80 | 0x04 | rd; // QR, AA, RD
  h[3] = 0x80 | rcode; // RA
  h.writeUInt16BE(question.length ? 1 : 0, 4);
  h.writeUInt16BE(ancount, 6);
  return Buffer.concat([h, question]);
}

/** One answer record, its owner a compression pointer to the question name at offset 12. */
function resourceRecord(qtype: number, ttl: number, data: Buffer): Buffer {
  const rr = Buffer.alloc(12);
  rr.writeUInt16BE(0xc00c, 0);
  rr.writeUInt16BE(qtype, 2);
  rr.writeUInt16BE(1, 4); // IN
  rr.writeUInt32BE(ttl, 6);
  rr.writeUInt16BE(data.length, 10);
  return Buffer.concat([rr, data]);
}

function encodeName(name: string): Buffer {
  const parts = name
    .split('.')
    .filter(Boolean)
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function rdata(type: QTypeName, value: string): Buffer {
  switch (type) {
    case 'A':
    case 'AAAA':
      return Buffer.from(ipaddr.parse(value).toByteArray());
    case 'MX': {
      const [pref, exchange = ''] = value.split(' ');
      const b = Buffer.alloc(2);
      b.writeUInt16BE(Number(pref));
      return Buffer.concat([b, encodeName(exchange)]);
    }
    case 'PTR':
      return encodeName(value);
    case 'TXT': {
      // Character-strings of at most 255 bytes; a longer text is split, as publishers do for long SPF/DKIM records.
      const bytes = Buffer.from(value);
      const chunks: Buffer[] = [];
      for (let i = 0; i === 0 || i < bytes.length; i += 255) {
        const c = bytes.subarray(i, i + 255);
        chunks.push(Buffer.from([c.length]), c);
      }
      return Buffer.concat(chunks);
    }
  }
}
