/**
 * The per-message facts every scope shares, and the generic variables of `SpamFilterResolver`
 * (`stalwart:crates/spam-filter/src/modules/expression.rs`, docs/message-analysis.md). Stalwart computes
 * a generic variable again on every access; here each is computed on first access and memoized.
 */
import type { Value } from '../expr/value.js';
import { emailAddress, hostname, parseIp, type EmailAddress } from './hostname.js';
import { canonicalName, headerTag, isNamed, type RawHeader } from './headers.js';
import { mailboxesOf } from './addresses.js';
import { parseUnstructured } from './rfc2047.js';
import { threadName } from './thread.js';
import type { MimeView, ParsedBody } from './text-parts.js';
import { tokenize } from './tokenizer.js';
import type { Envelope } from './types.js';

/** A From/Reply-To/To/Cc/Bcc entry: the normalised address and its lower-cased display name. */
export interface Recipient {
  readonly email: EmailAddress;
  /** Lower-cased; `undefined` when there is none (From keeps an untrimmed, possibly empty name). */
  readonly name: string | undefined;
}

/** Options of {@link analyzeMessage}. */
export interface AnalyzeOptions {
  /**
   * Is this fqdn in lookup namespace `trusted-domains` (or a local domain)? Emails of trusted
   * domains add no Domain element (docs/message-analysis.md Domains step 5). Default: nothing is trusted.
   */
  isTrustedDomain?: (domain: string) => boolean;
}

/** The names answered by the generic resolver, before the scope item (docs/message-analysis.md). */
export const GENERIC_VARIABLES: ReadonlySet<string> = new Set([
  'remote_ip', 'remote_ip.ptr', 'helo_domain', 'authenticated_as', 'asn', 'country', 'is_tls',
  'env_from', 'env_from.local', 'env_from.domain', 'env_to',
  'from', 'from.name', 'from.local', 'from.domain',
  'reply_to', 'reply_to.name', 'reply_to.local', 'reply_to.domain',
  'to', 'to.name', 'to.local', 'to.domain', 'cc', 'cc.name', 'cc.local', 'cc.domain',
  'bcc', 'bcc.name', 'bcc.local', 'bcc.domain',
  'body', 'body.text', 'body.html', 'body.raw', 'body.words', 'subject', 'subject.thread', 'subject.words',
  'location',
]);

/** mail-parser's `thread_name()` (src/message/thread.ts), re-exported where callers already import it. */
export { threadName };

const utf8 = new TextDecoder('utf-8');

interface AddressFields {
  from: Recipient | undefined;
  replyTo: Recipient | undefined;
  to: Recipient[];
  cc: Recipient[];
  bcc: Recipient[];
}

export class MessageContext {
  readonly envelope: Envelope;
  readonly remoteIp: string;
  readonly heloHost: string;
  readonly envFrom: EmailAddress;
  private readonly memo = new Map<string, Value>();
  /** Memos of the analysis modules and element sets (src/util/memo.ts; set on first use, not enumerable). */
  declare memoSlots?: unknown[];
  /** Milliseconds spent computing generic variables on first access (lazy extraction work). */
  lazyMs = 0;
  private subjectTokensMemo: ReturnType<typeof tokenize> | undefined;
  private addressMemo: AddressFields | undefined;

  constructor(
    readonly raw: Uint8Array,
    readonly headers: readonly RawHeader[],
    /** The MIME tree and text parts (src/message/text-parts.ts): one parse serves the rules and the modules. */
    readonly view: MimeView,
    envelope: Envelope | undefined,
    readonly options: AnalyzeOptions,
    /** `X_HDR_<NAME>` of each header, in header order (computed once in analyzeMessage for the rules and the headers module). */
    readonly headerTags: readonly string[] = headers.map((h) => headerTag(h.name)),
  ) {
    this.envelope = envelope ?? {};
    this.remoteIp = parseIp(this.envelope.remoteIp ?? '') ?? this.envelope.remoteIp ?? '127.0.0.1';
    this.heloHost = hostname(this.envelope.heloDomain ?? 'unknown').fqdn;
    this.envFrom = emailAddress(this.envelope.mailFrom ?? '');
  }

  /** From, Reply-To, To/Cc/Bcc, parsed on first use (as Stalwart's spam filter reads them). */
  private addresses(): AddressFields {
    if (this.addressMemo !== undefined) return this.addressMemo;
    let fromH: RawHeader | undefined;
    let replyH: RawHeader | undefined;
    const to: Recipient[] = [];
    const cc: Recipient[] = [];
    const bcc: Recipient[] = [];
    for (const h of this.headers) {
      switch (canonicalName(h.name)) {
        case 'From': fromH = h; break;
        case 'Reply-To': replyH = h; break;
        case 'To': pushRecipients(h, to); break;
        case 'Cc': pushRecipients(h, cc); break;
        case 'Bcc': pushRecipients(h, bcc); break;
      }
    }
    // Addresses as mail-parser reads them (comments as names, encoded words in quoted names, …).
    const f = fromH === undefined ? undefined : mailboxesOf(fromH)[0];
    const r = replyH === undefined ? undefined : mailboxesOf(replyH)[0];
    return (this.addressMemo = {
      // From keeps its name untrimmed; Reply-To's is trimmed and an empty one is no name; a
      // Reply-To whose first mailbox has no address is no Reply-To (Stalwart's behaviour).
      from: f === undefined ? undefined : { email: emailAddress(f.address ?? ''), name: (f.name ?? '').toLowerCase() },
      replyTo: r?.address === undefined ? undefined : { email: emailAddress(r.address), name: nonEmpty(r.name ?? '') },
      to,
      cc,
      bcc,
    });
  }

  /** The text parts as the element sets and the `body.*` variables read them. */
  get body(): ParsedBody {
    return this.view.body;
  }

  /** First address of the last From header; undefined without one. */
  get from(): Recipient | undefined {
    return this.addresses().from;
  }
  /** First address of the last Reply-To header; undefined without one. */
  get replyTo(): Recipient | undefined {
    return this.addresses().replyTo;
  }
  get to(): Recipient[] {
    return this.addresses().to;
  }
  get cc(): Recipient[] {
    return this.addresses().cc;
  }
  get bcc(): Recipient[] {
    return this.addresses().bcc;
  }
  /** RFC 2047-decoded Subject of the last Subject header ("" when absent); computed once. */
  get subjectText(): string {
    if (this.subjectMemo === undefined) {
      let subj: RawHeader | undefined;
      for (const h of this.headers) if (isNamed(h.name, 'subject')) subj = h;
      // mail-parser's unstructured text: white space an encoded word produces is kept (SUBJECT_ENDS_SPACES).
      this.subjectMemo = subj === undefined ? '' : parseUnstructured(subj.raw);
    }
    return this.subjectMemo;
  }
  private subjectMemo: string | undefined;

  /**
   * mail-parser's `thread_name()` of {@link subjectText} (original case), computed once: the subject
   * module, the `subject.thread` variable and the classifier's subject tokens all read it.
   */
  get subjectThread(): string {
    return (this.subjectThreadMemo ??= threadName(this.subjectText));
  }
  private subjectThreadMemo: string | undefined;

  /** Subject tokens (original case), computed once. */
  subjectTokens(): ReturnType<typeof tokenize> {
    return (this.subjectTokensMemo ??= tokenize(this.subjectText, true));
  }

  /**
   * A generic variable's value (docs/message-analysis.md); `location` is the element's and is answered
   * by the element. Returns undefined for a name that is not generic.
   */
  generic(name: string): Value | undefined {
    const hit = this.memo.get(name);
    if (hit !== undefined) return hit;
    if (!GENERIC_VARIABLES.has(name)) return undefined;
    const t0 = performance.now();
    const v = this.compute(name);
    this.memo.set(name, v);
    this.lazyMs += performance.now() - t0;
    return v;
  }

  private compute(name: string): Value {
    const env = this.envelope;
    switch (name) {
      case 'remote_ip': return this.remoteIp;
      case 'remote_ip.ptr': return (env.iprevPtr ?? '').replace(/\.+$/, '').toLowerCase();
      case 'helo_domain': return this.heloHost;
      case 'authenticated_as': return env.authenticatedAs ?? '';
      case 'asn': return env.asn ?? 0;
      case 'country': return env.country ?? '';
      case 'is_tls': return env.isTls === false ? 0 : 1;
      case 'env_from': return this.envFrom.address;
      case 'env_from.local': return this.envFrom.local;
      case 'env_from.domain': return this.envFrom.domain.fqdn;
      case 'env_to': {
        // Stalwart's HashSet: deduplicated; we keep first-seen order so results are deterministic.
        const seen = new Set<string>();
        for (const r of env.rcptTo ?? []) {
          const a = r.replace(/^rfc822;/i, '').toLowerCase();
          seen.add(a);
        }
        return [...seen];
      }
      case 'from': return this.from?.email.address ?? '';
      case 'from.name': return this.from?.name ?? '';
      case 'from.local': return this.from?.email.local ?? '';
      case 'from.domain': return this.from?.email.domain.fqdn ?? '';
      case 'reply_to': return this.replyTo?.email.address ?? '';
      case 'reply_to.name': return this.replyTo?.name ?? '';
      case 'reply_to.local': return this.replyTo?.email.local ?? '';
      case 'reply_to.domain': return this.replyTo?.email.domain.fqdn ?? '';
      case 'body':
      case 'body.text': return this.body.textBody?.text ?? '';
      case 'body.html': return this.body.htmlBody?.isHtml === true ? this.body.htmlBody.text : '';
      case 'body.raw': return utf8.decode(this.raw);
      case 'body.words': {
        // The first html_body part (not text_body), as Stalwart reads it.
        const p = this.body.htmlBody;
        return p === undefined ? [] : p.tokens(true).words;
      }
      case 'subject': return this.subjectText.trim().toLowerCase();
      case 'subject.thread': return this.subjectThread.toLowerCase();
      case 'subject.words': return this.subjectTokens().words;
    }
    const dot = name.indexOf('.');
    const list = name.startsWith('to') ? this.to : name.startsWith('cc') ? this.cc : this.bcc;
    const field = dot < 0 ? '' : name.slice(dot + 1);
    const out: Value[] = [];
    for (const r of list) {
      if (field === '') out.push(r.email.address);
      else if (field === 'local') out.push(r.email.local);
      else if (field === 'domain') out.push(r.email.domain.fqdn);
      else if (r.name !== undefined) out.push(r.name);
    }
    return out;
  }
}

function nonEmpty(name: string): string | undefined {
  const t = name.trim().toLowerCase();
  return t.length > 0 ? t : undefined;
}

function pushRecipients(h: RawHeader, into: Recipient[]): void {
  for (const m of mailboxesOf(h)) {
    if (into.length >= 10_000) return;
    into.push({ email: emailAddress(m.address ?? ''), name: nonEmpty(m.name ?? '') });
  }
}
