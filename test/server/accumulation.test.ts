/**
 * A milter packet or a spamd head trickled in small pieces is collected in linear time: the bytes
 * copied while collecting stay a small multiple of the bytes received (counted by watching
 * `Buffer.concat`), where concatenating the whole pending buffer again for every piece copied
 * about n²/2 bytes. And the pieces come out as the same packets and heads, wherever they are cut.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HeadCollector } from '../../src/server/head-collector.js';
import { PacketReader } from '../../src/server/milter-reader.js';
import { MAX_PACKET } from '../../src/server/milter-wire.js';
import { milterPacket } from './harness.js';

/** Bytes `Buffer.concat` returns while `f` runs. */
function copiedBy(f: () => void): number {
  const real = Buffer.concat.bind(Buffer);
  let copied = 0;
  const spy = vi.spyOn(Buffer, 'concat').mockImplementation((list, total) => {
    const out = real(list, total);
    copied += out.length;
    return out;
  });
  try {
    f();
  } finally {
    spy.mockRestore();
  }
  return copied;
}

function pieces(b: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < b.length; o += size) out.push(b.subarray(o, o + size));
  return out;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('milter packets', () => {
  it('a 1 MiB body chunk in 1,400-byte pieces is copied once', () => {
    const body = Buffer.alloc(1024 * 1024 - 16, 'b');
    const wire = milterPacket('B', body);
    const reader = new PacketReader(MAX_PACKET);
    const copied = copiedBy(() => {
      for (const p of pieces(wire, 1400)) expect(reader.push(p)).toBeUndefined();
    });
    expect(reader.packets).toHaveLength(1);
    expect(reader.packets[0]!.cmd).toBe('B');
    expect(reader.packets[0]!.data.equals(body)).toBe(true);
    // Quadratic collection copied about 750 × 0.5 MiB here.
    expect(copied).toBeLessThanOrEqual(wire.length);
  });

  it('gives the same packets wherever the stream is cut, one byte at a time included', () => {
    const packets: [string, Buffer][] = [
      ['O', Buffer.from('000000060000000100000000', 'hex')],
      ['N', Buffer.alloc(0)],
      ['L', Buffer.from('Subject\0hello\0')],
      ['B', Buffer.alloc(3000, 'x')],
      ['E', Buffer.alloc(0)],
    ];
    const wire = Buffer.concat(packets.map(([c, d]) => milterPacket(c, d)));
    for (const size of [1, 2, 3, 4, 5, 6, 7, 13, 1400, wire.length]) {
      const reader = new PacketReader(MAX_PACKET);
      for (const p of pieces(wire, size)) reader.push(p);
      expect(reader.packets.map((p) => [p.cmd, p.data.toString('hex')]), `pieces of ${size}`).toEqual(packets.map(([c, d]) => [c, d.toString('hex')]));
      expect(reader.partial).toBe(false);
    }
  });

  it('says so for a length of 0 or over the largest packet, from its four length bytes', () => {
    expect(new PacketReader(MAX_PACKET).push(Buffer.from([0, 0, 0, 0]))).toMatch(/packet length 0 out of range/);
    const r = new PacketReader(MAX_PACKET);
    expect(r.push(Buffer.from([0xff, 0xff]))).toBeUndefined();
    expect(r.partial).toBe(true);
    expect(r.push(Buffer.from([0xff, 0xff]))).toMatch(/out of range/);
  });

  it('reads past the data of a packet its reserve callback refuses, and hands it on as dropped', () => {
    const asked: number[] = [];
    const reader = new PacketReader(MAX_PACKET, (n) => (asked.push(n), n < 100));
    const wire = Buffer.concat([milterPacket('B', Buffer.alloc(500, 'x')), milterPacket('B', 'small'), milterPacket('E')]);
    for (const p of pieces(wire, 7)) reader.push(p);
    expect(asked).toEqual([500, 5]);
    expect(reader.packets.map((p) => [p.cmd, p.data.toString(), p.dropped])).toEqual([
      ['B', '', true],
      ['B', 'small', false],
      ['E', '', false],
    ]);
  });
});

describe('spamd heads', () => {
  const head = `CHECK SPAMC/1.5\r\n${'X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'.repeat(900)}Content-length: 5\r\n\r\nhello`;

  it('a 60 KB head in 50-byte pieces is copied a small multiple of once', () => {
    const wire = Buffer.from(head, 'latin1');
    const collector = new HeadCollector();
    let whole: ReturnType<HeadCollector['push']>;
    const copied = copiedBy(() => {
      for (const p of pieces(wire, 50)) whole = collector.push(p) ?? whole;
    });
    expect(whole!.head).toBe(head.slice(0, head.indexOf('\r\n\r\n')));
    expect(whole!.rest.toString()).toBe('hello');
    // Each piece is searched with the 3 bytes before it (a copy of 53 bytes), and the head is
    // concatenated once: about 2× the bytes. Quadratic collection copied about 1,200 × 30 KB.
    expect(copied).toBeLessThanOrEqual(3 * wire.length);
  });

  it('finds the blank line wherever the pieces cut it', () => {
    const wire = Buffer.from('PING SPAMC/1.5\r\nUser: x\r\n\r\nbody', 'latin1');
    for (let size = 1; size <= wire.length; size++) {
      const collector = new HeadCollector();
      let whole: ReturnType<HeadCollector['push']>;
      for (const p of pieces(wire, size)) if (whole === undefined) whole = collector.push(p);
      expect(whole?.head, `pieces of ${size}`).toBe('PING SPAMC/1.5\r\nUser: x');
      // A piece may carry body bytes after the blank line: they come out as the rest.
      expect('body'.startsWith(whole!.rest.toString()), `pieces of ${size}`).toBe(true);
    }
  });
});
