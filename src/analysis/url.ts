/**
 * The `url` module: Stalwart's url analysis (`spam_filter_analyze_url`; docs/analysis.md "url"). Reads the
 * message's URL set (the Url scope's elements: subject and text-part URL tokens, HTML `href`/`src` values),
 * follows redirector URLs when enabled, and tags:
 * RCPT_DOMAIN_IN_BODY, URL_ONLY, ZERO_WIDTH_SPACE_URL, SUSPICIOUS_URL, UNPARSABLE_URL, REDIRECTOR_URL,
 * URL_REDIRECTOR_NESTED, HOMOGRAPH_URL, MIXED_CHARSET_URL, plus the Ip DNSBL tags of IP hosts, the Domain
 * DNSBL tags of URL hosts' registrable domains and the Url DNSBL tags. Training mode keeps only the
 * collection. Redirect targets join the URL set with the location of the URL that led to them.
 */
import { ipExists } from '../dns/index.js';
import { OffResolver } from '../dns/off.js';
import type { Value } from '../expr/value.js';
import { addUrl, extractUrls, type UrlElement } from '../message/elements.js';
import { hostname, sldOrDefault } from '../message/hostname.js';
import type { HtmlToken } from '../message/html-tokens.js';
import { confusableCureAvailable, cureConfusables, isMixedCharset, isObscured, isZeroWidth } from '../message/scripts.js';
import type { Location } from '../message/types.js';
import { urlParts } from '../message/url.js';
import { AddressPolicy, dnsHostResolver } from '../net/index.js';
import { checkDnsbl, dnsblDisabled, ipBytes, ipVariable } from './dnsbl.js';
import { trustedDomain, urlRedirector } from './lists.js';
import { DEFAULT_HOP_TIMEOUT_MS, DEFAULT_MAX_HOPS, httpFetcher, testModeFetcher, type HttpFetcherOptions, type LocationFetcher } from './redirect.js';
import type { AnalysisContext, FollowRedirects } from './types.js';

/** Redirector URLs followed per message at most (each costs up to maxHops requests); the rest are only tagged. */
export const MAX_FOLLOWED_REDIRECTORS = 10;

const URL_VARIABLES = new Set(['url', 'value', 'url_original', 'path_query', 'path', 'query', 'scheme', 'authority', 'host', 'sld', 'port']);

export async function url(ctx: AnalysisContext): Promise<void> {
  const m = ctx.message;
  const urls = extractUrls(m, (w) => ctx.warn(w)) as UrlElement[];
  if (ctx.session.train) return;
  bodyChecks(ctx);

  // Per-URL checks over the collected set; redirect targets are merged afterwards.
  const fetcher = fetcherOf(ctx);
  const targets: { url: string; location: Location }[] = [];
  const followed = { count: 0, warned: false };
  const ipOn = !dnsblDisabled(ctx, 'Ip');
  const work: Promise<void>[] = [];
  for (const el of [...urls]) {
    const p = el.parts;
    for (const ch of p.url) {
      const cp = ch.codePointAt(0)!;
      if (cp < 0x80) continue;
      if (isZeroWidth(cp)) ctx.tag('ZERO_WIDTH_SPACE_URL');
      if (isObscured(cp)) ctx.tag('SUSPICIOUS_URL');
    }
    if (!p.url.includes('://')) continue;
    if (p.host === '') {
      ctx.tag('UNPARSABLE_URL');
      continue;
    }
    work.push(
      (async () => {
        if (await trustedDomain(ctx, p.sld)) return;
        const h = hostname(p.host);
        if (h.ip !== undefined) {
          if (ipOn) {
            const bytes = ipBytes(h.ip);
            await checkDnsbl(ctx, 'Ip', (name) => ipVariable(h.ip!, bytes, name), el.location);
          }
        } else if (await urlRedirector(ctx, p.sld)) {
          ctx.tag('REDIRECTOR_URL');
          if (fetcher === undefined || ctx.hasTag('URL_REDIRECTOR_NESTED')) return;
          if (followed.count >= MAX_FOLLOWED_REDIRECTORS) {
            if (!followed.warned) ctx.warn(`redirects of more than ${MAX_FOLLOWED_REDIRECTORS} redirector URLs not followed`);
            followed.warned = true;
            return;
          }
          followed.count++;
          const target = await follow(ctx, fetcher, p.url);
          if (target !== undefined) targets.push({ url: target, location: el.location });
        }
      })(),
    );
  }
  await Promise.all(work);
  for (const t of targets) addUrl(m, t.url, t.location);

  // Checks over every parsed URL of the merged set (trusted hosts and non-`://` URLs included).
  const domainOn = !dnsblDisabled(ctx, 'Domain');
  const urlOn = !dnsblDisabled(ctx, 'Url');
  const homographs = new Map<string, Promise<boolean>>();
  const checks: Promise<void>[] = [];
  for (const el of extractUrls(m, (w) => ctx.warn(w)) as UrlElement[]) {
    const p = el.parts;
    if (p.host === '') continue;
    const h = hostname(p.host);
    if (h.ip === undefined) {
      if (!isAscii(h.fqdn)) {
        let homograph = homographs.get(h.fqdn);
        if (homograph === undefined) {
          homograph = isHomograph(ctx, h.fqdn);
          homographs.set(h.fqdn, homograph);
        }
        checks.push(homograph.then((yes) => (yes ? ctx.tag('HOMOGRAPH_URL') : undefined)));
        if (isMixedCharset(h.fqdn)) ctx.tag('MIXED_CHARSET_URL');
      }
      const sld = h.sld;
      if (sld !== undefined && domainOn) checks.push(checkDnsbl(ctx, 'Domain', () => sld, el.location));
    } else {
      ctx.tag('SUSPICIOUS_URL');
    }
    if (urlOn) {
      const own = (name: string): Value | undefined => (URL_VARIABLES.has(name) ? el.variable(name) : undefined);
      checks.push(checkDnsbl(ctx, 'Url', own, el.location));
    }
  }
  await Promise.all(checks);
}

/** RCPT_DOMAIN_IN_BODY and URL_ONLY: tests on the URL tokens of body parts. */
function bodyChecks(ctx: AnalysisContext): void {
  const m = ctx.message;
  const rcptSlds = new Set<string>();
  for (const list of [m.to, m.cc, m.bcc]) for (const r of list) rcptSlds.add(sldOrDefault(r.email.domain));
  for (const part of m.body.parts) {
    if (part.location === 'attachment') continue;
    const tokens = part.tokens();
    if (rcptSlds.size > 0 && !ctx.hasTag('RCPT_DOMAIN_IN_BODY')) {
      for (const u of tokens.urls) {
        const p = urlParts(u, !u.includes('://'));
        if (p.host !== '' && rcptSlds.has(p.sld)) {
          ctx.tag('RCPT_DOMAIN_IN_BODY');
          break;
        }
      }
    }
    // A "single URL" part: one URL token, at most one word (e-mail tokens count as words), and for HTML
    // exactly one `<a>` start tag with an `href` attribute.
    if (tokens.urls.length === 1 && tokens.emails.length <= 1 && part.tokens(true).words.length + tokens.emails.length <= 1) {
      if (!part.isHtml || anchorsWithHref(part.htmlTokens().tokens) === 1) ctx.tag('URL_ONLY');
    }
  }
}

function anchorsWithHref(tokens: readonly HtmlToken[]): number {
  let n = 0;
  for (const t of tokens) {
    if (t.type === 'StartTag' && t.name === 'a' && t.attributes.some(([name]) => name === 'href')) n++;
  }
  return n;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** The confusable-folded host differs and resolves (A, then AAAA): a look-alike of an existing name. */
async function isHomograph(ctx: AnalysisContext, fqdn: string): Promise<boolean> {
  if (!confusableCureAvailable()) {
    ctx.warn('decancer is not available on this platform: HOMOGRAPH_URL is not checked');
    return false;
  }
  const cured = cureConfusables(fqdn);
  if (cured === undefined || cured === fqdn || cured === '' || ctx.dns instanceof OffResolver) return false;
  return (await ipExists(ctx.dns, cured)) === true;
}

/** Each configuration's address policy, parsed once (the configuration outlives its messages). */
const policies = new WeakMap<object, AddressPolicy>();
const PUBLIC_ONLY = new AddressPolicy();

function policyOf(f: FollowRedirects): AddressPolicy {
  if (typeof f !== 'object' || f.allowedNetworks === undefined || f.allowedNetworks.length === 0) return PUBLIC_ONLY;
  let p = policies.get(f);
  if (p === undefined) policies.set(f, (p = new AddressPolicy(f.allowedNetworks)));
  return p;
}

function fetcherOf(ctx: AnalysisContext): LocationFetcher | undefined {
  if (ctx.config.testMode?.httpRedirect === true) return testModeFetcher;
  const f = ctx.config.followRedirects;
  if (f === undefined || f === false) return undefined;
  if (ctx.dns instanceof OffResolver) {
    // No fallback to the system's resolver: "DNS off" means this process resolves nothing.
    let warned = false;
    return () => {
      if (!warned) ctx.warn('redirects are not followed: DNS is off, so redirector hosts cannot be resolved');
      warned = true;
      return Promise.resolve(undefined);
    };
  }
  const o = typeof f === 'object' ? f : {};
  const opts: HttpFetcherOptions = {
    timeoutMs: o.timeoutMs ?? DEFAULT_HOP_TIMEOUT_MS,
    resolve: dnsHostResolver(ctx.dns),
    policy: policyOf(f),
    wait: (p) => ctx.networkWait(p),
    onRefused: (u, why) => ctx.warn(`redirect not followed: ${u.length > 200 ? `${u.slice(0, 200)}…` : u}: ${why}`),
  };
  if (o.ports !== undefined) opts.ports = o.ports;
  return httpFetcher(opts);
}

function maxHopsOf(ctx: AnalysisContext): number {
  const f = ctx.config.followRedirects;
  const n = typeof f === 'object' ? f.maxHops : undefined;
  return typeof n === 'number' && n >= 1 ? Math.floor(n) : DEFAULT_MAX_HOPS;
}

/**
 * Follows a redirector URL: each hop reads the Location; a Location on another redirector is fetched next,
 * any other Location with a host is the target. Past the last hop: URL_REDIRECTOR_NESTED, no target.
 */
async function follow(ctx: AnalysisContext, fetcher: LocationFetcher, start: string): Promise<string | undefined> {
  const hops = maxHopsOf(ctx);
  let next = start;
  for (let hop = 1; hop <= hops; hop++) {
    // The fetcher counts its HTTP wait itself (networkWait); its DNS wait is the message's DNS budget's.
    const location = await fetcher(next);
    if (location === undefined) return undefined;
    const p = urlParts(location, false);
    if (p.host === '') return undefined;
    if (!(await urlRedirector(ctx, p.sld))) return location;
    if (hop === hops) ctx.tag('URL_REDIRECTOR_NESTED');
    next = p.url;
  }
  return undefined;
}
