/**
 * The mime module over real messages: MIME headers, per-part checks, multipart/alternative
 * consistency, encryption and signature parts, attachments (sniffed content, file names against a
 * SpamFileExtension table) and sizes, plus hostile structures.
 */
import { describe, expect, it } from 'vitest';
import { cosineSimilarity } from '../../src/analysis/mime.js';
import { EXTENSIONS, mail, multipart, runContent } from './mime-html-harness.js';

const MV = 'MIME-Version: 1.0';
const FROM = 'From: Alice <alice@example.com>';

async function tags(message: string, withTable = true): Promise<string[]> {
  const r = await runContent('mime', message, withTable ? { fileExtensions: EXTENSIONS } : {});
  expect(r.errors).toEqual([]);
  return r.tags;
}

const LONG = 'This paragraph is long enough that the message is not a single short part of the mail at all.';

describe('mime: top-level MIME headers', () => {
  it('MV_CASE when the MIME-Version name is not spelled exactly', async () => {
    expect(await tags(mail([FROM, 'Mime-Version: 1.0', 'Content-Type: text/plain; charset=utf-8'], LONG))).toEqual(['MV_CASE']);
    expect(await tags(mail([FROM, 'MIME-Version : 1.0', 'Content-Type: text/plain; charset=utf-8'], LONG))).toEqual(['MV_CASE']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8'], LONG))).toEqual([]);
  });

  it('MISSING_MIME_VERSION and MIME_HEADER_CTYPE_ONLY', async () => {
    expect(await tags(mail([FROM, 'Content-Type: text/html; charset=utf-8'], `<p>${LONG}</p>`))).toEqual(['MIME_HEADER_CTYPE_ONLY', 'MISSING_MIME_VERSION']);
    // text/plain alone is not "Content-Type only".
    expect(await tags(mail([FROM, 'Content-Type: text/plain; charset=utf-8'], LONG))).toEqual(['MISSING_MIME_VERSION']);
    expect(await tags(mail([FROM, 'Content-Transfer-Encoding: 7bit'], LONG))).toEqual(['MISSING_MIME_VERSION']);
    // No MIME header at all: nothing (and no charset checks on a part without Content-Type).
    expect(await tags(mail([FROM, 'Subject: plain'], 'Grüße ' + LONG))).toEqual([]);
  });

  it('IS_DSN for multipart/report of delivery-status or disposition-notification', async () => {
    const body = multipart('r1', [[['Content-Type: text/plain; charset=us-ascii'], LONG], [['Content-Type: message/delivery-status'], 'Reporting-MTA: dns; mx.example.com\r\n']]);
    const t = await tags(mail([FROM, MV, 'Content-Type: multipart/report; report-type="Delivery-Status"; boundary="r1"'], body));
    expect(t).toContain('IS_DSN');
    const t2 = await tags(mail([FROM, MV, 'Content-Type: multipart/report; report-type=disposition-notification; boundary="r1"'], body));
    expect(t2).toContain('IS_DSN');
    const t3 = await tags(mail([FROM, MV, 'Content-Type: multipart/report; report-type=other; boundary="r1"'], body));
    expect(t3).not.toContain('IS_DSN');
  });
});

describe('mime: per-part headers and encodings', () => {
  it('BROKEN_CONTENT_TYPE, CT_EXTRA_SEMI, CTE_CASE', async () => {
    expect(await tags(mail([FROM, MV, 'Content-Type: ; charset=utf-8'], LONG))).toEqual(['BROKEN_CONTENT_TYPE']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8;  '], LONG))).toEqual(['CT_EXTRA_SEMI']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 7BIT'], LONG))).toEqual(['CTE_CASE']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8;\r\n\t \f'], LONG))).toEqual(['CT_EXTRA_SEMI']);
  });

  it('judges a hostile folded Content-Type of 3 MB as broken, in one pass (4.5 s before the white-space scan)', async () => {
    const folded = Array.from({ length: 40_000 }, () => '('.repeat(76)).join('\r\n\t');
    expect(await tags(mail([FROM, MV, `Content-Type: ${folded}`], LONG))).toEqual(['BROKEN_CONTENT_TYPE']);
    expect(await tags(mail([FROM, MV, `Content-Type: text/plain; x="${folded}";`], LONG))).toEqual(['CT_EXTRA_SEMI']);
  });

  it('HAS_MESSAGE_PARTS for message/rfc822 and text/rfc822-headers parts', async () => {
    const inner = mail(['From: bob@example.org', 'Subject: inner'], LONG);
    const body = multipart('m1', [[['Content-Type: text/plain; charset=utf-8'], LONG], [['Content-Type: message/rfc822'], inner]]);
    const t = await tags(mail([FROM, MV, 'Content-Type: multipart/mixed; boundary=m1'], body));
    expect(t).toEqual(['HAS_ATTACHMENT', 'HAS_MESSAGE_PARTS']);
  });

  it('BAD_CTE_7BIT for 8-bit bytes in a 7bit text part', async () => {
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 7bit'], 'Grüße, ' + LONG))).toEqual(['BAD_CTE_7BIT']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8'], 'Grüße, ' + LONG))).toEqual(['BAD_CTE_7BIT']);
  });

  it('MIME_BASE64_TEXT / MIME_BASE64_TEXT_BOGUS by the decoded text', async () => {
    const ascii = Buffer.from(LONG).toString('base64');
    const utf8 = Buffer.from('Grüße aus Köln. ' + LONG).toString('base64');
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64'], ascii))).toEqual(['MIME_BASE64_TEXT_BOGUS']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64'], utf8))).toEqual(['MIME_BASE64_TEXT']);
  });

  it('MISSING_CHARSET for an 8bit/qp/base64 text/plain part without charset', async () => {
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain', 'Content-Transfer-Encoding: quoted-printable'], LONG))).toEqual(['MISSING_CHARSET']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=""', 'Content-Transfer-Encoding: 8bit'], LONG))).toEqual(['MISSING_CHARSET']);
    // 7bit needs no charset; text/html is not checked.
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain', 'Content-Transfer-Encoding: 7bit'], LONG))).toEqual([]);
  });

  it('MIXED_CHARSET for body text mixing scripts (HTML: its extracted text)', async () => {
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], 'Pаypal café notice: ' + LONG))).toEqual(['MIXED_CHARSET']);
    // Only one non-ASCII script (ASCII is ignored): not mixed.
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], 'Pаypal notice: ' + LONG))).toEqual([]);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], '日本語のテキスト ' + LONG))).toEqual([]);
    const html = `<html><head><title>Тест</title></head><body><p>${LONG}</p></body></html>`;
    // The Cyrillic title is inside <head>: not part of the text.
    expect(await tags(mail([FROM, MV, 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], html))).toEqual([]);
    const html2 = `<html><body><p>Тест café ${LONG}</p></body></html>`;
    expect(await tags(mail([FROM, MV, 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], html2))).toEqual(['MIXED_CHARSET']);
  });
});

describe('mime: multipart structure', () => {
  const plain = (t: string): [string[], string] => [['Content-Type: text/plain; charset=utf-8'], t];
  const html = (t: string): [string[], string] => [['Content-Type: text/html; charset=utf-8'], t];
  const alt = (parts: [string[], string][]): string => mail([FROM, MV, 'Content-Type: multipart/alternative; boundary="alt"'], multipart('alt', parts));

  it('MIME_MA_MISSING_TEXT / MIME_MA_MISSING_HTML', async () => {
    expect(await tags(alt([html(`<p>${LONG}</p>`)]))).toEqual(['MIME_MA_MISSING_TEXT']);
    expect(await tags(alt([plain(LONG)]))).toEqual(['MIME_MA_MISSING_HTML']);
  });

  it('PARTS_DIFFER reads us-ascii text with 8-bit bytes as windows-1252 (mail-parser 0.11.5+), so UTF-8 words under a us-ascii label differ', async () => {
    const words = 'Grüße aus München: schöne Bücher für Café und Bäckerei, größte Auswahl, günstige Preise';
    const body = (plainCharset: string): string =>
      multipart('a1', [
        [[`Content-Type: text/plain; charset=${plainCharset}`, 'Content-Transfer-Encoding: 8bit'], words],
        [['Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 8bit'], `<html><body>${words}</body></html>`],
      ]);
    const head = [FROM, MV, 'Content-Type: multipart/alternative; boundary="a1"'];
    expect(await tags(mail(head, body('us-ascii')))).toEqual(['PARTS_DIFFER']);
    expect(await tags(mail(head, body('utf-8')))).toEqual([]);
  });

  it('PARTS_DIFFER by cosine similarity of the words; URI_COUNT_ODD by distinct URL sites', async () => {
    expect(await tags(alt([plain(LONG), html(`<p>${LONG}</p>`)]))).toEqual([]);
    expect(await tags(alt([plain(LONG), html('<p>Completely different wording here, nothing alike.</p>')]))).toEqual(['PARTS_DIFFER']);
    expect(await tags(alt([plain(`${LONG} https://www.example.com/a and http://shop.example.com/b`), html(`<p>${LONG} https://example.com/c</p>`)]))).toEqual([]);
    expect(await tags(alt([plain(`${LONG} https://example.com/a https://example.org/`), html(`<p>${LONG} https://example.com/</p>`)]))).toEqual(['URI_COUNT_ODD']);
    // Scheme-less URLs are not counted.
    expect(await tags(alt([plain(`${LONG} www.example.org/x`), html(`<p>${LONG}</p>`)]))).toEqual([]);
    expect(cosineSimilarity(['a', 'b', 'a'], ['a', 'b', 'a'])).toBeCloseTo(1, 12);
    expect(cosineSimilarity([], ['a'])).toBe(0);
    expect(cosineSimilarity(['a', 'b'], ['a', 'c'])).toBeCloseTo(0.5, 12);
  });

  it('CTYPE_MIXED_BOGUS: multipart/mixed with fewer than 3 text parts and nothing else', async () => {
    const m = (parts: [string[], string][]): string => mail([FROM, MV, 'Content-Type: multipart/mixed; boundary="mx"'], multipart('mx', parts));
    expect(await tags(m([plain(LONG)]))).toEqual(['CTYPE_MIXED_BOGUS']);
    expect(await tags(m([plain(LONG), plain(LONG), plain(LONG)]))).toEqual([]);
    const pdf = [['Content-Type: application/pdf', 'Content-Disposition: attachment; filename="a.pdf"', 'Content-Transfer-Encoding: base64'], Buffer.from('%PDF-1.4\n%\xe2\xe3\n1 0 obj\n').toString('base64')] as [string[], string];
    expect(await tags(m([plain(LONG), pdf]))).toEqual(['HAS_ATTACHMENT', 'MIME_GOOD']);
  });
});

describe('mime: encryption and signatures', () => {
  it('S/MIME and PGP parts, BOGUS_ENCRYPTED_AND_TEXT, no attachment for them', async () => {
    const enc = mail([FROM, MV, 'Content-Type: multipart/encrypted; protocol="application/pgp-encrypted"; boundary=e'], multipart('e', [
      [['Content-Type: application/pgp-encrypted'], 'Version: 1'],
      [['Content-Type: application/octet-stream'], '-----BEGIN PGP MESSAGE-----\r\nhQEMA\r\n-----END PGP MESSAGE-----'],
    ]));
    // The octet-stream part after multipart/encrypted gets no CTYPE_MISSING_DISPOSITION.
    expect(await tags(enc)).toEqual(['ENCRYPTED_PGP', 'HAS_ATTACHMENT']);
    const signed = mail([FROM, MV, 'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; boundary=s'], multipart('s', [
      [['Content-Type: text/plain; charset=utf-8'], LONG],
      [['Content-Type: application/pkcs7-signature; name=smime.p7s', 'Content-Transfer-Encoding: base64'], 'MIAGCSqGSIb3DQEHAqCAMIACAQExDzANBglghkgBZQMEAgEFADCABgkqhkiG9w0BBwEAAKCAMIIF'],
    ]));
    expect(await tags(signed)).toEqual(['SIGNED_SMIME']);
    const bogus = mail([FROM, MV, 'Content-Type: multipart/mixed; boundary=b'], multipart('b', [
      [['Content-Type: application/pkcs7-mime; smime-type=enveloped-data'], 'MIAGCSqGSIb3DQEHA6CAMIACAQA'],
      [['Content-Type: text/plain; charset=utf-8'], LONG],
    ]));
    expect(await tags(bogus)).toEqual(['BOGUS_ENCRYPTED_AND_TEXT', 'ENCRYPTED_SMIME']);
  });

  it('CTYPE_MISSING_DISPOSITION for a bare application/octet-stream part', async () => {
    const m = (h: string[]): string => mail([FROM, MV, 'Content-Type: multipart/mixed; boundary=o'], multipart('o', [[['Content-Type: text/plain; charset=utf-8'], LONG], [h, 'binary data here']]));
    expect(await tags(m(['Content-Type: application/octet-stream']))).toEqual(['CTYPE_MISSING_DISPOSITION', 'HAS_ATTACHMENT']);
    expect(await tags(m(['Content-Type: application/octet-stream', 'Content-Disposition: inline; filename=data.bin']))).toEqual(['HAS_ATTACHMENT']);
    expect(await tags(m(['Content-Type: application/octet-stream', 'Content-ID: <x@y>']))).toEqual(['HAS_ATTACHMENT']);
  });
});

describe('mime: attachments', () => {
  const withAttachment = (headers: string[], body: string): string =>
    mail([FROM, MV, 'Content-Type: multipart/mixed; boundary="a"'], multipart('a', [[['Content-Type: text/plain; charset=utf-8'], LONG], [headers, body]]));
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4f30000000049454e44ae426082', 'hex');

  it('MIME_GOOD / MIME_BAD by sniffed content; nothing for octet-stream or unrecognised content', async () => {
    const b64 = PNG.toString('base64');
    expect(await tags(withAttachment(['Content-Type: image/png', 'Content-Disposition: attachment; filename=dot.png', 'Content-Transfer-Encoding: base64'], b64)))
      .toEqual(['HAS_ATTACHMENT', 'MIME_GOOD']);
    expect(await tags(withAttachment(['Content-Type: image/gif', 'Content-Disposition: attachment; filename=dot.gif', 'Content-Transfer-Encoding: base64'], b64)))
      .toEqual(['HAS_ATTACHMENT', 'MIME_BAD']);
    expect(await tags(withAttachment(['Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename=dot', 'Content-Transfer-Encoding: base64'], b64)))
      .toEqual(['HAS_ATTACHMENT']);
    expect(await tags(withAttachment(['Content-Type: text/x-log', 'Content-Disposition: attachment; filename=run.log'], 'just some text')))
      .toEqual(['HAS_ATTACHMENT']);
    // Sniffed types use infer's names (Stalwart's sniffer): a PE executable is application/vnd.microsoft.portable-executable.
    const pe = Buffer.alloc(256);
    pe.write('MZ');
    pe.writeUInt32LE(128, 0x3c);
    pe.write('PE\0\0', 128, 'latin1');
    const exe = (ct: string): string => withAttachment([`Content-Type: ${ct}`, 'Content-Disposition: attachment; filename=setup.bin', 'Content-Transfer-Encoding: base64'], pe.toString('base64'));
    expect(await tags(exe('application/vnd.microsoft.portable-executable'))).toEqual(['HAS_ATTACHMENT', 'MIME_GOOD']);
    expect(await tags(exe('application/x-msdownload'))).toEqual(['HAS_ATTACHMENT', 'MIME_BAD']);
  });

  it('file names against the extension table', async () => {
    const att = (name: string, ct = 'application/octet-stream'): string =>
      withAttachment([`Content-Type: ${ct}`, `Content-Disposition: attachment; filename="${name}"`], 'data');
    expect(await tags(att('invoice.exe'))).toEqual(['HAS_ATTACHMENT', 'MIME_BAD_EXTENSION']);
    expect(await tags(att('  Invoice.PDF.EXE '))).toEqual(['HAS_ATTACHMENT', 'MIME_BAD_EXTENSION']);
    expect(await tags(att('invoice.scr.exe'))).toEqual(['HAS_ATTACHMENT', 'MIME_DOUBLE_BAD_EXTENSION']);
    expect(await tags(att('docs.rar.zip'))).toEqual(['HAS_ATTACHMENT', 'MIME_ARCHIVE_IN_ARCHIVE']);
    expect(await tags(att('report.pdf', 'application/msword'))).toEqual(['HAS_ATTACHMENT', 'MIME_BAD_ATTACHMENT']);
    expect(await tags(att('report.pdf', 'application/pdf'))).toEqual(['HAS_ATTACHMENT']);
    expect(await tags(att('notes.unknown'))).toEqual(['HAS_ATTACHMENT']);
    // Without a table only the unicode check applies.
    expect(await tags(att('invoice.exe'), false)).toEqual(['HAS_ATTACHMENT']);
  });

  it('MIME_BAD_UNICODE for obscured characters; RFC 2231 and RFC 2047 names are decoded', async () => {
    const rlo = withAttachment(['Content-Type: application/octet-stream', "Content-Disposition: attachment; filename*=utf-8''invoice%E2%80%AEfdp.exe"], 'data');
    expect(await tags(rlo)).toEqual(['HAS_ATTACHMENT', 'MIME_BAD_EXTENSION', 'MIME_BAD_UNICODE']);
    const encoded = withAttachment(['Content-Type: application/octet-stream; name="=?utf-8?B?cmVwb3J0LmV4ZQ==?="'], 'data');
    expect(await tags(encoded)).toEqual(['CTYPE_MISSING_DISPOSITION', 'HAS_ATTACHMENT', 'MIME_BAD_EXTENSION']);
  });

  it('HAS_ATTACHMENT for non-text parts and text parts that are not body parts', async () => {
    expect(await tags(withAttachment(['Content-Type: image/jpeg; name=photo.jpg'], ''))).toEqual(['HAS_ATTACHMENT']);
    // A Content-Disposition filename alone keeps a text/plain part in the body.
    expect(await tags(withAttachment(['Content-Type: text/plain; charset=utf-8', 'Content-Disposition: inline; filename=a.log'], LONG))).toEqual(['CTYPE_MIXED_BOGUS']);
    // other text/* is always an attachment (and this one's content is recognised as what it claims).
    expect(await tags(withAttachment(['Content-Type: text/calendar; charset=utf-8'], 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR'))).toEqual(['HAS_ATTACHMENT', 'MIME_GOOD']);
  });
});

describe('mime: sizes', () => {
  it('COMPLETELY_EMPTY and SINGLE_SHORT_PART by decoded size', async () => {
    expect(await tags(`${FROM}\r\n${MV}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n`)).toEqual(['COMPLETELY_EMPTY']);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8'], 'Short.'))).toEqual(['SINGLE_SHORT_PART']);
    // base64: the 64 raw bytes decode to 47, so the part is short.
    const b64 = Buffer.from('x'.repeat(47)).toString('base64');
    expect(b64.length).toBe(64);
    expect(await tags(mail([FROM, MV, 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64'], b64))).toEqual(['MIME_BASE64_TEXT_BOGUS', 'SINGLE_SHORT_PART']);
  });
});

describe('mime: hostile structure', () => {
  it('1,000 nested multiparts finish within seconds, with a nesting warning', async () => {
    let head = `${FROM}\r\n${MV}\r\n`;
    let tail = '';
    for (let i = 0; i < 1000; i++) {
      head += `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`;
      tail = `\r\n--n${i}--\r\n` + tail;
    }
    const t0 = Date.now();
    const r = await runContent('mime', head + 'Content-Type: text/plain\r\n\r\nhello\r\n' + tail);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.errors).toEqual([]);
    expect(r.warnings.some((w) => w.includes('nesting limit'))).toBe(true);
  });

  it('6,000 sibling parts are capped with a warning', async () => {
    const parts: [string[], string][] = [];
    for (let i = 0; i < 6000; i++) parts.push([['Content-Type: text/plain; charset=utf-8'], `part ${i}`]);
    const t0 = Date.now();
    const r = await runContent('mime', mail([FROM, MV, 'Content-Type: multipart/mixed; boundary=s'], multipart('s', parts)));
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(r.warnings.some((w) => w.includes('part limit'))).toBe(true);
  });
});
