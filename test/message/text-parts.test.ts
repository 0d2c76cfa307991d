/**
 * The text parts the rules read (Url/Email/Ip/Body scopes, `body.*` variables) are Stalwart's
 * `text_parts`: built from mail-parser's part tree (mime-tree.ts) and Stalwart's HTML tokenizer, the
 * same view the mime/html modules read (docs/message-analysis.md, "Text parts").
 */
import { describe, expect, it } from 'vitest';
import { analyzeMessage, type AnalyzedMessage, type Scope } from '../../src/message/index.js';

const crlf = (lines: string[]): string => lines.join('\r\n');
const HEAD = ['From: Alice <alice@sender.example.com>', 'To: Bob <bob@example.org>', 'Subject: Test', 'Date: Mon, 1 Jan 2024 10:00:00 +0000', 'Message-ID: <abc@sender.example.com>', 'MIME-Version: 1.0'];

/** [location, value] of every element of a scope. */
async function table(raw: string | Buffer, scope: Scope, name: string): Promise<unknown[][]> {
  const m = await analyzeMessage(raw);
  return m.elements(scope).map((e) => [e.location, e.variable(name)]);
}
const generic = (m: AnalyzedMessage, name: string): unknown => m.elements('Any')[0]!.variable(name);

const PHISH = [
  'From: Mallory <m@phisher.example.net>',
  'To: alice@sender.example.com',
  'Subject: Urgent',
  'MIME-Version: 1.0',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<html><body>Click <a href="http://198.51.100.23/login">https://paypal.com/signin</a> now, or write to help@phisher.example.net from 192.0.2.55</body></html>',
];
const PHISH_URLS = [['attachment', 'http://198.51.100.23/login'], ['attachment', 'https://paypal.com/signin']];

describe('text parts missing before (item 1)', () => {
  it('a text/calendar part is a text part (an attachment): its URLs, addresses and IPs are elements', async () => {
    const raw = crlf([...HEAD, 'Content-Type: multipart/alternative; boundary="a1"', '',
      '--a1', 'Content-Type: text/plain; charset="utf-8"', '', 'Invitation',
      '--a1', 'Content-Type: text/html; charset="utf-8"', '', '<html><body>Invitation</body></html>',
      '--a1', 'Content-Type: text/calendar; charset="utf-8"; method=REQUEST', '',
      'BEGIN:VCALENDAR', 'DESCRIPTION:Verify at https://evil-phish.example.net/login or mail support@evil-phish.example.net from 198.51.100.9', 'END:VCALENDAR',
      '--a1--', '']);
    expect(await table(raw, 'Url', 'url')).toEqual([['attachment', 'https://evil-phish.example.net/login']]);
    expect((await table(raw, 'Email', 'email')).filter(([l]) => l === 'attachment')).toEqual([['attachment', 'support@evil-phish.example.net']]);
    expect(await table(raw, 'Ip', 'ip')).toEqual([['tcp', '127.0.0.1'], ['attachment', '198.51.100.9']]);
    expect((await table(raw, 'Body', 'value')).map(([l]) => l)).toEqual(['body_text', 'body_html', 'attachment']);
  });

  for (const [what, partHeaders] of [
    ['an attached message/rfc822', ['Content-Type: message/rfc822; name="Urgent.eml"', 'Content-Disposition: attachment; filename="Urgent.eml"']],
    ['a message/global', ['Content-Type: message/global']],
  ] as const) {
    it(`the text parts of ${what} come after the top-level ones, as attachments`, async () => {
      const raw = crlf([...HEAD, 'Content-Type: multipart/mixed; boundary="f1"', '',
        '--f1', 'Content-Type: text/plain; charset=utf-8', '', 'Is this phishing?',
        '--f1', ...partHeaders, '', ...PHISH, '--f1--', '']);
      expect(await table(raw, 'Url', 'url')).toEqual(PHISH_URLS);
      expect(await table(raw, 'Body', 'value')).toEqual([
        ['body_text', 'Is this phishing?'],
        ['attachment', 'Click https://paypal.com/signin now, or write to help@phisher.example.net from 192.0.2.55'],
      ]);
      expect((await table(raw, 'Ip', 'ip')).at(-1)).toEqual(['attachment', '192.0.2.55']);
    });
  }

  it('the message a bounce (multipart/report) returns is read too', async () => {
    const raw = crlf(['From: MAILER-DAEMON@mx.example.org', 'To: alice@sender.example.com', 'Subject: Undelivered Mail', 'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="d1"', '',
      '--d1', 'Content-Type: text/plain; charset=us-ascii', '', 'Your message could not be delivered.',
      '--d1', 'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.example.org', '', 'Final-Recipient: rfc822; nobody@example.org', 'Status: 5.1.1',
      '--d1', 'Content-Type: message/rfc822', '', ...PHISH, '--d1--', '']);
    expect(await table(raw, 'Url', 'url')).toEqual(PHISH_URLS);
    expect((await table(raw, 'Email', 'email')).filter(([l]) => l === 'attachment')).toEqual([['attachment', 'help@phisher.example.net']]);
  });
});

describe('a Content-Type name makes a text part an attachment (item 2)', () => {
  for (const [type, body, text] of [
    ['text/plain', 'see https://portal.example.org/reset', 'see https://portal.example.org/reset'],
    ['text/html', '<html><body><a href="http://192.0.2.7/login">https://portal.example.org/reset</a></body></html>', 'https://portal.example.org/reset'],
  ] as const) {
    it(`${type} with name=, after the first part`, async () => {
      const raw = crlf([...HEAD, 'Content-Type: multipart/mixed; boundary="m1"', '',
        '--m1', 'Content-Type: text/plain; charset=utf-8', '', 'Hi, see the document.',
        '--m1', `Content-Type: ${type}; charset=utf-8; name="document"`, '', body, '--m1--', '']);
      const m = await analyzeMessage(raw);
      expect(m.elements('Body').map((e) => [e.location, e.variable('value')])).toEqual([['body_text', 'Hi, see the document.'], ['attachment', text]]);
      expect(m.elements('Url').every((e) => e.location === 'attachment')).toBe(true);
      expect(generic(m, 'body.html')).toBe('');
    });
  }
});

describe('charsets as mail-parser decodes them (item 3)', () => {
  const single = (charset: string, cte: string, body: Buffer): Buffer =>
    Buffer.concat([Buffer.from(crlf([...HEAD, `Content-Type: text/plain; charset=${charset}`, `Content-Transfer-Encoding: ${cte}`, '', ''])), body, Buffer.from('\r\n')]);

  it('us-ascii with 8-bit bytes is read as windows-1252 (mail-parser 0.11.5+ file us-ascii under windows-1252)', async () => {
    const m = await analyzeMessage(single('us-ascii', '8bit', Buffer.from('Grüße aus München')));
    expect(generic(m, 'body.text')).toBe('Gr\u00c3\u00bc\u00c3\u0178e aus M\u00c3\u00bcnchen\r\n');
  });

  it('an unknown charset is read as UTF-8', async () => {
    const m = await analyzeMessage(single('x-unknown-charset', '8bit', Buffer.from('Café au lait')));
    expect(generic(m, 'body.text')).toBe('Café au lait\r\n');
    expect(generic(m, 'body.words')).toEqual(['Café', 'au', 'lait']);
  });

  it('windows-1252 0x80-0x9F are its own characters, and iso-8859-1 is read as windows-1252 too', async () => {
    const cp = await analyzeMessage(single('windows-1252', 'quoted-printable', Buffer.from('He said =93hello=94 and paid 5=80 for caf=E9=85')));
    expect(generic(cp, 'body.text')).toBe('He said \u201chello\u201d and paid 5\u20ac for caf\u00e9\u2026\r\n');
    const l1 = await analyzeMessage(single('iso-8859-1', 'quoted-printable', Buffer.from('=93x=94 caf=E9')));
    expect(generic(l1, 'body.text')).toBe('\u201cx\u201d caf\u00e9\r\n');
  });
});

describe("HTML read with Stalwart's tokenizer (items 4 and 5)", () => {
  const html = (body: string): string => crlf([...HEAD, 'Content-Type: text/html; charset=utf-8', '', body, '']);

  it('href/src values are raw: entities are not decoded, single quotes are not quotes', async () => {
    const urls = await table(html('<a href="https&#58;//entity.example.net/z">a</a> <a href=\'https://single.example.com/x\'>b</a>'
      + ' <img src="https://img.example.com/a.png?x=1&amp;y=2">'), 'Url', 'url');
    expect(urls).toEqual([
      ['body_html', 'https&#58;//entity.example.net/z'],
      ['body_html', "'https://single.example.com/x'"],
      ['body_html', 'https://img.example.com/a.png?x=1&amp;y=2'],
    ]);
  });

  it('<script> and <style> text is text: in the Body value, body.html, body.words and the URL tokens', async () => {
    const m = await analyzeMessage(html('<html><head><style>h1{x:1}</style></head><body><style>.bg{background:url(https://img.example.com/bg.png)}</style>'
      + 'Hello <script>var t = "https://script-only.example.net/t.js";</script>world</body></html>'));
    const text = '.bg{background:url(https://img.example.com/bg.png)} Hello var t = "https://script-only.example.net/t.js"; world';
    expect(m.elements('Body').map((e) => e.variable('value'))).toEqual([text]);
    expect(generic(m, 'body.html')).toBe(text);
    expect(generic(m, 'body.words')).toContain('var');
    expect(m.elements('Url').map((e) => [e.location, e.variable('url')])).toEqual([
      ['body_text', 'https://img.example.com/bg.png'], ['body_text', 'https://script-only.example.net/t.js'],
    ]);
  });
});

describe('body.html and body.words read the first html_body entry (item 6)', () => {
  it('multipart/mixed with a plain part first: its plain part is the first html_body entry', async () => {
    const m = await analyzeMessage(crlf([...HEAD, 'Content-Type: multipart/mixed; boundary="m1"', '',
      '--m1', 'Content-Type: text/plain; charset=utf-8', '', 'Plain first',
      '--m1', 'Content-Type: text/html; charset=utf-8', '', '<html><body>Html second <a href="https://h.example.com/">link</a></body></html>',
      '--m1--', '']));
    expect(generic(m, 'body.text')).toBe('Plain first');
    expect(generic(m, 'body.html')).toBe('');
    expect(generic(m, 'body.words')).toEqual(['Plain', 'first']);
    expect(m.elements('Body').map((e) => e.location)).toEqual(['body_text', 'body_text']);
  });
});

describe('no normalisation of the text (item 7)', () => {
  it('format=flowed is not unwrapped, CRLF stays, no newline is added', async () => {
    const m = await analyzeMessage(crlf([...HEAD, 'Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes', '',
      'Please confirm at https://account-verify.exa ', 'mple.net/login today.', '> quoted']));
    expect(generic(m, 'body.text')).toBe('Please confirm at https://account-verify.exa \r\nmple.net/login today.\r\n> quoted');
    expect(m.elements('Url').map((e) => e.variable('url'))).toEqual(['https://account-verify.exa', 'https://mple.net/login']);
  });

  it('parts in MIME part order, whatever their kind', async () => {
    const m = await analyzeMessage(crlf([...HEAD, 'Content-Type: multipart/alternative; boundary="b1"', '',
      '--b1', 'Content-Type: text/plain; charset=utf-8', '', 'plain',
      '--b1', 'Content-Type: text/x-amp-html; charset=utf-8', '', '<p>amp</p>',
      '--b1', 'Content-Type: text/html; charset=utf-8', '', '<p>html</p>',
      '--b1--', '']));
    expect(m.elements('Body').map((e) => [e.location, e.variable('value')])).toEqual([
      ['body_text', 'plain'], ['attachment', '<p>amp</p>'], ['body_html', 'html'],
    ]);
  });
});
