/**
 * Address lists and unstructured text as mail-parser reads them (RFC 5322 §3.4, RFC 2047), and the
 * byte-level facts of raw header values.
 */
import { describe, expect, it } from 'vitest';
import { parseMailboxes } from '../../src/message/addresses.js';
import { firstHeader, headersNamed, lastHeader, rawValueInfo } from '../../src/message/header-facts.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { decodeEncodedWord, parseUnstructured } from '../../src/message/rfc2047.js';
import { threadName } from '../../src/message/thread.js';

const box = (name?: string, address?: string): { name: string | undefined; address: string | undefined } => ({ name, address });

describe('parseMailboxes', () => {
  it('reads names, quoted names and bare addresses', () => {
    expect(parseMailboxes(' John Doe <jdoe@example.org>\r\n')).toEqual([box('John Doe', 'jdoe@example.org')]);
    expect(parseMailboxes(' "Doe, John" <jdoe@example.org>, a@example.net\r\n')).toEqual([
      box('Doe, John', 'jdoe@example.org'),
      box(undefined, 'a@example.net'),
    ]);
    expect(parseMailboxes(' "Hello"<hello@example.org>\r\n')).toEqual([box('Hello', 'hello@example.org')]);
  });

  it('keeps white space inside a quoted name and the text between quotes as written', () => {
    expect(parseMailboxes(' "  Spaced  " <a@example.org>\r\n')).toEqual([box('  Spaced  ', 'a@example.org')]);
    expect(parseMailboxes(' "Giant; \\"Big\\" Box" <box@example.net>\r\n')).toEqual([box('Giant; "Big" Box', 'box@example.net')]);
  });

  it('turns comments into names', () => {
    expect(parseMailboxes(' a@example.org (Alice)\r\n')).toEqual([box('Alice', 'a@example.org')]);
    expect(parseMailboxes(' Foo (foo@bar.example) <baz@example.org>\r\n')).toEqual([box('Foo (foo@bar.example)', 'baz@example.org')]);
    expect(parseMailboxes(' Foo Bar <a@example.org> (work)\r\n')).toEqual([box('Foo Bar (work)', 'a@example.org')]);
  });

  it('reads a bare word as a name without an address', () => {
    expect(parseMailboxes(' test\r\n')).toEqual([box('test', undefined)]);
    expect(parseMailboxes(' <>\r\n')).toEqual([]);
  });

  it('drops blanks inside angle brackets', () => {
    expect(parseMailboxes(' < user@example.org >\r\n')).toEqual([box(undefined, 'user@example.org')]);
    expect(parseMailboxes(' "Test" <test@example.org >\r\n')).toEqual([box('Test', 'test@example.org')]);
  });

  it('decodes encoded words, inside quotes too, joining adjacent ones without a space', () => {
    expect(parseMailboxes(' "=?iso-8859-1?Q?Fr=F6sche?=" <a@example.org>\r\n')).toEqual([box('Frösche', 'a@example.org')]);
    expect(parseMailboxes(' =?utf-8?B?SsO2cmc=?= <a@example.org>\r\n')).toEqual([box('Jörg', 'a@example.org')]);
    expect(parseMailboxes(' Herr =?utf-8?Q?J=C3=B6rg?= <a@example.org>\r\n')).toEqual([box('Herr Jörg', 'a@example.org')]);
    expect(parseMailboxes(' =?utf-8?Q?A?= =?utf-8?Q?B?= <a@example.org>\r\n')).toEqual([box('AB', 'a@example.org')]);
  });

  it('flattens groups and drops empty ones', () => {
    expect(parseMailboxes(' Undisclosed recipients:;\r\n')).toEqual([]);
    expect(parseMailboxes(' Team: a@example.org, "C" <c@example.org>;, e@example.net\r\n')).toEqual([
      box(undefined, 'a@example.org'),
      box('C', 'c@example.org'),
      box(undefined, 'e@example.net'),
    ]);
  });

  it('follows folded lines and stops at the end of the header', () => {
    expect(parseMailboxes(' a@example.org,\r\n\tb@example.org\r\nX-Next: c@example.org\r\n')).toEqual([
      box(undefined, 'a@example.org'),
      box(undefined, 'b@example.org'),
    ]);
  });

  it('parses a hostile header in linear time', () => {
    const t0 = Date.now();
    const list = parseMailboxes(' ' + '"=?utf-8?q?x?= (<a@b>, '.repeat(20_000) + '\r\n');
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(list.length).toBeLessThanOrEqual(10_000);
  });
});

describe('RFC 2047 and unstructured text', () => {
  it('decodes Q and B words with their charset, ignoring a language suffix', () => {
    expect(decodeEncodedWord('=?iso-8859-1?q?this=20is_text?=', 0)).toEqual({ text: 'this is text', end: 31 });
    expect(decodeEncodedWord('=?ISO-8859-1*de?Q?a_b?=', 0)?.text).toBe('a b');
    expect(decodeEncodedWord('=?utf-8?b?VGjDrXM=?=', 0)?.text).toBe('Thís');
    expect(decodeEncodedWord('=?unknown-charset?q?caf=C3=A9?=', 0)?.text).toBe('café');
  });

  it('rejects malformed words', () => {
    expect(decodeEncodedWord('=?x?q?a?=', 0)).toBeUndefined(); // charset shorter than 2
    expect(decodeEncodedWord('=?utf-8?x?a?=', 0)).toBeUndefined();
    expect(decodeEncodedWord('=?utf-8?q?=ZZ?=', 0)).toBeUndefined();
    expect(decodeEncodedWord('=?utf-8?q?unterminated', 0)).toBeUndefined();
  });

  it('joins lines and words as mail-parser does, keeping encoded white space', () => {
    expect(parseUnstructured(' =?iso-8859-1?Q?Die_Fr=F6sche_?=\r\n')).toBe('Die Frösche ');
    expect(parseUnstructured(' hello  world \r\n  again\r\n')).toBe('hello  world again');
    expect(parseUnstructured(' foo =?utf-8?B?w7Y=?= bar\r\n')).toBe('foo ö bar');
    expect(parseUnstructured(' =?utf-8?Q?a?= =?utf-8?Q?b?=\r\n')).toBe('ab');
    expect(parseUnstructured(' \r\n')).toBe('');
    expect(parseUnstructured(' Re: =?broken\r\n')).toBe('Re: =?broken');
  });
});

describe('header facts', () => {
  const msg = async (raw: Uint8Array | string) => messageContextOf(await analyzeMessage(raw));

  it('groups headers by name and answers first/last', async () => {
    const ctx = await msg('Subject: one\r\nsubject: two\r\nTo: a@example.org\r\n\r\nbody\r\n');
    expect(headersNamed(ctx, 'subject').map((h) => h.raw)).toEqual([' one\r\n', ' two\r\n']);
    expect(firstHeader(ctx, 'subject')?.raw).toBe(' one\r\n');
    expect(lastHeader(ctx, 'subject')?.raw).toBe(' two\r\n');
    expect(lastHeader(ctx, 'cc')).toBeUndefined();
  });

  it('tells 8-bit, valid UTF-8 and invalid bytes apart', async () => {
    const head = Buffer.from('Subject: caf\u00e9\r\nTo: ', 'utf8');
    const bad = Buffer.from([0x61, 0xe9, 0x40, 0x62, 0x2e, 0x6f, 0x72, 0x67]); // "a\xe9@b.org" (Latin-1)
    const tail = Buffer.from('\r\nCc: \ufffd@example.org\r\nBcc: plain@example.org\r\n\r\nbody\r\n', 'utf8');
    const ctx = await msg(new Uint8Array(Buffer.concat([head, bad, tail])));
    const info = (n: string) => rawValueInfo(ctx, lastHeader(ctx, n)!);
    expect(info('subject')).toMatchObject({ nonAscii: true, validUtf8: true, text: ' café\r\n' });
    expect(info('to')).toMatchObject({ nonAscii: true, validUtf8: false, text: '' });
    // A literal U+FFFD is valid UTF-8.
    expect(info('cc')).toMatchObject({ nonAscii: true, validUtf8: true });
    expect(info('bcc')).toMatchObject({ nonAscii: false, validUtf8: true });
  });

  it('exposes mail-parser names on the message (comment names, decoded quoted names)', async () => {
    const ctx = await msg(
      'From: Foo (foo@bar.example) <baz@example.org>\r\nReply-To: hello\r\nTo: "=?utf-8?Q?J=C3=B6rg?=" <j@example.org>\r\n' +
        'Subject: =?utf-8?Q?Hi_?=\r\n\r\nbody\r\n',
    );
    expect(ctx.from).toEqual({ email: expect.objectContaining({ address: 'baz@example.org' }), name: 'foo (foo@bar.example)' });
    expect(ctx.replyTo).toBeUndefined(); // no address in its first mailbox
    expect(ctx.to[0]?.name).toBe('jörg');
    expect(ctx.subjectText).toBe('Hi ');
  });
});

describe('B words as mail-parser decodes them', () => {
  it('accepts padding between quanta and folded blanks, rejects foreign characters', () => {
    expect(decodeEncodedWord('=?utf-8?B?QQ==QQ==?=', 0)?.text).toBe('AA');
    expect(decodeEncodedWord('=?utf-8?B?SGVs bG8=?=', 0)?.text).toBe('Hello');
    expect(decodeEncodedWord('=?utf-8?B?SGVs\r\n bG8=?=', 0)?.text).toBe('Hello');
    expect(decodeEncodedWord('=?utf-8?B?SGVs\r\nbG8=?=', 0)).toBeUndefined();
    expect(decodeEncodedWord('=?utf-8?B?SGV!bG8=?=', 0)).toBeUndefined();
  });
});

describe('threadName (mail-parser thread_name)', () => {
  it('removes reply/forward prefixes in several languages, counters and list tags', () => {
    expect(threadName('Re: Fwd: lunch')).toBe('lunch');
    expect(threadName('AW[2]: WG: Termin')).toBe('Termin');
    expect(threadName('回复: 会议')).toBe('会议');
    expect(threadName('[team] Re: lunch')).toBe('lunch');
    expect(threadName('[team] LUNCH TODAY')).toBe('LUNCH TODAY');
    expect(threadName('Regarding lunch')).toBe('Regarding lunch');
    expect(threadName('Note: lunch')).toBe('Note: lunch');
  });

  it('unwraps [Fwd: …] and trims trailing (fwd) markers', () => {
    expect(threadName('[Fwd: lunch plans]')).toBe('lunch plans');
    expect(threadName('Re: lunch plans (fwd)')).toBe('lunch plans');
    expect(threadName('[just brackets]')).toBe('[just brackets]');
    expect(threadName('Re:')).toBe('');
  });
});
