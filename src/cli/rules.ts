/**
 * `spamrule rules list|get|create|update|delete|enable|disable`: manages x:SpamRule objects on a
 * running JMAP server (docs/jmap.md). Rules are addressed by name, compared after Stalwart's
 * normalisation (upper case, no white space), by a `/query` on `name` and an exact match.
 */
import { parseArgs } from 'node:util';
import {
  JmapSetError,
  normalizeRuleName,
  SPAM_RULE_SCOPES,
  type JmapClient,
  type SpamRule,
} from '../client/index.js';
import {
  CONNECTION_HELP,
  CONNECTION_OPTIONS,
  connectionFrom,
  formatTable,
  parseAssignments,
  readJsonFile,
  runSubcommands,
  UsageError,
  type ValueKind,
} from '../client/cli-util.js';

const HELP = `usage: spamrule rules <command> [options]

Commands:
  list [--filter TEXT]        table of rules (name, scope, priority, enabled), by priority then name
  get NAME                    one rule with its condition
  create --file FILE          create the rule(s) in FILE (an object or an array; "-" = stdin), or:
  create --name NAME [--scope Any|Url|Domain|Email|Ip|Header|Body] [--priority N]
         [--if EXPR --then EXPR]... [--else EXPR] [--description TEXT] [--disabled]
  update NAME --set PROP=VALUE...   patch properties (JSON pointers allowed: condition/else,
                              condition/match/0/if); PROP:=JSON for a JSON value; or --file PATCH.json
  delete NAME...              destroy rules
  enable NAME... / disable NAME...  set "enable"

Options:
  --json                      print JSON instead of text
  -h, --help                  this help
${CONNECTION_HELP}
Exit status: 0 success, 1 the server refused or could not be reached, 2 bad usage.
`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  ...CONNECTION_OPTIONS,
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  filter: { type: 'string' },
  file: { type: 'string' },
  name: { type: 'string' },
  scope: { type: 'string' },
  priority: { type: 'string' },
  if: { type: 'string', multiple: true },
  then: { type: 'string', multiple: true },
  else: { type: 'string' },
  description: { type: 'string' },
  disabled: { type: 'boolean' },
  set: { type: 'string', multiple: true },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];


/** Types for `--set PROP=VALUE`: expressions and texts stay strings (schema x:SpamRule). */
function ruleKind(prop: string): ValueKind {
  if (prop === 'priority') return 'integer';
  if (prop === 'enable') return 'boolean';
  if (prop === 'name' || prop === 'description' || prop === '@type' || prop === 'condition/else' || /^condition\/match\/\d+\/(if|then)$/u.test(prop))
    return 'string';
  return 'auto';
}

async function requireRule(client: JmapClient, name: string): Promise<SpamRule> {
  const rule = await client.findRule(name);
  if (rule === undefined) throw new Error(`no rule named ${normalizeRuleName(name)}`);
  return rule;
}

function out(text: string): void {
  process.stdout.write(text);
}

function showRule(r: SpamRule): string {
  const lines = [
    `name:         ${r.name}`,
    `id:           ${r.id}`,
    `scope:        ${r['@type']}`,
    `priority:     ${r.priority}`,
    `enabled:      ${r.enable ? 'yes' : 'no'}`,
    `description:  ${r.description ?? '-'}`,
    'condition:',
  ];
  for (const m of r.condition.match) lines.push(`  if   ${m.if}`, `  then ${m.then}`);
  lines.push(`  else ${r.condition.else}`);
  return lines.join('\n') + '\n';
}

async function list(client: JmapClient, v: Values): Promise<number> {
  const rules = await client.getAll<SpamRule>('SpamRule', {
    ...(v.filter !== undefined ? { filter: { name: v.filter } } : {}),
    sort: [{ property: 'priority' }, { property: 'name' }],
  });
  if (v.json) out(JSON.stringify(rules, null, 2) + '\n');
  else out(formatTable(['NAME', 'SCOPE', 'PRIORITY', 'ENABLED'], rules.map((r) => [r.name, r['@type'], r.priority, r.enable ? 'yes' : 'no'])));
  return 0;
}

/** The objects to create, from `--file` or from the flags. */
async function creations(v: Values): Promise<Record<string, unknown>[]> {
  if (v.file !== undefined) {
    if (v.name !== undefined || v.if !== undefined || v.then !== undefined || v.else !== undefined)
      throw new UsageError('give either --file or --name/--if/--then/--else, not both');
    const json = await readJsonFile(v.file);
    const items = Array.isArray(json) ? json : [json];
    if (items.length === 0 || items.some((x) => x === null || typeof x !== 'object' || Array.isArray(x)))
      throw new Error(`${v.file}: expected a SpamRule object or a non-empty array of them`);
    return items as Record<string, unknown>[];
  }
  if (v.name === undefined) throw new UsageError('create needs --file FILE or --name NAME');
  const ifs = v.if ?? [];
  const thens = v.then ?? [];
  if (ifs.length !== thens.length) throw new UsageError(`--if and --then come in pairs (got ${ifs.length} --if, ${thens.length} --then)`);
  const scope = v.scope ?? 'Any';
  if (!(SPAM_RULE_SCOPES as readonly string[]).includes(scope)) throw new UsageError(`--scope must be one of ${SPAM_RULE_SCOPES.join(', ')}`);
  const rule: Record<string, unknown> = {
    '@type': scope,
    name: v.name,
    condition: { match: ifs.map((c, i) => ({ if: c, then: thens[i]! })), else: v.else ?? 'false' },
  };
  if (v.priority !== undefined) {
    if (!/^-?\d+$/u.test(v.priority)) throw new UsageError(`--priority expects an integer, got "${v.priority}"`);
    rule.priority = Number(v.priority);
  }
  if (v.description !== undefined) rule.description = v.description;
  if (v.disabled) rule.enable = false;
  return [rule];
}

async function create(client: JmapClient, v: Values): Promise<number> {
  const items = await creations(v);
  const create = Object.fromEntries(items.map((r, i) => [`r${i}`, r]));
  const nameOf = (k: string) => {
    const n = create[k]?.name;
    return typeof n === 'string' ? normalizeRuleName(n) : k;
  };
  const res = await client.setRules({ create });
  const created = Object.entries(res.created ?? {});
  if (v.json) out(JSON.stringify(Object.fromEntries(created.map(([k, c]) => [nameOf(k), c])), null, 2) + '\n');
  else for (const [k, c] of created) out(`created ${nameOf(k)} (id ${c.id})\n`);
  if (res.notCreated && Object.keys(res.notCreated).length > 0) throw new JmapSetError('x:SpamRule/set', res.notCreated, (k) => `rule ${nameOf(k)}`);
  return 0;
}

/** Sends one update and fails with the SetError when the server refuses it. */
async function patch(client: JmapClient, rule: SpamRule, p: Record<string, unknown>): Promise<void> {
  const res = await client.setRules({ update: { [rule.id]: p } });
  const err = res.notUpdated?.[rule.id];
  if (err) throw new JmapSetError('x:SpamRule/set', { [rule.id]: err }, () => `rule ${rule.name}`);
}

async function update(client: JmapClient, name: string, v: Values): Promise<number> {
  let p: Record<string, unknown>;
  if (v.file !== undefined) {
    if (v.set !== undefined) throw new UsageError('give either --file or --set, not both');
    const json = await readJsonFile(v.file);
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error(`${v.file}: expected a PatchObject (a JSON object)`);
    p = json as Record<string, unknown>;
  } else if (v.set !== undefined) p = parseAssignments(v.set, ruleKind);
  else throw new UsageError('update needs --set PROP=VALUE or --file PATCH.json');
  const rule = await requireRule(client, name);
  await patch(client, rule, p);
  const after = (await client.getRules([rule.id])).list[0];
  if (v.json) out(JSON.stringify(after, null, 2) + '\n');
  else out(`updated ${rule.name}\n`);
  return 0;
}

async function forEachName(client: JmapClient, names: string[], act: (r: SpamRule) => Promise<string>): Promise<number> {
  // Resolve every name first, so a typo in the third name changes nothing.
  const rules: SpamRule[] = [];
  for (const n of names) rules.push(await requireRule(client, n));
  for (const r of rules) out((await act(r)) + '\n');
  return 0;
}

async function dispatch(sub: string, positionals: string[], v: Values): Promise<number> {
  const one = (): string => {
    if (positionals.length !== 1) throw new UsageError(`${sub} takes exactly one NAME`);
    return positionals[0]!;
  };
  const some = (): string[] => {
    if (positionals.length === 0) throw new UsageError(`${sub} needs at least one NAME`);
    return positionals;
  };
  const noArgs = () => {
    if (positionals.length > 0) throw new UsageError(`${sub} takes no NAME`);
  };
  if (!['list', 'get', 'create', 'update', 'delete', 'enable', 'disable'].includes(sub)) throw new UsageError(`unknown command "${sub}"`);
  // Check the arguments before connecting, so usage errors never depend on the server.
  if (sub === 'list' || sub === 'create') noArgs();
  const names = sub === 'get' || sub === 'update' ? [one()] : sub === 'list' || sub === 'create' ? [] : some();
  if (sub === 'create' && v.file === undefined && v.name === undefined) throw new UsageError('create needs --file FILE or --name NAME');
  if (sub === 'update' && v.file === undefined && v.set === undefined) throw new UsageError('update needs --set PROP=VALUE or --file PATCH.json');
  const client = connectionFrom(v);
  switch (sub) {
    case 'list':
      return list(client, v);
    case 'get': {
      const r = await requireRule(client, names[0]!);
      out(v.json ? JSON.stringify(r, null, 2) + '\n' : showRule(r));
      return 0;
    }
    case 'create':
      return create(client, v);
    case 'update':
      return update(client, names[0]!, v);
    case 'delete':
      return forEachName(client, names, async (r) => {
        const res = await client.setRules({ destroy: [r.id] });
        const err = res.notDestroyed?.[r.id];
        if (err) throw new JmapSetError('x:SpamRule/set', { [r.id]: err }, () => `rule ${r.name}`);
        return `deleted ${r.name}`;
      });
    case 'enable':
    case 'disable':
      return forEachName(client, names, async (r) => {
        await patch(client, r, { enable: sub === 'enable' });
        return `${sub}d ${r.name}`;
      });
    default:
      throw new UsageError(`unknown command "${sub}"`);
  }
}

/** Entry point: returns the exit status (0 ok, 1 server/file error, 2 usage). */
export function run(argv: string[]): Promise<number> {
  return runSubcommands<Values>('rules', argv, OPTIONS, HELP, dispatch);
}
