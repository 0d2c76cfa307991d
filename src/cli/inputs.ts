/**
 * Message sources for `spamrule classify`: `.eml` files, folders (walked recursively, sorted), mbox
 * files (split at `From ` lines, mboxrd `>From ` unescaped) and `-` for standard input.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface InputMessage {
  /** File name, `file#N` for the N-th (1-based) message of an mbox, or `-` for stdin. */
  name: string;
  raw: Buffer;
}

const FROM_ = Buffer.from('From ');

/** True if the buffer starts with an mbox `From ` separator line. */
function startsWithFromLine(b: Buffer): boolean {
  return b.length >= 5 && b.subarray(0, 5).equals(FROM_);
}

/**
 * Splits an mbox buffer into messages. A single message preceded by a `From ` line (as in the
 * SpamAssassin corpus) yields one message with that line removed.
 */
export function splitMbox(buf: Buffer): Buffer[] {
  if (!startsWithFromLine(buf)) return [buf];
  const out: Buffer[] = [];
  let start = -1; // start of current message body (after its From line)
  let pos = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(10, pos);
    const lineEnd = nl < 0 ? buf.length : nl + 1;
    if (buf[pos] === 0x46 && buf.subarray(pos, pos + 5).equals(FROM_)) {
      if (start >= 0) out.push(unescapeFrom(buf.subarray(start, pos)));
      start = lineEnd;
    }
    pos = lineEnd;
  }
  if (start >= 0) out.push(unescapeFrom(buf.subarray(start)));
  return out.filter((m) => m.length > 0);
}

/** mboxrd: lines `>From `, `>>From `… lose one `>`. */
function unescapeFrom(b: Buffer): Buffer {
  if (b.indexOf('\n>') < 0 && !(b[0] === 0x3e)) return b;
  const s = b.toString('latin1').replace(/^>(>*From )/gm, '$1');
  return Buffer.from(s, 'latin1');
}

function* walk(dir: string): Generator<string> {
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (e.isFile()) yield p;
  }
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Expands PATH arguments to file paths (for counting ahead of time). Unreadable paths throw. */
export function expandPaths(paths: string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (p === '-') {
      out.push('-');
      continue;
    }
    const st = statSync(p);
    if (st.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

/** Yields every message of every file (mbox files yield several). */
export async function* readMessages(files: string[]): AsyncGenerator<InputMessage> {
  for (const f of files) {
    const buf = f === '-' ? await readStdin() : readFileSync(f);
    const parts = splitMbox(buf);
    if (parts.length === 1) yield { name: f, raw: parts[0]! };
    else for (let i = 0; i < parts.length; i++) yield { name: `${f}#${i + 1}`, raw: parts[i]! };
  }
}
