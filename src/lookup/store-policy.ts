/**
 * What a lookup store written by a remote manager (a JMAP token holder, docs/jmap.md "Store policy") may
 * reach on the server's own host. A StoreLookup names files and environment variables that the server
 * then reads with its own rights: a `File` or `EnvironmentVariable` secret is read and sent as the
 * password to whatever host the store names, and a `Sqlite` store opens (and creates, with its
 * directories) any file, the registry of tokens itself included. So the operator decides, in the
 * server's own configuration, which of them a managed store may use:
 *
 * - `File` secrets only inside `secretFileDirs`, `EnvironmentVariable` secrets only with a name starting
 *   with one of `secretEnvPrefixes` (none by default: both are refused);
 * - `Sqlite` files only inside `sqliteDir`, and never one of `protectedFiles` (the registry, the model)
 *   or their `-wal`/`-shm`/`-journal` companions;
 * - hosts (PostgreSQL and MySQL `host`s, Redis URLs) only among `allowedHosts` (default any), and never a
 *   link-local or cloud metadata address unless listed (src/lookup/store-hosts.ts). The host is checked as
 *   written, and a host name's addresses when they are known: {@link checkStorePolicy} takes the answers
 *   of a resolution made beforehand, {@link resolveStorePins} resolves when the store starts and gives the
 *   addresses its connections are then pinned to (src/lookup/store-pins.ts), so that the connection goes
 *   to an address that was checked, not to a later DNS answer.
 *
 * Stores the operator writes in local files (serve's `stores`, a library caller's own configuration) are
 * not checked: they are the operator's own. Paths are compared after symbolic links are resolved, as far
 * as they exist.
 */
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { ConfigProblem, LookupStoreConfig } from './config.js';
import { parseIpHost } from '../net/index.js';
import { HostPolicy, hostAddress, storeHosts } from './store-hosts.js';
import type { PinnedHosts } from './store-pins.js';

export interface StorePolicyOptions {
  /** Directories (any depth below them) whose files a `File` secret may name. Default: none. */
  secretFileDirs?: readonly string[];
  /** Prefixes an `EnvironmentVariable` secret's name must start with (`""` allows any). Default: none. */
  secretEnvPrefixes?: readonly string[];
  /** The directory `Sqlite` store files must lie in; relative paths are taken from it. Undefined: no `Sqlite` store. */
  sqliteDir?: string;
  /** Files no `Sqlite` store may open (the registry, the classifier's model), nor their companions. */
  protectedFiles?: readonly string[];
  /**
   * Hosts a store may connect to: `*`, IP addresses and CIDR ranges, host names, `*.example.net`,
   * absolute socket paths (src/lookup/store-hosts.ts). Default `["*"]`: any host but the link-local and
   * cloud metadata addresses, which only an entry inside their range opens.
   */
  allowedHosts?: readonly string[];
}

/** A {@link StorePolicyOptions} with every path absolute, as {@link checkStorePolicy} takes it. */
export interface StorePolicy {
  readonly secretFileDirs: readonly string[];
  readonly secretEnvPrefixes: readonly string[];
  readonly sqliteDir: string | undefined;
  readonly protectedFiles: readonly string[];
  readonly hosts: HostPolicy;
}

/**
 * The policy with its paths made absolute (relative ones are taken from the working directory).
 * @throws TypeError naming an `allowedHosts` entry that is none of the forms it takes.
 */
export function resolveStorePolicy(opts: StorePolicyOptions = {}): StorePolicy {
  return {
    hosts: new HostPolicy(opts.allowedHosts),
    secretFileDirs: (opts.secretFileDirs ?? []).map((d) => resolve(d)),
    secretEnvPrefixes: [...(opts.secretEnvPrefixes ?? [])],
    sqliteDir: opts.sqliteDir === undefined ? undefined : resolve(opts.sqliteDir),
    protectedFiles: (opts.protectedFiles ?? []).filter((f) => f !== ':memory:').map((f) => resolve(f)),
  };
}

/** Where SQLite keeps a database's side files; they hold the same data as the database. */
const COMPANIONS = ['', '-wal', '-shm', '-journal'];

/**
 * The absolute path with symbolic links resolved as far as the path exists: a link inside an allowed
 * directory that points out of it is judged by where it points.
 */
function realish(p: string): string {
  const abs = resolve(p);
  const rest: string[] = [];
  for (let cur = abs; ; cur = dirname(cur)) {
    try {
      return join(realpathSync(cur), ...rest.reverse());
    } catch {
      if (dirname(cur) === cur) return abs;
      rest.push(basename(cur));
    }
  }
}

/** Whether `child` lies strictly below `dir` (both absolute and real). */
function inside(child: string, dir: string): boolean {
  const rel = relative(dir, child);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

function sameFile(a: string, b: string): boolean {
  if (realish(a) === realish(b)) return true;
  try {
    // A hard link has another name but the same inode.
    const x = statSync(a);
    const y = statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

const list = (xs: readonly string[]): string => xs.map((x) => JSON.stringify(x)).join(', ');

function secretProblem(secret: Record<string, unknown>, policy: StorePolicy): string | undefined {
  if (secret['@type'] === 'EnvironmentVariable') {
    const name = String(secret.variableName);
    if (policy.secretEnvPrefixes.length === 0)
      return 'EnvironmentVariable secrets are refused for managed stores: the server allows no variable prefix (its operator sets them: managedStores.secretEnvPrefixes)';
    if (!policy.secretEnvPrefixes.some((p) => name.startsWith(p)))
      return `variable "${name}" does not start with a prefix the server allows (${list(policy.secretEnvPrefixes)})`;
    return undefined;
  }
  const file = String(secret.filePath);
  if (policy.secretFileDirs.length === 0)
    return 'File secrets are refused for managed stores: the server allows no directory for them (its operator sets them: managedStores.secretFileDirs)';
  if (!isAbsolute(file)) return `"${file}" is not an absolute path`;
  const real = realish(file);
  if (!policy.secretFileDirs.some((d) => inside(real, realish(d))))
    return `"${file}" is outside the directories the server allows for File secrets (${list(policy.secretFileDirs)})`;
  return undefined;
}

/** The file a `Sqlite` store at `path` opens: `lookup.sqlite3` inside an existing directory (SqliteStore.file). */
function sqliteFile(path: string): string {
  try {
    if (statSync(path).isDirectory()) return join(path, 'lookup.sqlite3');
  } catch {
    /* not there yet: a file path */
  }
  return path;
}

function sqlitePath(path: string, policy: StorePolicy): { path: string } | { problem: string } {
  if (path === ':memory:') return { path };
  if (policy.sqliteDir === undefined)
    return { problem: 'Sqlite stores are refused for managed stores: the server has no directory for them (its operator sets one: managedStores.sqliteDir)' };
  const abs = resolve(policy.sqliteDir, path);
  const file = sqliteFile(abs);
  if (!inside(realish(file), realish(policy.sqliteDir))) return { problem: `"${abs}" is outside the directory for Sqlite stores ("${policy.sqliteDir}")` };
  for (const p of policy.protectedFiles)
    for (const c of COMPANIONS)
      if (sameFile(file, p + c)) return { problem: `"${abs}" is the server's own registry or model file: a lookup store may not open it` };
  return { path: abs };
}

/**
 * Checks a validated store configuration against the policy (see the module docs). Never throws.
 * `resolved`: the addresses (text) of host names, as a resolution made beforehand found them; a name
 * found there is refused when one of them is a link-local or metadata address the policy does not open.
 * @returns the configuration to use, with a `Sqlite` `path` made absolute (taken from `sqliteDir` when
 *   relative), or the problems with JSON-pointer paths relative to the store (`authSecret`,
 *   `readReplicas/0/authSecret`, `stores/1/sentinelSecret`, `path`, `host`, `urls/0`) and a message that
 *   says why.
 */
export function checkStorePolicy(
  config: LookupStoreConfig,
  policy: StorePolicy,
  resolved?: ReadonlyMap<string, readonly string[]>,
): { ok: true; config: LookupStoreConfig } | { ok: false; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  for (const { path, host } of storeHosts(config)) {
    if (host === undefined) {
      problems.push({ path, message: 'the host of this URL cannot be read (redis://host:port, rediss:// for TLS)' });
      continue;
    }
    const known = resolved?.get(host.trim().toLowerCase());
    const problem = policy.hosts.hostProblem(host) ?? (known !== undefined ? policy.hosts.addressProblem(host.trim(), known) : undefined);
    if (problem !== undefined) problems.push({ path, message: problem });
  }
  const walk = (v: unknown, path: string[]): void => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...path, String(i)]));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return;
    const o = v as Record<string, unknown>;
    // Only secrets have these two variants (x:SecretKeyOptional).
    if (o['@type'] === 'File' || o['@type'] === 'EnvironmentVariable') {
      const problem = secretProblem(o, policy);
      if (problem !== undefined) problems.push({ path: path.join('/'), message: problem });
      return;
    }
    for (const [k, x] of Object.entries(o)) walk(x, [...path, k]);
  };
  walk(config, []);
  let out = config;
  if (config['@type'] === 'Sqlite') {
    const r = sqlitePath(config.path, policy);
    if ('problem' in r) problems.push({ path: 'path', message: r.problem });
    else out = { ...config, path: r.path };
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, config: out };
}

/** Resolves a host name to its addresses (text), as the system's resolver does for a connection. */
export type StoreHostResolver = (host: string) => Promise<readonly string[]>;

/** The host names (lowercased, not IP literals or socket paths) a store configuration connects to. */
export function storeHostNames(config: LookupStoreConfig): string[] {
  const names = storeHosts(config)
    .map((h) => h.host?.trim())
    .filter((h): h is string => h !== undefined && h !== '' && !h.startsWith('/') && hostAddress(h) === undefined);
  return [...new Set(names.map((h) => h.toLowerCase()))];
}

/** How long a store-policy check waits for the resolver, per name, in ms (getaddrinfo has no timeout of its own). */
export const STORE_RESOLVE_TIMEOUT_MS = 3_000;

/**
 * The addresses of each of `names`, resolved at once, each within `timeoutMs`; a name that fails or takes
 * longer is left out. Never rejects.
 */
export async function resolveHostNames(names: readonly string[], resolve: StoreHostResolver, timeoutMs = STORE_RESOLVE_TIMEOUT_MS): Promise<Map<string, readonly string[]>> {
  const out = new Map<string, readonly string[]>();
  await Promise.all(
    names.map(async (name) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs)));
      const addresses = await Promise.race([resolve(name).catch(() => undefined), late]);
      clearTimeout(timer);
      if (addresses !== undefined) out.set(name, addresses);
    }),
  );
  return out;
}

/**
 * What {@link resolveStorePins} found: the addresses to pin the store's connections to, or why the store may
 * not start (`problems` as {@link checkStorePolicy} gives them), or the names that gave no address in time
 * (`unresolved`, lowercased), which the store cannot connect to until they are resolved again.
 */
export type StorePinning = { ok: true; pinned: PinnedHosts } | { ok: false; problems: ConfigProblem[]; unresolved: string[] };

/**
 * Resolves the host names of a store (one that passed {@link checkStorePolicy}), each within
 * {@link STORE_RESOLVE_TIMEOUT_MS}, checks their addresses, and pins each name to the first of its addresses
 * (the resolver's order, as the system resolver would give it to the driver). Every address of a name is
 * checked, so any of them could be taken. Never throws.
 */
export async function resolveStorePins(config: LookupStoreConfig, policy: StorePolicy, resolve: StoreHostResolver): Promise<StorePinning> {
  const names = storeHostNames(config);
  const resolved = await resolveHostNames(names, resolve);
  const checked = checkStorePolicy(config, policy, resolved);
  if (!checked.ok) return { ok: false, problems: checked.problems, unresolved: [] };
  const addresses: Record<string, string> = {};
  const unresolved: string[] = [];
  for (const name of names) {
    const first = resolved.get(name)?.map((a) => parseIpHost(a)).find((a) => a !== undefined);
    if (first === undefined) unresolved.push(name);
    else addresses[name.replace(/\.$/, '')] = first.toString(); // the key HostPins looks names up by
  }
  if (unresolved.length > 0) return { ok: false, problems: [], unresolved };
  return { ok: true, pinned: { addresses, allowedHosts: [...policy.hosts.entries] } };
}
