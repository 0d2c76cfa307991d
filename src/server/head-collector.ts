/**
 * The head of a line-based request (spamd's `SPAMC`, rspamd's legacy `RSPAMC`): request line and
 * headers up to the blank line.
 */

/**
 * Collects a request head up to its blank line in linear time: each chunk is kept as it is and
 * searched once (with the three bytes before it, where a `\r\n\r\n` may begin), and the chunks are
 * concatenated once, when the blank line has come. (Concatenating and searching the whole head
 * again for every chunk cost quadratic CPU for a head trickled in small pieces.)
 */
export class HeadCollector {
  private readonly parts: Buffer[] = [];
  private size = 0;
  /** The last bytes searched (at most 3), copied. */
  private tail: Buffer = Buffer.alloc(0);

  /** Bytes collected. */
  get length(): number {
    return this.size;
  }

  /** Adds a chunk; once the blank line has come, the head's text (without it) and the bytes after it. */
  push(chunk: Buffer): { head: string; rest: Buffer } | undefined {
    const searchedFrom = this.size - this.tail.length;
    const probe = this.tail.length === 0 ? chunk : Buffer.concat([this.tail, chunk]);
    this.parts.push(chunk);
    this.size += chunk.length;
    const at = probe.indexOf('\r\n\r\n');
    if (at < 0) {
      this.tail = Buffer.from(probe.subarray(Math.max(0, probe.length - 3)));
      return undefined;
    }
    const all = this.bytes();
    this.parts.length = 0;
    this.size = 0;
    this.tail = Buffer.alloc(0);
    const end = searchedFrom + at;
    return { head: all.toString('latin1', 0, end), rest: all.subarray(end + 4) };
  }

  /** Everything collected, as Latin-1 text. */
  text(): string {
    return this.bytes().toString('latin1');
  }

  /** The first line, once its `\r\n` has come. */
  firstLine(): string | undefined {
    const all = this.bytes();
    const nl = all.indexOf('\r\n');
    return nl < 0 ? undefined : all.toString('latin1', 0, nl);
  }

  private bytes(): Buffer {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
  }
}
