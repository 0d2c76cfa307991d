/**
 * The session flags shared by `classify` (and the other commands that classify): what the MTA
 * knows about the SMTP session, authentication results, DNS and analysis switches. Parsed into a
 * validated `SessionInput` before any message is read; a bad value is a clear error.
 */
import { MODULE_NAMES } from '../analysis/index.js';
import type { LlmSettings } from '../analysis/llm/settings.js';
import { parsePyzorServer, PYZOR_DIGEST_MODES, type PyzorDigestMode, type PyzorSettings } from '../analysis/pyzor/settings.js';
import { resolveSession, SessionError } from '../analysis/session.js';
import type { FollowRedirects, SessionInput } from '../analysis/types.js';
import { createResolver } from '../dns/index.js';
import type { Resolver } from '../dns/types.js';
import { AddressPolicy } from '../net/index.js';
import { parseRegexCacheBytes, parseRegexWorkLimit } from '../server/limits.js';
import { LLM_HELP, LLM_OPTIONS, llmFlags } from './llm-flags.js';

/** parseArgs option descriptors. */
export const SESSION_OPTIONS = {
  'remote-ip': { type: 'string' },
  helo: { type: 'string' },
  'mail-from': { type: 'string' },
  'rcpt-to': { type: 'string', multiple: true },
  'authenticated-as': { type: 'string' },
  tls: { type: 'boolean' },
  'tls-version': { type: 'string' },
  'no-tls': { type: 'boolean' },
  smtputf8: { type: 'boolean' },
  '8bitmime': { type: 'boolean' },
  spf: { type: 'string' },
  'spf-helo': { type: 'string' },
  dkim: { type: 'string', multiple: true },
  arc: { type: 'string' },
  dmarc: { type: 'string' },
  iprev: { type: 'string' },
  asn: { type: 'string' },
  country: { type: 'string' },
  now: { type: 'string' },
  dns: { type: 'string' },
  'no-module': { type: 'string', multiple: true },
  'no-analysis': { type: 'boolean' },
  'trust-authserv': { type: 'string', multiple: true },
  verify: { type: 'boolean' },
  'trust-received': { type: 'boolean' },
  'follow-redirects': { type: 'boolean' },
  'redirect-allow-network': { type: 'string', multiple: true },
  'redirect-port': { type: 'string', multiple: true },
  pyzor: { type: 'string' },
  'pyzor-timeout': { type: 'string' },
  'pyzor-digest': { type: 'string' },
  ...LLM_OPTIONS,
  'time-budget': { type: 'string' },
  'rule-wait': { type: 'string' },
  'regex-work-limit': { type: 'string' },
  'regex-cache': { type: 'string' },
} as const;

export const SESSION_HELP = `Session (what the MTA knows; validated before any message is read):
  --remote-ip IP  --helo NAME  --mail-from ADDR  --rcpt-to ADDR (repeatable)  --authenticated-as NAME
  --tls | --tls-version V | --no-tls      TLS on the SMTP connection (default: off)
  --smtputf8  --8bitmime                  MAIL FROM parameters
  --spf RESULT  --spf-helo RESULT         pass|fail|softfail|neutral|none|temperror|permerror
  --dkim RESULT:DOMAIN                    one per signature (repeatable): pass:example.com
  --arc RESULT                            pass|fail|permerror|temperror|neutral|none
  --dmarc RESULT[:POLICY]                 fail:reject, pass, …  (policy none|quarantine|reject)
  --iprev RESULT[:PTR,...]                pass:mail.example.net
  --asn N  --country CC  --now DATE       (DATE: RFC 3339; the clock for date checks)
  --trust-authserv ID                     read SPF/DKIM/ARC/DMARC/iprev from the topmost
                                          Authentication-Results header of this authserv-id
  --verify                                verify SPF/DKIM/ARC/DMARC and iprev over DNS (needs --dns system
                                          or --dns static:FILE)
  --trust-received                        stored mail: complete each message's session from its own
                                          headers (topmost Received: IP, HELO, PTR, TLS, arrival time;
                                          Return-Path; Delivered-To); given flags win

Analysis:
  --dns SPEC        off (default) | system | system:SERVER[,SERVER] | static:FILE.json
  --no-module NAME  switch one built-in module off (repeatable): ${MODULE_NAMES.join(', ')}
  --no-analysis     run the SpamRules alone
  --follow-redirects  follow the HTTP redirects of URLs whose host is in url-redirectors (3 hops of 5 s;
                    the targets are checked too, and URL_REDIRECTOR_NESTED set past the last hop). Needs
                    --dns system (or static:FILE): hosts resolve through it. Hops go to public addresses
                    on ports 80 and 443 only
  --redirect-allow-network CIDR  a hop may also connect to this address or range (repeatable; a test server)
  --redirect-port PORT  a hop may connect to this port (repeatable; replaces 80 and 443)
  --pyzor HOST[:PORT]  check each message's Pyzor digest with this server over UDP (port 24441 by default;
                    e.g. public.pyzor.org): PYZOR when it has more than 5 reports and few whitelistings
  --pyzor-timeout MS  how long to wait for the Pyzor server's answer (default 5000)
  --pyzor-digest stalwart|pyzor  the digest sent: Stalwart's (default; what Stalwart servers send) or pyzor
                    1.0.0's (what pyzor clients report: use it with public.pyzor.org)
${LLM_HELP}  --time-budget MS  per message: the modules, classifier and rules not started within MS milliseconds
                    (not counting waits for DNS) are skipped and reported (default 5000; 0 = no budget)
  --rule-wait MS    per message: how long the rules may wait for lookup stores in all; past it, a rule
                    still waiting fails and is reported (default 2000; 0 = only each store's timeout)
  --regex-work-limit STEPS  most steps one matches() search may take (pattern cost × subject length,
                    default 67108864 = 2^26, about a second at worst; 1 to 2^36): a search over it is
                    not run and its rule fails with a RegexWorkError, reported in errors
  --regex-cache SIZE  memory budget of the compiled patterns' DFA caches (bytes, or 512k, 64M, 1G;
                    default 64M; 1M to 16G): past it the least recently used caches are dropped
`;

type Values = { [K in keyof typeof SESSION_OPTIONS]?: (typeof SESSION_OPTIONS)[K] extends { multiple: true } ? string[] : (typeof SESSION_OPTIONS)[K] extends { type: 'boolean' } ? boolean : string };

export interface SessionFlags {
  session: SessionInput;
  dns: Resolver | undefined;
  /** Modules switched off. */
  disabled: string[];
  analysis: boolean;
  trustedAuthservIds: string[];
  verify: boolean;
  trustReceived: boolean;
  /**
   * `AnalysisConfig.followRedirects`: `false`, `true`, or the allowed networks and ports of
   * `--redirect-allow-network`/`--redirect-port`.
   */
  followRedirects: FollowRedirects;
  /** `AnalysisConfig.pyzor` (`--pyzor`, `--pyzor-timeout`, `--pyzor-digest`); undefined: no Pyzor check. */
  pyzor?: PyzorSettings;
  /** `AnalysisConfig.llm` (`--llm-url`, `--llm-model`, …); undefined: no LLM step. */
  llm?: LlmSettings;
  /** `EngineOptions.timeBudgetMs` (ms; 0 = none); undefined: the engine's default. */
  timeBudgetMs?: number;
  /** `EngineOptions.ruleWaitMs` (ms; 0 = no limit); undefined: the engine's default. */
  ruleWaitMs?: number;
  /** `EngineOptions.regexWorkLimit` (steps per `matches` search, 1..2^36); undefined: the engine's default. */
  regexWorkLimit?: number;
  /** `EngineOptions.regexCacheBytes` (bytes, 1 MiB..16 GiB); undefined: the engine's default (64 MiB). */
  regexCacheBytes?: number;
}

/**
 * The flag that sets each `SessionInput` field (the first part of a {@link SessionError}'s field
 * path: `spf.mailFrom`, `dkim/0/result`, `rcptTo/2`), so that a bad value is reported under the
 * name the user typed (the README promises "the CLI exits 2 naming the flag").
 */
const FLAG_OF_FIELD: Record<string, string> = {
  remoteIp: '--remote-ip',
  heloDomain: '--helo',
  mailFrom: '--mail-from',
  rcptTo: '--rcpt-to',
  authenticatedAs: '--authenticated-as',
  tls: '--tls-version',
  smtputf8: '--smtputf8',
  eightBitMime: '--8bitmime',
  'spf.mailFrom': '--spf',
  'spf.ehlo': '--spf-helo',
  dkim: '--dkim',
  'arc.result': '--arc',
  'dmarc.result': '--dmarc',
  'dmarc.policy': '--dmarc',
  'iprev.result': '--iprev',
  'iprev.ptr': '--iprev',
  asn: '--asn',
  country: '--country',
  now: '--now',
};

/** `--dmarc: policy "drop" is not one of …` for `session.dmarc.policy: "drop" is not one of …`. */
function flagMessage(e: SessionError): string {
  const prefix = `session.${e.field}: `;
  const detail = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  const field = e.field.split('/')[0]!;
  const flag = Object.hasOwn(FLAG_OF_FIELD, field) ? FLAG_OF_FIELD[field] : undefined;
  if (flag === undefined) return `bad session input: ${e.message}`;
  // Flags that carry two parts (RESULT:POLICY, RESULT:DOMAIN) say which part is wrong.
  const part = e.field === 'dmarc.policy' ? 'policy ' : e.field.endsWith('/domain') ? 'domain ' : '';
  return `${flag}: ${part}${detail}`;
}

/**
 * The resolvers that can answer `--verify`'s SPF/DKIM/DMARC lookups: `system` and `static:FILE`.
 * With `off` (the default) every query fails, so verification would silently set *_DNSFAIL tags.
 */
export function canVerify(dns: string | undefined): boolean {
  const kind = dns?.split(':')[0]?.trim().toLowerCase();
  return kind === 'system' || kind === 'static';
}

function split(v: string, flag: string): [string, string | undefined] {
  const i = v.indexOf(':');
  if (i === 0) throw new Error(`--${flag} expects RESULT[:…], got "${v}"`);
  return i < 0 ? [v, undefined] : [v.slice(0, i), v.slice(i + 1)];
}

/** `--pyzor HOST[:PORT]` as `{ host, port? }`. Throws `Error` naming the flag for a bad value. */
export function pyzorServerFlag(server: string): PyzorSettings {
  try {
    return parsePyzorServer(server);
  } catch (e) {
    throw new Error(`--pyzor: ${(e as Error).message}`);
  }
}

/** `--pyzor-timeout MS` in milliseconds. Throws `Error` naming the flag for a bad value. */
export function pyzorTimeoutFlag(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n <= 0) throw new Error(`--pyzor-timeout expects milliseconds (an integer > 0), got "${text}"`);
  return n;
}

/** `--pyzor-digest stalwart|pyzor`. Throws `Error` naming the flag for another value. */
export function pyzorDigestFlag(text: string): PyzorDigestMode {
  const mode = PYZOR_DIGEST_MODES.find((m) => m === text.trim().toLowerCase());
  if (mode === undefined) throw new Error(`--pyzor-digest expects stalwart or pyzor, got "${text}"`);
  return mode;
}

/**
 * `--pyzor HOST[:PORT]`, `--pyzor-timeout MS` and `--pyzor-digest stalwart|pyzor` as `AnalysisConfig.pyzor`
 * settings (undefined without `--pyzor`). Throws `Error` naming the flag for a bad value, and for
 * `--pyzor-timeout` or `--pyzor-digest` without `--pyzor`.
 */
export function pyzorFlags(server: string | undefined, timeout: string | undefined, digest?: string): PyzorSettings | undefined {
  if (server === undefined) {
    if (timeout !== undefined) throw new Error('--pyzor-timeout needs --pyzor HOST[:PORT] (the server to ask)');
    if (digest !== undefined) throw new Error('--pyzor-digest needs --pyzor HOST[:PORT] (the server to ask)');
    return undefined;
  }
  const out = pyzorServerFlag(server);
  if (timeout !== undefined) out.timeoutMs = pyzorTimeoutFlag(timeout);
  if (digest !== undefined) out.digest = pyzorDigestFlag(digest);
  return out;
}

/**
 * Parses the session flags. Throws `Error` with a message naming the flag for a bad value
 * (an unparsable IP, an unknown SPF result, an unknown module, a bad `--dns` spec).
 */
export function parseSessionFlags(v: Values): SessionFlags {
  const s: SessionInput = {};
  if (v['remote-ip'] !== undefined) s.remoteIp = v['remote-ip'];
  if (v.helo !== undefined) s.heloDomain = v.helo;
  if (v['mail-from'] !== undefined) s.mailFrom = v['mail-from'];
  if (v['rcpt-to'] !== undefined) s.rcptTo = v['rcpt-to'];
  if (v['authenticated-as'] !== undefined) s.authenticatedAs = v['authenticated-as'];
  if (v.tls || v['tls-version'] !== undefined) s.tls = v['tls-version'] ?? 'TLS';
  if (v['no-tls']) s.tls = false;
  if (v.smtputf8) s.smtputf8 = true;
  if (v['8bitmime']) s.eightBitMime = true;
  if (v.spf !== undefined || v['spf-helo'] !== undefined) {
    s.spf = {};
    if (v.spf !== undefined) s.spf.mailFrom = v.spf as never;
    if (v['spf-helo'] !== undefined) s.spf.ehlo = v['spf-helo'] as never;
  }
  if (v.dkim !== undefined) {
    s.dkim = v.dkim.map((d) => {
      const [result, domain] = split(d, 'dkim');
      if (domain === undefined || domain === '') throw new Error(`--dkim expects RESULT:DOMAIN, got "${d}"`);
      return { result: result as never, domain };
    });
  }
  if (v.arc !== undefined) s.arc = { result: v.arc as never };
  if (v.dmarc !== undefined) {
    const [result, policy] = split(v.dmarc, 'dmarc');
    s.dmarc = { result: result as never };
    if (policy !== undefined) s.dmarc.policy = policy as never;
  }
  if (v.iprev !== undefined) {
    const [result, ptr] = split(v.iprev, 'iprev');
    s.iprev = { result: result as never };
    if (ptr !== undefined) s.iprev.ptr = ptr.split(',').filter((p) => p !== '');
  }
  if (v.asn !== undefined) {
    const n = Number(v.asn.replace(/^AS/i, ''));
    if (!Number.isInteger(n) || n < 0) throw new Error(`--asn expects an AS number, got "${v.asn}"`);
    s.asn = n;
  }
  if (v.country !== undefined) s.country = v.country;
  if (v.now !== undefined) s.now = v.now;
  try {
    resolveSession(s); // validate now, before any message is read
  } catch (e) {
    throw new Error(e instanceof SessionError ? flagMessage(e) : `bad session input: ${(e as Error).message}`);
  }
  const disabled = v['no-module'] ?? [];
  for (const m of disabled) {
    if (!MODULE_NAMES.includes(m)) throw new Error(`--no-module: unknown module "${m}" (${MODULE_NAMES.join(', ')})`);
  }
  if (v.verify && !canVerify(v.dns)) throw new Error(`--verify needs --dns system (or --dns static:FILE): without DNS nothing can be verified`);
  const followRedirects = redirectFlags(v);
  // Redirect hosts resolve through --dns only (its budget and servers), never behind it through the system's.
  if (followRedirects !== false && !canVerify(v.dns)) throw new Error('--follow-redirects needs --dns system (or --dns static:FILE): redirector hosts are resolved through it');
  const dns = v.dns === undefined ? undefined : createResolver(v.dns);
  const ms = (flag: 'time-budget' | 'rule-wait'): number | undefined => {
    const text = v[flag];
    if (text === undefined) return undefined;
    const n = Number(text);
    if (text.trim() === '' || !Number.isInteger(n) || n < 0) throw new Error(`--${flag} expects milliseconds (an integer ≥ 0), got "${text}"`);
    return n;
  };
  const timeBudgetMs = ms('time-budget');
  const ruleWaitMs = ms('rule-wait');
  const pyzor = pyzorFlags(v.pyzor, v['pyzor-timeout'], v['pyzor-digest']);
  const regexWorkLimit = regexFlag('regex-work-limit', v['regex-work-limit'], parseRegexWorkLimit);
  const regexCacheBytes = regexFlag('regex-cache', v['regex-cache'], parseRegexCacheBytes);
  const llm = llmFlags(v);
  return {
    ...(regexWorkLimit !== undefined ? { regexWorkLimit } : {}),
    ...(regexCacheBytes !== undefined ? { regexCacheBytes } : {}),
    ...(pyzor !== undefined ? { pyzor } : {}),
    ...(llm !== undefined ? { llm } : {}),
    ...(timeBudgetMs !== undefined ? { timeBudgetMs } : {}),
    ...(ruleWaitMs !== undefined ? { ruleWaitMs } : {}),
    session: s,
    dns,
    disabled,
    analysis: !v['no-analysis'],
    trustedAuthservIds: v['trust-authserv'] ?? [],
    verify: v.verify ?? false,
    trustReceived: v['trust-received'] ?? false,
    followRedirects,
  };
}

/**
 * `--regex-work-limit` or `--regex-cache` (shared with `spamrule serve`): the parsed value, or undefined
 * when not given. Throws `Error` naming the flag and what it expects.
 */
export function regexFlag(flag: 'regex-work-limit' | 'regex-cache', text: string | undefined, parse: (v: string) => number): number | undefined {
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (e) {
    throw new Error(`--${flag}: ${(e as Error).message}`);
  }
}

/** `--follow-redirects` with its `--redirect-allow-network`/`--redirect-port`; throws `Error` naming a bad one. */
function redirectFlags(v: Values): FollowRedirects {
  const nets = v['redirect-allow-network'];
  const ports = v['redirect-port'];
  if (!v['follow-redirects']) {
    if (nets !== undefined || ports !== undefined) throw new Error(`--${nets !== undefined ? 'redirect-allow-network' : 'redirect-port'} needs --follow-redirects`);
    return false;
  }
  if (nets === undefined && ports === undefined) return true;
  const out: Exclude<FollowRedirects, boolean> = {};
  if (nets !== undefined) {
    try {
      new AddressPolicy(nets);
    } catch (e) {
      throw new Error(`--redirect-allow-network: ${(e as Error).message}`);
    }
    out.allowedNetworks = nets;
  }
  if (ports !== undefined) {
    out.ports = ports.map((p) => {
      const n = Number(p);
      if (p.trim() === '' || !Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`--redirect-port expects a port number (1–65535), got "${p}"`);
      return n;
    });
  }
  return out;
}
