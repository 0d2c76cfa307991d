/**
 * `spamrule serve`: the JMAP management API (src/jmap, `--db`/`--pg`) and the mail-path listeners
 * (src/server: `--rspamd`, `--milter`, `--spamd`), each optional, until SIGINT/SIGTERM. Rules come
 * from the managed registry (`--db`, live: a JMAP change reaches every worker before the next
 * message) or, as for `classify`, from files (`--rules`, `--scores`, `--list`; default: the
 * built-in rule set). `--config FILE` holds the same settings; flags override it. SIGHUP reads the
 * rule files and the config file again and hands the new rule set to the workers, as rspamd and
 * spamd do; the listeners stay up.
 */
import { numberArg, parseCliArgs } from '../util/index.js';
import { availableParallelism } from 'node:os';
import type { JmapServer } from '../jmap/index.js';
import type { RuleSetSpec } from '../server/ruleset.js';
import type { AnalysisConfig } from '../analysis/types.js';
import type { ServeConfig } from '../server/config.js';
import type { ServerLimits } from '../server/limits.js';
import { openError, optionError } from './errors.js';
import { readLists, readRuleSet, readScoresFile, thresholdsFrom, type LoadedRuleSet } from './ruleset.js';
import { canVerify, pyzorDigestFlag, pyzorServerFlag, pyzorTimeoutFlag, regexFlag } from './session-flags.js';
import { LLM_OPTIONS, llmFlags, llmKeyProblem } from './llm-flags.js';
import { readServeConfig } from '../server/config.js';
import { modelStoreConfig } from '../classifier/location.js';
import { allowedHostProblem } from '../lookup/store-hosts.js';
import { jmapServerOptions, modelLearner, startManaged } from './serve-managed.js';
import { parseRegexCacheBytes, parseRegexWorkLimit, resolveLimits } from '../server/limits.js';
import { ruleSetSpecFromBundle } from '../server/ruleset.js';
import { SERVE_USAGE as USAGE } from './serve-usage.js';

/** Parses `host:port`, `[v6]:port` or a bare port. Throws `Error` for anything else. */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(s) ?? (/^(\d+)$/.test(s) ? [s, undefined, '127.0.0.1', s] : null);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--listen: expected HOST:PORT, got "${s}"`);
  return { host: m[1] ?? m[2]!, port };
}

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  config: { type: 'string' },
  db: { type: 'string' },
  listen: { type: 'string' },
  pg: { type: 'string' },
  capability: { type: 'string' },
  'secret-file-dir': { type: 'string', multiple: true },
  'secret-env-prefix': { type: 'string', multiple: true },
  'sqlite-store-dir': { type: 'string' },
  'store-allow-host': { type: 'string', multiple: true },
  rspamd: { type: 'string' },
  milter: { type: 'string' },
  spamd: { type: 'string' },
  metrics: { type: 'string' },
  rules: { type: 'string', multiple: true },
  scores: { type: 'string', multiple: true },
  list: { type: 'string', multiple: true },
  'score-spam': { type: 'string' },
  'score-reject': { type: 'string' },
  'score-discard': { type: 'string' },
  dns: { type: 'string' },
  'time-budget': { type: 'string' },
  'rule-wait': { type: 'string' },
  'regex-work-limit': { type: 'string' },
  'regex-cache': { type: 'string' },
  'no-module': { type: 'string', multiple: true },
  'no-analysis': { type: 'boolean' },
  'trust-authserv': { type: 'string', multiple: true },
  'follow-redirects': { type: 'boolean' },
  pyzor: { type: 'string' },
  'pyzor-timeout': { type: 'string' },
  'pyzor-digest': { type: 'string' },
  ...LLM_OPTIONS,
  'cache-dir': { type: 'string' },
  'no-refresh-lists': { type: 'boolean' },
  'list-allow-network': { type: 'string', multiple: true },
  model: { type: 'string' },
  'allow-tell': { type: 'boolean' },
  'allow-learn': { type: 'boolean' },
  workers: { type: 'string' },
  'max-size': { type: 'string' },
  'max-buffered': { type: 'string' },
  'scan-timeout': { type: 'string' },
  'max-scans': { type: 'string' },
  'idle-timeout': { type: 'string' },
  'milter-idle-timeout': { type: 'string' },
  'head-timeout': { type: 'string' },
  'request-timeout': { type: 'string' },
  'milter-message-timeout': { type: 'string' },
  'milter-busy-action': { type: 'string' },
  'milter-error-action': { type: 'string' },
  'shutdown-grace': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseCliArgs<{ options: typeof OPTIONS }>>['values'];

class UsageError extends Error {}

function int(flag: string, v: string | undefined, min = 0): number | undefined {
  if (v === undefined) return undefined;
  const n = numberArg(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${flag} expects an integer ≥ ${min}, got "${v}"`);
  return n;
}

/** Flags over the config file: the effective settings. */
function merge(v: Values, c: ServeConfig): ServeConfig {
  const out: ServeConfig = { ...c };
  for (const k of ['listen', 'rspamd', 'milter', 'spamd', 'metrics', 'db', 'pg', 'capability'] as const) if (v[k] !== undefined) out[k] = v[k];
  if (v.rules !== undefined) out.rules = v.rules;
  // Each flag replaces its setting of the file (flags override the file, as everywhere).
  const managed = { ...c.managedStores };
  if (v['secret-file-dir'] !== undefined) managed.secretFileDirs = v['secret-file-dir'];
  if (v['secret-env-prefix'] !== undefined) managed.secretEnvPrefixes = v['secret-env-prefix'];
  if (v['sqlite-store-dir'] !== undefined) managed.sqliteDir = v['sqlite-store-dir'];
  if (v['store-allow-host'] !== undefined) {
    for (const h of v['store-allow-host']) {
      const problem = allowedHostProblem(h);
      if (problem !== undefined) throw new UsageError(`--store-allow-host: ${problem}`);
    }
    managed.allowedHosts = v['store-allow-host'];
  }
  if (Object.keys(managed).length > 0) out.managedStores = managed;
  if (v['cache-dir'] !== undefined) out.listCacheDir = v['cache-dir'];
  if (v['no-refresh-lists']) out.refreshLists = false;
  if (v['list-allow-network'] !== undefined) out.listAllowedNetworks = [...(c.listAllowedNetworks ?? []), ...v['list-allow-network']];
  if (v.model !== undefined) out.model = v.model;
  if (v['allow-tell']) out.allowTell = true;
  if (v['allow-learn']) out.allowLearn = true;
  const busy = v['milter-busy-action'];
  if (busy !== undefined) {
    if (busy !== 'tempfail' && busy !== 'accept') throw new UsageError(`--milter-busy-action expects tempfail or accept, got "${busy}"`);
    out.milterBusyAction = busy;
  }
  const failed = v['milter-error-action'];
  if (failed !== undefined) {
    if (failed !== 'accept' && failed !== 'tempfail') throw new UsageError(`--milter-error-action expects accept or tempfail, got "${failed}"`);
    out.milterErrorAction = failed;
  }
  if (v.scores !== undefined) out.scores = v.scores;
  if (v.list !== undefined) out.lists = [...((c.lists as string[] | undefined) ?? []), ...v.list];
  const w = int('workers', v.workers, 1);
  if (w !== undefined) out.workers = w;
  out.thresholds = { ...c.thresholds, ...thresholdsFrom(v) };
  const a = { ...c.analysis };
  if (v.dns !== undefined) a.dns = v.dns;
  const tb = int('time-budget', v['time-budget']);
  if (tb !== undefined) a.timeBudgetMs = tb;
  const rw = int('rule-wait', v['rule-wait']);
  if (rw !== undefined) a.ruleWaitMs = rw;
  const rl = regexFlag('regex-work-limit', v['regex-work-limit'], parseRegexWorkLimit);
  if (rl !== undefined) a.regexWorkLimit = rl;
  const rc = regexFlag('regex-cache', v['regex-cache'], parseRegexCacheBytes);
  if (rc !== undefined) a.regexCacheBytes = rc;
  if (v['no-module'] !== undefined) a.disabledModules = [...(a.disabledModules ?? []), ...v['no-module']];
  if (v['no-analysis']) a.enabled = false;
  if (v['trust-authserv'] !== undefined) a.trustedAuthservIds = v['trust-authserv'];
  // The flag switches redirects on; the config file's settings for them (allowed networks, ports) stay.
  if (v['follow-redirects'] && (a.followRedirects === undefined || a.followRedirects === false)) a.followRedirects = true;
  if (v.pyzor !== undefined || v['pyzor-timeout'] !== undefined || v['pyzor-digest'] !== undefined) {
    // The flags name the server, the timeout and the digest; what else the config file's analysis.pyzor sets is kept.
    const base = typeof a.pyzor === 'object' ? a.pyzor : a.pyzor === true ? {} : undefined;
    if (v.pyzor === undefined && base === undefined) {
      throw new Error(`--${v['pyzor-timeout'] !== undefined ? 'pyzor-timeout' : 'pyzor-digest'} needs --pyzor HOST[:PORT] or analysis.pyzor in the config file`);
    }
    a.pyzor = {
      ...base,
      ...(v.pyzor !== undefined ? pyzorServerFlag(v.pyzor) : {}),
      ...(v['pyzor-timeout'] !== undefined ? { timeoutMs: pyzorTimeoutFlag(v['pyzor-timeout']) } : {}),
      ...(v['pyzor-digest'] !== undefined ? { digest: pyzorDigestFlag(v['pyzor-digest']) } : {}),
    };
  }
  // The flags set the endpoint, model, timeout, prompt file and key; the config file's analysis.llm the rest.
  const llm = llmFlags(v, a.llm);
  if (llm !== undefined) a.llm = llm;
  out.analysis = a;
  const l = { ...c.limits };
  if (v['max-size'] !== undefined) l.maxSize = v['max-size'];
  if (v['max-buffered'] !== undefined) l.maxBufferedBytes = v['max-buffered'];
  const st = int('scan-timeout', v['scan-timeout']);
  if (st !== undefined) l.scanTimeoutMs = st;
  const ms = int('max-scans', v['max-scans'], 1);
  if (ms !== undefined) l.maxConcurrentScans = ms;
  const it = int('idle-timeout', v['idle-timeout'], 1);
  if (it !== undefined) l.idleTimeoutMs = it;
  const mit = int('milter-idle-timeout', v['milter-idle-timeout'], 1);
  if (mit !== undefined) l.milterIdleTimeoutMs = mit;
  const ht = int('head-timeout', v['head-timeout']);
  if (ht !== undefined) l.headTimeoutMs = ht;
  const rt = int('request-timeout', v['request-timeout']);
  if (rt !== undefined) l.requestTimeoutMs = rt;
  const mmt = int('milter-message-timeout', v['milter-message-timeout']);
  if (mmt !== undefined) l.milterMessageTimeoutMs = mmt;
  const sg = int('shutdown-grace', v['shutdown-grace']);
  if (sg !== undefined) l.shutdownGraceMs = sg;
  out.limits = l;
  if (v['log-level'] !== undefined) out.log = { level: v['log-level'] };
  return out;
}

/** The rule material of file mode (or the `--scores`/`--list` additions of managed mode) as a pool spec. */
function specFrom(c: ServeConfig, managed: boolean): RuleSetSpec {
  const lists = c.lists as string[] | undefined;
  // Managed rule sets bring no scores or lists of their own: only --scores/--list (as `classify --db`).
  const set: LoadedRuleSet = managed
    ? { rules: [], tags: (c.scores ?? []).flatMap((f) => readScoresFile(f)), lists: readLists(lists), dnsblServers: [], isDefault: false }
    : readRuleSet({ rules: c.rules, scores: c.scores, list: lists });
  const a = c.analysis ?? {};
  const modules: Record<string, boolean> = {};
  for (const m of a.disabledModules ?? []) modules[m] = false;
  const extra: AnalysisConfig = { modules };
  if (a.followRedirects !== undefined) extra.followRedirects = a.followRedirects;
  if (a.pyzor !== undefined) extra.pyzor = a.pyzor;
  if (a.llm !== undefined) extra.llm = a.llm;
  if (a.dnsblLimits !== undefined) extra.dnsblLimits = a.dnsblLimits;
  if (a.allowedIps !== undefined) extra.allowedIps = a.allowedIps;
  if (a.blockedIps !== undefined) extra.blockedIps = a.blockedIps;
  // The rule file's material as a library user's pool gets it, plus what only the server configures.
  const base = ruleSetSpecFromBundle(set, a.enabled === false ? false : extra);
  const spec: RuleSetSpec = {
    ...base,
    thresholds: c.thresholds,
    stores: Object.entries(c.stores ?? {}).map(([namespace, config]) => ({ namespace, config })),
    httpLookups: set.httpLookups ?? [],
    ...(c.listCacheDir !== undefined ? { listCacheDir: c.listCacheDir } : {}),
    ...(c.refreshLists !== undefined ? { refreshLists: c.refreshLists } : {}),
    ...(c.listAllowedNetworks !== undefined ? { listAllowedNetworks: c.listAllowedNetworks } : {}),
    ...(c.model !== undefined ? { classifier: modelStoreConfig({ model: c.model }) } : {}),
    engine: {
      ...base.engine,
      authResults: { trustedAuthservIds: a.trustedAuthservIds ?? [], verify: a.verify ?? false },
      ...(a.timeBudgetMs !== undefined ? { timeBudgetMs: a.timeBudgetMs } : {}),
      ...(a.ruleWaitMs !== undefined ? { ruleWaitMs: a.ruleWaitMs } : {}),
      ...(a.regexWorkLimit !== undefined ? { regexWorkLimit: a.regexWorkLimit } : {}),
      ...(a.regexCacheBytes !== undefined ? { regexCacheBytes: a.regexCacheBytes } : {}),
    },
  };
  // A spec no resolver can be built from is refused by the pool, in this thread (SpamEnginePool checkSpec).
  if (a.dns !== undefined) spec.dns = a.dns;
  return spec;
}

export async function run(argv: string[]): Promise<number> {
  let v: Values;
  try {
    ({ values: v } = parseCliArgs({ args: argv, options: OPTIONS }));
  } catch (e) {
    process.stderr.write(optionError('serve', e));
    return 2;
  }
  if (v.help) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const say = (line: string): void => void process.stdout.write(`spamrule serve: ${line}\n`);
  const fail = (msg: string, code = 2): number => {
    process.stderr.write(`spamrule serve: ${msg}\n`);
    return code;
  };

  let c: ServeConfig;
  try {
    let fileConfig: ServeConfig = {};
    if (v.config !== undefined) {
      fileConfig = readServeConfig(v.config);
    }
    c = merge(v, fileConfig);
  } catch (e) {
    return fail((e as Error).message);
  }
  const scanning = c.rspamd !== undefined || c.milter !== undefined || c.spamd !== undefined;
  if (!scanning && c.db === undefined) return fail(`give --db (JMAP management) or a listener (--rspamd, --milter, --spamd)\n${USAGE}`);
  if (c.db !== undefined && c.rules !== undefined && c.rules.length > 0) return fail('--rules and --db are two rule sources: give one');
  if (c.allowTell === true && (c.model === undefined || c.spamd === undefined)) return fail('--allow-tell needs --model (the model TELL trains) and --spamd (where spamc sends it)');
  if (c.allowLearn === true && (c.model === undefined || c.rspamd === undefined)) return fail('--allow-learn needs --model (the model learnspam/learnham train) and --rspamd (where rspamc sends them)');
  if (c.model !== undefined) {
    const problem = (await import('../classifier/cli.js')).modelFileProblem(c.model);
    if (problem !== undefined) return fail(problem);
  }
  const keyProblem = llmKeyProblem(c.analysis?.llm);
  if (keyProblem !== undefined) return fail(keyProblem);
  if (c.analysis?.verify === true && !canVerify(c.analysis.dns)) return fail('analysis.verify needs --dns system (or analysis.dns "system" or "static:FILE"): without DNS nothing can be verified');
  const follow = c.analysis?.followRedirects;
  if (follow !== undefined && follow !== false && !canVerify(c.analysis?.dns)) {
    return fail('analysis.followRedirects needs --dns system (or analysis.dns "system" or "static:FILE"): redirector hosts are resolved through it');
  }
  const level = c.log?.level ?? 'info';
  // Named as the operator wrote it: the flag, or the config file's key.
  if (!LOG_LEVELS.includes(level)) return fail(`${v['log-level'] !== undefined ? '--log-level' : 'log.level'} expects ${LOG_LEVELS.join('|')}, got "${level}"`);
  let jmapListen;
  try {
    jmapListen = parseListen(c.listen ?? '127.0.0.1:8080');
  } catch (e) {
    return fail((e as Error).message);
  }

  // JMAP only: the management API, as before there were mail-path listeners.
  if (!scanning) {
    const { createJmapServer } = await import('../jmap/index.js');
    // x:SpamTrainingSample creates store samples and train 10 s after the last one.
    const learner = c.model === undefined ? undefined : await modelLearner(c.model, (m) => process.stderr.write(`spamrule serve: ${m}\n`));
    let server: JmapServer;
    try {
      server = await createJmapServer(jmapServerOptions(c, jmapListen, learner));
    } catch (e) {
      return fail(startError(e, c, { jmap: jmapListen }), 1);
    }
    // Tests and scripts read this line to learn the (possibly random) port. JMAP alone has no
    // JSON log, so this plain line is all serve prints here.
    say(`listening on ${server.url}`);
    return untilSignal(() => server.close());
  }

  const server = await import('../server/index.js');
  let spec: RuleSetSpec;
  let limits: Partial<ServerLimits>;
  let addrs: Record<'rspamd' | 'milter' | 'spamd' | 'metrics', ReturnType<typeof server.parseListenAddress> | undefined>;
  try {
    spec = specFrom(c, c.db !== undefined);
    const { maxSize, maxBufferedBytes, maxLearnSize, ...rest } = c.limits ?? {};
    const bytes = (v: string | number | undefined, flag: string | undefined, key: string): number | undefined => {
      try {
        return v === undefined ? undefined : server.parseSize(v);
      } catch (e) {
        throw new UsageError(`${flag === undefined ? '' : `--${flag} `}(limits.${key}): ${(e as Error).message}`.replace(/^\((limits\.\w+)\)/, '$1'));
      }
    };
    const size = bytes(maxSize, 'max-size', 'maxSize');
    const buffered = bytes(maxBufferedBytes, 'max-buffered', 'maxBufferedBytes');
    const learnSize = bytes(maxLearnSize, undefined, 'maxLearnSize');
    limits = {
      ...rest,
      ...(size !== undefined ? { maxSize: size } : {}),
      ...(buffered !== undefined ? { maxBufferedBytes: buffered } : {}),
      ...(learnSize !== undefined ? { maxLearnSize: learnSize } : {}),
    };
    // Limits that cannot work together (a budget below maxSize) are a usage error, before any thread starts.
    resolveLimits(1, limits);
    const addr = (k: 'rspamd' | 'milter' | 'spamd' | 'metrics'): ReturnType<typeof server.parseListenAddress> | undefined => {
      const s = c[k];
      if (s === undefined) return undefined;
      try {
        return server.parseListenAddress(s);
      } catch (e) {
        throw new UsageError(`--${k}: ${(e as Error).message}`);
      }
    };
    addrs = { rspamd: addr('rspamd'), milter: addr('milter'), spamd: addr('spamd'), metrics: addr('metrics') };
  } catch (e) {
    return fail((e as Error).message);
  }

  const logger = server.createLogger({ level });
  // The worker threads log their warnings (a list download that failed) as JSON lines at this level too.
  let pool: import('../server/pool.js').SpamEnginePool;
  try {
    pool = new server.SpamEnginePool({ ...spec, workers: c.workers ?? availableParallelism(), timeoutMs: limits.scanTimeoutMs ?? 30_000, logLevel: level });
  } catch (e) {
    // A `dns` spec no resolver can be built from, or a store configuration (the config file's `stores`)
    // the workers could not open.
    return fail((e as Error).message);
  }
  // A rule that does not compile is left out, as Stalwart skips it; say which (classify and lint do too).
  const logRefused = (report: import('../engine/types.js').RuleLoadReport): void => {
    for (const e of report.errors) logger.warn({ rule: e.rule, path: e.path }, `rule ${e.rule} refused: ${e.path}: ${e.message}`);
  };
  logRefused(pool.loadReport);
  let jmap: JmapServer | undefined;
  let scan: Awaited<ReturnType<typeof server.startScanServer>>;
  let scanMetrics: import('../server/metrics.js').ServerMetrics | undefined;
  try {
    // With a model, rspamd's learnspam/learnham (--allow-learn), spamd's TELL (--allow-tell) and JMAP
    // x:SpamTrainingSample creates store samples and train (in a worker) 10 s after the last one.
    const learner =
      c.model !== undefined && (c.allowLearn === true || c.db !== undefined || c.allowTell === true) ? await modelLearner(c.model, (m) => logger.warn(m)) : undefined;
    if (c.db !== undefined) {
      // Refusals count with the listeners' (spamrule_connections_refused_total{protocol="jmap"}) once their metrics exist.
      jmap = await startManaged(c, jmapListen, pool, (m) => logger.warn(m), learner, (reason) => scanMetrics?.connectionsRefused.inc({ protocol: 'jmap', reason }));
      // The scan listeners announce themselves the same way (startScanServer).
      logger.info({ listener: 'jmap', address: jmap.url }, 'listening');
    }
    scan = await server.startScanServer({ pool, ...addrs, limits, logger, learner, allowTell: c.allowTell === true, allowLearn: c.allowLearn === true, milterBusyAction: c.milterBusyAction, milterErrorAction: c.milterErrorAction });
    scanMetrics = scan.metrics;
  } catch (e) {
    await jmap?.close();
    await pool.close();
    return fail(startError(e, c, { ...(c.db !== undefined ? { jmap: jmapListen } : {}), ...addrs }), 1);
  }
  // One line per listener came before; this one says all of them are up.
  logger.info({ workers: pool.workers }, 'ready');
  const onHup = (): void => {
    try {
      const next = reloadSpec(v, c.db !== undefined);
      logRefused(pool.update(next));
      logger.info({ rules: next.rules?.length }, 'reloaded: the workers take the new rule set before their next message');
    } catch (e) {
      logger.error({ err: (e as Error).message }, 'reload failed: the rule set in use is kept');
    }
  };
  process.on('SIGHUP', onHup);
  return untilSignal(async () => {
    process.off('SIGHUP', onHup);
    logger.info('shutting down: finishing scans in flight');
    await scan.close();
    await jmap?.close();
    await pool.close();
  });
}

/**
 * The rule set as the files now say (SIGHUP): the config file and the rule, score and list files read
 * again, flags over them as at start. Listeners, limits, workers and the log level are not changed
 * (a restart does that). With the managed registry, its rules and stores stay the registry's: only
 * what the files give (scores, lists, thresholds, analysis, DNS, model) is replaced.
 * @throws Error (with the file or flag named) when a file cannot be read or a setting is invalid.
 */
function reloadSpec(v: Values, managed: boolean): Partial<RuleSetSpec> {
  const fileConfig: ServeConfig = v.config !== undefined ? readServeConfig(v.config) : {};
  const spec = specFrom(merge(v, fileConfig), managed);
  if (!managed) return spec;
  const { rules: _rules, stores: _stores, httpLookups: _http, ...rest } = spec;
  return rest;
}

/** pino's levels, and `silent`. */
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** What a listen error's code means, in words. */
const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'address in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'no such address on this host',
  ENOTFOUND: 'unknown host',
};

type Address = { host: string; port: number } | { path: string };

/**
 * The message for a failure to start: for a listener that cannot bind, which one and where
 * (`cannot listen on 127.0.0.1:8080 for jmap: address in use`; Node's own error names neither the
 * listener nor, for a unix socket, the reason in words); for the registry database, which file.
 * The listener is found by the address in the error (for two listeners on one address, both).
 */
function startError(e: unknown, c: ServeConfig, listeners: Partial<Record<string, Address | undefined>>): string {
  const err = e as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string };
  const code = typeof err?.code === 'string' ? err.code : '';
  if (err?.syscall === 'listen' || err?.syscall === 'bind' || err?.syscall === 'getaddrinfo') {
    const show = (a: Address): string => ('path' in a ? `unix:${a.path}` : `${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`);
    const hits = Object.entries(listeners).filter(([, a]) => {
      if (a === undefined) return false;
      if ('path' in a) return a.path === err.address;
      return err.syscall === 'getaddrinfo' ? a.host === err.hostname : a.port === err.port;
    }) as [string, Address][];
    const why = LISTEN_REASONS[code] ?? (code || err.message);
    if (hits.length > 0) return `cannot listen on ${show(hits[0]![1])} for ${hits.map(([n]) => n).join(' and ')}: ${why}`;
    return `cannot listen: ${err.message}`;
  }
  const message = e instanceof Error ? e.message : String(e);
  if (c.db !== undefined && (code.startsWith('SQLITE_') || /database/i.test(message))) return openError('the --db database', c.db, e);
  return message;
}

function untilSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise<number>((resolve) => {
    const onSignal = (): void => {
      stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}
