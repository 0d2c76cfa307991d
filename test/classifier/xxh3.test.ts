/**
 * The JS XXH3-64 (src/classifier/xxh3.ts) against the native addon it stands in for (@node-rs/xxhash,
 * `xxh3.xxh64(bytes, 0n)`), bit for bit in the classifier's compact form (low 32 bits × 2 + bit 63):
 * every length 0..260 (so every path: 0, 1–3, 4–8, 9–16, 17–128, 129–240, and the > 240 refusal) with
 * seeded random, all-zero and all-0xff contents, and strings with 1- to 4-byte UTF-8 characters and lone
 * surrogates.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/util/index.js';
import { xxh3Compact, xxh3CompactString } from '../../src/classifier/xxh3.js';

type Xxh3 = { xxh64(input: Uint8Array, seed?: bigint): bigint };
const addon = (createRequire(import.meta.url)('@node-rs/xxhash') as { xxh3: Xxh3 }).xxh3;

/** The addon's XXH3-64 (seed 0) of `bytes` in compact form, as model.ts computes it. */
function reference(bytes: Uint8Array): number {
  const full = addon.xxh64(bytes, 0n);
  return Number(BigInt.asUintN(32, full)) * 2 + (full >= 1n << 63n ? 1 : 0);
}

/** Training's seeded PRNG (mulberry32) as uint32s, so every run sees the same inputs. */
function mulberry32(seed: number): () => number {
  const next = prng(seed);
  return () => next() * 4294967296;
}

const MAX_LEN = 260;

describe('xxh3Compact', () => {
  it('matches the addon on seeded random bytes at every length 0..260, and answers undefined above 240', () => {
    const rand = mulberry32(0x5eed);
    for (let len = 0; len <= MAX_LEN; len++) {
      for (let round = 0; round < 8; round++) {
        const buf = Buffer.alloc(len);
        for (let i = 0; i < len; i++) buf[i] = rand() & 0xff;
        const got = xxh3Compact(buf, len);
        if (len > 240) expect(got, `len ${len}`).toBeUndefined();
        else expect(got, `len ${len} round ${round}`).toBe(reference(buf));
      }
    }
  });

  it('matches the addon on all-zero and all-0xff bytes at every length', () => {
    for (let len = 0; len <= 240; len++) {
      for (const fill of [0x00, 0xff]) {
        const buf = Buffer.alloc(len, fill);
        expect(xxh3Compact(buf, len), `len ${len} fill ${fill}`).toBe(reference(buf));
      }
    }
  });

  it('hashes only bytes[0..len) of a longer array, and answers integers in [0, 2^33)', () => {
    const rand = mulberry32(7);
    const big = new Uint8Array(300);
    for (let i = 0; i < big.length; i++) big[i] = rand() & 0xff;
    for (let len = 0; len <= 240; len++) {
      const got = xxh3Compact(big, len)!;
      expect(got).toBe(reference(big.subarray(0, len)));
      expect(Number.isInteger(got) && got >= 0 && got < 2 ** 33).toBe(true);
    }
  });
});

describe('xxh3CompactString', () => {
  // Pieces to draw from: characters of 1 to 4 UTF-8 bytes, and single surrogate code units (lone ones
  // encode as U+FFFD; a high one drawn just before a low one makes a pair, as in any string).
  const pieces = [
    Array.from('abcdefghijklmnopqrstuvwxyz0123456789 .-_@'), // 1-byte UTF-8
    Array.from('éüßñøçåœπλжщ\u0080\u07ff'), // 2-byte
    Array.from('中文日本語한국어€‰ﬁ\u0800\ud7ff\ue000\uffff'), // 3-byte (incl. either side of the surrogates)
    Array.from('😀🎉𝄞𠀀\u{10000}\u{10ffff}'), // 4-byte (surrogate pairs)
    '\ud800\udbff\udc00\udfff'.split(''), // single surrogate code units
  ];

  // 0–89 pieces: both encoders (a JS loop up to 32 UTF-16 units, Buffer#write beyond) and > 240 bytes.
  it('matches the addon on Buffer.from(s, "utf8") for mixed strings, and the bytes variant', () => {
    const rand = mulberry32(0xc0ffee);
    for (let n = 0; n < 2000; n++) {
      const count = rand() % 90;
      let s = '';
      for (let k = 0; k < count; k++) {
        const set = pieces[rand() % pieces.length]!;
        s += set[rand() % set.length];
      }
      const bytes = Buffer.from(s, 'utf8');
      const got = xxh3CompactString(s);
      if (bytes.length > 240) expect(got, JSON.stringify(s)).toBeUndefined();
      else {
        expect(got, JSON.stringify(s)).toBe(reference(bytes));
        expect(got).toBe(xxh3Compact(bytes, bytes.length));
      }
    }
  });

  it('encodes lone and reversed surrogates as U+FFFD, at the start, middle and end, short and long', () => {
    const cases = ['\ud800', '\udc00', 'a\ud800', '\ud800a', 'a\udfffb', '\udc00\ud800', '\ud83d\ud83d\ude00'];
    cases.push('x\ud83d', '\ud83d\ude00\ude00');
    // Up to 32 UTF-16 units a JS loop encodes; longer strings go through Buffer#write.
    for (const s of [...cases, ...cases.map((c) => c + 'y'.repeat(40)), ...cases.map((c) => 'z'.repeat(40) + c)]) {
      expect(xxh3CompactString(s), JSON.stringify(s)).toBe(reference(Buffer.from(s, 'utf8')));
    }
  });

  it('answers by UTF-8 length at the 240-byte boundary, not by string length', () => {
    for (const [s, fits] of [
      ['a'.repeat(240), true],
      ['a'.repeat(241), false],
      ['é'.repeat(120), true],
      ['é'.repeat(121), false],
      ['a'.repeat(237) + '😀', false],
      ['a'.repeat(236) + '😀', true],
      ['中'.repeat(80), true],
      ['中'.repeat(80) + 'a', false],
    ] as const) {
      const bytes = Buffer.from(s, 'utf8');
      expect(xxh3CompactString(s), `${s.length} units`).toBe(fits ? reference(bytes) : undefined);
    }
  });

  it('matches the addon on the empty string and short ASCII tokens', () => {
    for (const s of ['', 'a', 'ab', 'abc', 'abcd', 'viagra', 'example.com', 'unsubscribe-here', 'x'.repeat(17)]) {
      expect(xxh3CompactString(s), s).toBe(reference(Buffer.from(s, 'utf8')));
    }
  });
});
