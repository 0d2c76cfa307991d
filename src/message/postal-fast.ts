/**
 * A faster `finalize()` for postal-mime's content decoders (pass-through, base64, quoted-printable).
 *
 * Why: postal-mime 4 joins each MIME part's decoded chunks with `new Blob(chunks).arrayBuffer()`.
 * On Node 20 that Blob round trip (one part per body line plus a `"\n"` string each, read back
 * asynchronously in small slices) costs ~80% of postal-mime's CPU on the SpamAssassin corpus:
 * 9.0 s → 1.7 s CPU for the 6,046 messages with a synchronous concatenation instead.
 *
 * What: the decoders' `finalize()` becomes "flush as before, then concatenate `chunks` (strings as
 * UTF-8, ArrayBuffers and typed arrays as their bytes, exactly what the Blob constructor does)",
 * returning the same `Promise<ArrayBuffer>`. The bytes postal-mime sees are identical.
 *
 * Base64 also gets a streaming `update()`: postal-mime's splits each line on `=+` and decodes every
 * piece into an ArrayBuffer of its own, so a part of `a=` × 1M (2 MB) made a million buffers
 * (1.6–1.8 s), and every padded line (`QQ==`, which real mailers produce) one per line. The
 * replacement ({@link Base64Stream}) decodes straight into one growing byte array with the same
 * rules, so the bytes are identical (test/message/hostile-parse.test.ts compares it with the
 * original on random input, chunking and padding).
 *
 * Safety: a decoder prototype is only patched when its original `finalize` is the known
 * `new Blob(this.chunks …)` one (checked on its source text), and the base64 `update` only when
 * it is the known split-on-padding one, so a postal-mime release that changes the decoders
 * silently keeps its own code. The patch applies process-wide to postal-mime (the decoder
 * classes are module-internal), which is why it is opt-in through {@link installFastDecoders},
 * called once by `parseBody`.
 */
import PostalMime from 'postal-mime';

interface Decoder {
  chunks: (Uint8Array | ArrayBuffer | ArrayBufferView | string)[];
  update(line: Uint8Array): void;
  finalize(): Promise<ArrayBuffer>;
  flushRemainder?: () => void;
  flushBuffer?: () => void;
  pushChunk?: (s: string) => void;
  /** postal-mime's Base64Decoder: the TextDecoder its `update()` reads lines with. */
  decoder?: { encoding?: string };
  [B64]?: Base64Stream | null;
}
interface NodeProto {
  setupContentDecoder(this: { contentDecoder: Decoder | null }, encoding: string): void;
}

const PATCHED = Symbol.for('spamrule.fastFinalize');
const B64 = Symbol('spamrule.base64Stream');

/** Concatenates Blob parts into one ArrayBuffer, as `new Blob(parts).arrayBuffer()` would. */
export function concatParts(parts: readonly (Uint8Array | ArrayBuffer | ArrayBufferView | string)[]): ArrayBuffer {
  const bufs: Uint8Array[] = new Array(parts.length);
  let total = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const b = typeof p === 'string' ? (p === '\n' ? LF : Buffer.from(p, 'utf8'))
      : p instanceof ArrayBuffer ? new Uint8Array(p)
      : new Uint8Array(p.buffer, p.byteOffset, p.byteLength);
    bufs[i] = b;
    total += b.byteLength;
  }
  const out = new Uint8Array(total);
  let pos = 0;
  for (const b of bufs) {
    out.set(b, pos);
    pos += b.byteLength;
  }
  return out.buffer;
}
const LF = new Uint8Array([10]);

function fastFinalize(this: Decoder): Promise<ArrayBuffer> {
  // The same flush each original finalize() performs before building its Blob.
  if (typeof this.flushRemainder === 'function') this.flushRemainder();
  if (typeof this.flushBuffer === 'function') this.flushBuffer();
  return Promise.resolve(concatParts(this.chunks));
}

// Base64 alphabet value of each byte; 64 marks '=', 255 everything else (dropped, as postal-mime's
// `[^a-zA-Z0-9+/=]` filter drops it: a byte ≥ 0x80 only ever decodes to a non-ASCII character).
const B64_VALUE = new Uint8Array(256).fill(255);
for (let i = 0; i < 64; i++) B64_VALUE['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;
B64_VALUE[0x3d] = 64;

/**
 * Streaming base64 decoding with postal-mime 4's rules, into one growing buffer: characters
 * outside the alphabet are skipped; a run of `=` ends the current piece, whose last partial
 * group gives 1 byte (2 characters), 2 bytes (3 characters) or nothing (1 character), exactly as
 * `decodeBase64` does with each piece postal-mime splits off; the end of the part ends one too.
 */
export class Base64Stream {
  private out = new Uint8Array(256);
  private len = 0;
  /** Bits of the current group's characters (6 per character). */
  private acc = 0;
  /** Characters in the current group (0–3). */
  private n = 0;

  /** Decodes one chunk of encoded bytes (any split; lines have no line break in postal-mime). */
  update(bytes: Uint8Array): void {
    // At most 3 carried characters + the chunk's: never more bytes out than that.
    if (this.out.length - this.len < bytes.length + 3) this.grow(bytes.length + 3);
    const out = this.out;
    let len = this.len;
    let acc = this.acc;
    let n = this.n;
    for (let i = 0; i < bytes.length; i++) {
      const v = B64_VALUE[bytes[i]!]!;
      if (v < 64) {
        acc = (acc << 6) | v;
        if (++n === 4) {
          out[len++] = acc >>> 16;
          out[len++] = (acc >>> 8) & 0xff;
          out[len++] = acc & 0xff;
          acc = 0;
          n = 0;
        }
      } else if (v === 64 && n > 0) {
        len = this.tail(out, len, acc, n);
        acc = 0;
        n = 0;
      }
    }
    this.len = len;
    this.acc = acc;
    this.n = n;
  }

  /** Ends the last piece and returns the decoded bytes (a buffer of exactly their length). */
  finish(): ArrayBuffer {
    if (this.n > 0) {
      if (this.out.length - this.len < 2) this.grow(2);
      this.len = this.tail(this.out, this.len, this.acc, this.n);
      this.acc = 0;
      this.n = 0;
    }
    return this.out.buffer.slice(0, this.len);
  }

  // A piece's trailing partial group: 2 characters (12 bits) → 1 byte, 3 (18 bits) → 2 bytes,
  // 1 → none (decodeBase64 drops a lone character). Callers reserve the room.
  private tail(out: Uint8Array, len: number, acc: number, n: number): number {
    if (n === 2) out[len++] = acc >>> 4;
    else if (n === 3) {
      out[len++] = acc >>> 10;
      out[len++] = (acc >>> 2) & 0xff;
    }
    return len;
  }

  private grow(need: number): void {
    const next = new Uint8Array(Math.max(this.out.length * 2, this.len + need));
    next.set(this.out.subarray(0, this.len));
    this.out = next;
  }
}

function toBytes(chunk: unknown): Uint8Array | undefined {
  if (chunk instanceof Uint8Array) return chunk;
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return undefined;
}

function base64Update(this: Decoder, line: Uint8Array, orig: (line: Uint8Array) => void): void {
  let s = this[B64];
  // The known decoder reads each line as UTF-8, where the bytes of the base64 alphabet are the
  // characters themselves; with any other decoder the part keeps postal-mime's own code.
  if (s === undefined) s = this[B64] = (this.decoder?.encoding ?? 'utf-8') === 'utf-8' ? new Base64Stream() : null;
  if (s === null) return orig.call(this, line);
  // postal-mime feeds Uint8Array lines; TextDecoder would accept nothing but buffers either.
  const bytes = toBytes(line);
  if (bytes !== undefined) s.update(bytes);
}

function base64Finalize(this: Decoder, orig: () => Promise<ArrayBuffer>): Promise<ArrayBuffer> {
  const s = this[B64];
  if (s instanceof Base64Stream) return Promise.resolve(s.finish());
  return orig.call(this);
}

function patchDecoder(d: Decoder | null): void {
  if (d === null || typeof d !== 'object') return;
  const proto = Object.getPrototypeOf(d) as Record<string | symbol, unknown>;
  if (proto[PATCHED] !== undefined) return;
  const src = (f: unknown): string => (typeof f === 'function' ? Function.prototype.toString.call(f) : '');
  const known = /new Blob\(this\.chunks/.test(src(proto.finalize));
  proto[PATCHED] = known;
  if (!known) return;
  proto.finalize = fastFinalize;
  // postal-mime 4's Base64Decoder: update() splits on padding and pushChunk() decodes each piece.
  const update = proto.update as (line: Uint8Array) => void;
  if (/split\(\/=\+\/\)/.test(src(update)) && /decodeBase64\(/.test(src(proto.pushChunk))) {
    proto.update = function (this: Decoder, line: Uint8Array): void {
      base64Update.call(this, line, update);
    };
    proto.finalize = function (this: Decoder): Promise<ArrayBuffer> {
      return base64Finalize.call(this, fastFinalize);
    };
  }
}

let installed = false;

/**
 * Installs the fast `finalize()` on postal-mime's decoders and the streaming base64 `update()`
 * (idempotent; see the module comment).
 * Never throws: if postal-mime's internals are not as expected, nothing is changed.
 */
export function installFastDecoders(): void {
  if (installed) return;
  installed = true;
  try {
    const root = (new PostalMime() as unknown as { root?: object }).root;
    const proto = root === undefined ? undefined : (Object.getPrototypeOf(root) as NodeProto & Record<symbol, unknown>);
    if (proto === undefined || typeof proto.setupContentDecoder !== 'function' || proto[PATCHED] !== undefined) return;
    const setup = proto.setupContentDecoder;
    proto[PATCHED] = true;
    // Decoder classes are not exported: patch each one's prototype the first time a node creates one.
    proto.setupContentDecoder = function (this: { contentDecoder: Decoder | null }, encoding: string): void {
      setup.call(this, encoding);
      patchDecoder(this.contentDecoder);
    };
  } catch {
    // postal-mime's shape changed: keep its own decoders.
  }
}
