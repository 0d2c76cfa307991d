/**
 * Stalwart's classifier token builder (`spam_build_tokens`; docs/classifier.md "Tokens"): sender,
 * authentication and network facts, URLs, host names, MIME types and attachment names, subject, body
 * text and HTML attributes become a map from token to count.
 *
 * It reads what the message analysis already built and shares it with the url and domain modules: the
 * URL set (`extractUrls`), the e-mail set (`extractEmails`), the Domain set's host entries
 * (`extractHostDomains`: the set itself is not built for them) and the MIME tree with its text parts
 * (`mimeView`, whose HTML parts carry Stalwart's `html_to_tokens`).
 */
import type { MessageContext } from '../message/context.js';
import { extractEmails, extractHostDomains, extractUrls, type EmailElement, type UrlElement } from '../message/elements.js';
import { emailAddress, hostname, sldOrDefault, type EmailAddress } from '../message/hostname.js';
import { confusableCureAvailable } from '../message/scripts.js';
import { mimeView, type TextPart } from '../message/text-parts.js';
import { languageDetectorLoaded, loadLanguageDetector, preloadLanguageResources, WordStemTokenizer } from './language.js';
import { xxh3, type ClassifierModel } from './model.js';
import { compositeBudget, T, TypedTokens, type CompositeBudget } from './tokenizer.js';
import { internBoundary, internKind, KIND, TokCounter, truncate16, type TokenMap } from './tokens.js';
import { warmUpTokenBuilder } from './warm-up.js';
import { addUrlPathWords, insertType } from './words.js';

/** Facts of the SMTP session the builder reads (train mode: recovered from `X-Spam-Result`). */
export interface TokenFacts {
  /** DMARC result: `pass`, another result, or null (none known). */
  dmarcPass: boolean | null;
  asn: number | null;
  /** Envelope sender (empty: none). */
  envFrom: string;
}

/** Is this domain trusted (`trusted-domains`, local domains)? May answer asynchronously. */
export type TrustCheck = (domain: string) => boolean | Promise<boolean>;

/**
 * Train mode (Stalwart's `from_message(..).train_mode()`): no envelope; DMARC and ASN from the words
 * of the first header named exactly `X-Spam-Result` (`DMARC_POLICY_ALLOW` → pass, any other `DMARC_*`
 * → not pass, `SOURCE_ASN_<n>` → ASN).
 */
export function trainFacts(m: MessageContext): TokenFacts {
  const facts: TokenFacts = { dmarcPass: null, asn: null, envFrom: '' };
  const h = m.headers.find((x) => x.name === 'X-Spam-Result');
  if (h === undefined) return facts;
  for (const w of h.raw.split(/[\t\n\v\f\r ]+/)) {
    if (w.startsWith('DMARC_')) facts.dmarcPass = w === 'DMARC_POLICY_ALLOW';
    else if (w.startsWith('SOURCE_ASN_') && /^[0-9]{1,10}$/.test(w.slice(11))) {
      const n = Number(w.slice(11));
      if (n <= 0xffffffff) facts.asn = n;
    }
  }
  return facts;
}

const EMAIL_LOCATIONS = new Set(['body_text', 'body_html', 'attachment', 'subject']);

let preloaded: Promise<void> | undefined;

/**
 * Loads what the token builder and prediction otherwise load on first use (language detector, stemmers,
 * stop words, segmenters, decancer, the XXH3 addon), then warms up the token builder's code on made-up
 * texts (warm-up.ts; with a prediction by `model` when given), once per thread. A classifier calls it
 * when it gets its first model: a long-running process then pays at start (about 1.5 s per thread, 0.4 s of
 * it the warm-ups), not on its first messages.
 */
export function preloadClassifierResources(model?: ClassifierModel): Promise<void> {
  return (preloaded ??= preloadLanguageResources().then(() => {
    confusableCureAvailable();
    xxh3();
    warmUpTokenBuilder(model);
  }));
}

/** Builds the token map of an analysed message. Never throws for a bad message (limits bound the work). */
export async function buildTokens(m: MessageContext, facts: TokenFacts, trusted: TrustCheck): Promise<TokenMap> {
  return withTokenCounts(m, facts, trusted, (counts) => {
    const map: TokenMap = new Map();
    for (let i = 0; i < counts.toks.length; i++) map.set(counts.key(i), counts.counts[i]!);
    return map;
  });
}

/**
 * {@link buildTokens} with interned tokens (the classify path: each token's hash is kept with it). The
 * counts are those of `buildTokens`, in the same order. Their ids are valid until the intern table
 * restarts, which another message's build may do at any await: read them at once, or use
 * {@link withTokenCounts}.
 */
export async function buildTokenCounts(m: MessageContext, facts: TokenFacts, trusted: TrustCheck): Promise<TokCounter> {
  return withTokenCounts(m, facts, trusted, (counts) => counts);
}

/**
 * Builds the interned token counts of a message and hands them to `use` in the same synchronous run: no
 * other message's build can restart the intern table in between (the ids would then name other tokens),
 * as it could while a caller awaited the counts. Gives what `use` returns, or a promise of it.
 *
 * The build is one synchronous pass when every trust answer is synchronous (a static `trusted-domains`
 * list, training). When some answer is a promise (a store), that pass is dropped, all such answers are
 * awaited together (one round of lookups, not one per address, URL and host), and the pass runs again
 * with them: the same counts in the same order. Answers synchronously (no promise, no microtask turn)
 * when the build is synchronous and the language detector is loaded; `use` may then throw to the caller.
 */
export function withTokenCounts<T>(m: MessageContext, facts: TokenFacts, trusted: TrustCheck, use: (counts: TokCounter) => T): T | Promise<T> {
  if (!languageDetectorLoaded()) return loadLanguageDetector().then(() => withTokenCounts(m, facts, trusted, use));
  const ask = new TrustAnswers(trusted);
  const counts = buildCounts(m, facts, ask);
  return counts !== undefined ? use(counts) : withSettledTrust(m, facts, ask, use);
}

/** One synchronous build; `undefined` when a trust answer was a promise (`ask.pending`). */
function buildCounts(m: MessageContext, facts: TokenFacts, ask: TrustAnswers): TokCounter | undefined {
  // No await from here to `use`: the intern table may restart here, never while this message is half built.
  internBoundary();
  const map = new TokCounter(0);
  factTokens(m, facts, ask, map);
  if (ask.pending !== undefined) return undefined;
  textTokens(m, map);
  return map;
}

async function withSettledTrust<T>(m: MessageContext, facts: TokenFacts, ask: TrustAnswers, use: (counts: TokCounter) => T): Promise<T> {
  for (;;) {
    await ask.settle();
    const counts = buildCounts(m, facts, ask);
    if (counts !== undefined) return use(counts);
  }
}

/**
 * The trust answers of one build: synchronous answers are used at once; a promised answer is recorded
 * ({@link pending}) and counts as "not trusted" until {@link settle} has it, after which the build runs
 * again. A rejected promise rejects the build.
 */
class TrustAnswers {
  pending: Promise<void>[] | undefined;
  private settled: Map<string, boolean> | undefined;
  /** Domains whose promised answer is awaited: a domain a message repeats (many links to one site) is asked once. */
  private asked: Set<string> | undefined;

  constructor(private readonly trusted: TrustCheck) {}

  is(domain: string): boolean {
    const known = this.settled?.get(domain);
    if (known !== undefined) return known;
    if (this.asked?.has(domain) === true) return false;
    const t = this.trusted(domain);
    if (typeof t === 'boolean') return t;
    const settled = (this.settled ??= new Map());
    (this.asked ??= new Set()).add(domain);
    (this.pending ??= []).push(t.then((v) => void settled.set(domain, v)));
    return false;
  }

  async settle(): Promise<void> {
    const p = this.pending ?? [];
    this.pending = undefined;
    await Promise.all(p);
  }
}

/** Adds the token of `kind` and `value` with count 1 unless the message has it already (e-mail address tokens). */
function addOnce(map: TokCounter, kind: number, value: string): void {
  const tok = internKind(kind, value);
  if (!map.has(tok)) map.add(tok);
}

/** The sender, kind `kind`, tokens of an address (count 1 each): address, domain, registrable domain. */
function senderTokens(map: TokCounter, e: EmailAddress, kind: number): void {
  if (e.address === '') return;
  addOnce(map, kind, e.address);
  addOnce(map, kind, e.domain.fqdn);
  const sld = e.domain.sld;
  if (sld !== undefined && sld !== e.domain.fqdn) addOnce(map, kind, sld);
}

function noWarn(): void {}

/** Sender, authentication and network tokens, in the builder's order, into `map`. */
function factTokens(m: MessageContext, facts: TokenFacts, trust: TrustAnswers, map: TokCounter): void {
  if (facts.dmarcPass === false) map.add(internKind(KIND.sender, '!'));
  if (facts.envFrom !== '') senderTokens(map, emailAddress(facts.envFrom), KIND.sender);
  if (m.from !== undefined) senderTokens(map, m.from.email, KIND.sender);
  const emails = extractEmails(m, noWarn) as EmailElement[];
  for (const e of emails) {
    if (e.location === 'reply_to' || e.location === 'dnt') senderTokens(map, e.email, KIND.sender);
    else if (EMAIL_LOCATIONS.has(e.location)) {
      const s = sldOrDefault(e.email.domain);
      if (s === '' || e.email.domain.sld === undefined) continue;
      if (!trust.is(s)) senderTokens(map, e.email, KIND.email);
    }
  }
  for (const u of extractUrls(m, noWarn) as UrlElement[]) {
    const p = u.parts;
    if (p.host === '' || trust.is(p.sld)) continue;
    // urlParts normalised the host already: `host` is hostname()'s fqdn, `sld` its sld or else that fqdn.
    map.add(internKind(KIND.url, p.sld));
    if (p.host !== p.sld) map.add(internKind(KIND.url, p.host));
    addUrlPathWords(map, p.path);
  }
  for (const d of extractHostDomains(m)) {
    const h = d.host ?? hostname(d.label);
    const s = sldOrDefault(h);
    if (trust.is(s)) continue;
    if (s !== '' && s !== h.fqdn) map.add(internKind(KIND.hostname, s));
    map.add(internKind(KIND.hostname, h.fqdn));
  }
  if (facts.asn !== null) {
    const a = facts.asn >>> 0;
    map.add(internKind(KIND.asn, String.fromCharCode((a >>> 24) & 255, (a >>> 16) & 255, (a >>> 8) & 255, a & 255)));
  }
}

/** MIME, subject and body tokens into `map` (synchronous: see {@link buildTokenCounts}). */
function textTokens(m: MessageContext, map: TokCounter): void {
  // One look-ahead for the composite tokens of all the message's texts: a message of many small hostile
  // parts costs no more than one large one (MAX_COMPOSITE_LOOKAHEAD).
  const budget = compositeBudget();
  // MIME parts: attachment names and content types.
  const view = mimeView(m);
  for (const part of view.message.parts) {
    const name = part.attachmentName;
    const dot = name === undefined ? -1 : name.lastIndexOf('.');
    if (name !== undefined && dot >= 0) {
      const ext = name.slice(dot + 1);
      if (ext !== '') map.add(internKind(KIND.attachment, '!' + truncate16(ext).toLowerCase()));
      const base = name.slice(0, dot).toLowerCase();
      const stems = new WordStemTokenizer(base);
      for (const t = new TypedTokens(base, true, false, budget); t.next(); ) {
        if (t.type !== T.Alphabetic) continue;
        for (const s of stems.tokenize(t.text)) map.add(internKind(KIND.attachment, '_' + truncate16(s)));
      }
    }
    const ct = part.contentType;
    if (ct !== undefined) {
      const v = ct.type.toLowerCase() + (ct.subtype !== undefined ? '/' + ct.subtype.toLowerCase() : '');
      map.add(internKind(KIND.mime_type, v));
    }
  }

  // Subject.
  const subjectStems = new WordStemTokenizer(m.subjectThread.trim().toLowerCase());
  for (const t = new TypedTokens(m.subjectText, false, false, budget); t.next(); ) insertType(map, t, subjectStems, false);

  // Body text parts: the body part, other non-body parts, and alternatives (merged when absent).
  const msg = view.message;
  const bodyIdx = msg.htmlBody[0] ?? msg.textBody[0];
  const alt = new TokCounter(1);
  const parts = view.textParts;
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i];
    if (entry === undefined) continue;
    const isBody = i === bodyIdx && entry.partIndex >= 0;
    const inBody = msg.textBody.includes(i) || msg.htmlBody.includes(i);
    partTokens(isBody || entry.partIndex < 0 || !inBody ? map : alt, map, entry, isBody, budget);
  }
  for (let i = 0; i < alt.toks.length; i++) if (!map.has(alt.toks[i]!)) map.add(alt.toks[i]!, alt.counts[i]!);
}

/**
 * The tokens of one text part into `target` (the message's counter, or the alternatives' one); the body
 * part also gives `_null` (no word) and its HTML `a`/`img` attributes into `map`. `budget`: the message's
 * look-ahead for composite tokens.
 */
function partTokens(target: TokCounter, map: TokCounter, entry: TextPart, isBody: boolean, budget: CompositeBudget): void {
  const text = entry.text;
  const stems = new WordStemTokenizer(text);
  let alphabetic = false;
  for (const t = new TypedTokens(text, false, false, budget); t.next(); ) {
    if (t.type === T.Alphabetic) alphabetic = true;
    insertType(target, t, stems, isBody);
  }
  if (!isBody) return;
  if (!alphabetic) map.add(internKind(KIND.word, '_null'));
  if (!entry.isHtml) return;
  for (const tok of entry.htmlTokens().tokens) {
    if (tok.type !== 'StartTag' || (tok.name !== 'a' && tok.name !== 'img')) continue;
    for (const [an, av] of tok.attributes) {
      if (av === null) continue;
      if (an === 'alt' || an === 'title') {
        for (const t = new TypedTokens(av, true, false, budget); t.next(); ) insertType(map, t, stems, true);
      } else if (an === 'src' || an === 'href') {
        const colon = av.indexOf(':');
        map.add(internKind(an === 'src' ? KIND.html_image : KIND.html_anchor, colon >= 0 ? av.slice(0, colon) : ''));
      }
    }
  }
}
