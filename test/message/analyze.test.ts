import { describe, expect, it } from 'vitest';
import { analyzeMessage, type AnalyzedMessage, type Scope } from '../../src/message/index.js';
import { ALTERNATIVE, HTML_ONLY, MIXED } from './fixtures.js';

const ENVELOPE = {
  remoteIp: '192.0.2.1',
  heloDomain: 'Mail.Example.NET.',
  mailFrom: 'Bounce@Mailer.Example.net',
  rcptTo: ['Alice@example.com', 'alice@example.com', 'bob@example.com'],
  iprevPtr: 'Mail.Example.Net.',
};

/** [location, ...values of `names`] for every element of a scope. */
function table(m: AnalyzedMessage, scope: Scope, names: string[]): unknown[][] {
  return m.elements(scope).map((e) => [e.location, ...names.map((n) => e.variable(n))]);
}

const URL_VARS = ['url', 'url_original', 'scheme', 'authority', 'host', 'sld', 'port', 'path', 'query', 'path_query'];

describe('multipart/alternative newsletter (QP text, base64 HTML, RFC 2047, Received chain, IPv6, IDN)', () => {
  const analyzed = analyzeMessage(ALTERNATIVE, ENVELOPE);

  it('finds URLs in subject, HTML href/src, then text tokens, normalised as UrlParts', async () => {
    const m = await analyzed;
    expect(table(m, 'Url', URL_VARS)).toEqual([
      ['subject', 'https://deals.example.com', 'deals.example.com', 'https', 'deals.example.com', 'deals.example.com', 'example.com', 0, '/', '', '/'],
      ['body_text', 'https://shop.example.co.uk/deals', 'https://shop.example.co.uk/deals', 'https', 'shop.example.co.uk', 'shop.example.co.uk', 'example.co.uk', 0, '/deals', '', '/deals'],
      // Attribute values are raw: `&amp;` stays (Stalwart's html_to_tokens decodes no entity there).
      ['body_html', 'https://shop.example.co.uk:8443/deals/index.html?id=42&amp;x=1#top', 'HTTPS://Shop.Example.co.uk:8443/Deals/Index.html?id=42&amp;x=1#top', 'https', 'shop.example.co.uk:8443', 'shop.example.co.uk', 'example.co.uk', 8443, '/deals/index.html', 'id=42&amp;x=1', '/deals/index.html?id=42&amp;x=1'],
      ['body_html', 'mailto:sales@example.co.uk?subject=hi', 'mailto:Sales@Example.co.uk?subject=hi', '', '', '', '', 0, '', '', ''],
      // Authority-form, as http::Uri reads it: the host is "cid", the port "logo123" is no number (port 0).
      ['body_html', 'cid:logo123', 'cid:logo123', '', 'cid:logo123', 'cid', 'cid', 0, '', '', ''],
      // <script> text is text to the tokenizer: its URL is a text token.
      ['body_text', 'http://script.example.org/', 'http://script.example.org/', 'http', 'script.example.org', 'script.example.org', 'example.org', 0, '/', '', '/'],
      // Non-ASCII: hyper::Uri rejects it, so only url/url_original are set.
      ['body_text', 'https://www.bücher.de', 'www.bücher.de', '', '', '', '', 0, '', '', ''],
    ]);
  });

  it('collects Domains: Received hosts with an sld, Message-ID, EHLO, PTR, then valid email domains', async () => {
    const m = await analyzed;
    expect(table(m, 'Domain', ['value', 'sld', 'anything'])).toEqual([
      ['received', 'relay.example.net', 'relay.example.net', 'relay.example.net'],
      ['received', 'mx.example.com', 'mx.example.com', 'mx.example.com'],
      ['received', 'sender.example.org', 'sender.example.org', 'sender.example.org'],
      ['message_id', 'mailer.example.net', 'mailer.example.net', 'mailer.example.net'],
      ['ehlo', 'mail.example.net', 'mail.example.net', 'mail.example.net'],
      ['dnt', 'example.org', 'example.org', 'example.org'],
      ['reply_to', 'bücher.de', 'bücher.de', 'bücher.de'],
      ['body_text', 'support.example.org', 'support.example.org', 'support.example.org'],
      ['body_html', 'example.co.uk', 'example.co.uk', 'example.co.uk'],
    ]);
  });

  it('skips trusted domains when asked', async () => {
    const m = await analyzeMessage(ALTERNATIVE, ENVELOPE, { isTrustedDomain: (d) => d === 'support.example.org' || d === 'bücher.de' });
    expect(m.elements('Domain').map((e) => e.variable('value'))).toEqual([
      'relay.example.net', 'mx.example.com', 'sender.example.org', 'mailer.example.net', 'mail.example.net', 'example.org', 'example.co.uk',
    ]);
  });

  it('lists Emails (DNT, From, Reply-To, envelope, mailto, tokens) then To, Cc, Bcc in order', async () => {
    const m = await analyzed;
    expect(table(m, 'Email', ['email', 'value', 'name', 'local', 'domain', 'sld', 'url'])).toEqual([
      ['dnt', 'receipts@example.org', 'receipts@example.org', '', 'receipts', 'example.org', 'example.org', 0],
      ['from', 'juergen.mueller@example.org', 'juergen.mueller@example.org', 'jürgen müller', 'juergen.mueller', 'example.org', 'example.org', 0],
      ['reply_to', 'sales@xn--bcher-kva.de', 'sales@xn--bcher-kva.de', 'sales team', 'sales', 'bücher.de', 'bücher.de', 0],
      ['env_from', 'bounce@mailer.example.net', 'bounce@mailer.example.net', '', 'bounce', 'mailer.example.net', 'example.net', 0],
      ['body_text', 'help@support.example.org', 'help@support.example.org', '', 'help', 'support.example.org', 'example.org', 0],
      ['body_html', 'sales@example.co.uk', 'sales@example.co.uk', '', 'sales', 'example.co.uk', 'example.co.uk', 0],
      ['to', 'alice@example.com', 'alice@example.com', 'alice', 'alice', 'example.com', 'example.com', 0],
      ['to', 'bob@example.com', 'bob@example.com', '', 'bob', 'example.com', 'example.com', 0],
      ['cc', 'carol@mail.example.com', 'carol@mail.example.com', 'carol', 'carol', 'mail.example.com', 'example.com', 0],
    ]);
  });

  it('lists IPs: remote IP, Received from-IPs (loopback skipped, IPv6 kept), text tokens', async () => {
    const m = await analyzed;
    expect(table(m, 'Ip', ['ip', 'value', 'ip_reverse', 'octets', 'is_v4', 'is_v6', 'reverse_ip', 'host'])).toEqual([
      ['tcp', '192.0.2.1', '192.0.2.1', '1.2.0.192', [192, 0, 2, 1], 1, 0, 0, 0],
      ['received', '2001:db8::25', '2001:db8::25', '5.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2',
        [32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 37], 0, 1, 0, 0],
      ['received', '192.0.2.10', '192.0.2.10', '10.2.0.192', [192, 0, 2, 10], 1, 0, 0, 0],
      ['body_text', '198.51.100.7', '198.51.100.7', '7.100.51.198', [198, 51, 100, 7], 1, 0, 0, 0],
    ]);
  });

  it('lists top-level headers in order with canonical names, raw bytes and typed values', async () => {
    const m = await analyzed;
    const headers = m.elements('Header');
    expect(headers.map((h) => h.variable('name'))).toEqual([
      'Return-Path', 'Received', 'Received', 'Received', 'From', 'Reply-To', 'To', 'Cc', 'Cc', 'Disposition-Notification-To',
      'Subject', 'Date', 'Message-ID', 'X-Mailer', 'List-Unsubscribe', 'MIME-Version', 'Content-Type',
    ]);
    expect(headers.every((h) => h.location === 'body_text')).toBe(true);
    const by = (name: string, i = 0) => headers.filter((h) => h.variable('name') === name)[i]!;
    const received = by('Received');
    expect(received.variable('raw')).toBe(
      ' from relay.example.net (relay.example.net [2001:db8::25])\r\n\tby mx.example.com (Postfix) with ESMTPS id 4AB12\r\n' +
        '\tfor <alice@example.com>; Tue, 3 Sep 2024 10:15:02 +0200 (CEST)\r\n',
    );
    expect(received.variable('value')).toBe(
      'from relay.example.net (relay.example.net [2001:db8::25])\r\n\tby mx.example.com (Postfix) with ESMTPS id 4AB12\r\n' +
        '\tfor <alice@example.com>; Tue, 3 Sep 2024 10:15:02 +0200 (CEST)',
    );
    expect(by('From').variable('value')).toEqual(['Jürgen Müller']);
    expect(by('From').variable('value_lower')).toEqual(['juergen.mueller@example.org']);
    expect(by('From').variable('attributes')).toEqual(['Jürgen Müller']);
    expect(by('To').variable('value')).toEqual(['Alice']);
    expect(by('To').variable('value_lower')).toEqual(['alice@example.com', 'bob@example.com']);
    expect(by('Cc').variable('value_lower')).toEqual([]);
    expect(by('Subject').variable('value')).toBe('Re: Fwd: Große Angebote at deals.example.com!');
    expect(by('Subject').variable('value_lower')).toBe('re: fwd: große angebote at deals.example.com!');
    expect(by('Subject').variable('raw_lower')).toBe(' =?utf-8?q?re:_fwd:_gro=c3=9fe_angebote_at_deals.example.com!?=\r\n');
    expect(by('Date').variable('value')).toBe('2024-09-03T10:14:58+02:00');
    expect(by('Message-ID').variable('value')).toBe('20240903.abc123@mailer.example.net');
    expect(by('X-Mailer').variable('name_lower')).toBe('x-mailer');
    expect(by('X-Mailer').variable('value_lower')).toBe('phpmailer 6.8.0');
    expect(by('List-Unsubscribe').variable('value_lower')).toEqual(['mailto:unsub@example.net', 'https://example.net/u?id=1']);
    expect(by('Content-Type').variable('value')).toBe('multipart/alternative');
    expect(by('Content-Type').variable('attributes')).toEqual(['boundary==_alt_1']);
    expect(by('Content-Type').variable('ip')).toBe(0);
  });

  it('gives Body parts: decoded plain text, then text extracted from HTML outside <head>', async () => {
    const m = await analyzed;
    expect(table(m, 'Body', ['value', 'whatever'])).toEqual([
      ['body_text', 'Dear customer,\r\r\nVisit https://shop.example.co.uk/deals or write to help@support.example.org.\r\nOur server 198.51.100.7 says Grüße 3.14 times.',
        'Dear customer,\r\r\nVisit https://shop.example.co.uk/deals or write to help@support.example.org.\r\nOur server 198.51.100.7 says Grüße 3.14 times.'],
      ['body_html', ' Dear customer, Visit our shop or mail us . var hidden = "http://script.example.org/"; Café & more at www.bücher.de now',
        ' Dear customer, Visit our shop or mail us . var hidden = "http://script.example.org/"; Café & more at www.bücher.de now'],
    ]);
    expect(table(m, 'Any', ['value', 'url'])).toEqual([['body_text', '', '']]);
  });

  it('resolves every generic variable the same in every scope', async () => {
    const m = await analyzed;
    const expected: Record<string, unknown> = {
      remote_ip: '192.0.2.1', 'remote_ip.ptr': 'mail.example.net', helo_domain: 'mail.example.net',
      authenticated_as: '', asn: 0, country: '', is_tls: 1,
      env_from: 'bounce@mailer.example.net', 'env_from.local': 'bounce', 'env_from.domain': 'mailer.example.net',
      env_to: ['alice@example.com', 'bob@example.com'],
      from: 'juergen.mueller@example.org', 'from.name': 'jürgen müller', 'from.local': 'juergen.mueller', 'from.domain': 'example.org',
      reply_to: 'sales@xn--bcher-kva.de', 'reply_to.name': 'sales team', 'reply_to.local': 'sales', 'reply_to.domain': 'bücher.de',
      to: ['alice@example.com', 'bob@example.com'], 'to.name': ['alice'], 'to.local': ['alice', 'bob'], 'to.domain': ['example.com', 'example.com'],
      cc: ['carol@mail.example.com'], 'cc.name': ['carol'], 'cc.local': ['carol'], 'cc.domain': ['mail.example.com'],
      bcc: [], 'bcc.name': [], 'bcc.local': [], 'bcc.domain': [],
      body: 'Dear customer,\r\r\nVisit https://shop.example.co.uk/deals or write to help@support.example.org.\r\nOur server 198.51.100.7 says Grüße 3.14 times.',
      'body.html': ' Dear customer, Visit our shop or mail us . var hidden = "http://script.example.org/"; Café & more at www.bücher.de now',
      'body.words': ['Dear', 'customer', 'Visit', 'our', 'shop', 'or', 'mail', 'us', 'var', 'hidden', 'Café', 'more', 'at', 'now'],
      subject: 're: fwd: große angebote at deals.example.com!', 'subject.thread': 'große angebote at deals.example.com!',
      'subject.words': ['Re', 'Fwd', 'Große', 'Angebote', 'at'],
    };
    expected['body.text'] = expected.body;
    for (const scope of ['Url', 'Domain', 'Email', 'Ip', 'Header', 'Body', 'Any'] as const) {
      const e = m.elements(scope)[0]!;
      for (const [name, value] of Object.entries(expected)) expect([scope, name, e.variable(name)]).toEqual([scope, name, value]);
    }
    expect(m.elements('Email')[1]!.variable('location')).toBe('from');
    expect((m.elements('Any')[0]!.variable('body.raw') as string).startsWith('Return-Path: <bounce@mailer.example.net>\r\nReceived:')).toBe(true);
  });

  it('sets X_HDR_* presence tags as analysis/headers.rs, once per name', async () => {
    const m = await analyzed;
    expect(m.builtinTags).toEqual([
      'X_HDR_RETURN_PATH', 'X_HDR_RECEIVED', 'X_HDR_FROM', 'X_HDR_REPLY_TO', 'X_HDR_TO', 'X_HDR_CC', 'X_HDR_DISPOSITION_NOTIFICATION_TO',
      'X_HDR_SUBJECT', 'X_HDR_DATE', 'X_HDR_MESSAGE_ID', 'X_HDR_X_MAILER', 'X_HDR_LIST_UNSUBSCRIBE', 'X_HDR_MIME_VERSION', 'X_HDR_CONTENT_TYPE',
    ]);
    expect(m.warnings).toEqual([]);
    expect(m.size).toBe(Buffer.byteLength(ALTERNATIVE));
  });

  it('memoizes each scope and reports timings', async () => {
    const m = await analyzed;
    expect(m.elements('Url')).toBe(m.elements('Url'));
    expect(m.timings.parseMs).toBeGreaterThan(0);
    expect(m.timings.extractMs).toBeGreaterThan(0);
  });
});

describe('multipart/mixed with a text attachment', () => {
  it('marks attachment tokens and parts with location attachment', async () => {
    const m = await analyzeMessage(MIXED);
    expect(table(m, 'Url', ['url', 'host'])).toEqual([['attachment', 'http://attached.example.com/x', 'attached.example.com']]);
    expect(table(m, 'Ip', ['ip'])).toEqual([['tcp', '127.0.0.1'], ['attachment', '203.0.113.9']]);
    expect(table(m, 'Body', ['value'])).toEqual([
      ['body_text', 'See the attached log.'],
      ['attachment', 'connect from 203.0.113.9 to http://attached.example.com/x'],
    ]);
    // No envelope: null sender, helo "unknown", TLS on.
    expect(table(m, 'Email', ['email', 'name'])).toEqual([
      ['from', 'plain@example.com', 'plain sender'],
      ['env_from', '', ''],
      ['to', 'dave@example.com', 'dave'],
    ]);
    expect(table(m, 'Domain', ['value'])).toEqual([['from', 'example.com']]);
    const any = m.elements('Any')[0]!;
    expect([any.variable('helo_domain'), any.variable('env_to'), any.variable('is_tls'), any.variable('body.html')]).toEqual(['unknown', [], 1, '']);
    expect(m.elements('Header').find((h) => h.variable('name') === 'Date')!.variable('value')).toBe('2024-01-01T00:00:00Z');
  });
});

describe('HTML-only message', () => {
  it('treats the HTML part as text_body (location body_text) and reads body.html from it', async () => {
    const m = await analyzeMessage(HTML_ONLY, { isTls: false, asn: 64500, country: 'NL', authenticatedAs: 'eve' });
    expect(table(m, 'Url', ['url'])).toEqual([['body_html', 'http://news.example.com/a']]);
    expect(table(m, 'Body', ['value'])).toEqual([['body_text', 'Hello read']]);
    const any = m.elements('Any')[0]!;
    expect(['body', 'body.html', 'body.words', 'is_tls', 'asn', 'country', 'authenticated_as'].map((n) => any.variable(n))).toEqual([
      'Hello read', 'Hello read', ['Hello', 'read'], 0, 64500, 'NL', 'eve',
    ]);
  });
});

describe('recipients, groups, PTR and References', () => {
  const raw = [
    'From: "  Spaced Name  " <S@Example.com>',
    'To: Team: a@x.example.com, "=?ISO-8859-1?Q?B=E9a?=" <B@X.example.com>;',
    'To: a@x.example.com',
    'Bcc: hidden@y.example.net',
    'References: <one@a.example> <two@b.example>',
    'X-Folded: first',
    '  second',
    'Subject: plain',
    '',
    'ok',
    '',
  ].join('\r\n');

  it('flattens groups, keeps duplicates and order, decodes names, locations to/bcc', async () => {
    const m = await analyzeMessage(raw, { iprevPtr: 'PTR.Example.org.', heloDomain: 'localhost' });
    expect(table(m, 'Email', ['email', 'name'])).toEqual([
      ['from', 's@example.com', '  spaced name  '],
      ['env_from', '', ''],
      ['to', 'a@x.example.com', ''],
      ['to', 'b@x.example.com', 'béa'],
      ['to', 'a@x.example.com', ''],
      ['bcc', 'hidden@y.example.net', ''],
    ]);
    const any = m.elements('Any')[0]!;
    expect(['to', 'to.name', 'bcc.domain', 'from.name', 'helo_domain', 'remote_ip.ptr'].map((n) => any.variable(n))).toEqual([
      ['a@x.example.com', 'b@x.example.com', 'a@x.example.com'], ['béa'], ['y.example.net'], '  spaced name  ', 'localhost', 'ptr.example.org',
    ]);
    // EHLO "localhost" has no sld; the PTR is added without an sld check.
    expect(table(m, 'Domain', ['value'])).toEqual([['tcp', 'ptr.example.org'], ['from', 'example.com']]);
    const headers = m.elements('Header');
    expect(headers[4]!.variable('value')).toEqual(['one@a.example', 'two@b.example']);
    expect(headers[4]!.variable('value_lower')).toEqual(['one@a.example', 'two@b.example']);
    expect(headers[5]!.variable('raw')).toBe(' first\r\n  second\r\n');
    expect(headers[5]!.variable('value')).toBe('first\r\n  second');
  });
});

describe('Received hosts in the Domain and IP sets are mail-parser\'s parse (what Stalwart collects)', () => {
  const raw = Buffer.from(
    [
      // A `by` host on a tab-folded line keeps the tab (mail-parser counts the folding blank as part of the word).
      'Received: from a.example.com (a.example.com [198.51.100.9]) by\r\n\tb.example.net with ESMTP; Tue, 3 Sep 2024 10:15:02 +0200',
      // A fold indented by several blanks gives a lone-blank word: the `by` host is lost.
      'Received: from c.example.org (HELO d.example.org) (203.0.113.5) by\r\n    e.example.com with SMTP; Tue, 3 Sep 2024 10:14:02 +0200',
      // IP literals go to the IP set, never to the Domain set.
      'Received: from [192.0.2.77] (helo=f.example.org) by [2001:db8::9] with SMTP; Tue, 3 Sep 2024 10:13:02 +0200',
      'Message-ID: <1@g.example.com>',
      'From: x@example.com',
      'Subject: hi',
      '',
      'body',
      '',
    ].join('\r\n'),
  );

  it('collects the parsed names with an sld, in header order, quirks included', async () => {
    const m = await analyzeMessage(raw, { remoteIp: '192.0.2.1' });
    expect(table(m, 'Domain', ['value'])).toEqual([
      ['received', 'a.example.com'],
      ['received', '\tb.example.net'],
      ['received', 'c.example.org'],
      ['received', 'd.example.org'],
      ['received', 'f.example.org'],
      ['message_id', 'g.example.com'],
      ['from', 'example.com'],
    ]);
  });

  it('collects the from IP and the IP-literal hosts', async () => {
    const m = await analyzeMessage(raw, { remoteIp: '192.0.2.1' });
    expect(table(m, 'Ip', ['value'])).toEqual([
      ['tcp', '192.0.2.1'],
      ['received', '198.51.100.9'],
      ['received', '203.0.113.5'],
      ['received', '192.0.2.77'],
      ['received', '2001:db8::9'],
    ]);
  });
});
