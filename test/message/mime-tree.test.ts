/**
 * mail-parser's part tree (src/message/mime-tree.ts) and Stalwart's text parts over it: document
 * order, body lists by mail-parser's rules, raw offsets, decoding, attribute decoding, nested
 * messages, malformed headers and limits.
 */
import { describe, expect, it } from 'vitest';
import { MAX_CONTENT_TYPE_CHARS } from '../../src/message/content-type.js';
import { MAX_MIME_PARTS, parseContentType, parseMimeTree } from '../../src/message/mime-tree.js';
import { buildView } from '../../src/message/text-parts.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const crlf = (lines: string[]): string => lines.join('\r\n');

function tree(lines: string[]) {
  return parseMimeTree(enc(crlf(lines))).message;
}

describe('part tree', () => {
  it('lists every part depth-first, containers first, with the RFC 8621 body lists', () => {
    const m = tree([
      'From: a@example.com', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="outer"', '',
      'preamble is ignored',
      '--outer', 'Content-Type: multipart/alternative; boundary=inner', '',
      '--inner', 'Content-Type: text/plain; charset=utf-8', '', 'plain body',
      '--inner', 'Content-Type: text/html; charset=utf-8', '', '<p>html body</p>',
      '--inner--', '',
      '--outer', 'Content-Type: image/png; name=a.png', 'Content-Transfer-Encoding: base64', '', 'iVBORw0KGgo=',
      '--outer', 'Content-Type: text/calendar', '', 'BEGIN:VCALENDAR',
      '--outer--', 'epilogue', '',
    ]);
    expect(m.parts.map((p) => `${p.kind}:${p.contentType?.type}/${p.contentType?.subtype}`)).toEqual([
      'multipart:multipart/mixed', 'multipart:multipart/alternative', 'text:text/plain', 'html:text/html', 'inline-binary:image/png', 'text:text/calendar',
    ]);
    expect(m.parts[0]!.children).toEqual([1, 4, 5]);
    expect(m.parts[1]!.children).toEqual([2, 3]);
    // The alternative's choices stay inside it: the mixed level still needs both bodies, so the
    // (inline) image joins both lists, and is an attachment too; other text/* is only an attachment.
    expect(m.textBody).toEqual([2, 4]);
    expect(m.htmlBody).toEqual([3, 4]);
    expect(m.attachments).toEqual([4, 5]);
    expect(m.parts[2]!.text).toBe('plain body');
    expect(m.parts[4]!.decoded).toEqual(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  });

  it('an HTML-only message lists the HTML part in both body lists; an alternative with only HTML too', () => {
    const single = tree(['Content-Type: text/html', '', '<p>x</p>', '']);
    expect([single.textBody, single.htmlBody, single.attachments]).toEqual([[0], [0], []]);
    const alt = tree(['Content-Type: multipart/alternative; boundary=a', '', '--a', 'Content-Type: text/html', '', '<p>x</p>', '--a--', '']);
    expect([alt.textBody, alt.htmlBody]).toEqual([[1], [1]]);
  });

  it('inline images of multipart/mixed are body parts and attachments; a text part with a name is an attachment', () => {
    const m = tree([
      'Content-Type: multipart/mixed; boundary=m', '',
      '--m', 'Content-Type: text/plain', '', 'hello',
      '--m', 'Content-Type: image/gif', 'Content-Disposition: inline', '', 'GIF89a',
      '--m', 'Content-Type: text/plain; name=notes.txt', '', 'notes',
      '--m', 'Content-Type: text/plain', 'Content-Disposition: attachment', '', 'attached',
      '--m--', '',
    ]);
    expect(m.textBody).toEqual([1, 2]);
    expect(m.htmlBody).toEqual([1, 2]);
    expect(m.attachments).toEqual([2, 3, 4]);
  });

  it('keeps raw offsets and the encoded body; len() is the decoded size', () => {
    const raw = crlf(['Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', 'aMOpbGzDsyB3w7NybGQK', '']);
    const m = parseMimeTree(enc(raw)).message;
    const p = m.parts[0]!;
    expect(Buffer.from(m.raw.subarray(p.bodyStart, p.bodyEnd)).toString()).toBe('aMOpbGzDsyB3w7NybGQK\r\n');
    expect(p.text).toBe('hélló wórld\n');
    expect(p.len).toBe(15);
  });

  it('decodes quoted-printable and declared charsets', () => {
    const m = tree(['Content-Type: text/plain; charset=iso-8859-1', 'Content-Transfer-Encoding: quoted-printable', '', 'Gr=FC=DFe, soft= ', 'break =3d done  ', 'end=2', '']);
    // Soft breaks (white space allowed after '='), lower-case hex, trailing white space dropped,
    // an incomplete escape at the end dropped.
    expect(m.parts[0]!.text).toBe('Grüße, softbreak = done\r\nend\r\n');
    expect(m.textBody).toEqual([0]);
    // '=' before a non-hex byte is rejected by mail-parser's reader: the raw body is kept as a text attachment.
    const bad = tree(['Content-Type: text/html', 'Content-Transfer-Encoding: quoted-printable', '', '<a href=http://example.com/>x</a>', '']);
    expect([bad.parts[0]!.kind, bad.parts[0]!.text, bad.htmlBody, bad.attachments]).toEqual(['text', '<a href=http://example.com/>x</a>\r\n', [], [0]]);
  });

  it('keeps the raw header name and value (folding included, latin1)', () => {
    const m = tree(['MIME-Version : 1.0', 'Content-Type: text/plain;', '\tcharset="utf-8";', '', 'x']);
    expect(m.parts[0]!.headers.map((h) => [h.rawName, h.name, h.value])).toEqual([
      ['MIME-Version ', 'mime-version', ' 1.0'],
      ['Content-Type', 'content-type', ' text/plain;\r\n\tcharset="utf-8";'],
    ]);
    expect(m.parts[0]!.contentType?.attributes.get('charset')).toBe('utf-8');
  });

  it('parses nested message/rfc822 parts into their own part list', () => {
    const m = tree([
      'Content-Type: multipart/mixed; boundary=x', '',
      '--x', 'Content-Type: text/plain', '', 'outer',
      '--x', 'Content-Type: message/rfc822', '',
      'From: b@example.org', 'Content-Type: multipart/alternative; boundary=y', '',
      '--y', 'Content-Type: text/plain', '', 'inner plain',
      '--y', 'Content-Type: text/html', '', '<b>inner html</b>',
      '--y--',
      '--x--', '',
    ]);
    expect(m.parts.map((p) => p.kind)).toEqual(['multipart', 'text', 'message']);
    expect(m.attachments).toEqual([2]);
    const nested = m.parts[2]!.nested!;
    expect(nested.parts.map((p) => p.kind)).toEqual(['multipart', 'text', 'html']);
    expect(nested.textBody).toEqual([1]);
    const view = buildView(enc(crlf([
      'Content-Type: multipart/mixed; boundary=x', '', '--x', 'Content-Type: text/plain', '', 'outer', '--x', 'Content-Type: message/rfc822', '',
      'Content-Type: text/html', '', '<p>inner</p>', '--x--', '',
    ])));
    expect(view.textParts.map((e) => (e === undefined ? null : [e.partIndex, e.isHtml, e.isBody, e.text]))).toEqual([
      null, [1, false, true, 'outer'], null, [-1, true, false, 'inner'],
    ]);
  });

  it('an unparsable Content-Type is absent; a multipart without its boundary is a text attachment', () => {
    expect(tree(['Content-Type: ; tag=1', '', 'x']).parts[0]!.contentType).toBeUndefined();
    const m = tree(['Content-Type: multipart/mixed; boundary=zz', '', 'no delimiter here', '']);
    expect([m.parts[0]!.kind, m.attachments]).toEqual(['text', [0]]);
  });

  it('without a closing delimiter the last part is recovered as a raw text attachment', () => {
    const m = tree(['Content-Type: multipart/alternative; boundary=u', '', '--u', 'Content-Type: text/plain', '', 'plain',
      '--u', 'Content-Type: text/html', 'Content-Transfer-Encoding: base64', '', 'PHA+aGk8L3A+', '']);
    expect(m.parts.map((p) => p.kind)).toEqual(['multipart', 'text', 'text']);
    expect(m.parts[2]!.text).toBe('PHA+aGk8L3A+\r\n');
    expect([m.textBody, m.htmlBody, m.attachments]).toEqual([[1], [1], [2]]);
  });

  it('a base64 body with bytes the decoder rejects is kept raw as a text attachment', () => {
    const bad = tree(['Content-Type: text/plain', 'Content-Transfer-Encoding: base64', '', 'aGVsbG8=', '-- ', 'List footer_', '']);
    expect([bad.parts[0]!.kind, bad.parts[0]!.text, bad.attachments, bad.textBody]).toEqual(['text', 'aGVsbG8=\r\n-- \r\nList footer_\r\n', [0], []]);
    const good = tree(['Content-Type: text/plain', 'Content-Transfer-Encoding: base64', '', 'aGVs', 'bG8=', '']);
    expect([good.parts[0]!.text, good.textBody]).toEqual(['hello', [0]]);
    // Decoding goes on after '=' padding; an incomplete last group is dropped.
    const pad = tree(['Content-Type: text/plain', 'Content-Transfer-Encoding: base64', '', 'aGVsbG8=IHdvcmxk', 'IQ', '']);
    expect(pad.parts[0]!.text).toBe('hello world');
  });

  it('finds a delimiter in the middle of a line, as mail-parser does', () => {
    const m = tree(['Content-Type: multipart/mixed; boundary=q', '', '--q', 'Content-Type: text/plain', '', 'first text --q', 'Content-Type: text/plain', '', 'second', '--q--', '']);
    expect(m.parts.map((p) => p.text)).toEqual([undefined, 'first text ', 'second']);
  });

  it('a message without a blank line is all headers', () => {
    const m = tree(['From: a@example.com', 'Content-Type: application/octet-stream', 'Subject: only headers']);
    expect(m.parts).toHaveLength(1);
    expect([m.parts[0]!.kind, m.parts[0]!.len, m.textBody, m.htmlBody, m.attachments]).toEqual(['text', 0, [], [], []]);
    // With the blank line, the (empty) body is a normal part.
    const e = tree(['From: a@example.com', 'Content-Type: application/octet-stream', '', '']);
    expect([e.parts[0]!.kind, e.attachments]).toEqual(['binary', [0]]);
  });

  it('caps the number of parts and the nesting depth with warnings', () => {
    const parts: string[] = ['Content-Type: multipart/mixed; boundary=s', ''];
    for (let i = 0; i < MAX_MIME_PARTS + 10; i++) parts.push('--s', '', `p${i}`);
    parts.push('--s--', '');
    const r = parseMimeTree(enc(crlf(parts)));
    expect(r.message.parts.length).toBe(MAX_MIME_PARTS);
    expect(r.warnings[0]).toMatch(/part limit/);
    let head = '';
    let tail = '';
    for (let i = 0; i < 1000; i++) {
      head += `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`;
      tail = `\r\n--n${i}--\r\n` + tail;
    }
    const t0 = Date.now();
    const d = parseMimeTree(enc(head + 'Content-Type: text/plain\r\n\r\nhi\r\n' + tail));
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(d.warnings[0]).toMatch(/nesting limit/);
  });
});

describe('Content-Type attributes', () => {
  it('unquotes, lower-cases names and type, decodes RFC 2231 and RFC 2047', () => {
    const ct = parseContentType(' Application/PDF; Name="=?utf-8?Q?r=C3=A9sum=C3=A9.pdf?="; x="a\\"b"');
    expect([ct?.type, ct?.subtype, ct?.attributes.get('name'), ct?.attributes.get('x')]).toEqual(['application', 'pdf', 'résumé.pdf', 'a"b']);
    const cd = parseContentType("attachment; filename*0*=utf-8''%C3%A9t%C3%A9; filename*1=.txt");
    expect([cd?.type, cd?.subtype, cd?.attributes.get('filename')]).toEqual(['attachment', undefined, 'été.txt']);
    expect(parseContentType('  ; x=1')).toBeUndefined();
  });

  it('unquotes backslash escapes anywhere in a quoted value', () => {
    for (const [quoted, value] of [['"a\\\\b"', 'a\\b'], ['"\\"x\\""', '"x"'], ['"ends\\"', 'ends"'], ['"tail\\', 'tail\\'], ['""', ''], ['"\\\\\\a"', '\\a']])
      expect(parseContentType(`text/plain; x=${quoted}`)?.attributes.get('x'), quoted).toBe(value);
  });

  it('keeps parentheses inside quoted values: only comments outside quotes are skipped (mail-parser)', () => {
    // Found by test/message/fuzz.test.ts: the comments were cut out of quoted strings too, so a file name
    // lost its "(final)" and a boundary such as Sun/iPlanet's "Boundary_(ID_…)" (4 corpus messages)
    // never matched its delimiters, leaving the whole multipart one unsplit part.
    expect(parseContentType('attachment; filename="report (final).pdf"')?.attributes.get('filename')).toBe('report (final).pdf');
    expect(parseContentType('multipart/mixed; boundary="Boundary_(ID_xjiotMI3LbV/zJ0Zs39NiA)"')?.attributes.get('boundary')).toBe('Boundary_(ID_xjiotMI3LbV/zJ0Zs39NiA)');
    expect(parseContentType('text/plain; x="a\\"(b)"')?.attributes.get('x')).toBe('a"(b)');
    // Outside quotes comments still go, nested ones whole, and one never closed runs to the end.
    const ct = parseContentType('text/plain (a comment); charset=us-ascii (Plain (nested) text); format=flowed');
    expect([ct?.type, ct?.subtype, [...ct!.attributes]]).toEqual(['text', 'plain', [['charset', 'us-ascii'], ['format', 'flowed']]]);
    expect([...parseContentType('multipart/mixed; boundary=b(c; late=1')!.attributes]).toEqual([['boundary', 'b']]);
  });

  it('splits a multipart whose boundary has parentheses', () => {
    const m = tree([
      'Content-Type: multipart/mixed; boundary="Boundary_(ID_x)"',
      '',
      '--Boundary_(ID_x)',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'first part',
      '--Boundary_(ID_x)',
      'Content-Type: image/gif; name="spacer(1).gif"',
      'Content-Transfer-Encoding: base64',
      '',
      'R0lGODlhAQABAAAAACw=',
      '--Boundary_(ID_x)--',
      '',
    ]);
    expect(m.parts.map((p) => [p.kind, p.text ?? p.attachmentName])).toEqual([['multipart', undefined], ['text', 'first part'], ['inline-binary', 'spacer(1).gif']]);
  });

  it(`reads the first ${MAX_CONTENT_TYPE_CHARS} characters of a hostile value (3 MB of "(" or of backslashes)`, () => {
    const parens = parseContentType(`multipart/mixed; boundary="b"; junk=${'('.repeat(3 << 20)}; late="never"`);
    expect([parens?.type, parens?.subtype, parens?.attributes.get('boundary'), parens?.attributes.has('late')]).toEqual(['multipart', 'mixed', 'b', false]);
    const slashes = parseContentType(`text/plain; name="${'\\'.repeat(1 << 20)}"`);
    expect(slashes?.attributes.get('name')).toBe('\\'.repeat((MAX_CONTENT_TYPE_CHARS - 'text/plain; name="'.length) / 2));
  });
});
