#!/usr/bin/env node
/**
 * `spamrule` command-line entry point. Each subcommand lives in its own module exporting
 * `run(argv): Promise<number>` (the exit status) and is loaded on demand so that, e.g.,
 * `spamrule eval` never pays for database drivers.
 */
import { realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

type Command = { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> };

const COMMANDS: Record<string, Command> = {
  classify: { summary: 'classify .eml files, folders and mbox files', load: () => import('./classify.js') },
  learn: { summary: 'train the statistical classifier from spam and ham (files, folders, mbox), like sa-learn', load: () => import('./learn.js') },
  lint: { summary: 'check that a rule set compiles and that its tags have scores', load: () => import('./lint.js') },
  eval: { summary: 'evaluate one expression, or a batch file of vectors', load: () => import('./eval.js') },
  serve: { summary: 'serve the JMAP management API and the rspamd/milter/spamd protocols', load: () => import('./serve.js') },
  rules: { summary: 'list|get|create|update|delete|enable|disable SpamRules over JMAP', load: () => import('./rules.js') },
  stores: { summary: 'list|get|create|update|delete StoreLookups over JMAP', load: () => import('./stores.js') },
  token: { summary: 'create|list|revoke API tokens', load: () => import('./token.js') },
  import: { summary: "import Stalwart's spam-filter-rules.json through the JMAP API", load: () => import('./import.js') },
  lists: { summary: 'update|status|show the lookup lists (remote HttpLookup lists are cached on disk)', load: () => import('./lists.js') },
  conformance: { summary: "run Stalwart's spam-filter test cases (stalwart-antispam-suite/v1 JSON)", load: () => import('./conformance.js') },
};

function usage(): string {
  const lines = ['usage: spamrule <command> [options]', '', 'commands:'];
  // As wide as the longest name, so that a new, longer command does not push its row out of line.
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  for (const [name, c] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(width)}  ${c.summary}`);
  lines.push('', 'Run `spamrule <command> --help` for the options of a command.');
  return lines.join('\n');
}

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
  else if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' && (m = /^Unexpected argument '([^']*)'/.exec(message))) what = `unexpected argument '${m[1]}'`;
  else what = (message.split(/\.(?: |$)/)[0] ?? message).replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase());
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

/** Runs the command named by `argv[0]` with the rest; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') {
    process.stdout.write('spamrule 0.1.0\n');
    return 0;
  }
  const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (cmd === undefined) {
    process.stderr.write(`spamrule: unknown command "${name}"\n\n${usage()}\n`);
    return 2;
  }
  const mod = await cmd.load();
  return mod.run(rest);
}

// Run when executed directly (bin), not when imported by tests.
const self = fileURLToPath(import.meta.url);
const invoked = process.argv[1] !== undefined ? realpathSync(process.argv[1]) : '';
if (invoked === self) {
  exitQuietlyOnClosedOutput();
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`spamrule: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
