/**
 * The CLI's messages for what goes wrong around a command rather than in it: an option parseArgs
 * refuses, a file that cannot be opened, and an output pipe the reader closed. One place, so that
 * every command words them alike (and so that commands need not import the entry point).
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The one line a command prints for an option that `node:util` parseArgs refuses (an unknown
 * option, a missing value, a stray argument), with its `spamrule <command>: ` prefix and newline:
 * `spamrule eval: unknown option '--x' (see spamrule eval --help)`. Node's own text is long and
 * suggests `--` for a case that is rarely the user's, and the whole help after it buried the line
 * that matters.
 */
export function optionError(command: string, e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown } | null)?.code;
  let what: string;
  let m: RegExpExecArray | null;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && (m = /^Unknown option '([^']*)'/.exec(message))) what = `unknown option '${m[1]}'`;
  else if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && (m = /^Option '(?:-\w, )?(-[^ ']+)(?: <value>)?' argument missing/.exec(message)))
    what = `option '${m[1]}' needs a value`;
  else if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && (m = /^Option '(?:-\w, )?(-[^ ']+)' does not take an argument/.exec(message)))
    what = `option '${m[1]}' takes no value`;
  else if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && (m = /^Option '(?:-\w, )?(-[^ ']+)' argument is ambiguous/.exec(message)))
    // `--max-size --workers 2` or `--rules -x`: Node's three lines suggest `--max-size=-XYZ`, when the
    // usual cause is a value left out. Our negative numbers are joined already (joinNegativeValues).
    what = `option '${m[1]}' needs a value; one that starts with '-' is written ${m[1]}=-…`;
  else if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && (m = /^Unexpected argument '([^']*)'/.exec(message))) what = `unexpected argument '${m[1]}'`;
  // Any other message: its first sentence of its first line, so that the error stays one line.
  else what = (message.split(/\.(?:\s|$)|\n/)[0] ?? message).replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase());
  return `spamrule ${command}: ${what} (see spamrule ${command} --help)\n`;
}

/**
 * Makes a closed stdout (or stderr) end the process quietly: `spamrule classify … | head -1`
 * closes the pipe early, and Node then reports the failed write as an unhandled `EPIPE` error
 * with a stack. Node ignores SIGPIPE, so the process cannot die of it as C tools do; it exits
 * with the status a shell shows for them, 128 + SIGPIPE (13) = 141, like `cat`, `grep` or `git
 * log` piped into `head`. Not 0: the output was cut short, and under `set -o pipefail` a script
 * should see that just as it does for those tools (with `-e`, a 0 would also claim "no spam").
 */
export function exitQuietlyOnClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(141);
      // Any other failure to write our own output: say it once on whatever still works, and stop.
      if (stream !== process.stderr) process.stderr.write(`spamrule: cannot write output: ${err.message}\n`);
      process.exit(1);
    });
    // On Linux a pipe is written synchronously, so the failed write is known at once, but the
    // 'error' event above waits for the event loop, which a command busy in a chain of awaits
    // (classify over an mbox) gives back only at its end: it would classify everything, then
    // print its summary. So each write also looks at the stream's error, set by the failed write.
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((...args: unknown[]): boolean => {
      const ok = write(...args);
      if ((stream.errored as NodeJS.ErrnoException | null)?.code === 'EPIPE') process.exit(141);
      return ok;
    }) as typeof stream.write;
  }
}

/**
 * The message for a file the command could not open, naming the flag and the path (a database
 * driver says only "unable to open database file" or "file is not a database", which leaves the
 * user to guess which of several files it meant): `cannot open the --db database /x.db: no such
 * file`. `what` is how the user knows the file, e.g. `the --model file`.
 */
export function openError(what: string, path: string, e: unknown): string {
  const raw = e instanceof Error ? e.message : String(e);
  // The classifier's store reports through the lookup layer: `lookup store "classifier": key_get failed: …`.
  const message = raw.replace(/^lookup store "[^"]*": \w+ failed: /, '');
  const code = (e as { code?: unknown } | null)?.code;
  let why = message;
  if (/directory does not exist/i.test(message)) why = `the directory ${dirname(resolve(path))} does not exist`;
  else if (code === 'SQLITE_NOTADB' || /file is not a database/i.test(message)) why = 'the file is not an SQLite database';
  else if (code === 'SQLITE_CANTOPEN' || /unable to open database file/i.test(message)) {
    let st;
    try {
      st = statSync(path);
    } catch {
      st = undefined;
    }
    why = st === undefined ? 'no such file' : st.isDirectory() ? 'it is a directory' : 'the file cannot be opened (check its permissions)';
  }
  return `cannot open ${what} ${path}: ${why}`;
}
