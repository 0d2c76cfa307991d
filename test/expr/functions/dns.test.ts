/**
 * `dns_query` against a small authoritative DNS server on 127.0.0.1 (UDP), reached through a
 * `node:dns/promises` Resolver, so the real client code path runs.
 */
import { createSocket, type Socket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setDnsResolver } from '../../../src/expr/functions/index.js';
import { ExprEvalError } from '../../../src/expr/types.js';
import { callAsync, ctx } from './helpers.js';

const A = 1, PTR = 12, MX = 15, TXT = 16, AAAA = 28;

/** name → type → rdata buffers. */
const ZONE: Record<string, Record<number, Buffer[]>> = {
  'example.test': {
    [A]: [Buffer.from([192, 0, 2, 1]), Buffer.from([192, 0, 2, 2])],
    [AAAA]: [Buffer.from('20010db8000000000000000000000001', 'hex')],
    [MX]: [mx(20, 'mx2.example.test'), mx(10, 'mx1.example.test')],
    [TXT]: [txt('v=spf1 ', '-all')],
  },
  'v4only.test': { [A]: [Buffer.from([198, 51, 100, 7])] },
  '4.3.2.1.in-addr.arpa': { [PTR]: [encodeName('host.example.test')] },
};

function encodeName(name: string): Buffer {
  const parts = name.split('.').filter(Boolean).map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}
function mx(pref: number, host: string): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(pref);
  return Buffer.concat([b, encodeName(host)]);
}
function txt(...chunks: string[]): Buffer {
  return Buffer.concat(chunks.map((c) => Buffer.concat([Buffer.from([c.length]), Buffer.from(c)])));
}

function answer(query: Buffer): Buffer {
  let off = 12;
  const labels: string[] = [];
  while (query[off]! !== 0) {
    const len = query[off]!;
    labels.push(query.subarray(off + 1, off + 1 + len).toString());
    off += len + 1;
  }
  const qtype = query.readUInt16BE(off + 1);
  const question = query.subarray(12, off + 5);
  const records = ZONE[labels.join('.').toLowerCase()];
  const rdatas = records?.[qtype] ?? [];
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  header.writeUInt16BE(0x8400 | (records === undefined ? 3 : 0), 2); // response, authoritative, NXDOMAIN?
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(rdatas.length, 6);
  const rrs = rdatas.map((rd) => {
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
    rr.writeUInt16BE(qtype, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt32BE(60, 6);
    rr.writeUInt16BE(rd.length, 10);
    return Buffer.concat([rr, rd]);
  });
  return Buffer.concat([header, question, ...rrs]);
}

let server: Socket;

beforeAll(async () => {
  server = createSocket('udp4');
  server.on('message', (msg, rinfo) => server.send(answer(msg), rinfo.port, rinfo.address));
  await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`127.0.0.1:${server.address().port}`]);
  setDnsResolver(resolver);
});
afterAll(() => {
  setDnsResolver(undefined);
  server.close();
});

describe('dns_query', () => {
  it('ip: IPv4 then IPv6 addresses', async () => {
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'ip')).toEqual(['192.0.2.1', '192.0.2.2', '2001:db8::1']);
    expect(await callAsync(ctx, 'dns_query', 'v4only.test', 'IP')).toEqual(['198.51.100.7']);
  });
  it('ipv4 / ipv6', async () => {
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'ipv4')).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'ipv6')).toEqual(['2001:db8::1']);
  });
  it('mx: exchanges by preference without the trailing dot', async () => {
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'Mx')).toEqual(['mx1.example.test', 'mx2.example.test']);
  });
  it('txt: one String', async () => {
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'txt')).toBe('v=spf1 -all');
  });
  it('ptr: host names for an IP; a non-IP name is an error', async () => {
    expect(await callAsync(ctx, 'dns_query', '1.2.3.4', 'ptr')).toEqual(['host.example.test']);
    await expect(callAsync(ctx, 'dns_query', 'example.test', 'ptr')).rejects.toThrow(
      new ExprEvalError('dns_query: "example.test" is not an IP address'),
    );
  });
  it('other types give ""', async () => {
    expect(await callAsync(ctx, 'dns_query', 'example.test', 'srv')).toBe('');
  });
  it('resolver failures reject with ExprEvalError, keeping the cause', async () => {
    const err = await callAsync(ctx, 'dns_query', 'missing.test', 'mx').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ExprEvalError);
    expect((err as Error).message).toMatch(/^dns_query mx missing\.test failed: /);
    expect(((err as Error).cause as { code?: string }).code).toBe('ENOTFOUND');
    await expect(callAsync(ctx, 'dns_query', 'missing.test', 'ip')).rejects.toBeInstanceOf(ExprEvalError);
  });
});
