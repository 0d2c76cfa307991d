/**
 * Charsets as mail-parser 0.11.7 decodes them (src/message/charsets.ts): its label table
 * (src/decoders/charsets/map.rs) for MIME bodies and RFC 2231 parameter values. Messages are real
 * RFC 5322 text; the expected strings are what mail-parser's decoders give for those bytes.
 */
import { describe, expect, it } from 'vitest';
import { analyzeMessage } from '../../src/message/index.js';
import { parseMimeTree } from '../../src/message/mime-tree.js';

const HEAD = ['From: Alice <alice@example.org>', 'To: Bob <bob@example.net>', 'Subject: charset test', 'Date: Mon, 1 Jan 2024 10:00:00 +0000', 'MIME-Version: 1.0'];

/** A single-part text/plain message whose body is `body` (bytes as written, then `end`) in charset `charset`. */
function plain(charset: string, body: Buffer | string, cte = '8bit', end = '\r\n'): Buffer {
  const head = [...HEAD, `Content-Type: text/plain; charset=${charset}`, `Content-Transfer-Encoding: ${cte}`, '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), typeof body === 'string' ? Buffer.from(body, 'latin1') : body, Buffer.from(end)]);
}

async function bodyText(raw: Buffer): Promise<string> {
  const m = await analyzeMessage(raw);
  return m.elements('Any')[0]!.variable('body.text') as string;
}

describe('bodies: the labels mail-parser knows', () => {
  it('labels match without regard to case, `-` and `_` (mail-parser folds `-` to `_`)', async () => {
    for (const label of ['ISO-8859-2', 'iso_8859-2', 'ISO8859_2', 'iso-8859_2:1987', 'Latin2']) {
      expect(await bodyText(plain(label, 'Zelo rada grem v sla\xb9\xe8i\xe8arno'))).toBe('Zelo rada grem v slaščičarno\r\n');
    }
  });

  it('us-ascii, iso-8859-1 and latin1 are read as windows-1252, with U+FFFD at its unassigned bytes', async () => {
    for (const label of ['us-ascii', 'ISO-8859-1', 'latin1', 'cp1252', 'x-cp1252', 'ascii']) {
      expect(await bodyText(plain(label, '\x93Hi\x94 5\x80 caf\xe9 \x81'))).toBe('\u201cHi\u201d 5\u20ac caf\u00e9 \ufffd\r\n');
    }
  });

  it('the other Windows code pages (cp1250 and the like included) with U+FFFD at unassigned bytes, not C1 controls', async () => {
    expect(await bodyText(plain('cp1250', 'Zelo rada grem v sla\x9a\xe8i\xe8arno \x81'))).toBe('Zelo rada grem v slaščičarno \ufffd\r\n');
    expect(await bodyText(plain('windows-1251', '\xcf\xf0\xe8\xe2\xe5\xf2 \x98'))).toBe('Привет \ufffd\r\n');
    expect(await bodyText(plain('x-cp1253', '\xca\xf9\xe4\xe9\xea\xef\xdf \xaa'))).toBe('Κωδικοί \ufffd\r\n');
  });

  it('iso-8859-9 is ISO-8859-9 (C1 controls at 0x80-0x9F), not windows-1254 as the WHATWG label reads it', async () => {
    expect(await bodyText(plain('iso-8859-9', 'Kebab\xfdm\xfd \x80'))).toBe('Kebabımı \u0080\r\n');
  });

  it('iso-8859-7 is the 1987 edition (no euro sign at 0xA4)', async () => {
    expect(await bodyText(plain('iso-8859-7', '\xc3\xe5\xe9\xdc \xa4'))).toBe('Γειά \ufffd\r\n');
  });

  it('charsets Node has no decoder for: ISO-8859-16, IBM850, UTF-7', async () => {
    expect(await bodyText(plain('iso-8859-16', 'Bun\xe3 ziua, \xaa\xfe'))).toBe('Bună ziua, Șț\r\n');
    expect(await bodyText(plain('ibm850', '\x9b\x9c\x9d\x9e'))).toBe('ø£Ø×\r\n');
    expect(await bodyText(plain('utf-7', 'Hi Mom -+Jjo--! +ZeVnLIqe-'))).toBe('Hi Mom -☺-! 日本語\r\n');
  });

  it('Japanese, Chinese, Korean and Cyrillic charsets (encoding_rs in Stalwart\'s build)', async () => {
    expect(await bodyText(plain('Shift_JIS', '\x83n\x83\x8D\x81[\x81E\x83\x8F\x81[\x83\x8B\x83h'))).toBe('ハロー・ワールド\r\n');
    expect(await bodyText(plain('ISO-2022-JP', '\x1b$B%O%m!<!&%o!<%k%I\x1b(B', '7bit'))).toBe('ハロー・ワールド\r\n');
    expect(await bodyText(plain('GB2312', '\xc4\xe3\xba\xc3\xa3\xac\xca\xc0\xbd\xe7'))).toBe('你好，世界\r\n');
    expect(await bodyText(plain('big5', '\xa7A\xa6n\xa1A\xa5@\xac\xc9'))).toBe('你好，世界\r\n');
    expect(await bodyText(plain('ks_c_5601-1987', '\xbe\xc8\xb3\xe7\xc7\xcf\xbc\xbc\xbf\xe4'))).toBe('안녕하세요\r\n');
    expect(await bodyText(plain('KOI8-R', '\xf0\xd2\xc9\xd7\xc5\xd4'))).toBe('Привет\r\n');
    expect(await bodyText(plain('x-mac-cyrillic', '\x8f\xf0\xe8\xe2\xe5\xf2'))).toBe('Привет\r\n');
  });

  it('a UTF-8 byte order mark switches an encoding_rs charset to UTF-8 (BOM sniffing)', async () => {
    expect(await bodyText(plain('shift_jis', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Grüße')])))).toBe('Grüße\r\n');
  });

  it('utf-16 reads a byte order mark; utf-16le keeps one', async () => {
    const le = Buffer.from('\ufeffhi\r\n', 'utf16le');
    expect(await bodyText(plain('utf-16', le, 'binary', ''))).toBe('hi\r\n');
    expect(await bodyText(plain('utf-16le', le, 'binary', ''))).toBe('\ufeffhi\r\n');
  });
});

describe('bodies: labels mail-parser does not know are read as UTF-8', () => {
  it('an unknown label', async () => {
    expect(await bodyText(plain('x-unknown-charset', Buffer.from('Café au lait')))).toBe('Café au lait\r\n');
  });

  it('labels the WHATWG standard files under windows-1252 but mail-parser\'s table lacks (csascii, us, iso646-us, cp367, …)', async () => {
    for (const label of ['csascii', 'us', 'iso646-us', 'cp367', 'ibm367', 'iso-ir-6']) {
      expect(await bodyText(plain(label, Buffer.from('Grüße')))).toBe('Grüße\r\n');
    }
  });

  it('labels longer than 45 characters are looked up by their first 45 (mail-parser cuts, it does not reject)', async () => {
    expect(await bodyText(plain('extended_unix_code_packed_format_for_japanese-x', '\xa5\xcf\xa5\xed'))).toBe('ハロ\r\n');
  });
});

describe('RFC 2231 parameter values use the same table', () => {
  it('a windows-1252 filename*= with smart quotes and a euro sign', () => {
    const raw = [...HEAD, 'Content-Type: application/octet-stream', "Content-Disposition: attachment; filename*=windows-1252''%93Price%94%20%80.txt", '', 'x', ''].join('\r\n');
    expect(parseMimeTree(new TextEncoder().encode(raw)).message.parts[0]!.attachmentName).toBe('\u201cPrice\u201d \u20ac.txt');
  });

  it('continuations, an iso-8859-1 charset (read as windows-1252) and an unknown one (UTF-8)', () => {
    const tree = (cd: string) =>
      parseMimeTree(new TextEncoder().encode([...HEAD, 'Content-Type: application/pdf', `Content-Disposition: ${cd}`, '', 'x', ''].join('\r\n'))).message.parts[0]!.attachmentName;
    expect(tree("attachment; filename*0*=iso-8859-1''%93A; filename*1*=%94.pdf")).toBe('\u201cA\u201d.pdf');
    expect(tree("attachment; filename*=x-unknown''caf%C3%A9.pdf")).toBe('café.pdf');
  });
});

/** The Header scope's value of the first header called `name` (Subject: text; From: display names). */
async function headerValue(headers: string[], name: string): Promise<unknown> {
  const m = await analyzeMessage([...headers, '', 'body', ''].join('\r\n'));
  return m.elements('Header').find((e) => e.variable('name') === name)!.variable('value');
}

describe('encoded words in headers use the same table (RFC 2047)', () => {
  const subject = (value: string): Promise<unknown> => headerValue(['From: a@example.org', `Subject: ${value}`], 'Subject');

  it('windows-1252 smart quotes and euro sign in a Q word and in a B word', async () => {
    expect(await subject('=?windows-1252?Q?=93Hi=94_for_5=80?=')).toBe('\u201cHi\u201d for 5\u20ac');
    const b = Buffer.from('\x93Sale\x94 \x80 9,99 \x85', 'latin1').toString('base64');
    expect(await subject(`=?Windows-1252?B?${b}?=`)).toBe('\u201cSale\u201d \u20ac 9,99 \u2026');
  });

  it('the same words in a From display name', async () => {
    expect(await headerValue(['From: =?windows-1252?Q?=93Caf=E9=94?= <cafe@example.org>'], 'From')).toEqual(['\u201cCafé\u201d']);
  });

  it('us-ascii with 8-bit bytes is read as windows-1252, as a body is', async () => {
    expect(await subject('=?us-ascii?Q?caf=C3=A9_=93ok=94?=')).toBe('caf\u00c3\u00a9 \u201cok\u201d');
    expect(await subject('=?iso-8859-1?Q?=80uro?=')).toBe('\u20acuro');
  });

  it('an unknown label, a WHATWG label mail-parser lacks (csascii) and a UTF-8 label it lacks are read as UTF-8', async () => {
    expect(await subject('=?x-unknown?Q?caf=C3=A9?=')).toBe('café');
    expect(await subject('=?csascii?Q?caf=C3=A9?=')).toBe('café');
    expect(await subject('=?unicode-1-1-utf-8?Q?caf=C3=A9_=FF?=')).toBe('café \ufffd');
  });

  it('ISO-2022-JP, Shift_JIS, GB2312 and KOI8-R words', async () => {
    expect(await subject('=?ISO-2022-JP?B?GyRCJU8lbSE8ISYlbyE8JWslSRsoQg==?=')).toBe('ハロー・ワールド');
    expect(await subject('=?shift_jis?B?g26DjYFbgUWDj4Fbg4uDaA==?=')).toBe('ハロー・ワールド');
    expect(await subject('=?gb2312?B?xOO6w6OsysC95w==?=')).toBe('你好，世界');
    expect(await subject('=?koi8-r?Q?=F0=D2=C9=D7=C5=D4?=')).toBe('Привет');
  });

  it('a charset with a language suffix and a cp1250 label', async () => {
    expect(await subject('=?cp1250*cs?Q?sla=9A=E8i=E8arna?=')).toBe('slaščičarna');
  });
});

describe('encoded words in parameter values and comma lists use the same table', () => {
  const name = (ct: string): string | undefined =>
    parseMimeTree(new TextEncoder().encode([...HEAD, `Content-Type: ${ct}`, '', 'x', ''].join('\r\n'))).message.parts[0]!.attachmentName;

  it('a windows-1252 word in a quoted name=, and adjacent words with the blank between them dropped', () => {
    expect(name('application/pdf; name="=?windows-1252?Q?=93Price=94_=80.pdf?="')).toBe('\u201cPrice\u201d \u20ac.pdf');
    expect(name('application/pdf; name="=?utf-8?Q?Gr=C3=BC?= =?iso-8859-1?Q?=DFe.pdf?="')).toBe('Grüße.pdf');
    expect(name('application/pdf; name="Offer =?windows-1252?Q?=80?= 2024.pdf"')).toBe('Offer € 2024.pdf');
  });

  it('Keywords (a comma list) in the Header scope', async () => {
    expect(await headerValue(['From: a@example.org', 'Keywords: =?windows-1252?Q?=80uro?=, sale'], 'Keywords')).toEqual(['€uro', 'sale']);
  });
});
