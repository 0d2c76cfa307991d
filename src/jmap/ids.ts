/**
 * Object ids in Stalwart's format (Stalwart's registry schema): a 64-bit Snowflake (milliseconds since
 * 2021-09-22, 10-bit node id, 12-bit sequence) in the base-32 alphabet `abcdefghijklmnopqrstuvwxyz792013`,
 * big-endian, leading zero digits dropped. Ids grow with creation time, so id order is creation order.
 */
import { randomInt } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz792013';
const EPOCH_MS = Date.UTC(2021, 8, 22);

export function encodeId(n: bigint): string {
  if (n === 0n) return 'a';
  let s = '';
  while (n > 0n) {
    s = ALPHABET[Number(n & 31n)]! + s;
    n >>= 5n;
  }
  return s;
}

/** Orders ids by creation (numeric value): shorter first, then by alphabet position. */
export function compareIds(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) {
    const d = ALPHABET.indexOf(a[i]!) - ALPHABET.indexOf(b[i]!);
    if (d !== 0) return d;
  }
  return 0;
}

export class IdGenerator {
  private lastMs = 0;
  private seq = 0;
  // A random node id keeps two servers sharing one PostgreSQL database from minting the same id.
  constructor(private readonly node = randomInt(1024)) {}

  next(): string {
    let ms = Date.now() - EPOCH_MS;
    if (ms <= this.lastMs) {
      ms = this.lastMs;
      this.seq++;
      if (this.seq >= 4096) {
        ms++;
        this.seq = 0;
      }
    } else this.seq = 0;
    this.lastMs = ms;
    return encodeId((BigInt(ms) << 22n) | (BigInt(this.node) << 12n) | BigInt(this.seq));
  }
}
