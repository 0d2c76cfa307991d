/**
 * Pieces shared by `spamrule rules|stores|import`: connection flags, aligned tables, `prop=value`
 * assignments, and error display. Kept in the client so the three CLI modules stay thin.
 */
import { parseArgs } from 'node:util';
import { parseCliArgs, parseJsonText } from '../util/index.js';
import { JmapClient } from './client.js';
import { JmapError } from './errors.js';
import { optionError } from '../cli/errors.js';

export interface ConnectionFlags {
  server?: string;
  token?: string;
}

/** parseArgs descriptors for `--server` and `--token`. */
export const CONNECTION_OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
} as const;

export const CONNECTION_HELP = `Connection:
  --server URL      JMAP server base URL (default $SPAMRULE_SERVER), e.g. http://127.0.0.1:8080
  --token TOKEN     Bearer token from "spamrule token create" (default $SPAMRULE_TOKEN)
`;

/**
 * A client from `--server`/`--token`, falling back to `SPAMRULE_SERVER`/`SPAMRULE_TOKEN`. Throws
 * `Error` saying which one is missing, or `TypeError` for a malformed URL.
 */
export function connectionFrom(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): JmapClient {
  const server = flags.server ?? env.SPAMRULE_SERVER;
  const token = flags.token ?? env.SPAMRULE_TOKEN;
  if (!server) throw new Error('no server: pass --server URL or set SPAMRULE_SERVER');
  if (!token) throw new Error('no token: pass --token TOKEN or set SPAMRULE_TOKEN (see "spamrule token create")');
  return new JmapClient({ server, token });
}

/** Left-aligned columns separated by two spaces; numbers right-aligned. No trailing blanks. */
export function formatTable(headers: string[], rows: (string | number | boolean)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => String(c)))];
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return (
    cells
      .map((r) =>
        r
          .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : i === r.length - 1 ? c : c.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

export type ValueKind = 'string' | 'integer' | 'boolean' | 'auto';

/**
 * Turns `prop=value` / `prop:=JSON` assignments into a PatchObject (RFC 8620 §5.3; `prop` may be a
 * JSON pointer such as `condition/else` or `store/port`). With `=`, `kindOf(prop)` decides the type:
 * `string` keeps the text (expressions such as `false` stay strings), `integer`/`boolean` must parse,
 * `auto` takes JSON when it parses and the text otherwise. `:=` always parses JSON. Throws `Error`
 * naming the bad assignment.
 */
export function parseAssignments(items: string[], kindOf: (prop: string) => ValueKind): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new Error(`--set expects PROP=VALUE or PROP:=JSON, got "${item}"`);
    const json = item[eq - 1] === ':';
    const prop = item.slice(0, json ? eq - 1 : eq);
    const text = item.slice(eq + 1);
    if (prop === '') throw new Error(`--set "${item}": empty property name`);
    if (json) {
      try {
        patch[prop] = JSON.parse(text);
      } catch (e) {
        throw new Error(`--set ${prop}:= expects JSON: ${(e as Error).message}`);
      }
      continue;
    }
    const kind = kindOf(prop);
    if (kind === 'string') patch[prop] = text;
    else if (kind === 'integer') {
      if (!/^-?\d+$/u.test(text)) throw new Error(`--set ${prop} expects an integer, got "${text}"`);
      patch[prop] = Number(text);
    } else if (kind === 'boolean') {
      if (text !== 'true' && text !== 'false') throw new Error(`--set ${prop} expects true or false, got "${text}"`);
      patch[prop] = text === 'true';
    } else {
      try {
        patch[prop] = JSON.parse(text);
      } catch {
        patch[prop] = text;
      }
    }
  }
  return patch;
}

/** Prints `spamrule CMD: message` for an error; returns exit status 1. Non-client bugs keep their stack out too. */
export function reportError(cmd: string, e: unknown): number {
  const msg = e instanceof JmapError || e instanceof Error ? e.message : String(e);
  process.stderr.write(`spamrule ${cmd}: ${msg.split('\n').join(`\nspamrule ${cmd}: `)}\n`);
  return 1;
}

/** Usage problem: message, then the help text; exit status 2 (as the other subcommands). */
export function usageError(cmd: string, msg: string, help: string): number {
  process.stderr.write(`spamrule ${cmd}: ${msg}\n\n${help}`);
  return 2;
}

/** A usage problem found after option parsing (unknown subcommand, missing argument): exit status 2. */
export class UsageError extends Error {}

/**
 * Shared entry point of the `rules` and `stores` commands: parses options, prints help, dispatches
 * the subcommand and maps errors to exit statuses (0 ok, 1 server/file error, 2 usage).
 */
export async function runSubcommands<V>(
  cmd: string,
  argv: string[],
  options: Parameters<typeof parseArgs>[0] extends infer C ? (C extends { options?: infer O } ? O : never) : never,
  help: string,
  dispatch: (sub: string, rest: string[], values: V) => Promise<number>,
): Promise<number> {
  let parsed: { values: V; positionals: string[] };
  try {
    parsed = parseCliArgs({ args: argv, options, allowPositionals: true, strict: true }) as unknown as { values: V; positionals: string[] };
  } catch (e) {
    process.stderr.write(optionError(cmd, e));
    return 2;
  }
  const [sub, ...rest] = parsed.positionals;
  if ((parsed.values as { help?: boolean }).help || sub === 'help') {
    process.stdout.write(help);
    return 0;
  }
  if (sub === undefined) return usageError(cmd, 'no command given', help);
  try {
    return await dispatch(sub, rest, parsed.values);
  } catch (e) {
    if (e instanceof UsageError) return usageError(`${cmd} ${sub}`, e.message, help);
    return reportError(`${cmd} ${sub}`, e);
  }
}

/** Reads and parses a JSON file (`-` = stdin). Throws `Error` naming the file. */
export async function readJsonFile(path: string): Promise<unknown> {
  const { readFile } = await import('node:fs/promises');
  let text: string;
  try {
    if (path === '-') {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      text = Buffer.concat(chunks).toString('utf8');
    } else text = await readFile(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return parseJsonText(text);
  } catch (e) {
    throw new Error(`${path} is not valid JSON: ${(e as Error).message}`);
  }
}
