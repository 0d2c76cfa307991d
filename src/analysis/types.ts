/**
 * Contracts of the built-in analysis (docs/message-analysis.md): the SMTP session as the MTA knows it, and
 * the context every analysis module receives. A module is one exported function of one context,
 * e.g. `export function date(ctx: AnalysisContext): void` (a promise only when it waits for DNS, as
 * `ehlo` does when DNS is on: a promise per module and message costs the runner); it reads `ctx.session`,
 * `ctx.message`, `ctx.dns`, `ctx.lists` and `ctx.config`, and calls `ctx.tag('MISSING_DATE')`.
 * Modules never call each other and never throw on purpose (the runner reports a throw like a
 * failing rule, and the other modules still run).
 */
import type { Resolver } from '../dns/types.js';
import type { LookupRegistry } from '../lookup/types.js';
import type { MessageContext } from '../message/context.js';
import type { Scope } from '../message/types.js';
import type { PyzorResponse } from './pyzor/client.js';
import type { PyzorSettings } from './pyzor/settings.js';
import type { LlmSettings } from './llm/settings.js';

export type { PyzorResponse } from './pyzor/client.js';
export type { PyzorDigestMode, PyzorSettings } from './pyzor/settings.js';
export type { LlmSettings, LlmHttpAuth, LlmSecret } from './llm/settings.js';
export type { StepBreakerOptions } from './step-breaker.js';

/**
 * What the LLM step made of the model's reply (src/analysis/llm.ts): the recognised category and confidence,
 * uppercased as in the tag (`LLM_<category>_<confidence>`), and the explanation (at most 255 bytes, white space
 * and control characters turned into spaces) that Stalwart writes to `X-Spam-LLM: <category> (<explanation>)`.
 */
export interface LlmVerdict {
  category: string;
  confidence?: string;
  explanation?: string;
}

/** An expression as Stalwart writes one: `match` branches (an array or index-keyed object) and `else`. */
export interface ExpressionInput {
  match?: { if: string; then: string }[] | Record<string, { if: string; then: string }>;
  else?: string;
}

/** A `SpamDnsblServer` object: the scope it checks, the zone (query name) and tag expressions. */
export interface DnsblServerInput {
  '@type': Scope;
  name: string;
  enable?: boolean;
  zone: ExpressionInput;
  tag: ExpressionInput;
}

/** A tag a module set, for `--explain` and `--json`. */
export interface ModuleMatch {
  module: string;
  tag: string;
}

/** RFC 7208 SPF results. */
export type SpfResult = 'pass' | 'fail' | 'softfail' | 'neutral' | 'none' | 'temperror' | 'permerror';
/** DKIM (RFC 6376) and ARC (RFC 8617) results, Stalwart's `DkimResult` enum. */
export type DkimResult = 'pass' | 'fail' | 'permerror' | 'temperror' | 'neutral' | 'none';
/** DMARC (RFC 7489) results. */
export type DmarcResult = 'pass' | 'fail' | 'temperror' | 'permerror' | 'none';
/** The policy published by the From domain. */
export type DmarcPolicy = 'none' | 'quarantine' | 'reject' | 'unspecified';
/** iprev (RFC 8601 §3) results. */
export type IprevResult = 'pass' | 'fail' | 'temperror' | 'permerror' | 'none';

/**
 * What the MTA knows about the SMTP session, as given to `classify(raw, { session })`. Every field
 * is optional; absent authentication results give Stalwart's "no result" tags (`SPF_NA`, …).
 */
export interface SessionInput {
  /** Connecting IP address (default `127.0.0.1`). */
  remoteIp?: string;
  /** Local (receiving) IP address (default `127.0.0.1`). */
  localIp?: string;
  /** The receiving host's own name (default `localhost`). */
  hostname?: string;
  /** HELO/EHLO argument as sent; `''` when the client sent none; absent = unknown (`from_message`). */
  heloDomain?: string;
  /** MAIL FROM address (lowercased by the session); `''` for the null sender `<>`. */
  mailFrom?: string;
  /** MAIL FROM `SMTPUTF8` parameter (RFC 6531). */
  smtputf8?: boolean;
  /** MAIL FROM `BODY=8BITMIME` (RFC 6152). */
  eightBitMime?: boolean;
  /** MAIL FROM `BODY=BINARYMIME` (RFC 3030). */
  binaryMime?: boolean;
  /** RCPT TO addresses, in order. */
  rcptTo?: string[];
  /** SMTP AUTH account name. Stalwart skips classification for authenticated sessions. */
  authenticatedAs?: string;
  /** TLS version of the SMTP connection (e.g. `TLSv1.3`), or `false`/absent for plain text. */
  tls?: string | false;
  /** Reverse-DNS (iprev) result and the PTR names of the remote IP. */
  iprev?: { result: IprevResult; ptr?: string[] };
  /** SPF results of the MAIL FROM and the HELO identities. */
  spf?: { mailFrom?: SpfResult; ehlo?: SpfResult };
  /** DKIM results, one per verified signature in signature order, with its `d=` domain. */
  dkim?: { result: DkimResult; domain: string }[];
  /** ARC chain result. */
  arc?: { result: DkimResult };
  /** DMARC result and the From domain's published policy. */
  dmarc?: { result?: DmarcResult; policy?: DmarcPolicy };
  /** Autonomous system number of the remote IP. */
  asn?: number;
  /** ISO 3166 country code of the remote IP. */
  country?: string;
  /** The clock for date checks: a Date, milliseconds since the epoch, or an RFC 3339 string (default: now). */
  now?: Date | number | string;
}

/** The session after validation and defaults: what modules read. */
export interface Session {
  remoteIp: string;
  localIp: string;
  hostname: string;
  /** `null` when unknown (treated as `unknown` by the ehlo module, docs/message-analysis.md). */
  heloDomain: string | null;
  /** Lowercased; `''` for the null sender. */
  mailFrom: string;
  mailFromFlags: { smtputf8: boolean; eightBitMime: boolean; binaryMime: boolean };
  /** Lowercased, in order. */
  rcptTo: string[];
  authenticatedAs: string | null;
  /** TLS version, or `false`. */
  tls: string | false;
  iprev: { result: IprevResult; ptr: string[] } | null;
  spf: { mailFrom: SpfResult | null; ehlo: SpfResult | null };
  dkim: { result: DkimResult; domain: string }[];
  arc: DkimResult | null;
  dmarc: { result: DmarcResult | null; policy: DmarcPolicy | null };
  asn: number | null;
  country: string | null;
  /** Milliseconds since the epoch. */
  now: number;
  /** Training run (network lookups skipped in content modules; docs/analysis.md). */
  train: boolean;
}

/** Stalwart's `test_mode` behaviours a conformance run switches on (the suite's `testMode`). */
export interface TestMode {
  /** Synthesised answers for IPv4 DNSBL queries of `20.11.B.A` (the suite's `testMode.dnsbl`). */
  dnsbl?: boolean;
  /** A URL containing `redirect.` "redirects" to the text after its first `/?` (`testMode.httpHeader`). */
  httpRedirect?: boolean;
  /**
   * Canned Pyzor answers by digest (the suite's `testMode.pyzor.responses`): with it, the pyzor module sends
   * nothing, answers the digests listed and gives every other digest no answer.
   */
  pyzor?: readonly (PyzorResponse & { digest: string })[];
}

/** A `SpamFileExtension` object: an attachment extension and what the mime module makes of it. */
export interface FileExtensionInput {
  extension: string;
  /** Expected content types (`{"application/pdf": true}` or an array). */
  contentTypes?: Record<string, boolean> | string[];
  isBad?: boolean;
  isArchive?: boolean;
  isNz?: boolean;
  [key: string]: unknown;
}

/** Configuration the modules read; every field optional. */
/**
 * `AnalysisConfig.followRedirects`: `true` for the defaults, or the settings to change. A hop connects only
 * to a public unicast address (resolved through the engine's resolver, within the message's DNS budget)
 * on an allowed port.
 */
export type FollowRedirects =
  | boolean
  | {
      /** HTTP requests per redirector URL at most (default 3, Stalwart's). */
      maxHops?: number;
      /** Time limit of one hop's HTTP request, ms (default 5,000, Stalwart's). */
      timeoutMs?: number;
      /**
       * Addresses or CIDR ranges a hop may connect to although they are not public (`["10.20.0.0/16"]`,
       * `["127.0.0.1"]` for a test server). Default none. An entry that is neither is refused at start.
       */
      allowedNetworks?: readonly string[];
      /** Ports a hop may connect to (default `[80, 443]`); a URL without a port uses its scheme's. */
      ports?: readonly number[];
    };

export interface AnalysisConfig {
  /** `SpamDnsblServer` definitions (DNSBL evaluation, docs/analysis.md). */
  dnsblServers?: readonly DnsblServerInput[];
  /**
   * Per-message DNSBL query limits per scope (Stalwart's `SpamDnsblSettings`: `ipLimit`, `domainLimit`,
   * `emailLimit`, `urlLimit`; default 50 each).
   */
  dnsblLimits?: { ip?: number; domain?: number; email?: number; url?: number };
  /**
   * The server's own IP lists (Stalwart's security settings), as addresses or CIDR ranges: `allowedIps`
   * are never DNSBL-checked; `blockedIps` give IP_BLOCKED instead of a check (ip module). IPv4 in four parts;
   * `new SpamEngine` throws a `TypeError` naming an entry that is neither an address nor a CIDR range.
   */
  allowedIps?: readonly string[];
  blockedIps?: readonly string[];
  /** `SpamFileExtension` table for the mime module. */
  fileExtensions?: readonly FileExtensionInput[];
  /** Follow URL redirects over HTTP for hosts in `url-redirectors` (off by default; docs/analysis.md, "Redirects"). */
  followRedirects?: FollowRedirects;
  /**
   * Check each message's Pyzor digest with a Pyzor server over UDP (the pyzor module, docs/analysis.md): `true`
   * for Stalwart's defaults (`public.pyzor.org:24441`, 5,000 ms, blockCount 5, allowCount 10, ratio 0.2), or
   * the settings to change. Off by default (absent or `false`).
   */
  pyzor?: boolean | PyzorSettings;
  /**
   * Ask an OpenAI-compatible model to classify each message (the llm module, Stalwart's enterprise LLM step;
   * docs/analysis.md, "llm"): the endpoint `url` and `model`, and Stalwart's `SpamLlm`/`AiModel` fields to
   * change. Off by default (absent or `false`).
   */
  llm?: LlmSettings | false;
  /** Stalwart test-mode behaviours (conformance runs only). */
  testMode?: TestMode;
  /** Per-module switches: `{ html: false }` turns the html module off. */
  modules?: Partial<Record<string, boolean>>;
}

/** The context of one message's analysis. */
export interface AnalysisContext {
  readonly session: Session;
  /** The analysed message (headers, parts, lazily computed facts) the rules use as well. */
  readonly message: MessageContext;
  /** DNS for this message (per-message query cap applies). */
  readonly dns: Resolver;
  /** Lookup namespaces (`stwt_free_domains`, `url-redirectors`, …): `get(ns)?.keyExists(key)`. */
  readonly lists: LookupRegistry;
  readonly config: AnalysisConfig;
  /** Adds a tag (a set: adding twice is a no-op). The runner records which module set it. */
  tag(name: string): void;
  /** Is the tag already set (by the session, an earlier module, or upstream)? */
  hasTag(name: string): boolean;
  /** Reports a problem (capped input, failed lookup) in the verdict's warnings. */
  warn(message: string): void;
  /** Records the LLM step's verdict: the result's `llm` and its `X-Spam-LLM` header (the llm module only). */
  setLlmVerdict(verdict: LlmVerdict): void;
  /**
   * Awaits a network answer other than DNS (a redirect hop, a Pyzor answer, an LLM reply, a `spam-traps` store lookup,
   * each bounded by its own timeout). The time is left out of the classify time budget, as DNS waits are,
   * so a slow server cannot get the modules and rules after it skipped.
   */
  networkWait<T>(p: Promise<T>): Promise<T>;
}

/** One analysis module: reads the context and calls `ctx.tag`; returns a promise only when it has to wait. */
export type AnalysisModule = (ctx: AnalysisContext) => void | Promise<void>;
