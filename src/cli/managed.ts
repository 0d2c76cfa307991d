/**
 * The managed rule set for `classify --db PATH` (the SQLite database of `spamrule serve`) or
 * `--server URL` (a running JMAP server: `x:SpamRule` and `x:StoreLookup` read with `/query` +
 * `/get`). StoreLookups become lookup namespaces; over `--server`, `Value` secrets are write-only
 * (docs/jmap.md), so stores that need one must use `EnvironmentVariable`/`File` secrets or `--db`.
 */
import { JmapClient } from '../client/index.js';
import type { SpamRuleInput } from '../engine/types.js';
import { openError } from './errors.js';
import { readLists, readScoresFile, type LoadedRuleSet, type RuleSetFlags } from './ruleset.js';

export interface ManagedSource {
  db?: string;
  server?: string;
  token?: string;
}

/**
 * Loads SpamRules and StoreLookups from the managed store, then adds `--scores`/`--list` material
 * from the flags. Throws `Error` with a readable message when the database or server cannot be read.
 */
export async function loadManagedRuleSet(src: ManagedSource, flags: RuleSetFlags): Promise<LoadedRuleSet> {
  // Only the flags' own scores and lists: the built-in default tags belong to the default rules.
  const lists = readLists(flags.list);
  const tags = (flags.scores ?? []).flatMap((f) => readScoresFile(f));
  let rules: SpamRuleInput[];
  let stores: { namespace: string; config: unknown }[];
  // The rest of the filter configuration the registry holds (SpamTags after the flags' scores).
  let registry: Pick<LoadedRuleSet, 'tags' | 'dnsblServers' | 'httpLookups' | 'fileExtensions'>;
  if (src.db !== undefined) {
    const { loadManagedRuleSet: fromDb } = await import('../jmap/index.js');
    let rest;
    try {
      ({ rules, stores, ...rest } = fromDb(src.db));
    } catch (e) {
      throw new Error(openError('the --db database', src.db, e));
    }
    registry = rest;
  } else {
    if (!src.token) throw new Error('--server needs a token (--token or SPAMRULE_TOKEN)');
    const client = new JmapClient({ server: src.server!, token: src.token });
    rules = (await client.getAll<SpamRuleInput>('SpamRule')) as SpamRuleInput[];
    const list = await client.getAll<{ namespace: string; store: unknown }>('StoreLookup');
    stores = list.map((s) => ({ namespace: s.namespace, config: s.store }));
    // A token without the permissions of the newer types reads them as empty.
    const all = async <T>(type: 'SpamTag' | 'SpamDnsblServer' | 'HttpLookup' | 'SpamFileExtension'): Promise<T[]> =>
      (await client.getAll<T & { id?: string }>(type).catch(() => [])).map(({ id: _id, ...o }) => o as T);
    registry = { tags: await all('SpamTag'), dnsblServers: await all('SpamDnsblServer'), httpLookups: await all('HttpLookup'), fileExtensions: await all('SpamFileExtension') };
  }
  return { ...registry, rules, tags: [...tags, ...registry.tags], lists, stores, isDefault: false };
}
