/**
 * Contracts of message analysis (docs/message-analysis.md): what the rule engine iterates and asks.
 */
import type { Value } from '../expr/value.js';

/** SpamRule scopes (`@type` of x:SpamRule), in Stalwart's execution order (Stalwart's rule evaluation). */
export type Scope = 'Url' | 'Domain' | 'Email' | 'Ip' | 'Header' | 'Body' | 'Any';
export const SCOPE_ORDER: readonly Scope[] = ['Url', 'Domain', 'Email', 'Ip', 'Header', 'Body', 'Any'];

/** Stalwart `Location::as_str` values (docs/message-analysis.md). */
export type Location =
  | 'env_from' | 'env_to' | 'dkim_pass' | 'received' | 'from' | 'reply_to' | 'subject' | 'to' | 'cc'
  | 'bcc' | 'message_id' | 'dnt' | 'ehlo' | 'body_text' | 'body_html' | 'attachment' | 'tcp';

/** SMTP session facts the MTA already knows (docs/message-analysis.md). All optional. */
export interface Envelope {
  /** Connecting IP (default 127.0.0.1, as Stalwart's `SpamFilterInput::from_message`). */
  remoteIp?: string;
  /** HELO/EHLO argument; the `helo_domain` variable is `unknown` when absent. */
  heloDomain?: string;
  /** MAIL FROM address; `''` for the null sender. */
  mailFrom?: string;
  /** RCPT TO addresses. */
  rcptTo?: string[];
  authenticatedAs?: string;
  /** Default true, as Stalwart's default. */
  isTls?: boolean;
  asn?: number;
  country?: string;
  /** First PTR name of the iprev result (`remote_ip.ptr`). */
  iprevPtr?: string;
  /** `d=` domains of the DKIM signatures that passed: the first Domain elements (location `dkim_pass`). */
  dkimPassDomains?: string[];
}

/** One thing a scope iterates over: a URL, a domain, an address, an IP, a header, a body part. */
export interface ScopeElement {
  readonly scope: Scope;
  readonly location: Location;
  /** Short human description for `--explain` (the URL, the header name, the address, …). */
  readonly label: string;
  /**
   * Resolves any ExpressionVariable for an evaluation on this element: generic variables first,
   * then the scope item's own (docs/message-analysis.md). Never throws; unknown → `""` or 0 as Stalwart.
   */
  variable(name: string): Value;
}

/** Per-phase timings in milliseconds. */
export interface AnalysisTimings {
  parseMs: number;
  extractMs: number;
}

export interface AnalyzedMessage {
  /** The elements of one scope, extracted lazily on first request and memoized. */
  elements(scope: Scope): readonly ScopeElement[];
  /**
   * Tags Stalwart's built-in analysis would have set that we compute from the message itself:
   * the `X_HDR_<NAME>` header-presence tags (Stalwart's public rule set).
   */
  readonly builtinTags: readonly string[];
  /** Problems found while parsing (malformed MIME, bad encodings); never fatal. */
  readonly warnings: readonly string[];
  /** Size of the raw message in bytes. */
  readonly size: number;
  readonly timings: AnalysisTimings;
}
