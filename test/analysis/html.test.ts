/**
 * The html module over real messages: link checks (PHISHING, HTTP_TO_HTTPS, HTTP_TO_IP, data URIs),
 * images, meta refresh, style sheets, head/body balance and the text-length and text/image tags,
 * plus a 10 MB HTML part.
 */
import { describe, expect, it } from 'vitest';
import { mail, multipart, runContent } from './mime-html-harness.js';

const FROM = 'From: Alice <alice@example.com>';
const MV = 'MIME-Version: 1.0';

/** An HTML-only message (MIME_HTML_ONLY is then always among the tags). */
function htmlMail(html: string): string {
  return mail([FROM, MV, 'Content-Type: text/html; charset=utf-8'], html);
}

/** multipart/alternative with a plain part and this HTML part (no MIME_HTML_ONLY). */
function altMail(html: string, plain = 'See the HTML part.'): string {
  return mail([FROM, MV, 'Content-Type: multipart/alternative; boundary="b"'], multipart('b', [
    [['Content-Type: text/plain; charset=utf-8'], plain],
    [['Content-Type: text/html; charset=utf-8'], html],
  ]));
}

async function tags(message: string): Promise<string[]> {
  const r = await runContent('html', message);
  expect(r.errors).toEqual([]);
  return r.tags;
}

const WORDS = (n: number): string => Array.from({ length: n }, (_, i) => `word${i % 10}x`).join(' ');

describe('html: links', () => {
  it('PHISHING when the link text names another site; sub-domains of the same site are fine', async () => {
    expect(await tags(altMail('Sign in: <a href="https://www.example.com/login">https://www.example.net/login</a>'))).toEqual(['HTML_SHORT_1', 'PHISHING']);
    expect(await tags(altMail('Sign in: <a href="https://example.co.uk/x">secure.example.co.uk/y</a>'))).toEqual(['HTML_SHORT_1']);
    expect(await tags(altMail('<a href="https://example.com/">Click here</a>'))).toEqual(['HTML_SHORT_1']);
    // Text in <head> and text after </a> is not link text.
    expect(await tags(altMail('<a href="https://example.com/">here</a> www.other.org'))).toEqual(['HTML_SHORT_1']);
    // Single quotes are part of the value: the href does not parse, so the text is not compared.
    expect(await tags(altMail("Sign in: <a href='https://example.com/'>https://other.org/</a>"))).toEqual(['HTML_SHORT_1']);
    // A cid: link parses as an authority with the host "cid" (http::Uri does not check the port "image1"),
    // so the site the text names is another one. Before, the link had no host and nothing was compared.
    expect(await tags(altMail('Sign in: <a href="cid:image1">www.paypal.com</a>'))).toEqual(['HTML_SHORT_1', 'PHISHING']);
  });

  it('HTTP_TO_HTTPS when an http link shows an https URL', async () => {
    expect(await tags(altMail('Go to <a href="http://example.com/">https://example.com/</a>'))).toEqual(['HTML_SHORT_1', 'HTTP_TO_HTTPS']);
    expect(await tags(altMail('Go to <a href="https://example.com/">https://example.com/</a>'))).toEqual(['HTML_SHORT_1']);
  });

  it('HTTP_TO_IP for links to IP literals', async () => {
    expect(await tags(altMail('<a href="http://192.0.2.7/login.php">Log in</a>'))).toEqual(['HTML_SHORT_1', 'HTTP_TO_IP']);
    expect(await tags(altMail('<a href="http://[2001:db8::1]/">Log in</a>'))).toEqual(['HTML_SHORT_1', 'HTTP_TO_IP']);
  });

  it('HAS_DATA_URI / DATA_URI_OBFU for data: links and images (body parts)', async () => {
    expect(await tags(altMail('<a href="data:text/html;base64,PGgxPmhpPC9oMT4=">open</a>'))).toEqual(['DATA_URI_OBFU', 'HAS_DATA_URI', 'HTML_SHORT_1']);
    expect(await tags(altMail('<a href="data:image/png;base64,iVBORw0KGgo=">open</a>'))).toEqual(['HAS_DATA_URI', 'HTML_SHORT_1']);
    // The link check is case-sensitive; the image check lower-cases.
    expect(await tags(altMail('<a href="DATA:text/html;base64,PGgxPg==">open</a>'))).toEqual(['HTML_SHORT_1']);
    expect(await tags(altMail('<img src="DATA:image/png;BASE64,iVBORw0KGgo=" width=1 height=1>'))).toEqual(['HAS_DATA_URI', 'HTML_SHORT_1']);
  });
});

describe('html: images, meta, style sheets', () => {
  it('HAS_EXTERNAL_IMG; HAS_LINK_TO_IMG / HAS_LINK_TO_LARGE_IMG by the image size', async () => {
    expect(await tags(altMail(`<p>${WORDS(20)}</p><img src="https://img.example.com/a.png" width=10 height=10>`))).toEqual(['HAS_EXTERNAL_IMG', 'HTML_SHORT_1']);
    expect(await tags(altMail(`<p>${WORDS(20)}</p><a href="https://example.com/"><img src="cid:a" width=100 height=100></a>`))).toEqual(['HAS_LINK_TO_IMG', 'HTML_SHORT_1']);
    // Default size 800x600; percentages scale the current value.
    expect(await tags(altMail(`<p>${WORDS(30)}</p><a href="https://example.com/"><img src="cid:a"></a>`))).toEqual(['HAS_LINK_TO_LARGE_IMG', 'HTML_SHORT_1']);
    expect(await tags(altMail(`<p>${WORDS(30)}</p><a href="https://example.com/"><img src="cid:a" width="10%" height="10%"></a>`))).toEqual(['HAS_LINK_TO_IMG', 'HTML_SHORT_1']);
    // "200px" does not parse: the default 800 stays.
    expect(await tags(altMail(`<p>${WORDS(30)}</p><a href="https://example.com/"><img src="cid:a" width="200px" height=1></a>`))).toEqual(['HAS_LINK_TO_LARGE_IMG', 'HTML_SHORT_1']);
  });

  it('HTML_TEXT_IMG_RATIO when image "words" outweigh text words', async () => {
    expect(await tags(altMail('<p>Hi</p><img src="cid:a" width=400 height=400>'))).toEqual(['HTML_SHORT_1', 'HTML_TEXT_IMG_RATIO']);
    expect(await tags(altMail(`<p>${WORDS(20)}</p><img src="cid:a" width=400 height=400>`))).toEqual(['HTML_SHORT_1']);
  });

  it('HTML_META_REFRESH_URL for a refresh with a URL', async () => {
    expect(await tags(altMail('<head><meta http-equiv="Refresh" content="0; URL=https://example.net/"></head><p>hello</p>'))).toEqual(['HTML_META_REFRESH_URL', 'HTML_SHORT_1']);
    expect(await tags(altMail('<head><meta http-equiv="refresh" content="30"></head><p>hello</p>'))).toEqual(['HTML_SHORT_1']);
  });

  it('EXT_CSS for linked style sheets', async () => {
    expect(await tags(altMail('<link rel="StyleSheet" href="https://cdn.example.com/s"><p>hello</p>'))).toEqual(['EXT_CSS', 'HTML_SHORT_1']);
    expect(await tags(altMail('<link href="https://cdn.example.com/site.CSS?v=1"><p>hello</p>'))).toEqual(['EXT_CSS', 'HTML_SHORT_1']);
    expect(await tags(altMail('<link rel="icon" href="https://cdn.example.com/favicon.ico"><p>hello</p>'))).toEqual(['HTML_SHORT_1']);
  });
});

describe('html: structure and text length', () => {
  it('HTML_UNBALANCED_TAG when head or body is not closed (or closed twice)', async () => {
    expect(await tags(altMail('<html><head><title>t</title><body>hello</body></html>'))).toEqual(['HTML_SHORT_1', 'HTML_UNBALANCED_TAG']);
    expect(await tags(altMail('<html><body>hello</body></body></html>'))).toEqual(['HTML_SHORT_1', 'HTML_UNBALANCED_TAG']);
    expect(await tags(altMail('<html><head/><body>hello</body></html>'))).toEqual(['HTML_SHORT_1']);
  });

  it('HTML_SHORT_1/2/3 by the bytes of the text words', async () => {
    // Each "wordNx" is 6 bytes.
    expect(await tags(altMail(`<p>${WORDS(170)}</p>`))).toEqual(['HTML_SHORT_1']);
    expect(await tags(altMail(`<p>${WORDS(180)}</p>`))).toEqual(['HTML_SHORT_2']);
    expect(await tags(altMail(`<p>${WORDS(260)}</p>`))).toEqual(['HTML_SHORT_3']);
    expect(await tags(altMail(`<p>${WORDS(400)}</p>`))).toEqual([]);
    // Numbers are not words.
    expect(await tags(altMail(`<p>${WORDS(170)} ${'1234567 '.repeat(200)}</p>`))).toEqual(['HTML_SHORT_1']);
  });

  it('BODY_URI_ONLY when the text has URLs and no words; MIME_HTML_ONLY for an HTML-only message', async () => {
    expect(await tags(altMail('<p>https://example.com/offer</p>'))).toEqual(['BODY_URI_ONLY', 'HTML_SHORT_1']);
    expect(await tags(htmlMail('<p>hello</p>'))).toEqual(['HTML_SHORT_1', 'MIME_HTML_ONLY']);
  });

  it('attachments: link checks still apply, body-only checks do not', async () => {
    const m = mail([FROM, MV, 'Content-Type: multipart/mixed; boundary="m"'], multipart('m', [
      [['Content-Type: text/plain; charset=utf-8'], 'See attachment.'],
      [['Content-Type: text/html; charset=utf-8', 'Content-Disposition: attachment; filename=page.html'],
        '<html><body><a href="http://example.com/">https://example.org/</a><img src="https://i.example.com/x.png">'],
    ]));
    expect(await tags(m)).toEqual(['HTTP_TO_HTTPS', 'PHISHING']);
    // Inside an unclosed <head> nothing is link text.
    const h = m.replace('<html><body>', '<head><title>x</title>');
    expect(await tags(h)).toEqual([]);
  });
});

describe('html: hostile input', () => {
  it('a 10 MB HTML part finishes within seconds, with a token-limit warning', async () => {
    const html = '<div><a href="http://x.example.com/"><img src="http://i.example.com/a.png" width=300 height=300></a> some words &amp; more</div>\r\n'.repeat(90_000);
    expect(html.length).toBeGreaterThan(10_000_000);
    const t0 = Date.now();
    const r = await runContent('html', htmlMail(html));
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(r.errors).toEqual([]);
    expect(r.warnings.some((w) => w.includes('HTML part cut'))).toBe(true);
    expect(r.tags).toContain('HAS_LINK_TO_LARGE_IMG');
  });
});
