/**
 * XXH3-64 (seed 0, default secret) in plain JS for inputs of at most 240 bytes, answering the classifier's
 * compact form of the hash (low 32 bits × 2 + bit 63) directly.
 *
 * Why: the classifier hashes every token with @node-rs/xxhash (`xxh3.xxh64(bytes, 0n)`): a napi call that
 * allocates a BigInt result, then BigInt arithmetic for the compact form, per token. It shows up in the
 * classifier's profiles (about 1.5–2 µs a token there; ~0.25–0.4 µs even in a tight loop). Tokens are
 * short (2–20 UTF-8 bytes typically), and XXH3's paths for inputs of at most 240 bytes are a few 64-bit
 * multiplications, which 32-bit JS arithmetic does in tens of ns. Longer inputs (the striped path) are
 * left to the addon: the functions answer undefined.
 *
 * Reference: the xxHash specification (doc/xxhash_spec.md) and xxhash.h by Yann Collet
 * (https://github.com/Cyan4973/xxHash, BSD-2-Clause): XXH3_64bits → XXH3_len_0to16_64b (0, 1–3, 4–8,
 * 9–16 bytes), XXH3_len_17to128_64b, XXH3_len_129to240_64b, with XXH3_mix16B, XXH3_mul128_fold64,
 * XXH3_avalanche, XXH3_rrmxmx and XXH64_avalanche. With seed 0 every `± seed` of the reference vanishes.
 *
 * Arithmetic: a 64-bit value is a pair of 32-bit words (hi, lo) in locals; no BigInt, no allocation. A
 * product of two uint32 takes its low word from Math.imul and its high word from a double product (see
 * {@link mulHi}); accumulators sum uint32 words exactly in a double (< 2^53) and carry once.
 */

/** The first 136 bytes (XXH3_SECRET_SIZE_MIN) of the reference's 192-byte kSecret: all that inputs ≤ 240 bytes read. */
const K_SECRET = [
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
  0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
  0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
  0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
  0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
  0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
  0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
  0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3,
];
/** S[o] = the secret's little-endian uint32 at byte offset o (as int32), o in 0..132. */
const S = new Int32Array(K_SECRET.length - 3);
for (let o = 0; o < S.length; o++) {
  S[o] = K_SECRET[o]! | (K_SECRET[o + 1]! << 8) | (K_SECRET[o + 2]! << 16) | (K_SECRET[o + 3]! << 24);
}

/** 2^-32: multiplying by it is exact, and cheaper than dividing by 2^32. */
const INV32 = 2.3283064365386963e-10;
// 64-bit constants as uint32 words (the reference's XXH_PRIME64_1/2/3, PRIME_MX1, PRIME_MX2).
const P64_1_HI = 0x9e3779b1, P64_1_LO = 0x85ebca87;
const P64_2_HI = 0xc2b2ae3d, P64_2_LO = 0x27d4eb4f;
const P64_3_HI = 0x165667b1, P64_3_LO = 0x9e3779f9;
const MX1_HI = 0x16566791, MX1_LO = 0x9e3779f9;
const MX2_HI = 0x9fb21c65, MX2_LO = 0x1e98df25;
// Secret-derived bitflips of the short paths (seed 0), 64-bit values as hi/lo words.
const BF1TO3 = S[0]! ^ S[4]!; // (readLE32(secret) ^ readLE32(secret + 4)), high word 0
const BF4TO8_HI = S[12]! ^ S[20]!, BF4TO8_LO = S[8]! ^ S[16]!; // readLE64(secret+8) ^ readLE64(secret+16)
const BF9A_HI = S[28]! ^ S[36]!, BF9A_LO = S[24]! ^ S[32]!; // readLE64(secret+24) ^ readLE64(secret+32)
const BF9B_HI = S[44]! ^ S[52]!, BF9B_LO = S[40]! ^ S[48]!; // readLE64(secret+40) ^ readLE64(secret+48)

/** The longest input hashed here (XXH3_MIDSIZE_MAX); longer ones go to the addon. */
export const XXH3_JS_MAX = 240;

/**
 * The bytes being hashed (240, and room for one more character): {@link xxh3CompactString} encodes into
 * it, and {@link xxh3Compact} copies an input of over 16 bytes into it. The 17–240 byte paths read its
 * words through a DataView: on a module constant TurboFan compiles `getInt32` to one load, several times
 * cheaper than four byte loads from an arbitrary Uint8Array. Inputs of up to 16 bytes are read in place
 * (at most 16 byte loads, cheaper than a copy). A Buffer, so that it has the shape of callers' Buffers.
 */
const SCRATCH = Buffer.from(new ArrayBuffer(XXH3_JS_MAX + 4));
const DV = new DataView(SCRATCH.buffer);
/**
 * Strings up to this many UTF-16 units are encoded by a JS loop (about 2 ns a unit; at most 3 bytes a
 * unit, so it must stay ≤ 80 for the loop to need no bound checks); longer ones by Buffer#write (a native
 * call, ~80 ns).
 */
const STRING_LOOP_MAX = 32;
/** Inputs from this many bytes are copied into the scratch by TypedArray#set (a native call, ~40 ns). */
const COPY_SET_MIN = 48;

/**
 * The high word (int32) of the 64-bit result of the last helper called. The helpers below answer a
 * result's low word (int32) and leave its high word here: a function that V8 does not inline can return
 * one int32 without allocating a heap number, and no result object is needed.
 */
let outHi = 0;

/**
 * High 32 bits of the 64-bit product of uint32 `a` and `b` (`lo` = Math.imul(a, b), any sign). The
 * double a·b is within 2^10 of the exact product; subtracting the exact low word leaves a multiple of 2^32
 * off by at most 2^11 (one more rounding), so the quotient is within 2^-21 of the high word and rounds to it.
 */
function mulHi(a: number, b: number, lo: number): number {
  return ((a * b - (lo >>> 0)) * INV32 + 0.5) >>> 0;
}

/** The little-endian uint32 at SCRATCH[p..p+4), as int32. */
function rd32(p: number): number {
  return DV.getInt32(p, true);
}

/** The little-endian uint32 at b[p..p+4), as int32 (for inputs of up to 16 bytes, hashed without a copy). */
function rd32b(b: Uint8Array, p: number): number {
  return b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24);
}

/**
 * XXH3_mul128_fold64 of (ah:al) × (bh:bl), words uint32: the 128-bit product's low 64 bits XOR its high
 * 64 bits. Answers the low word, high word in {@link outHi}.
 */
function mulFold(ah: number, al: number, bh: number, bl: number): number {
  const llL = Math.imul(al, bl), lhL = Math.imul(al, bh), hlL = Math.imul(ah, bl), hhL = Math.imul(ah, bh);
  const llH = mulHi(al, bl, llL), lhH = mulHi(al, bh, lhL), hlH = mulHi(ah, bl, hlL), hhH = mulHi(ah, bh, hhL);
  // 32-bit columns of the 128-bit product: w0 = llL, then w1, w2, w3 with their carries.
  const s1 = (llH + lhL) >>> 0, w1 = (s1 + hlL) >>> 0;
  const s2 = (lhH + hlH) >>> 0, s3 = (s2 + hhL) >>> 0;
  const w2 = (s3 + (s1 < llH ? 1 : 0) + (w1 < s1 ? 1 : 0)) >>> 0;
  const w3 = hhH + (s2 < lhH ? 1 : 0) + (s3 < s2 ? 1 : 0) + (w2 < s3 ? 1 : 0);
  outHi = w1 ^ w3;
  return llL ^ w2;
}

/** XXH3_mix16B (seed 0) of SCRATCH[p..p+16), secret at byte `s`. Answers the low word, high word in {@link outHi}. */
function mix16(p: number, s: number): number {
  return mulFold(
    (rd32(p + 4) ^ S[s + 4]!) >>> 0,
    (rd32(p) ^ S[s]!) >>> 0,
    (rd32(p + 12) ^ S[s + 12]!) >>> 0,
    (rd32(p + 8) ^ S[s + 8]!) >>> 0,
  );
}

/**
 * XXH3_avalanche of (hi:lo): h ^= h >> 37; h *= PRIME_MX1; h ^= h >> 32. Answers the low word, high
 * word in {@link outHi}.
 */
function avalanche(hi: number, lo: number): number {
  lo ^= hi >>> 5;
  const l = Math.imul(lo, MX1_LO);
  const h = (mulHi(lo >>> 0, MX1_LO, l) + Math.imul(hi, MX1_LO) + Math.imul(lo, MX1_HI)) | 0;
  outHi = h;
  return l ^ h;
}

/** XXH64_avalanche of (hi:lo). Answers the low word, high word in {@link outHi}. */
function xxh64Avalanche(hi: number, lo: number): number {
  lo ^= hi >>> 1; // h ^= h >> 33
  let l = Math.imul(lo, P64_2_LO); // h *= PRIME64_2
  let h = (mulHi(lo >>> 0, P64_2_LO, l) + Math.imul(hi, P64_2_LO) + Math.imul(lo, P64_2_HI)) | 0;
  lo = l ^ ((l >>> 29) | (h << 3)); // h ^= h >> 29
  hi = h ^ (h >>> 29);
  l = Math.imul(lo, P64_3_LO); // h *= PRIME64_3
  h = (mulHi(lo >>> 0, P64_3_LO, l) + Math.imul(hi, P64_3_LO) + Math.imul(lo, P64_3_HI)) | 0;
  outHi = h; // h ^= h >> 32
  return l ^ h;
}

/** XXH3_rrmxmx of (hi:lo) for an input of `len` bytes. Answers the low word, high word in {@link outHi}. */
function rrmxmx(hi: number, lo: number, len: number): number {
  // h ^= rotl64(h, 49) ^ rotl64(h, 24)
  const h0 = hi ^ ((lo << 17) | (hi >>> 15)) ^ ((hi << 24) | (lo >>> 8));
  const l0 = lo ^ ((hi << 17) | (lo >>> 15)) ^ ((lo << 24) | (hi >>> 8));
  let l = Math.imul(l0, MX2_LO); // h *= PRIME_MX2
  let h = (mulHi(l0 >>> 0, MX2_LO, l) + Math.imul(h0, MX2_LO) + Math.imul(l0, MX2_HI)) | 0;
  const l1 = l ^ ((h >>> 3) + len); // h ^= (h >> 35) + len
  l = Math.imul(l1, MX2_LO); // h *= PRIME_MX2
  h = (mulHi(l1 >>> 0, MX2_LO, l) + Math.imul(h, MX2_LO) + Math.imul(l1, MX2_HI)) | 0;
  outHi = h ^ (h >>> 28); // h ^= h >> 28
  return l ^ ((l >>> 28) | (h << 4));
}

/** Byte-swapped uint32 (XXH_swap32), as int32. */
function swap32(x: number): number {
  return (x << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
}

/** XXH3_len_9to16_64b (seed 0) of b[0..len). Answers the low word, high word in {@link outHi}. */
function len9to16(b: Uint8Array, len: number): number {
  const aLo = (rd32b(b, 0) ^ BF9A_LO) >>> 0, aHi = (rd32b(b, 4) ^ BF9A_HI) >>> 0;
  const bLo = (rd32b(b, len - 8) ^ BF9B_LO) >>> 0, bHi = (rd32b(b, len - 4) ^ BF9B_HI) >>> 0;
  const fLo = mulFold(aHi, aLo, bHi, bLo);
  // acc = len + swap64(input_lo) + input_hi + fold
  const lo = len + (swap32(aHi) >>> 0) + bLo + (fLo >>> 0);
  const hi = (swap32(aLo) + bHi + outHi + ((lo * INV32) | 0)) | 0;
  return avalanche(hi, lo | 0);
}

/**
 * XXH3_len_17to128_64b (seed 0) of SCRATCH[0..len). Answers the low word, high word in {@link outHi}.
 * The accumulator's low words are summed in a double and carried into the high word once, at the end.
 */
function len17to128(len: number): number {
  const p = len * P64_1_LO; // acc = len * PRIME64_1 (len * P64_1_LO < 2^40: exact)
  let lo = p >>> 0;
  let hi = ((p * INV32) | 0) + Math.imul(len, P64_1_HI);
  // The reference's unrolled pairs: input + 16i with secret + 32i, input + len - 16(i + 1) with
  // secret + 32i + 16, for i < 1 (17–32 bytes), 2 (33–64), 3 (65–96) or 4 (97–128).
  for (let i = 0, pairs = ((len - 1) >> 5) + 1; i < pairs; i++) {
    lo += mix16(16 * i, 32 * i) >>> 0;
    hi += outHi;
    lo += mix16(len - 16 - 16 * i, 32 * i + 16) >>> 0;
    hi += outHi;
  }
  return avalanche((hi + ((lo * INV32) | 0)) | 0, lo | 0);
}

/** XXH3_len_129to240_64b (seed 0) of SCRATCH[0..len). Answers the low word, high word in {@link outHi}. */
function len129to240(len: number): number {
  const p = len * P64_1_LO;
  let lo = p >>> 0;
  let hi = ((p * INV32) | 0) + Math.imul(len, P64_1_HI);
  for (let i = 0; i < 128; i += 16) {
    lo += mix16(i, i) >>> 0;
    hi += outHi;
  }
  // acc_end = mix16B(input + len - 16, secret + XXH3_SECRET_SIZE_MIN - XXH3_MIDSIZE_LASTOFFSET)
  let eLo = mix16(len - 16, 136 - 17) >>> 0;
  let eHi = outHi;
  const aLo = avalanche((hi + ((lo * INV32) | 0)) | 0, lo | 0);
  const aHi = outHi;
  const end = len & ~15; // nbRounds * 16
  for (let i = 128; i < end; i += 16) {
    eLo += mix16(i, i - 128 + 3) >>> 0; // secret + 16 * (i - 8) + XXH3_MIDSIZE_STARTOFFSET
    eHi += outHi;
  }
  lo = (aLo >>> 0) + eLo;
  return avalanche((aHi + eHi + ((lo * INV32) | 0)) | 0, lo | 0);
}

/** XXH3-64 (seed 0) of the empty input: XXH64_avalanche(readLE64(secret + 56) ^ readLE64(secret + 64)). */
const EMPTY_LO = xxh64Avalanche(S[60]! ^ S[68]!, S[56]! ^ S[64]!);
const EMPTY_HI = outHi;

/**
 * XXH3_len_0to16_64b (seed 0) of b[0..len), len ≤ 16, read in place. Answers the low word, high word in
 * {@link outHi}.
 */
function len0to16(b: Uint8Array, len: number): number {
  if (len > 8) return len9to16(b, len);
  if (len >= 4) {
    // XXH3_len_4to8_64b: input64 = readLE32(input + len - 4) + (readLE32(input) << 32), ^ bitflip
    return rrmxmx(rd32b(b, 0) ^ BF4TO8_HI, rd32b(b, len - 4) ^ BF4TO8_LO, len);
  }
  if (len > 0) {
    // XXH3_len_1to3_64b: combined = c1 << 16 | c2 << 24 | c3 | len << 8, ^ bitflip (high word 0)
    const combined = (b[0]! << 16) | (b[len >> 1]! << 24) | b[len - 1]! | (len << 8);
    return xxh64Avalanche(0, combined ^ BF1TO3);
  }
  outHi = EMPTY_HI;
  return EMPTY_LO;
}

/**
 * XXH3-64 (seed 0) of SCRATCH[0..len), len ≤ 240. Answers the low word, high word in {@link outHi}.
 */
function hashScratch(len: number): number {
  return len <= 16 ? len0to16(SCRATCH, len) : len <= 128 ? len17to128(len) : len129to240(len);
}

/**
 * XXH3-64 (seed 0) of `bytes[0..len)`, in the compact form low32 * 2 + bit63 (an integer in [0, 2^33)).
 * Inputs of 0..240 bytes are hashed in JS; longer ones return undefined (the caller falls back to the
 * addon). `len` must not exceed `bytes.length`.
 */
export function xxh3Compact(bytes: Uint8Array, len: number): number | undefined {
  if (len <= 16) {
    const lo = len0to16(bytes, len);
    return (lo >>> 0) * 2 + (outHi >>> 31);
  }
  if (len > XXH3_JS_MAX) return undefined;
  if (len >= COPY_SET_MIN && len === bytes.length) {
    SCRATCH.set(bytes);
  } else {
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      DV.setInt32(i, bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24), true);
    }
    for (; i < len; i++) SCRATCH[i] = bytes[i]!;
  }
  const lo = hashScratch(len);
  return (lo >>> 0) * 2 + (outHi >>> 31);
}

/**
 * {@link xxh3Compact} of the UTF-8 of `s` (lone surrogates encode as U+FFFD, as Buffer.from(s, 'utf8')
 * does). Encodes into a reused scratch buffer without allocating for strings whose UTF-8 fits in 240
 * bytes; undefined when longer.
 */
export function xxh3CompactString(s: string): number | undefined {
  const n = s.length;
  if (n > XXH3_JS_MAX) return undefined; // every UTF-16 unit makes at least one UTF-8 byte
  if (n > STRING_LOOP_MAX) {
    // Whole characters only: more than 240 bytes written ⟺ the UTF-8 is longer than 240 bytes.
    const written = SCRATCH.write(s, 0, SCRATCH.length, 'utf8');
    if (written > XXH3_JS_MAX) return undefined;
    const lo = hashScratch(written);
    return (lo >>> 0) * 2 + (outHi >>> 31);
  }
  const buf = SCRATCH;
  let i = 0;
  for (; i < n; i++) {
    const c = s.charCodeAt(i); // ASCII, the usual case: one byte a unit
    if (c >= 0x80) break;
    buf[i] = c;
  }
  let j = i;
  for (; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[j++] = c;
    } else if (c < 0x800) {
      buf[j++] = 0xc0 | (c >> 6);
      buf[j++] = 0x80 | (c & 0x3f);
    } else if ((c & 0xfc00) === 0xd800 && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00); // a surrogate pair
      buf[j++] = 0xf0 | (c >> 18);
      buf[j++] = 0x80 | ((c >> 12) & 0x3f);
      buf[j++] = 0x80 | ((c >> 6) & 0x3f);
      buf[j++] = 0x80 | (c & 0x3f);
    } else {
      if ((c & 0xf800) === 0xd800) c = 0xfffd; // a lone surrogate
      buf[j++] = 0xe0 | (c >> 12);
      buf[j++] = 0x80 | ((c >> 6) & 0x3f);
      buf[j++] = 0x80 | (c & 0x3f);
    }
  }
  const lo = hashScratch(j);
  return (lo >>> 0) * 2 + (outHi >>> 31);
}
