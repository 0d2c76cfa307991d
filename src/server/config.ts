/**
 * `spamrule serve --config FILE`: one JSON or TOML file (by extension: `.toml` is TOML, anything
 * else JSON) for the listeners, the rule source, thresholds, analysis, limits and logging, so the
 * operator need not write a long command line. Command-line flags override it. Relative paths in
 * the file are relative to the file. The shape is documented in docs/deployment.md.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { parseNetwork } from '../net/index.js';
import { parseJsonText } from '../util/index.js';
import { allowedHostProblem } from '../lookup/store-hosts.js';
import { pyzorSettingsProblem, type PyzorSettings } from '../analysis/pyzor/settings.js';
import { parseRegexCacheBytes, parseRegexWorkLimit } from './limits.js';
import { llmSettingsProblem, type LlmSettings } from '../analysis/llm/settings.js';

const size = z.union([z.number().positive(), z.string()]);
const count = z.number().int().nonnegative();
/** An IP address or CIDR range, as the ip module reads `allowedIps`/`blockedIps` (it ignores others). */
const ipOrRange = z.string().refine((v) => parseNetwork(v) !== undefined, 'not an IP address or CIDR range (192.0.2.0/24, 2001:db8::1)');
/** `analysis.pyzor`: true, false or the settings to change (checked as `new SpamEngine` checks them). */
const pyzor = z.custom<boolean | PyzorSettings>().superRefine((v, ctx) => {
  const problem = pyzorSettingsProblem(v);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});
/** A zod refinement from a parser that throws `Error` (its message is the issue's); returns the parsed value. */
function refineBy<T>(parse: (v: T) => number): (v: T, ctx: z.RefinementCtx) => number | undefined {
  return (v, ctx) => {
    try {
      return parse(v);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message });
      return undefined;
    }
  };
}
/** `analysis.llm`: false or the LLM step's settings (checked as `new SpamEngine` checks them). */
const llm = z.custom<false | LlmSettings>().superRefine((v, ctx) => {
  const problem = llmSettingsProblem(v);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});
const strings = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : [v]));
/** A list file's path (relative to the config file): not empty, which would name the config file's folder. */
const listFile = z.string().min(1, 'expected the path of a list file');

export const ServeConfigSchema = z
  .object({
    /** JMAP management listener (with `db`). */
    listen: z.string().optional(),
    rspamd: z.string().optional(),
    milter: z.string().optional(),
    spamd: z.string().optional(),
    metrics: z.string().optional(),
    db: z.string().optional(),
    pg: z.string().optional(),
    capability: z.string().optional(),
    workers: z.number().int().positive().optional(),
    rules: strings.optional(),
    scores: strings.optional(),
    /**
     * `{ "trusted-domains": "lists/trusted.txt" }` or `["trusted-domains=lists/trusted.txt"]`. Both become
     * `NS=FILE` specs split at the first `=` (readLists), so a namespace is non-empty and has no `=`:
     * `{"a=b": "f"}` was read as namespace `a`, file `b=f`.
     */
    lists: z
      .union([
        z.record(z.string().regex(/^[^=]+$/, 'a namespace is not empty and has no "="'), z.union([listFile, z.array(listFile)]).transform((v) => (Array.isArray(v) ? v : [v]))),
        z.array(z.string().regex(/^[^=]+=./s, 'expected "NAMESPACE=FILE"')),
      ])
      .optional(),
    thresholds: z
      .object({ scoreSpam: z.number().optional(), scoreReject: z.number().optional(), scoreDiscard: z.number().optional() })
      .strict()
      .optional(),
    /** On-disk cache of remote (`HttpLookup`) lists, and whether to refresh them in the background. */
    listCacheDir: z.string().optional(),
    refreshLists: z.boolean().optional(),
    /**
     * Networks the remote lists' downloads may reach although they are not public (an internal list
     * server); default none. docs/lookup-stores.md, "Remote lists".
     */
    listAllowedNetworks: z.array(ipOrRange).optional(),
    /**
     * The statistical classifier's model: a SQLite file (`spamrule learn --model FILE`; relative to this file),
     * or a `postgres://` / `redis://` URL, where several servers share one model (docs/classifier.md).
     */
    model: z.string().optional(),
    /** spamd's `TELL` (`spamc -L`) trains the model (with `model` and `spamd`). */
    allowTell: z.boolean().optional(),
    /** rspamd's `/learnspam` and `/learnham` on the rspamd listener train the model (with `model` and `rspamd`). */
    allowLearn: z.boolean().optional(),
    /** The milter's answer to a message refused as busy: `tempfail` (default) or `accept` (unscanned, with X-Spam-Note). */
    milterBusyAction: z.enum(['tempfail', 'accept'], { error: 'expected "tempfail" or "accept"' }).optional(),
    /**
     * The milter's answer to a message whose scan timed out or failed (worker failure, other scan error):
     * `accept` (default: unscanned, with X-Spam-Note) or `tempfail` (the MTA defers it; src/server/milter-policy.ts).
     */
    milterErrorAction: z.enum(['accept', 'tempfail'], { error: 'expected "accept" or "tempfail"' }).optional(),
    /** Lookup stores for file-based rule sets: namespace → `x:StoreLookup` `store` configuration. */
    stores: z.record(z.string(), z.unknown()).optional(),
    /**
     * What StoreLookups written over JMAP may reach on this host (src/lookup/store-policy.ts): directories
     * for `File` secrets, name prefixes for `EnvironmentVariable` secrets (default none of either), and the
     * directory of `Sqlite` store files (default the registry's), and the hosts they may connect to (default
     * any but link-local and cloud metadata addresses).
     */
    managedStores: z
      .object({
        secretFileDirs: strings.optional(),
        secretEnvPrefixes: strings.optional(),
        sqliteDir: z.string().optional(),
        /** Hosts managed stores may connect to (src/lookup/store-hosts.ts): `*`, addresses, CIDR ranges, names, `*.domain`, socket paths. */
        allowedHosts: z.array(z.string().superRefine((v, ctx) => {
          const problem = allowedHostProblem(v);
          if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
        })).optional(),
      })
      .strict()
      .optional(),
    analysis: z
      .object({
        enabled: z.boolean().optional(),
        dns: z.string().optional(),
        disabledModules: z.array(z.string()).optional(),
        trustedAuthservIds: z.array(z.string()).optional(),
        verify: z.boolean().optional(),
        /** The engine's `timeBudgetMs` and `ruleWaitMs` (ms; 0 = none). */
        timeBudgetMs: z.number().int().nonnegative().optional(),
        ruleWaitMs: z.number().int().nonnegative().optional(),
        /**
         * The engine's `regexWorkLimit` (steps one `matches` search may take, 1..2^36; default 2^26) and
         * `regexCacheBytes` (each worker thread's DFA cache budget: bytes or `64M`, 1 MiB..16 GiB; default 64 MiB).
         */
        regexWorkLimit: z.number().transform((v, ctx) => refineBy(parseRegexWorkLimit)(v, ctx) ?? z.NEVER).optional(),
        regexCacheBytes: size.transform((v, ctx) => refineBy(parseRegexCacheBytes)(v, ctx) ?? z.NEVER).optional(),
        /**
         * Follow the redirects of `url-redirectors` URLs over HTTP (docs/analysis.md, "Redirects"): public
         * addresses only, unless `allowedNetworks` names others; ports 80 and 443 unless `ports` names others.
         */
        followRedirects: z
          .union([
            z.boolean(),
            z
              .object({
                maxHops: z.number().int().positive().optional(),
                timeoutMs: z.number().int().positive().optional(),
                allowedNetworks: z.array(ipOrRange).optional(),
                ports: z.array(z.number().int().min(1).max(65535)).optional(),
              })
              .strict(),
          ])
          .optional(),
        /** The Pyzor check (docs/analysis.md, "pyzor"): `true` for Stalwart's defaults, or `{ host, port, timeoutMs, digest, … }`. */
        pyzor: pyzor.optional(),
        /**
         * The LLM step (docs/analysis.md, "llm"): `{ url, model, prompt?, httpAuth?, … }` (Stalwart's `SpamLlm` and
         * `AiModel` fields); the API key as `httpAuth: {"@type": "Bearer", "bearerToken": {"@type": "EnvironmentVariable", …}}`.
         */
        llm: llm.optional(),
        /** Per-message DNSBL query limits per scope (default 50 each). */
        dnsblLimits: z
          .object({ ip: count.optional(), domain: count.optional(), email: count.optional(), url: count.optional() })
          .strict()
          .optional(),
        /** The server's own IP lists (addresses or CIDR ranges): never DNSBL-checked / `IP_BLOCKED`. */
        allowedIps: z.array(ipOrRange).optional(),
        blockedIps: z.array(ipOrRange).optional(),
      })
      .strict()
      .optional(),
    limits: z
      .object({
        maxSize: size.optional(),
        scanTimeoutMs: z.number().nonnegative().optional(),
        maxConcurrentScans: z.number().int().positive().optional(),
        maxWaitingScans: z.number().int().nonnegative().optional(),
        idleTimeoutMs: z.number().positive().optional(),
        milterIdleTimeoutMs: z.number().positive().optional(),
        headTimeoutMs: z.number().nonnegative().optional(),
        requestTimeoutMs: z.number().nonnegative().optional(),
        milterMessageTimeoutMs: z.number().nonnegative().optional(),
        maxConnections: z.number().int().positive().optional(),
        maxConnectionsPerPeer: z.number().int().positive().optional(),
        /** Request bytes all listeners may hold at once (bytes or `200M`; default 4 × maxSize, see limits.ts). */
        maxBufferedBytes: size.optional(),
        /** Largest training sample over rspamd learnspam/learnham and spamd TELL (bytes or `1M`; default 1 MiB). */
        maxLearnSize: size.optional(),
        /** Training samples over those per minute, all clients together (default 60; 0 = no limit). */
        learnPerMinute: count.optional(),
        shutdownGraceMs: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
    log: z.object({ level: z.string().optional() }).strict().optional(),
  })
  .strict();

export type ServeConfig = z.infer<typeof ServeConfigSchema>;

/**
 * Reads and validates a configuration file; relative paths (rules, scores, lists, db, unix
 * sockets) become relative to the file. Throws `Error` naming the file and the offending key.
 */
export function readServeConfig(file: string): ServeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${file}: ${(e as Error).message}`);
  }
  let data: unknown;
  try {
    data = file.toLowerCase().endsWith('.toml') ? parseToml(text) : parseJsonText(text);
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`);
  }
  const r = ServeConfigSchema.safeParse(data);
  if (!r.success) {
    const first = explainIssue(r.error.issues[0]!);
    throw new Error(`${file}: ${keyPath(first.path) || '(top level)'}: ${first.message}`);
  }
  const base = dirname(resolve(file));
  const rel = (p: string): string => (isAbsolute(p) ? p : resolve(base, p));
  const c = r.data;
  if (c.rules) c.rules = c.rules.map(rel);
  if (c.scores) c.scores = c.scores.map(rel);
  if (c.db !== undefined && c.db !== ':memory:') c.db = rel(c.db);
  if (c.listCacheDir !== undefined) c.listCacheDir = rel(c.listCacheDir);
  if (c.model !== undefined && !/^(?:postgres(?:ql)?|rediss?):\/\//i.test(c.model)) c.model = rel(c.model);
  if (c.managedStores?.secretFileDirs) c.managedStores.secretFileDirs = c.managedStores.secretFileDirs.map(rel);
  if (c.managedStores?.sqliteDir !== undefined) c.managedStores.sqliteDir = rel(c.managedStores.sqliteDir);
  if (c.lists !== undefined) {
    const specs = Array.isArray(c.lists) ? c.lists : Object.entries(c.lists).flatMap(([ns, files]) => files.map((f) => `${ns}=${f}`));
    c.lists = specs.map((s) => {
      const eq = s.indexOf('=');
      return eq <= 0 ? s : `${s.slice(0, eq)}=${rel(s.slice(eq + 1))}`;
    });
  }
  for (const k of ['rspamd', 'milter', 'spamd'] as const) {
    const v = c[k];
    if (v?.startsWith('unix:')) c[k] = `unix:${rel(v.slice(5))}`;
  }
  const llmAuth = c.analysis?.llm === false ? undefined : c.analysis?.llm?.httpAuth;
  const llmSecret = llmAuth?.['@type'] === 'Bearer' ? llmAuth.bearerToken : llmAuth?.['@type'] === 'Basic' ? llmAuth.secret : undefined;
  if (llmSecret?.['@type'] === 'File') llmSecret.filePath = rel(llmSecret.filePath);
  if (c.analysis?.dns?.startsWith('static:')) c.analysis.dns = `static:${rel(c.analysis.dns.slice(7))}`;
  return c;
}

/**
 * A zod issue as the path and message an operator can act on. zod says only "Invalid input" at the
 * union for a value no member takes (`rules: [1]`, `followRedirects: {maxHops: "x"}`, a record key
 * that its pattern refuses), with each member's own issues inside: this picks the member that got
 * furthest (an issue below the value, or other than a wrong type), else says which types would do.
 */
function explainIssue(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string } {
  if (issue.code === 'invalid_key' && issue.issues.length > 0) {
    return { path: issue.path, message: explainIssue(issue.issues[0]!).message };
  }
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return { path: issue.path, message: issue.message };
  const branches = issue.errors.filter((b) => b.length > 0).map((b) => ({ first: b[0]!, explained: explainIssue(b[0]!) }));
  const further = branches.filter((b) => b.explained.path.length > 0 || b.first.code !== 'invalid_type');
  if (further.length > 0) {
    const best = further.reduce((a, b) => (b.explained.path.length > a.explained.path.length ? b : a));
    return { path: [...issue.path, ...best.explained.path], message: best.explained.message };
  }
  const expected = [...new Set(branches.map((b) => (b.first.code === 'invalid_type' ? b.first.expected : undefined)).filter((e) => e !== undefined))];
  const received = /received (.+)$/.exec(branches[0]?.first.message ?? '')?.[1];
  if (expected.length === 0) return { path: issue.path, message: issue.message };
  return { path: issue.path, message: `expected ${expected.join(' or ')}${received !== undefined ? `, received ${received}` : ''}` };
}

/** `analysis.pyzor`, `lists.0`, `lists["a=b"]`: a key that is not a plain name is quoted. */
function keyPath(path: readonly PropertyKey[]): string {
  return path
    .map((k, i) => (typeof k === 'number' ? `${i > 0 ? '.' : ''}${k}` : /^[\w@-]+$/.test(String(k)) ? `${i > 0 ? '.' : ''}${String(k)}` : `[${JSON.stringify(String(k))}]`))
    .join('');
}
