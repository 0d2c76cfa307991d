/**
 * `spamrule stores list|get|create|update|delete`: manages x:StoreLookup objects (lookup stores the
 * rules reach through `key_exists`/`key_get`/`sql_query`) on a running JMAP server (docs/jmap.md).
 * Stores are addressed by `namespace` or by id.
 */
import { parseArgs } from 'node:util';
import { JmapSetError, type JmapClient, type StoreLookup } from '../client/index.js';
import { unescapePointerSegment } from '../util/index.js';
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

const STORE_TYPES = ['PostgreSql', 'MySql', 'Sqlite', 'Sharded', 'Redis', 'RedisCluster', 'RedisSentinel'];

const HELP = `usage: spamrule stores <command> [options]

Commands:
  list [--filter TEXT] [--type TYPE]   table of stores (id, namespace, type, target)
  get ID|NAMESPACE                      one store (secrets are never returned)
  create --file FILE                    create the StoreLookup(s) in FILE (object or array; "-" = stdin), or:
  create --namespace NS --type TYPE [--set PROP=VALUE]...
                                        TYPE: ${STORE_TYPES.join(', ')}; PROP is a property of
                                        the store, e.g. --set path=/var/lib/lists.db --set port=5432
  update ID|NAMESPACE --set PROP=VALUE...   patch (JSON pointers: store/host, store/port); PROP:=JSON
                                        for a JSON value, e.g. --set 'store/authSecret:={"@type":"Value","secret":"s"}';
                                        or --file PATCH.json
  delete ID|NAMESPACE...                destroy stores

Values of --set are JSON when they parse (5432, true, null), text otherwise; host, path, database,
url and the other text properties always stay text. Durations are milliseconds.

Options:
  --json                                print JSON instead of text
  -h, --help                            this help
${CONNECTION_HELP}
Exit status: 0 success, 1 the server refused or could not be reached, 2 bad usage.
`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  ...CONNECTION_OPTIONS,
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  filter: { type: 'string' },
  type: { type: 'string' },
  file: { type: 'string' },
  namespace: { type: 'string' },
  set: { type: 'string', multiple: true },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];


/** Text properties of the x:LookupStore variants (registry-subset.json) that must not become numbers. */
const TEXT_PROPS = new Set(['namespace', '@type', 'host', 'database', 'path', 'url', 'serviceName', 'authUsername', 'sentinelUsername', 'options', 'secret', 'variableName', 'filePath']);

function storeKind(prop: string): ValueKind {
  const last = prop.split('/').pop()!;
  return TEXT_PROPS.has(last) ? 'string' : 'auto';
}

/** Sets a value at a `/`-separated path inside `obj`, creating objects on the way. */
function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('/').map(unescapePointerSegment);
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    const next = cur[p];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[p] = {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/** Where a store points, for the table: host:port/database, path, or URL(s). */
export function storeTarget(store: StoreLookup['store']): string {
  const s = store as Record<string, unknown>;
  if (typeof s.path === 'string') return s.path;
  if (typeof s.host === 'string') return `${s.host}${s.port !== undefined ? `:${s.port}` : ''}${typeof s.database === 'string' ? `/${s.database}` : ''}`;
  if (typeof s.url === 'string') return s.url;
  if (s.urls !== null && typeof s.urls === 'object') return Object.keys(s.urls).join(',');
  if (s.stores !== null && typeof s.stores === 'object') return `${Object.keys(s.stores).length} shards`;
  return '';
}

async function requireStore(client: JmapClient, key: string): Promise<StoreLookup> {
  const s = await client.findStore(key);
  if (s === undefined) throw new Error(`no store with namespace or id "${key}"`);
  return s;
}

function out(text: string): void {
  process.stdout.write(text);
}

async function creations(v: Values): Promise<Record<string, unknown>[]> {
  if (v.file !== undefined) {
    if (v.namespace !== undefined || v.type !== undefined || v.set !== undefined) throw new UsageError('give either --file or --namespace/--type/--set, not both');
    const json = await readJsonFile(v.file);
    const items = Array.isArray(json) ? json : [json];
    if (items.length === 0 || items.some((x) => x === null || typeof x !== 'object' || Array.isArray(x)))
      throw new Error(`${v.file}: expected a StoreLookup object or a non-empty array of them`);
    return items as Record<string, unknown>[];
  }
  if (v.namespace === undefined || v.type === undefined) throw new UsageError('create needs --file FILE, or --namespace NS and --type TYPE');
  if (!STORE_TYPES.includes(v.type)) throw new UsageError(`--type must be one of ${STORE_TYPES.join(', ')}`);
  const store: Record<string, unknown> = { '@type': v.type };
  for (const [k, val] of Object.entries(parseAssignments(v.set ?? [], storeKind))) setPath(store, k, val);
  return [{ namespace: v.namespace, store }];
}

async function dispatch(sub: string, positionals: string[], v: Values): Promise<number> {
  const one = (): string => {
    if (positionals.length !== 1) throw new UsageError(`${sub} takes exactly one ID or NAMESPACE`);
    return positionals[0]!;
  };
  if ((sub === 'list' || sub === 'create') && positionals.length > 0) throw new UsageError(`${sub} takes no ID or NAMESPACE`);
  if ((sub === 'get' || sub === 'update') && positionals.length !== 1) one();
  if (sub === 'delete' && positionals.length === 0) throw new UsageError('delete needs at least one ID or NAMESPACE');
  if (sub === 'update' && v.file === undefined && v.set === undefined) throw new UsageError('update needs --set PROP=VALUE or --file PATCH.json');
  if (!['list', 'get', 'create', 'update', 'delete'].includes(sub)) throw new UsageError(`unknown command "${sub}"`);
  const items = sub === 'create' ? await creations(v) : [];
  const client = connectionFrom(v);
  switch (sub) {
    case 'list': {
      const conds: Record<string, unknown>[] = [];
      if (v.filter !== undefined) conds.push({ namespace: v.filter });
      if (v.type !== undefined) conds.push({ type: v.type });
      const filter = conds.length === 0 ? undefined : conds.length === 1 ? conds[0] : { operator: 'AND' as const, conditions: conds };
      const stores = await client.getAll<StoreLookup>('StoreLookup', { ...(filter ? { filter } : {}), sort: [{ property: 'namespace' }] });
      if (v.json) out(JSON.stringify(stores, null, 2) + '\n');
      else out(formatTable(['ID', 'NAMESPACE', 'TYPE', 'TARGET'], stores.map((s) => [s.id, s.namespace, s.store['@type'], storeTarget(s.store)])));
      return 0;
    }
    case 'get': {
      const s = await requireStore(client, positionals[0]!);
      out(v.json ? JSON.stringify(s, null, 2) + '\n' : `id:         ${s.id}\nnamespace:  ${s.namespace}\ntype:       ${s.store['@type']}\nstore:      ${JSON.stringify(s.store, null, 2).split('\n').join('\n            ')}\n`);
      return 0;
    }
    case 'create': {
      const create = Object.fromEntries(items.map((s, i) => [`s${i}`, s]));
      const res = await client.setStores({ create });
      // A created store's namespace defaults to its id, which the server returns in `created`.
      const nameOf = (k: string) => (typeof create[k]?.namespace === 'string' ? (create[k]!.namespace as string) : (res.created?.[k]?.namespace ?? k));
      const created = Object.entries(res.created ?? {});
      if (v.json) out(JSON.stringify(Object.fromEntries(created.map(([k, c]) => [nameOf(k), c])), null, 2) + '\n');
      else for (const [k, c] of created) out(`created ${nameOf(k)} (id ${c.id})\n`);
      if (res.notCreated && Object.keys(res.notCreated).length > 0) throw new JmapSetError('x:StoreLookup/set', res.notCreated, (k) => `store ${nameOf(k)}`);
      return 0;
    }
    case 'update': {
      let patch: Record<string, unknown>;
      if (v.file !== undefined) {
        if (v.set !== undefined) throw new UsageError('give either --file or --set, not both');
        const json = await readJsonFile(v.file);
        if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error(`${v.file}: expected a PatchObject (a JSON object)`);
        patch = json as Record<string, unknown>;
      } else patch = parseAssignments(v.set!, storeKind);
      const s = await requireStore(client, positionals[0]!);
      const res = await client.setStores({ update: { [s.id]: patch } });
      const err = res.notUpdated?.[s.id];
      if (err) throw new JmapSetError('x:StoreLookup/set', { [s.id]: err }, () => `store ${s.namespace}`);
      if (v.json) out(JSON.stringify((await client.getStores([s.id])).list[0], null, 2) + '\n');
      else out(`updated ${s.namespace}\n`);
      return 0;
    }
    default: {
      // delete: resolve all first so a typo changes nothing.
      const stores: StoreLookup[] = [];
      for (const k of positionals) stores.push(await requireStore(client, k));
      for (const s of stores) {
        const res = await client.setStores({ destroy: [s.id] });
        const err = res.notDestroyed?.[s.id];
        if (err) throw new JmapSetError('x:StoreLookup/set', { [s.id]: err }, () => `store ${s.namespace}`);
        out(`deleted ${s.namespace}\n`);
      }
      return 0;
    }
  }
}

/** Entry point: returns the exit status (0 ok, 1 server/file error, 2 usage). */
export function run(argv: string[]): Promise<number> {
  return runSubcommands<Values>('stores', argv, OPTIONS, HELP, dispatch);
}
