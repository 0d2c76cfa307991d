/**
 * `spamrule token create|list|revoke --db PATH`: API tokens for the JMAP facade. Only a SHA-256 of
 * each token is stored, so `create` prints the token once and it cannot be shown again.
 */
import { existsSync } from 'node:fs';
import { parseCliArgs } from '../util/index.js';
import { openError, optionError } from './errors.js';

export const USAGE = `usage: spamrule token create --db PATH --permissions a,b,…|all [--name NAME]
       spamrule token list --db PATH [--json]
       spamrule token revoke --db PATH ID|NAME

permissions: sys<Object>{Get,Create,Update,Destroy,Query}, comma-separated, or all; <Object> is one of
  SpamRule, StoreLookup, SpamTag, SpamDnsblServer, HttpLookup, SpamFileExtension, SpamTrainingSample
  (e.g. sysSpamRuleGet,sysSpamRuleQuery for a read-only rules client; "spamrule import" needs Get,
  Query, Create and Update on each object it sends)`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  db: { type: 'string' },
  permissions: { type: 'string' },
  name: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  let parsed;
  try {
    parsed = parseCliArgs({
      args: rest,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (e) {
    process.stderr.write(optionError('token', e));
    return 2;
  }
  const { values, positionals } = parsed;
  if (sub === '--help' || sub === '-h' || values.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (!['create', 'list', 'revoke'].includes(sub ?? '') || values.db === undefined) {
    process.stderr.write(`spamrule token: ${values.db === undefined ? '--db is required' : `unknown subcommand "${sub ?? ''}"`}\n${USAGE}\n`);
    return 2;
  }
  // Listing or revoking in a file that is not there would create an empty registry and say nothing
  // (a typo in --db); only create may start a new one, as serve --db does.
  if (sub !== 'create' && !existsSync(values.db)) {
    process.stderr.write(`spamrule token: the --db database ${values.db} does not exist\n`);
    return 1;
  }
  const { TokenStore, parsePermissions } = await import('../jmap/auth.js');
  let store: InstanceType<typeof TokenStore>;
  try {
    store = new TokenStore(values.db);
  } catch (e) {
    process.stderr.write(`spamrule token: ${openError('the --db database', values.db, e)}\n`);
    return 1;
  }
  try {
    if (sub === 'create') {
      if (values.permissions === undefined) {
        process.stderr.write(`spamrule token: --permissions is required\n${USAGE}\n`);
        return 2;
      }
      let perms;
      try {
        perms = parsePermissions(values.permissions);
      } catch (e) {
        process.stderr.write(`spamrule token: ${(e as Error).message}\n`);
        return 2;
      }
      const { token, info } = store.create(values.name ?? 'token', perms);
      if (values.json) process.stdout.write(JSON.stringify({ token, ...info }) + '\n');
      else {
        process.stdout.write(token + '\n');
        process.stderr.write(`token ${info.id} "${info.name}" created with ${perms.join(',') || 'no permissions'}; it is shown only this once\n`);
      }
      return 0;
    }
    if (sub === 'list') {
      const list = store.list();
      if (values.json) process.stdout.write(JSON.stringify(list) + '\n');
      else for (const t of list) process.stdout.write(`${t.id}\t${t.name}\t${t.created}\t${t.permissions.join(',')}\n`);
      return 0;
    }
    const target = positionals[0];
    if (target === undefined) {
      process.stderr.write(`spamrule token revoke: give a token id or name\n`);
      return 2;
    }
    const n = store.revoke(target);
    if (n === 0) {
      process.stderr.write(`spamrule token: no token "${target}"\n`);
      return 1;
    }
    process.stdout.write(`revoked ${n} token${n === 1 ? '' : 's'}\n`);
    return 0;
  } finally {
    store.close();
  }
}
