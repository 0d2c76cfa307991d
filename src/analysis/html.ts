/**
 * The `html` module: Stalwart's HTML checks (`spam_filter_analyze_html`, docs/analysis.md "html"):
 * links whose text names another site (PHISHING) or https for an http link, links to IPs, data URIs,
 * external images and style sheets, meta refresh, unbalanced head/body, and the text/image ratio and
 * length of the HTML body. Reads each HTML part's tokens from Stalwart's tokenizer
 * (src/message/html-tokens.ts) through the message's text parts; no DNS, no lists.
 */
import { hostname } from '../message/hostname.js';
import type { HtmlStartTag } from '../message/html-tokens.js';
import { mimeView, type TextPart } from '../message/text-parts.js';
import { tokenize } from '../message/tokenizer.js';
import { urlParts, type UrlParts } from '../message/url.js';
import type { AnalysisContext } from './types.js';

/** Words that are Stalwart's `Alphabetic`/`Alphanumeric` tokens (not numbers). */
const HAS_NON_NUMBER = /[^\p{N}.]/u;
const SCHEME_URL = /^[A-Za-z0-9]{1,8}(?:\+[A-Za-z0-9]+)?:\/\//;
const U64 = /^\+?[0-9]{1,20}$/;

/** Rust `u64::from_str`: ASCII digits with an optional `+`; undefined when not a u64. */
function parseU64(s: string): number | undefined {
  if (!U64.test(s)) return undefined;
  const v = BigInt(s);
  return v > 0xffffffffffffffffn ? undefined : Number(v);
}

/** The value of the first attribute `name` that has one. */
function attr(tag: HtmlStartTag, name: string): string | undefined {
  for (const [k, v] of tag.attributes) if (k === name && v !== null) return v;
  return undefined;
}

interface Href {
  readonly url: UrlParts;
  /** The parsed URL has a host. */
  readonly hasHost: boolean;
}

export function html(ctx: AnalysisContext): void {
  const { message, textParts } = mimeView(ctx.message);
  const rootCt = message.parts[0]?.contentType;
  if (rootCt?.type === 'text' && rootCt.subtype === 'html') ctx.tag('MIME_HTML_ONLY');
  for (const part of textParts) {
    if (part !== undefined && part.isHtml) htmlPart(ctx, part);
  }
}

function htmlPart(ctx: AnalysisContext, part: TextPart): void {
  const isBody = part.isBody;
  const { tokens, truncated } = part.htmlTokens();
  if (truncated) ctx.warn(`HTML part cut after ${tokens.length} tokens`);
  let lastHref: Href | undefined;
  let hasLinkToImg = false;
  let imgWords = 0;
  let inHead = 0;
  let inBody = 0;

  for (const t of tokens) {
    if (t.type === 'StartTag') {
      switch (t.name) {
        case 'a': {
          const raw = attr(t, 'href');
          if (raw === undefined) break;
          const url = urlParts(raw, false);
          const hasHost = url.host !== '';
          if (isBody && raw.startsWith('data:') && raw.includes(';base64,')) {
            ctx.tag('HAS_DATA_URI');
            if (raw.includes('text/')) ctx.tag('DATA_URI_OBFU');
          } else if (hasHost && hostname(url.host).ip !== undefined) {
            ctx.tag('HTTP_TO_IP');
          }
          if (!t.selfClosing) lastHref = { url, hasHost };
          break;
        }
        case 'img': {
          if (!isBody) break;
          let width = 800;
          let height = 600;
          for (const [k, v] of t.attributes) {
            const value = v?.trim() ?? '';
            if (value === '') continue;
            if (k === 'width' || k === 'height') {
              const cur = k === 'width' ? width : height;
              let next = cur;
              if (value.endsWith('%')) {
                const p = parseU64(value.slice(0, -1).trim());
                if (p !== undefined) next = Math.floor((cur * p) / 100);
              } else {
                const n = parseU64(value);
                if (n !== undefined) next = n;
              }
              if (k === 'width') width = next;
              else height = next;
            } else if (k === 'src') {
              const src = value.toLowerCase();
              if (src.startsWith('data:') && src.includes(';base64,')) ctx.tag('HAS_DATA_URI');
              else if (src.startsWith('https://') || src.startsWith('http://')) ctx.tag('HAS_EXTERNAL_IMG');
            }
          }
          const dims = width + height;
          if (lastHref !== undefined) {
            if (dims >= 210) {
              ctx.tag('HAS_LINK_TO_LARGE_IMG');
              hasLinkToImg = true;
            } else {
              ctx.tag('HAS_LINK_TO_IMG');
            }
          }
          if (dims > 100) imgWords += Math.floor(dims / 100);
          break;
        }
        case 'meta': {
          let refresh = false;
          let url = false;
          for (const [k, v] of t.attributes) {
            const value = v?.trim() ?? '';
            if (value === '') continue;
            if (k === 'http-equ') refresh ||= value.toLowerCase() === 'refresh';
            else if (k === 'content') url ||= value.toLowerCase().includes('url=');
          }
          if (refresh && url) ctx.tag('HTML_META_REFRESH_URL');
          break;
        }
        case 'link': {
          if (!isBody) break;
          for (const [k, v] of t.attributes) {
            const value = v?.trim() ?? '';
            if (value === '') continue;
            if ((k === 'rel' && value.toLowerCase().includes('stylesheet')) || (k === 'href' && value.toLowerCase().includes('.css'))) {
              ctx.tag('EXT_CSS');
            }
          }
          break;
        }
        case 'head':
          if (!t.selfClosing) inHead++;
          break;
        case 'body':
          if (!t.selfClosing) inBody++;
          break;
      }
    } else if (t.type === 'EndTag') {
      if (t.name === 'a') lastHref = undefined;
      else if (t.name === 'head') inHead--;
      else if (t.name === 'body') inBody--;
    } else if (t.type === 'Text' && inHead === 0 && lastHref !== undefined && lastHref.hasHost) {
      linkText(ctx, lastHref.url, t.text);
    }
  }

  if (!isBody) return;
  if (inHead !== 0 || inBody !== 0) ctx.tag('HTML_UNBALANCED_TAG');
  const tk = part.tokens(true);
  let words = 0;
  let chars = 0;
  for (const w of tk.words) {
    if (!HAS_NON_NUMBER.test(w)) continue;
    words++;
    chars += Buffer.byteLength(w, 'utf8');
  }
  for (const e of tk.emails) {
    words++;
    chars += Buffer.byteLength(e.toLowerCase(), 'utf8');
  }
  const uris = tk.urls.length;
  if (chars < 1024) ctx.tag('HTML_SHORT_1');
  else if (chars < 1536) ctx.tag('HTML_SHORT_2');
  else if (chars < 2048) ctx.tag('HTML_SHORT_3');
  if ((!hasLinkToImg || chars >= 2048) && imgWords / (words + imgWords) > 0.5) ctx.tag('HTML_TEXT_IMG_RATIO');
  if (uris > 0 && words === 0) ctx.tag('BODY_URI_ONLY');
}

/** The URLs written in a link's text against the link's own URL (HTTP_TO_HTTPS, PHISHING). */
function linkText(ctx: AnalysisContext, href: UrlParts, text: string): void {
  const hrefSite = href.sld;
  for (const u of textUrls(text)) {
    const parsed = urlParts(SCHEME_URL.test(u) ? u.toLowerCase() : 'http://' + u.toLowerCase(), false);
    if (parsed.host === '') continue;
    if (href.scheme === 'http' && parsed.scheme === 'https') ctx.tag('HTTP_TO_HTTPS');
    if (parsed.sld !== hrefSite) ctx.tag('PHISHING');
  }
}


function textUrls(text: string): readonly string[] {
  // Cheap pre-check: a URL token needs a '.' or "://".
  if (!text.includes('.') && !text.includes('://')) return [];
  return tokenize(text, false).urls;
}
