import { describe, expect, it } from 'vitest';
import { analyzeMessage, messageContextOf, MAX_MIME_PART_DEPTH, SCOPE_ORDER, type AnalyzedMessage } from '../../src/message/index.js';
import { extractHostDomains, MAX_ELEMENTS } from '../../src/message/elements.js';
import { MAX_HEADERS } from '../../src/message/headers.js';

/** Touches every element of every scope with a few variables; throws if anything does. */
function exercise(m: AnalyzedMessage): number {
  let n = 0;
  for (const s of SCOPE_ORDER) {
    for (const e of m.elements(s)) {
      for (const v of ['value', 'url', 'host', 'ip_reverse', 'octets', 'name', 'raw', 'value_lower', 'attributes', 'subject', 'body.words', 'from', 'to']) e.variable(v);
      n++;
    }
  }
  return n;
}

describe('hostile and malformed mail never throws', () => {
  it('empty input', async () => {
    const m = await analyzeMessage('');
    expect(m.size).toBe(0);
    expect(m.warnings).toContain('message has no headers');
    expect(m.elements('Header')).toEqual([]);
    expect(m.elements('Any').length).toBe(1);
    // The empty From and the null envelope sender are the same Email, so the first (from) wins.
    expect(m.elements('Email').map((e) => [e.location, e.variable('email')])).toEqual([['from', '']]);
    exercise(m);
  });

  it('no blank line between headers and body', async () => {
    const m = await analyzeMessage('From: a@example.com\r\nSubject: hi');
    expect(m.warnings).toContain('no blank line between headers and body');
    expect(m.elements('Any')[0]!.variable('subject')).toBe('hi');
  });

  it('NUL bytes and invalid UTF-8 in headers', async () => {
    const raw = Buffer.concat([
      Buffer.from('From: =?x-unknown?B?////?= <a@example.com>\r\nSubject: caf'),
      Buffer.from([0xe9, 0x00, 0xff]),
      Buffer.from('\r\nX-Bin: \x00\x01\x02\r\n\r\nbody\x00text http://nul.example.com/\r\n'),
    ]);
    const m = await analyzeMessage(raw);
    expect(m.warnings).toContain('message contains NUL bytes');
    expect(m.warnings).toContain('headers contain bytes that are not valid UTF-8');
    expect(m.elements('Header').map((h) => h.variable('name'))).toEqual(['From', 'Subject', 'X-Bin']);
    expect(m.elements('Any')[0]!.variable('subject')).toBe('caf\ufffd\u0000\ufffd');
    expect(m.elements('Url').map((u) => u.variable('url'))).toEqual(['http://nul.example.com/']);
    exercise(m);
  });

  it('a 10 MB line', async () => {
    const m = await analyzeMessage('Subject: long\r\n\r\n' + 'a'.repeat(10 * 1024 * 1024) + ' http://end.example.com/\r\n');
    expect(m.warnings.some((w) => w.startsWith('line longer than 998 bytes'))).toBe(true);
    expect(m.elements('Body').length).toBe(1);
    exercise(m);
  });

  it('10,000+ headers are capped at MAX_HEADERS with a warning', async () => {
    const lines: string[] = [];
    for (let i = 0; i < MAX_HEADERS + 50; i++) lines.push(`X-H${i}: v${i}`);
    const m = await analyzeMessage(lines.join('\r\n') + '\r\n\r\nbody\r\n');
    expect(m.elements('Header').length).toBe(MAX_HEADERS);
    expect(m.warnings).toContain(`header limit: 50 headers beyond ${MAX_HEADERS} ignored`);
    expect(m.builtinTags.length).toBe(MAX_HEADERS);
    expect(m.elements('Header')[9999]!.variable('value')).toBe('v9999');
  });

  it('deeply nested multiparts are not split past the nesting limit: the rest is one text attachment', async () => {
    let part = 'Content-Type: text/plain\r\n\r\ninner text http://deep.example.com/\r\n';
    for (let i = 299; i >= 0; i--) part = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${part}\r\n--b${i}--\r\n`;
    const m = await analyzeMessage(`From: a@example.com\r\n${part}`);
    expect(m.warnings).toContain(`MIME nesting limit: parts deeper than ${MAX_MIME_PART_DEPTH} levels are not split`);
    const texts = m.elements('Body').filter((e) => String(e.variable('value')).includes('inner text'));
    expect(texts.map((e) => e.location)).toEqual(['attachment']);
    expect(m.elements('Url').map((u) => [u.location, u.variable('url')])).toEqual([['attachment', 'http://deep.example.com/']]);
    exercise(m);
  });

  it('broken base64, quoted-printable and unknown charsets', async () => {
    const raw = [
      'From: x@example.com',
      'Content-Type: multipart/mixed; boundary=zz',
      '',
      '--zz',
      'Content-Type: text/plain; charset=no-such-charset',
      'Content-Transfer-Encoding: base64',
      '',
      '!!!not*base64@@@',
      '--zz',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      '<a href=3D"http://qp.example.com/=ZZ">x</a>=',
      '--zz',
      '',
    ].join('\r\n');
    const m = await analyzeMessage(raw);
    expect(m.elements('Url').map((u) => u.variable('url'))).toEqual(['http://qp.example.com/=zz']);
    exercise(m);
  });

  it('garbage addresses, dates and Received headers', async () => {
    const raw = [
      'From: <<<@@@>>>',
      'To: ,,, "unterminated <x@',
      'Reply-To: ',
      'Date: not a date',
      'Received: from',
      'Received: by ; ',
      'Message-ID: <no-at-sign>',
      'Content-Type: ;;;=',
      '',
      'text',
    ].join('\r\n');
    const m = await analyzeMessage(raw);
    const headers = m.elements('Header');
    expect(headers.find((h) => h.variable('name') === 'Date')!.variable('value')).toBe('');
    expect(headers.find((h) => h.variable('name') === 'Content-Type')!.variable('value')).toBe('');
    expect(m.elements('Domain').map((d) => d.variable('value'))).toEqual([]);
    expect(m.elements('Ip').map((d) => d.variable('value'))).toEqual(['127.0.0.1']);
    exercise(m);
  });

  it('caps elements per scope', async () => {
    const urls: string[] = [];
    for (let i = 0; i < MAX_ELEMENTS + 10; i++) urls.push(`http://h${i}.example.com/`);
    const m = await analyzeMessage('Subject: many\r\n\r\n' + urls.join(' ') + '\r\n');
    expect(m.elements('Url').length).toBe(MAX_ELEMENTS);
    expect(m.warnings).toContain(`URL limit: 10 URLs beyond ${MAX_ELEMENTS} ignored`);
  });

  it('thousands of Received hosts: each distinct name once, in order, for the Domain set and the classifier', async () => {
    // Each hop names a new relay and repeats the previous one (`by` here is `from` of the next hop), past
    // the short per-message list of names (SmallMap's linear limit) many times over.
    const n = 3_000;
    const hops: string[] = [];
    for (let i = 0; i < n; i++) hops.push(`Received: from relay${i + 1}.example.com ([10.0.0.1]) by relay${i}.example.com; Thu, 1 Jan 2026 00:00:00 +0000`);
    const m = await analyzeMessage(hops.join('\r\n') + '\r\nSubject: hops\r\n\r\nbody\r\n');
    const ctx = messageContextOf(m);
    const hosts = extractHostDomains(ctx).map((d) => d.label);
    expect(hosts.length).toBe(n + 1);
    expect(new Set(hosts).size).toBe(n + 1);
    expect(hosts.slice(0, 3)).toEqual(['relay1.example.com', 'relay0.example.com', 'relay2.example.com']);
    const domains = m.elements('Domain').map((e) => e.variable('value'));
    expect(domains.slice(0, n + 1)).toEqual(hosts);
  });

  it('pathological HTML (unclosed tags, comments, attributes without values)', async () => {
    const html = '<html><head><title>t' + '<a href="http://x.example.com/"'.repeat(1000) + '<!-- never closed <p>' + '<'.repeat(5000);
    const m = await analyzeMessage(`Content-Type: text/html\r\n\r\n${html}`);
    exercise(m);
    expect(m.elements('Body')[0]!.variable('value')).toBe('');
  });

  it('bare LF line ends', async () => {
    const m = await analyzeMessage('From: a@example.com\nTo: b@example.com\nSubject: lf\n\nhello http://lf.example.com/\n');
    expect(m.elements('Header').map((h) => h.variable('raw'))).toEqual([' a@example.com\n', ' b@example.com\n', ' lf\n']);
    expect(m.elements('Url').map((u) => u.variable('url'))).toEqual(['http://lf.example.com/']);
  });

  it('an unparsable remote IP and input that is not bytes', async () => {
    const m = await analyzeMessage('Subject: x\r\n\r\n', { remoteIp: 'not-an-ip' });
    expect(m.elements('Ip').map((e) => [e.variable('ip'), e.variable('octets'), e.variable('ip_reverse'), e.variable('is_v4')])).toEqual([['not-an-ip', [], '', 0]]);
    const bad = await analyzeMessage(42 as unknown as string);
    expect(bad.warnings[0]).toMatch(/^analysis failed/);
    expect(bad.elements('Any').length).toBe(1);
  });

  it('flags the first line over 998 bytes (CRLF excluded) and nothing at exactly 998', async () => {
    const line = (n: number, c: string) => c.repeat(n) + '\r\n';
    const warn = async (raw: string) => (await analyzeMessage(raw)).warnings.filter((w) => w.startsWith('line longer'));
    expect(await warn('Subject: x\r\n\r\n' + line(998, 'a').repeat(5))).toEqual([]);
    expect(await warn('Subject: x\r\n\r\n' + line(998, 'a').repeat(5) + line(999, 'b') + 'end\r\n')).toEqual(['line longer than 998 bytes at byte 5014']);
    expect(await warn('Subject: x\r\n\r\n' + 'c'.repeat(1000))).toEqual(['line longer than 998 bytes at byte 14']);
  });
});
