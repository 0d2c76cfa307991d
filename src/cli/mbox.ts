/**
 * Splitting an input into messages, as it is read: a file or stream that starts with an mbox `From `
 * line is an mbox (split at every line that starts with `From `, mboxrd `>From ` lines unescaped);
 * anything else is one message. Each message is held in memory up to a cap, never the whole input, so
 * a large mbox, or a file that never ends (a device, a growing file), costs at most two messages.
 */

const FROM_ = Buffer.from('From ');

/** One message of an input, or the one that was over the cap (`tooLarge`, with no bytes kept). */
export type SplitPart = { raw: Buffer; tooLarge?: undefined } | { raw?: undefined; tooLarge: true };

/**
 * Splits an mbox buffer into messages (the whole input at once; {@link MboxSplitter} is the streaming
 * form). A single message preceded by a `From ` line (as in the SpamAssassin corpus) yields one message
 * with that line removed. A buffer that does not start with `From ` is one message.
 */
export function splitMbox(buf: Buffer): Buffer[] {
  const s = new MboxSplitter(Infinity);
  const out = [...s.push(buf), ...s.end()];
  return out.map((p) => p.raw!);
}

/** mboxrd: lines `>From `, `>>From `… lose one `>`. */
function unescapeFrom(b: Buffer): Buffer {
  if (b.indexOf('\n>') < 0 && !(b[0] === 0x3e)) return b;
  const s = b.toString('latin1').replace(/^>(>*From )/gm, '$1');
  return Buffer.from(s, 'latin1');
}

/**
 * The streaming splitter: `push` each chunk as it is read, then `end`; each returns the messages
 * completed meanwhile, in order. Empty messages (two `From ` lines in a row) are left out. A message over
 * `maxBytes` bytes yields `{ tooLarge: true }` in its place: its bytes are dropped as they arrive.
 * {@link wholeInputOver} says when a plain (non-mbox) input has passed the cap, so a reader can stop.
 */
export class MboxSplitter {
  /** `undefined` until the first bytes say whether this is an mbox. */
  private mbox: boolean | undefined;
  /** Bytes at the start of a line not yet known to begin `From ` or not (fewer than 5). */
  private head = Buffer.alloc(0);
  private lineStart = true;
  private inFromLine = false;
  /** Whether a `From ` line has started a message (bytes before the first one do not form one). */
  private started = false;
  private parts: Buffer[] = [];
  private size = 0;
  private over = false;

  /** `maxBytes`: the largest message kept, bytes (Infinity: no cap). */
  constructor(private readonly maxBytes: number) {}

  /** A plain input that is already over the cap: nothing more of it will be used. */
  get wholeInputOver(): boolean {
    return this.mbox === false && this.over;
  }

  push(chunk: Buffer): SplitPart[] {
    const out: SplitPart[] = [];
    let pos = 0;
    if (this.mbox === undefined) {
      // The input's first bytes decide, as the first line of the whole input.
      const first = Buffer.concat([this.head, chunk]);
      if (first.length < FROM_.length && FROM_.subarray(0, first.length).equals(first)) {
        this.head = first;
        return out;
      }
      this.mbox = first.subarray(0, FROM_.length).equals(FROM_);
      // Everything so far goes through the line logic below, from the start of the line.
      chunk = first;
      this.head = Buffer.alloc(0);
    }
    if (!this.mbox) {
      this.append(chunk);
      return out;
    }
    while (pos < chunk.length) {
      if (this.lineStart) {
        const need = FROM_.length - this.head.length;
        const avail = chunk.length - pos;
        const probe = chunk.subarray(pos, pos + Math.min(need, avail));
        const sofar = Buffer.concat([this.head, probe]);
        if (!FROM_.subarray(0, sofar.length).equals(sofar)) {
          // An ordinary line: what was held back is its start.
          this.append(this.head);
          this.head = Buffer.alloc(0);
          this.lineStart = false;
          continue;
        }
        if (sofar.length < FROM_.length) {
          this.head = sofar;
          return out;
        }
        // A `From ` line: the message before it is complete; the line itself is the separator.
        this.flush(out);
        this.started = true;
        this.head = Buffer.alloc(0);
        this.lineStart = false;
        this.inFromLine = true;
        pos += probe.length;
        continue;
      }
      const nl = chunk.indexOf(10, pos);
      const end = nl < 0 ? chunk.length : nl + 1;
      if (!this.inFromLine) this.append(chunk.subarray(pos, end));
      if (nl >= 0) {
        this.lineStart = true;
        this.inFromLine = false;
      }
      pos = end;
    }
    return out;
  }

  end(): SplitPart[] {
    const out: SplitPart[] = [];
    if (this.mbox === undefined) this.mbox = false;
    if (this.head.length > 0) this.append(this.head);
    this.head = Buffer.alloc(0);
    if (!this.mbox) {
      out.push(this.over ? { tooLarge: true } : { raw: Buffer.concat(this.parts) });
      this.reset();
      return out;
    }
    this.flush(out);
    return out;
  }

  private append(b: Buffer): void {
    if (b.length === 0 || this.over) return;
    // Bytes before the first `From ` line of an mbox cannot occur (the input starts with one).
    if (this.mbox === true && !this.started) return;
    if (this.size + b.length > this.maxBytes) {
      this.over = true;
      this.parts = [];
      this.size = 0;
      return;
    }
    this.parts.push(b);
    this.size += b.length;
  }

  private flush(out: SplitPart[]): void {
    if (this.started) {
      if (this.over) out.push({ tooLarge: true });
      else if (this.size > 0) out.push({ raw: unescapeFrom(Buffer.concat(this.parts)) });
    }
    this.reset();
  }

  private reset(): void {
    this.parts = [];
    this.size = 0;
    this.over = false;
  }
}
