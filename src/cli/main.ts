#!/usr/bin/env node
/**
 * `spamrule` command-line entry point. Each subcommand lives in its own module exporting
 * `run(argv): Promise<number>` (the exit status) and is loaded on demand so that, e.g.,
 * `spamrule eval` never pays for database drivers.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exitQuietlyOnClosedOutput } from './errors.js';
import { VERSION } from '../util/version.js';

type Command = { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> };

const COMMANDS: Record<string, Command> = {
  classify: { summary: 'classify .eml files, folders and mbox files', load: () => import('./classify.js') },
  learn: { summary: 'train the statistical classifier from spam and ham (files, folders, mbox), like sa-learn', load: () => import('./learn.js') },
  'mass-check': { summary: "check a rule set on labelled spam and ham (per-tag hit frequencies), like SpamAssassin's mass-check", load: () => import('./mass-check.js') },
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

/** Runs the command named by `argv[0]` with the rest; resolves to the exit status. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version') {
    process.stdout.write(`spamrule ${VERSION}\n`);
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
