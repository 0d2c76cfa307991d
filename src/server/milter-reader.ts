/**
 * Splits the milter byte stream into packets (milter-wire.ts) as it arrives, in linear time: a
 * packet's data is collected as the chunks that carry it and concatenated once, when the packet is
 * complete. (Concatenating the whole pending buffer again for every chunk cost quadratic CPU: a
 * 1 MiB packet sent in 1,400-byte pieces took 0.4 s of the event loop every connection shares.)
 */

/** A complete packet. */
export interface ReadPacket {
  /** The command byte, as a one-character string. */
  cmd: string;
  /** Its data (a view of the received chunks when one chunk carried it all; empty when dropped). */
  data: Buffer;
  /** The data was not kept because `reserve` refused its size (see {@link PacketReader}). */
  dropped: boolean;
}

const EMPTY = Buffer.alloc(0);

export class PacketReader {
  /** The 4 length bytes and the command byte of the packet being read. */
  private readonly head = Buffer.alloc(5);
  private headLen = 0;
  private inData = false;
  private cmd = '';
  /** Data bytes of the current packet: announced, and received so far. */
  private need = 0;
  private got = 0;
  private dropping = false;
  private parts: Buffer[] = [];
  /** Complete packets not yet handled, oldest first; the caller shifts them off. */
  readonly packets: ReadPacket[] = [];
  /** Packets completed since the reader was made. */
  completed = 0;
  /** Data bytes `reserve` granted for packets not yet taken with {@link next} (those being read included). */
  reserved = 0;

  /**
   * `maxPacket`: the largest length a packet may announce (bytes, the command byte included).
   * `reserve(bytes)` is asked, once a packet's header has arrived, whether its data may be kept;
   * when it says no, the data is read past and dropped, and the packet comes out `dropped`.
   */
  constructor(
    private readonly maxPacket: number,
    private readonly reserve: (bytes: number) => boolean = () => true,
  ) {}

  /** The oldest complete packet, taken off the queue (its data no longer counts in {@link reserved}). */
  next(): ReadPacket | undefined {
    const p = this.packets.shift();
    if (p !== undefined && !p.dropped) this.reserved -= p.data.length;
    return p;
  }

  /** A packet has begun to arrive and is not complete yet. */
  get partial(): boolean {
    return this.headLen > 0 || this.inData;
  }

  /**
   * Reads one chunk: complete packets are appended to {@link packets}. Returns an error message when
   * a packet announces a length of 0 or over `maxPacket` (nothing after it can be read).
   */
  push(chunk: Buffer): string | undefined {
    let off = 0;
    while (off < chunk.length) {
      if (!this.inData) {
        const n = Math.min(5 - this.headLen, chunk.length - off);
        chunk.copy(this.head, this.headLen, off, off + n);
        this.headLen += n;
        off += n;
        if (this.headLen < 4) continue;
        const len = this.head.readUInt32BE(0);
        if (len === 0 || len > this.maxPacket) return `packet length ${len} out of range`;
        if (this.headLen < 5) continue;
        this.cmd = String.fromCharCode(this.head[4]!);
        this.headLen = 0;
        this.inData = true;
        this.need = len - 1;
        this.got = 0;
        this.dropping = this.need > 0 && !this.reserve(this.need);
        if (!this.dropping) this.reserved += this.need;
      }
      // In the same pass as the header: a packet without data is complete at once.
      const n = Math.min(this.need - this.got, chunk.length - off);
      if (n > 0 && !this.dropping) this.parts.push(chunk.subarray(off, off + n));
      this.got += n;
      off += n;
      if (this.got === this.need) {
        const data = this.dropping || this.parts.length === 0 ? EMPTY : this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.need);
        this.packets.push({ cmd: this.cmd, data, dropped: this.dropping });
        this.completed++;
        this.parts = [];
        this.inData = false;
        this.dropping = false;
      }
    }
    return undefined;
  }
}
