/**
 * The managed rule set for `classify --db PATH` (the SQLite database of `spamrule serve`) or
 * `--server URL` (a running JMAP server, via `x:SpamRule/get` and `x:StoreLookup/get`).
 */
import { loadScoresFile } from '../engine/load.js';
import type { SpamRuleInput } from '../engine/types.js';
import { readRuleSet, type LoadedRuleSet, type RuleSetFlags } from './ruleset.js';

export interface ManagedSource {
  db?: string;
  server?: string;
  token?: string;
}

/**
 * Loads SpamRules from the managed store, then adds `--scores`/`--list` material from the flags.
 * Throws `Error` with a readable message when the database or server cannot be read.
 */
export async function loadManagedRuleSet(src: ManagedSource, flags: RuleSetFlags): Promise<LoadedRuleSet> {
  // Only the flags' own scores and lists: the built-in default tags belong to the default rules.
  const extra = readRuleSet({ ...flags, rules: undefined, scores: [] });
  const tags = (flags.scores ?? []).flatMap((f) => loadScoresFile(f));
  let rules: SpamRuleInput[];
  if (src.db !== undefined) {
    const spec = '../jmap/index.js';
    const jmap = (await import(spec)) as { loadManagedRuleSet(path: string): { rules: SpamRuleInput[] } | Promise<{ rules: SpamRuleInput[] }> };
    rules = (await jmap.loadManagedRuleSet(src.db)).rules;
  } else {
    rules = await fetchRules(src.server!, src.token);
  }
  return { rules, tags, lists: extra.lists, dnsblServers: [], isDefault: false };
}

async function fetchRules(server: string, token: string | undefined): Promise<SpamRuleInput[]> {
  if (!token) throw new Error('--server needs a token (--token or SPAMRULE_TOKEN)');
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const base = server.replace(/\/+$/, '');
  const sres = await fetch(`${base}/.well-known/jmap`, { headers });
  if (!sres.ok) throw new Error(`JMAP session at ${base}: HTTP ${sres.status}`);
  const session = (await sres.json()) as { apiUrl: string; primaryAccounts: Record<string, string> };
  const accountId = session.primaryAccounts['urn:stalwart:jmap'] ?? Object.values(session.primaryAccounts)[0];
  const apiUrl = new URL(session.apiUrl, base + '/').toString();
  const res = await fetch(apiUrl, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'],
      methodCalls: [['x:SpamRule/get', { accountId, ids: null }, 'r']],
    }),
  });
  if (!res.ok) throw new Error(`JMAP request to ${apiUrl}: HTTP ${res.status}`);
  const body = (await res.json()) as { methodResponses: [string, { list?: SpamRuleInput[]; type?: string }, string][] };
  const [name, args] = body.methodResponses[0]!;
  if (name === 'error') throw new Error(`x:SpamRule/get failed: ${args.type ?? 'error'}`);
  return args.list ?? [];
}
