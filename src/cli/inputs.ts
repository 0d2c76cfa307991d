/**
 * Message sources for `spamrule classify` and `learn`: `.eml` files, folders (walked recursively,
 * sorted), mbox files (split at `From ` lines, mboxrd `>From ` unescaped) and `-` for standard input.
 *
 * A folder may belong to someone else than the user running spamrule (a user's Junk folder trained
 * from root's cron, as sa-learn is run), so walking it follows no symbolic link (of a file or of a
 * folder) and reads regular files only: a link to a root-only file, a FIFO that never ends or a device
 * such as /dev/zero inside it is skipped with a warning. A path named on the command line is the
 * user's own choice: a link there is followed, but it must lead to a folder or a regular file. Every
 * message is read with a bounded stream and capped at {@link MAX_MESSAGE_BYTES}.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { MboxSplitter } from './mbox.js';

export { splitMbox } from './mbox.js';

/**
 * The largest message read, bytes: the server's default `limits.maxSize` (50 MiB). A larger one, alone
 * in its file or inside an mbox, is reported and skipped; the others of the mbox are still read.
 */
export const MAX_MESSAGE_BYTES = 50 * 1024 * 1024;

/** Bytes read at a time. */
const CHUNK_BYTES = 1024 * 1024;

export interface InputMessage {
  /** File name, `file#N` for the N-th (1-based) message of an mbox, or `-` for stdin. */
  name: string;
  raw: Buffer;
}

/**
 * A file to read: its path, and for a file found inside a folder the identity the walk saw (device and
 * inode), which the file opened must still have: a file swapped for a link or another file after the
 * folder was listed is refused.
 */
export interface InputFile {
  path: string;
  walked?: { dev: number; ino: number };
}

/** What a non-regular file is, for messages. */
function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

/**
 * Opening flags: never block (a FIFO with no writer would block `open` for ever: it is opened, seen by
 * `fstat` and refused), and inside a folder never follow a link, even one put there after the walk.
 */
function openFlags(walked: boolean): number {
  return constants.O_RDONLY | constants.O_NONBLOCK | (walked ? constants.O_NOFOLLOW : 0);
}

/** Refuses an opened file that is not the regular file expected; returns its size. Throws `Error`. */
function checkOpened(st: Stats, f: InputFile): number {
  if (!st.isFile()) throw new Error(`not a regular file (${kindOf(st)}); not read`);
  if (f.walked !== undefined && (st.dev !== f.walked.dev || st.ino !== f.walked.ino)) {
    throw new Error('replaced after its folder was listed; not read');
  }
  return st.size;
}

/** One entry of a folder walk: a regular file to consider, or one left out with the reason. */
type WalkEntry = { file: InputFile; size: number } | { skipped: string; why: string };

/**
 * The regular files under `dir`, sorted by name, dot files left out. Symbolic links are not followed
 * (neither to files nor to folders) and FIFOs, sockets and devices are not read: each is yielded as
 * `skipped`. sa-learn follows links to regular files (Perl's `-f`); spamrule does not, since the folder's
 * owner could point one at any file the runner may read. Throws when `dir` cannot be listed.
 */
function* walk(dir: string): Generator<WalkEntry> {
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) yield { skipped: p, why: 'a symbolic link: links inside folders are not followed (name the file itself to read it)' };
    else if (e.isDirectory()) yield* walk(p);
    else if (e.isFile()) {
      // The identity checked again when the file is opened (O_NOFOLLOW covers a link swapped in, this a file).
      const st = lstatSync(p);
      if (st.isFile()) yield { file: { path: p, walked: { dev: st.dev, ino: st.ino } }, size: st.size };
      else yield { skipped: p, why: `${kindOf(st)}, not a regular file` };
    } else yield { skipped: p, why: `${kindOf(lstatSync(p))}, not a regular file` };
  }
}

async function* readStdin(): AsyncGenerator<Buffer> {
  for await (const c of process.stdin) yield c as Buffer;
}

/**
 * An RFC 5322 message starts with a header field (`Name:`; RFC 5322 §2.2 allows more characters in a
 * name, real mail uses letters, digits and `-`), an mbox with a `From ` line. Anything else in a folder
 * (the SpamAssassin corpus's `.json` sidecars, notes, images) is not mail.
 */
const MAIL_START = /^(?:From |[A-Za-z0-9][A-Za-z0-9_.-]*[ \t]*:)/;

/**
 * True when the first bytes of `file` look like a message or an mbox (see MAIL_START). Opens it as
 * {@link readMessages} does: a file found in a folder must still be the regular file the walk saw.
 * Throws `Error` otherwise, or when it cannot be read.
 */
export function looksLikeMail(file: InputFile | string): boolean {
  const f = typeof file === 'string' ? { path: file } : file;
  const head = Buffer.alloc(256);
  const fd = openSync(f.path, openFlags(f.walked !== undefined));
  try {
    checkOpened(fstatSync(fd), f);
    const n = readSync(fd, head, 0, head.length, 0);
    return MAIL_START.test(head.subarray(0, n).toString('latin1'));
  } finally {
    closeSync(fd);
  }
}

export interface ExpandedInputs {
  /** Files to read, in order (`{ path: '-' }` for stdin). */
  files: InputFile[];
  /** Their total size in bytes (stdin counts 0), for progress. */
  bytes: number;
  /** Files inside folders that are not mail and were left out. */
  skipped: number;
  /** Paths that could not be read (missing, no permission, not a regular file), with the reason. */
  problems: { path: string; message: string }[];
  /** Entries of folders left out without being read (links, FIFOs, devices, sockets), with the reason. */
  warnings: { path: string; message: string }[];
}

/**
 * Expands PATH arguments, never throwing: a path that cannot be read is listed in `problems` and the
 * rest go on. Inside folders, files that are not mail are skipped (counted in `skipped`), and links and
 * special files are left out (`warnings`). A path named on the command line is always read when it is
 * a regular file (a link to one included); a FIFO, device or socket named there is a problem.
 */
export function expandInputs(paths: string[]): ExpandedInputs {
  const out: ExpandedInputs = { files: [], bytes: 0, skipped: 0, problems: [], warnings: [] };
  const problem = (path: string, e: unknown) => out.problems.push({ path, message: (e as Error).message });
  for (const p of paths) {
    if (p === '-') {
      // Standard input can be read once: a second "-" would be an empty message.
      if (out.files.some((f) => f.path === '-')) problem('-', new Error('standard input ("-") is given more than once; it is read once'));
      else out.files.push({ path: '-' });
      continue;
    }
    try {
      const st = statSync(p);
      if (st.isFile()) {
        out.files.push({ path: p });
        out.bytes += st.size;
        continue;
      }
      if (!st.isDirectory()) {
        problem(p, new Error(`not a regular file (${kindOf(st)}); to read standard input, give -`));
        continue;
      }
      for (const entry of walk(p)) {
        if ('skipped' in entry) {
          out.warnings.push({ path: entry.skipped, message: `skipped: ${entry.why}` });
          continue;
        }
        try {
          if (!looksLikeMail(entry.file)) {
            out.skipped++;
            continue;
          }
          out.files.push(entry.file);
          out.bytes += entry.size;
        } catch (e) {
          problem(entry.file.path, e);
        }
      }
    } catch (e) {
      problem(p, e);
    }
  }
  return out;
}

/** The chunks of one file, opened as {@link checkOpened} allows, read `CHUNK_BYTES` at a time. */
async function* readFileChunks(f: InputFile): AsyncGenerator<Buffer> {
  const fh = await open(f.path, openFlags(f.walked !== undefined));
  try {
    checkOpened(await fh.stat(), f);
    for (;;) {
      const { bytesRead, buffer } = await fh.read({ buffer: Buffer.allocUnsafe(CHUNK_BYTES) });
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

/**
 * Yields every message of every file (mbox files yield several, named `file#N`), each read as a bounded
 * stream: at most {@link MAX_MESSAGE_BYTES} of a message is held. A file that cannot be read (or is no
 * longer the regular file expected) throws, or, with `onError`, is reported there and skipped; so is a
 * message over the cap, and a plain file over it is not read further.
 */
export async function* readMessages(files: readonly (InputFile | string)[], onError?: (file: string, e: Error) => void): AsyncGenerator<InputMessage> {
  const tooLarge = new Error(`larger than the ${MAX_MESSAGE_BYTES / 1024 / 1024} MiB message limit; skipped`);
  for (const entry of files) {
    const f = typeof entry === 'string' ? { path: entry } : entry;
    const splitter = new MboxSplitter(MAX_MESSAGE_BYTES);
    // Messages are named once the next one shows whether the file holds more than one.
    let held: { raw?: Buffer; tooLarge?: true } | undefined;
    let n = 0;
    const named = function* (last: boolean): Generator<InputMessage> {
      if (held === undefined) return;
      const name = last && n === 1 ? f.path : `${f.path}#${n}`;
      const m = held;
      held = undefined;
      if (m.raw !== undefined) yield { name, raw: m.raw };
      else if (onError === undefined) throw new Error(`${name}: ${tooLarge.message}`);
      else onError(name, tooLarge);
    };
    try {
      for await (const chunk of f.path === '-' ? readStdin() : readFileChunks(f)) {
        for (const part of splitter.push(chunk)) {
          yield* named(false);
          held = part;
          n++;
        }
        // A single message already over the cap: the rest of the file would be read for nothing.
        if (splitter.wholeInputOver) break;
      }
    } catch (e) {
      held = undefined;
      if (onError === undefined) throw e;
      onError(f.path, e as Error);
      continue;
    }
    for (const part of splitter.end()) {
      yield* named(false);
      held = part;
      n++;
    }
    yield* named(true);
  }
}
