import { describe, expect, it } from 'vitest';
import { dateToRfc3339, firstId, headerTag, isNamed, parseContentType, parseIds, splitHeaders } from '../../src/message/headers.js';
import { htmlLinks, htmlTextBody, htmlToTokens } from '../../src/message/html-tokens.js';
import ipaddr from '../../src/dns/ipaddr.js';
import { emailAddress, hostname, ipv4Value, parseIp } from '../../src/message/hostname.js';
import { threadName } from '../../src/message/index.js';
import { tokenize } from '../../src/message/tokenizer.js';
import { urlParts } from '../../src/message/url.js';

describe('Hostname::new / Email::new', () => {
  it('lower-cases, strips trailing dots, decodes punycode, finds the PSL sld (private suffixes included)', () => {
    expect(hostname('Mail.Example.CO.UK.')).toEqual({ fqdn: 'mail.example.co.uk', ip: undefined, sld: 'example.co.uk' });
    expect(hostname('www.xn--bcher-kva.de')).toEqual({ fqdn: 'www.bücher.de', ip: undefined, sld: 'bücher.de' });
    expect(hostname('user.github.io').sld).toBe('user.github.io');
    expect(hostname('host.invalidtld').sld).toBeUndefined();
    expect(hostname('localhost').sld).toBeUndefined();
    expect(hostname('[192.0.2.1]')).toEqual({ fqdn: '[192.0.2.1]', ip: '192.0.2.1', sld: undefined });
  });

  it('is idempotent: hostname(h.fqdn) is h (urlParts and the Domain set hand their fqdn on as normalised)', () => {
    const inputs = [
      'Mail.Example.CO.UK.', 'www.xn--bcher-kva.de', 'WWW.XN--BCHER-KVA.DE', 'xn--invalid--.com', 'user.github.io', 'host.invalidtld',
      'localhost', '[192.0.2.1]', '192.0.2.1', '[IPv6:2001:DB8::1]', '2001:db8::1', 'a..b.com', '.', 'münchen.de', 'MÜNCHEN.DE',
      'xn--mnchen-3ya.de.', 'xn--80ak6aa92e.com', 'sub.xn--80ak6aa92e.com', '0x7f.1', '010.0.0.1', 'example.com..',
    ];
    for (const x of inputs) {
      const h = hostname(x);
      expect(hostname(h.fqdn), x).toEqual(h);
    }
  });

  it('parses IPs as Rust does (no shorthand IPv4, no leading zeros)', () => {
    expect([parseIp('10.0.0.1'), parseIp('[IPv6:2001:DB8::1]'), parseIp('1.2.3'), parseIp('01.2.3.4'), parseIp('256.1.1.1'), parseIp('abc')])
      .toEqual(['10.0.0.1', '2001:db8::1', undefined, undefined, undefined, undefined]);
  });

  it('reads canonical IPv4 text to the value ipaddr.js gives it, and nothing else', () => {
    for (const s of ['0.0.0.0', '10.0.0.1', '192.168.100.254', '255.255.255.255']) {
      expect(ipv4Value(s)).toBe(ipaddr.parse(s).toByteArray().reduce((v, b) => v * 256 + b, 0));
      expect(ipaddr.parse(s).toString()).toBe(s);
    }
    for (const s of ['1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.256', '1..2.3', '.1.2.3', '1.2.3.', '1.2.3.4 ', '0x1.2.3.4', '1234.1.1.1', '']) {
      expect(ipv4Value(s)).toBeUndefined();
    }
  });

  it('splits an address at the last @', () => {
    const e = emailAddress('"A@B"@Sub.Example.COM');
    expect([e.address, e.local, e.domain.fqdn, e.domain.sld]).toEqual(['"a@b"@sub.example.com', '"a@b"', 'sub.example.com', 'example.com']);
    expect(emailAddress('nodomain')).toMatchObject({ address: 'nodomain', local: 'nodomain', domain: { fqdn: '' } });
  });
});

describe('TypesTokenizer stand-in', () => {
  it('finds scheme URLs, scheme-less PSL hosts, emails and bare IPs; words exclude them', () => {
    const t = tokenize('Go to HTTP://Example.com/A?b=1, see www.test.org/x. Mail me@ex.co.uk or mailto:x@y.net; '
      + 'ip 10.1.2.3 but not 10.1.2.3/8? file.txt e.g. 3.14 git+ssh://h.example.net/r (http://paren.example.com)', true);
    // A dotted quad with a path is a scheme-less URL, as in Stalwart's tokenizer (`is_ip && !found_query_start`).
    expect(t.urls).toEqual(['HTTP://Example.com/A?b=1', 'www.test.org/x', '10.1.2.3/8', 'git+ssh://h.example.net/r', 'http://paren.example.com']);
    expect(t.emails).toEqual(['me@ex.co.uk', 'x@y.net']);
    expect(t.ips).toEqual(['10.1.2.3']);
    expect(t.words).toEqual(['Go', 'to', 'see', 'Mail', 'or', 'mailto', 'ip', 'but', 'not', 'file', 'txt', 'e', 'g', '3.14']);
  });

  it('a dotted quad: an IP token alone, a URL with a path or query, no IP with a port or a part over 255', () => {
    expect(tokenize('1.2.3.4/ 1.2.3.4?q 1.2.3.4:80/x').urls).toEqual(['1.2.3.4/', '1.2.3.4?q', '1.2.3.4:80/x']);
    const t = tokenize('1.2.3.4 1.2.3.4:25 300.1.1.1 1.2.3.4#top', true);
    expect(t.urls).toEqual([]);
    expect(t.ips).toEqual(['1.2.3.4', '1.2.3.4']);
    expect(t.words).toEqual(['top']);
  });

  it('keeps a bracketed IPv6 host and balanced brackets in the path inside a scheme URL', () => {
    // Before, brackets always ended a token: the IPv6 URL was lost and the path was cut at "(".
    expect(tokenize('see http://[2001:db8::4]/y now').urls).toEqual(['http://[2001:db8::4]/y']);
    expect(tokenize('x http://en.wikipedia.org/wiki/Foo_(bar) y, http://x.com/a[1]{2} (http://p.example.com)').urls).toEqual([
      'http://en.wikipedia.org/wiki/Foo_(bar)', 'http://x.com/a[1]{2}', 'http://p.example.com',
    ]);
    // A bracketed host must be an IPv6 literal as Stalwart reads one; brackets right after the host (no path
    // yet) end the URL.
    expect(tokenize('http://[Unsubscribe]] http://x.com[abc] http://[::1]:8080/x').urls).toEqual(['http://x.com', 'http://[::1]:8080/x']);
    // Outside a scheme URL, and unbalanced, brackets still separate.
    expect(tokenize('a.b(c) http://x.com/a(b', true)).toMatchObject({ urls: ['http://x.com/a'], words: ['a', 'b', 'c', 'b'] });
  });

  it('U+200B and U+FEFF are not separators (Unicode White_Space, as Rust\'s is_whitespace); U+2003 is', () => {
    expect(tokenize('www.pay\u200bpal.com x.example\ufeff.com').urls).toEqual(['www.pay\u200bpal.com', 'x.example\ufeff.com']);
    expect(tokenize('www.paypal.com\u2003next').urls).toEqual(['www.paypal.com']);
  });

  it('rejects schemes longer than 8 characters and hosts without a PSL suffix', () => {
    expect(tokenize('toolongscheme://x.com/ host.notatld a@b.notatld').urls).toEqual(['x.com/']);
    expect(tokenize('a@b.notatld').emails).toEqual([]);
  });
});

describe('UrlParts', () => {
  it('splits like http::Uri, lower-cased', () => {
    expect(urlParts('  https://User:Pw@WWW.Example.com:8080/P/a%20th?Q=1#frag ', false)).toEqual({
      original: '  https://User:Pw@WWW.Example.com:8080/P/a%20th?Q=1#frag ', url: 'https://user:pw@www.example.com:8080/p/a%20th?q=1#frag',
      scheme: 'https', authority: 'user:pw@www.example.com:8080', host: 'www.example.com', sld: 'example.com', port: 8080,
      path: '/p/a%20th', query: 'q=1', pathQuery: '/p/a%20th?q=1',
    });
  });

  it('prepends https:// to scheme-less URLs and uses the host as sld for IPs', () => {
    expect(urlParts('Example.ORG', true)).toMatchObject({ url: 'https://example.org', path: '/', pathQuery: '/', sld: 'example.org' });
    expect(urlParts('http://192.0.2.7/x', false)).toMatchObject({ host: '192.0.2.7', sld: '192.0.2.7' });
  });

  it('leaves parts empty for non-ASCII, two port colons, a % in the host and host-less URIs', () => {
    for (const u of ['https://bánk.com/', 'http://x.com:1:2/', 'http://ex%41mple.com/', '/relative/path', 'http:///nohost', 'data:image/png;base64,AAA']) {
      expect([u, urlParts(u, false).host, urlParts(u, false).port]).toEqual([u, '', 0]);
    }
  });

  it('keeps the host of a URI whose port is no u16, as http::Uri does (port 0)', () => {
    // Before, these had no host: a cid: link's anchor text was never compared with it (PHISHING).
    expect(urlParts('cid:image1', false)).toMatchObject({ host: 'cid', port: 0, path: '' });
    expect(urlParts('http://x.com:99999/', false)).toMatchObject({ host: 'x.com', port: 0, path: '/' });
    expect(urlParts('http://example.com:abc/p', false)).toMatchObject({ host: 'example.com', port: 0, path: '/p' });
    expect(urlParts('http://[2001:db8::1]:x/', false)).toMatchObject({ host: '[2001:db8::1]', port: 0 });
    expect(urlParts('http://u%40x:p@example.com:81/', false)).toMatchObject({ host: 'example.com', port: 81 });
  });
});

/** Links and text of an HTML part, as the Url/Email sets and the Body scope read them. */
function scanHtml(html: string): { links: string[]; mailtos: string[]; text: string } {
  const tokens = htmlToTokens(html).tokens;
  return { ...htmlLinks(tokens), text: htmlTextBody(tokens) };
}

describe('HTML links and text (Stalwart html_to_tokens)', () => {
  it('collects href/src of any tag, raw; text outside <head>; script text kept, comments not', () => {
    const s = scanHtml('<HTML><Head><Title>T</Title><link href="s.css"></head><BODY background=bg.png>'
      + '<A HREF=\'mailto:A@B.com\'>Mail</a><!-- <a href="http://hidden/"> --><iframe src = " http://f.example/ "></iframe>'
      + '<script>x="<a href=http://js/>"</script>Tom &amp; Jerry&nbsp;&#x41;&#66;</body>');
    // A single quote is no quote: the value keeps it, so it is not a mailto: link.
    expect(s.links).toEqual(['s.css', "'mailto:A@B.com'", 'http://f.example/', 'http://js/']);
    expect(s.mailtos).toEqual([]);
    expect(s.text).toBe('Mail x=" " Tom & Jerry\u00a0AB');
  });

  it("reads a link's first valued href for mailto:, which must start with mailto: as written (Stalwart)", () => {
    const s = scanHtml('<a href="MAILTO:up@example.com">a</a><a href=" mailto:sp@example.com">b</a>'
      + '<a href="https://example.com/" href="mailto:second@example.com">c</a><a href="mailto:ok@example.com" href="x">d</a>'
      + '<a href href="mailto:v@example.com">e</a>');
    expect(s.mailtos).toEqual(['mailto:ok@example.com', 'mailto:v@example.com']);
    // Every valued href and src is a link (trimmed).
    expect(s.links).toEqual(['MAILTO:up@example.com', 'mailto:sp@example.com', 'https://example.com/', 'mailto:second@example.com', 'mailto:ok@example.com', 'x', 'mailto:v@example.com']);
  });

  it('keeps attribute values raw: no entity decoding', () => {
    expect(scanHtml('<a href="https&#58;//e.example.net/?a=1&amp;b=2">x</a>').links).toEqual(['https&#58;//e.example.net/?a=1&amp;b=2']);
  });

  it('leaves names that only Object.prototype has as written (&toString; is no character reference)', () => {
    expect(scanHtml('<p>a &toString; b &valueOf c &amp;</p>').text).toBe('a &toString; b &valueOf c &');
  });
});

describe('headers', () => {
  it('firstId equals parseIds(raw)[0] on Message-ID shapes and 50,000 random values', () => {
    const fixed = [
      ' <a@b.example>\r\n', '<a@b>', ' <a@b> <c@d>\n', '<<a@b>>', '< >  <x@y>', '<  >', '  ', '', '\n', '\r\n',
      ' no-brackets@host \n', ' <a@b\r\n c>\r\n', ' <a@b>\r\n\t<c@d>\r\n', '<a<b>c>', 'a>b<c', ' <a@b\r',
    ];
    let seed = 11;
    const rnd = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const alphabet = ['<', '>', ' ', '\t', '\r', '\n', 'a', '@', '.', 'x'];
    const random = Array.from({ length: 50_000 }, () => {
      let v = '';
      for (let n = Math.floor(rnd() * 14); n > 0; n--) v += alphabet[Math.floor(rnd() * alphabet.length)];
      return v;
    });
    const wrong = [...fixed, ...random].filter((v) => firstId(v) !== parseIds(v)[0]);
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('matches a header name as toLowerCase would, without the copy', () => {
    const names = ['Received', 'RECEIVED', 'received', 'Receive', 'Receiveds', 'Re-ceived', '\u212Aeywords', 'K\u0130', 'X-\u0130', 'Subject', 'subjecT', 'to', 'TO', 'T0'];
    for (const n of names) for (const target of ['received', 'keywords', 'subject', 'to', 'x-i', 'ki']) {
      expect(isNamed(n, target)).toBe(n.toLowerCase() === target);
    }
    expect(isNamed('\u212Aeywords', 'keywords')).toBe(true);
  });

  it('splits raw headers keeping folding and line ends', () => {
    const w: string[] = [];
    expect(splitHeaders('A: 1\r\nB:2\r\n\tcont\r\nbad line\r\nC : 3\r\n', w)).toEqual([
      { name: 'A', raw: ' 1\r\n' }, { name: 'B', raw: '2\r\n\tcont\r\n' }, { name: 'C', raw: ' 3\r\n' },
    ]);
  });

  it('formats dates as mail-parser parses and formats them (parse_date, DateTime::to_rfc3339)', () => {
    expect(['Mon, 2 Jan 06 15:04:05 -0700', 'Sun, 31 Dec 2023 23:59:59 +0000 (UTC)', 'garbage', '\r\n\t21 Nov 1997 09:55:06 +0530\r\n'].map(dateToRfc3339))
      .toEqual(['2006-01-02T15:04:05-07:00', '2023-12-31T23:59:59Z', '', '1997-11-21T09:55:06+05:30']);
    // A zone name gives no offset; a date that stops before its seconds does not parse (mail-parser's Empty).
    expect(['2 Jan 2006 15:04:05 EST', '2 Jan 2006 15:04 EST'].map(dateToRfc3339)).toEqual(['2006-01-02T15:04:05Z', '']);
    // Fields are read by position and not validated, as mail-parser keeps them (a full month name is no month).
    expect(dateToRfc3339('21 November 1997 09:55:06 +0530')).toBe('1997-00-21T09:55:06+05:30');
    expect(dateToRfc3339('99 Jan 2024 25:61:61 -0000')).toBe('2024-01-99T25:61:61Z');
  });

  it('parses Content-Type attributes', () => {
    expect(parseContentType(' Text/HTML; charset="UTF-8"; format=flowed')).toEqual({ value: 'text/html', attributes: ['charset=UTF-8', 'format=flowed'] });
  });

  it('names X_HDR tags like analysis/headers.rs', () => {
    expect([headerTag('List-Unsubscribe'), headerTag('x-php-originating-script'), headerTag('X.Weird_Name')])
      .toEqual(['X_HDR_LIST_UNSUBSCRIBE', 'X_HDR_X_PHP_ORIGINATING_SCRIPT', 'X_HDR_X WEIRD NAME']);
  });

  it('strips reply/forward prefixes for subject.thread', () => {
    expect(['Re: Fwd: hello', 'RE[2]: AW: Hallo', '[list] Re: topic', 'Fw:Re:x', 'Regarding'].map(threadName))
      .toEqual(['hello', 'Hallo', 'topic', 'x', 'Regarding']);
  });
});
