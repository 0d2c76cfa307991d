/**
 * Message sources for `spamrule classify`: `.eml` files, folders (walked recursively, sorted), mbox
 * files (split at `From ` lines, mboxrd `>From ` unescaped) and `-` for standard input.
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
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
    else if (e.isFile() || e.isSymbolicLink()) yield p; // a link is followed when read (a broken one is reported)
  }
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * An RFC 5322 message starts with a header field (`Name:`; RFC 5322 §2.2 allows more characters in a
 * name, real mail uses letters, digits and `-`), an mbox with a `From ` line. Anything else in a folder
 * (the SpamAssassin corpus's `.json` sidecars, notes, images) is not mail.
 */
const MAIL_START = /^(?:From |[A-Za-z0-9][A-Za-z0-9_.-]*[ \t]*:)/;

/** True when the first bytes of `file` look like a message or an mbox (see MAIL_START). */
export function looksLikeMail(file: string): boolean {
  const head = Buffer.alloc(256);
  const fd = openSync(file, 'r');
  try {
    const n = readSync(fd, head, 0, head.length, 0);
    return MAIL_START.test(head.subarray(0, n).toString('latin1'));
  } finally {
    closeSync(fd);
  }
}

export interface ExpandedInputs {
  /** Files to read, in order (`-` for stdin). */
  files: string[];
  /** Their total size in bytes (stdin counts 0), for progress. */
  bytes: number;
  /** Files inside folders that are not mail and were left out. */
  skipped: number;
  /** Paths that could not be read (missing, no permission), with the reason. */
  problems: { path: string; message: string }[];
}

/**
 * Expands PATH arguments like `expandPaths`, but never throws: a path that cannot be read is listed
 * in `problems` and the rest go on. Inside folders, files that are not mail are skipped (counted in
 * `skipped`); a file named on the command line is always read.
 */
export function expandInputs(paths: string[]): ExpandedInputs {
  const out: ExpandedInputs = { files: [], bytes: 0, skipped: 0, problems: [] };
  const problem = (path: string, e: unknown) => out.problems.push({ path, message: (e as Error).message });
  for (const p of paths) {
    if (p === '-') {
      // Standard input can be read once: a second "-" would be an empty message.
      if (out.files.includes('-')) problem('-', new Error('standard input ("-") is given more than once; it is read once'));
      else out.files.push('-');
      continue;
    }
    try {
      const st = statSync(p);
      if (!st.isDirectory()) {
        out.files.push(p);
        out.bytes += st.size;
        continue;
      }
      for (const f of walk(p)) {
        try {
          if (!looksLikeMail(f)) {
            out.skipped++;
            continue;
          }
          out.files.push(f);
          out.bytes += statSync(f).size;
        } catch (e) {
          problem(f, e);
        }
      }
    } catch (e) {
      problem(p, e);
    }
  }
  return out;
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

/**
 * Yields every message of every file (mbox files yield several). A file that cannot be read throws,
 * or, with `onError`, is reported there and skipped.
 */
export async function* readMessages(files: string[], onError?: (file: string, e: Error) => void): AsyncGenerator<InputMessage> {
  for (const f of files) {
    let buf: Buffer;
    try {
      buf = f === '-' ? await readStdin() : readFileSync(f);
    } catch (e) {
      if (onError === undefined) throw e;
      onError(f, e as Error);
      continue;
    }
    const parts = splitMbox(buf);
    if (parts.length === 1) yield { name: f, raw: parts[0]! };
    else for (let i = 0; i < parts.length; i++) yield { name: `${f}#${i + 1}`, raw: parts[i]! };
  }
}
