/** Hand-written RFC 5322 messages for the message-analysis tests (CRLF line ends, as on the wire). */

const crlf = (lines: string[]): string => lines.join('\r\n');

const htmlBody = [
  '<html><head><title>Ignored title</title><style>p { color: red }</style></head>',
  '<body><p>Dear customer,</p><p>Visit <a href="HTTPS://Shop.Example.co.uk:8443/Deals/Index.html?id=42&amp;x=1#top">our shop</a>',
  'or <a href="mailto:Sales@Example.co.uk?subject=hi">mail us</a>.</p>',
  '<img src="cid:logo123"><script>var hidden = "http://script.example.org/";</script>',
  '<p>Caf&eacute; &amp; more at www.b&#252;cher.de now</p></body></html>',
].join('\r\n');

/** A newsletter-style multipart/alternative with quoted-printable text and base64 HTML. */
export const ALTERNATIVE = crlf([
  'Return-Path: <bounce@mailer.example.net>',
  'Received: from relay.example.net (relay.example.net [2001:db8::25])',
  '\tby mx.example.com (Postfix) with ESMTPS id 4AB12',
  '\tfor <alice@example.com>; Tue, 3 Sep 2024 10:15:02 +0200 (CEST)',
  'Received: from [192.0.2.10] (helo=Sender.Example.ORG)',
  '\tby relay.example.net with esmtp (Exim 4.96); Tue, 03 Sep 2024 08:15:00 +0000',
  'Received: from localhost (localhost [127.0.0.1]) by sender.example.org; Tue, 3 Sep 2024 08:14:59 +0000',
  'From: =?UTF-8?B?SsO8cmdlbiBNw7xsbGVy?= <Juergen.Mueller@Example.ORG>',
  'Reply-To: "  Sales Team " <sales@xn--bcher-kva.de>',
  'To: "Alice" <alice@example.com>, bob@example.com',
  'Cc: Undisclosed recipients:;',
  'Cc: "Carol" <carol@mail.example.com>',
  'Disposition-Notification-To: receipts@example.org',
  'Subject: =?UTF-8?Q?Re:_Fwd:_Gro=C3=9Fe_Angebote_at_deals.example.com!?=',
  'Date: Tue, 3 Sep 2024 10:14:58 +0200',
  'Message-ID: <20240903.abc123@mailer.example.net>',
  'X-Mailer: PHPMailer 6.8.0',
  'List-Unsubscribe: <mailto:unsub@example.net>, <https://example.net/u?id=1>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/alternative; boundary="=_alt_1"',
  '',
  'This is a multi-part message in MIME format.',
  '',
  '--=_alt_1',
  'Content-Type: text/plain; charset=utf-8',
  'Content-Transfer-Encoding: quoted-printable',
  '',
  'Dear customer,=0D',
  'Visit https://shop.example.co.uk/deals or write to help@support.example.org.',
  'Our server 198.51.100.7 says Gr=C3=BC=C3=9Fe 3.14 times.',
  '--=_alt_1',
  'Content-Type: text/html; charset=utf-8',
  'Content-Transfer-Encoding: base64',
  '',
  ...Buffer.from(htmlBody, 'utf8').toString('base64').match(/.{1,76}/g)!,
  '--=_alt_1--',
  '',
]);

/** A plain single-part message with an attachment-free body and a text/plain attachment. */
export const MIXED = crlf([
  'From: Plain Sender <plain@example.com>',
  'To: Dave <dave@example.com>',
  'Subject: report',
  'Date: 1 Jan 2024 00:00:00 GMT',
  'Content-Type: multipart/mixed; boundary="mix"',
  '',
  '--mix',
  'Content-Type: text/plain',
  '',
  'See the attached log.',
  '--mix',
  'Content-Type: text/plain; name="log.txt"',
  'Content-Disposition: attachment; filename="log.txt"',
  '',
  'connect from 203.0.113.9 to http://attached.example.com/x',
  '--mix--',
  '',
]);

/** An HTML-only message (its HTML part counts as text_body, so location body_text). */
export const HTML_ONLY = crlf([
  'From: news@example.com',
  'To: eve@example.com',
  'Subject: News',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<html><body><h1>Hello</h1><a href="http://news.example.com/a">read</a></body></html>',
  '',
]);
