/**
 * Hostile input that used to hold postal-mime (and so the event loop) for seconds: base64 parts
 * full of padding, runs of adjacent encoded words, tens of thousands of parts. The patches must
 * leave ordinary mail parsed exactly as unpatched postal-mime parses it.
 *
 * parse.ts installs the patches when it is loaded, so it is only imported dynamically, after the
 * unpatched reference results below have been taken.
 */
import PostalMime from 'postal-mime';
import type { Email } from 'postal-mime';
import { describe, expect, it } from 'vitest';
import Base64Decoder from '../../node_modules/postal-mime/dist/esm/base64-decoder.js';
import { MAX_MIME_PARTS } from '../../src/message/mime-tree.js';
import { prng } from '../../src/util/prng.js';
import { installFastDecoders } from '../../src/message/postal-fast.js';
import { cutAddressValue, cutEncodedWordRuns, installPostalLimits, MAX_ENCODED_WORD_RUN, MAX_POSTAL_ADDRESS_CHARS } from '../../src/message/postal-limits.js';


// postal-mime's own Base64Decoder methods, taken before anything is patched.
const originalBase64 = Object.create(Object.prototype, Object.getOwnPropertyDescriptors(Base64Decoder.prototype)) as object;
const ORIGINAL_IS_UNPATCHED = /split\(\/=\+\/\)/.test(String((originalBase64 as { update: unknown }).update));

const crlf = (lines: string[]): Buffer => Buffer.from(lines.join('\r\n'));
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const word = (s: string): string => `=?utf-8?B?${b64(s)}?=`;

// Messages whose postal-mime result must not change; parsed here, before the patches.
const rand0 = prng(0x2047);
function randomHeaderValue(rand: () => number, address: boolean): string {
  const out: string[] = [];
  // Address values stay under MAX_POSTAL_ADDRESS_CHARS (16,384), which cuts them for postal-mime whatever they hold.
  const target = 2000 + Math.floor(rand() * (address ? 14_000 : 20_000));
  let len = 0;
  while (len < target) {
    const r = rand();
    const piece =
      r < 0.35 ? word(['caf\u00e9', 'abc', '\u65e5\u672c\u8a9e', 'x'.repeat(1 + Math.floor(rand() * 40))][Math.floor(rand() * 4)]!)
      : r < 0.45 ? `=?iso-8859-1?Q?caf=E9_${Math.floor(rand() * 100)}?=`
      : r < 0.6 ? ' '
      : r < 0.75 ? (address ? `<u${Math.floor(rand() * 1000)}@example.com>, ` : 'plain text, ')
      : r < 0.85 ? (address ? '(comment) ' : '\t')
      : r < 0.92 ? '"q' + word('\u00e9') + '" '
      : 'word ';
    out.push(piece);
    len += piece.length;
  }
  return out.join('');
}
const longValues = Array.from({ length: 60 }, (_, i) => randomHeaderValue(rand0, i % 2 === 0));
const referenceMessages: Buffer[] = [
  ...longValues.map((v, i) =>
    crlf([
      'From: a@example.com',
      `${i % 2 === 0 ? 'To' : 'Subject'}: ${v}`,
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'body',
      '--b',
      `Content-Type: application/octet-stream; name="${i % 2 === 0 ? word('report.pdf') : v.replace(/"/g, '')}"`,
      'Content-Transfer-Encoding: base64',
      '',
      'QQ==',
      'Qg==',
      '--b--',
      '',
    ]),
  ),
  crlf(['From: ' + word('J\u00f6rg') + ' <j@example.com>', 'To: ' + Array.from({ length: 280 }, (_, i) => `${word('Empf\u00e4nger ' + i)} <r${i}@example.com>`).join(', '), 'Subject: ' + Array.from({ length: 100 }, () => word('\u65e5\u672c\u8a9e')).join(' '), '', 'hi', '']),
];
const LIMITS_UNPATCHED = (PostalMime.prototype as unknown as Record<symbol, unknown>)[Symbol.for('spamrule.postalLimits')] === undefined;
const references: Email[] = [];
for (const raw of referenceMessages) references.push(await PostalMime.parse(raw));

installFastDecoders();
installPostalLimits();

async function parseBodyOf(raw: Buffer | string) {
  const { parseBody } = await import('../../src/message/parse.js');
  const warnings: string[] = [];
  const body = await parseBody(typeof raw === 'string' ? Buffer.from(raw) : raw, warnings);
  return { body: body!, warnings };
}

describe('base64 parts: one buffer per part, not per padding', () => {
  it('decodes random input, chunking and padding exactly as postal-mime 4', async () => {
    expect(ORIGINAL_IS_UNPATCHED).toBe(true);
    // Decoders are patched when a node first creates one.
    (new PostalMime() as unknown as { root: { setupContentDecoder(e: string): void } }).root.setupContentDecoder('base64');
    expect(String(Base64Decoder.prototype.update)).not.toMatch(/split\(\/=\+\/\)/);

    const rand = prng(0xba5e64);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    for (let iter = 0; iter < 600; iter++) {
      const bytes: number[] = [];
      const n = iter < 10 ? 150_000 + Math.floor(rand() * 200_000) : Math.floor(rand() * 400);
      for (let i = 0; i < n; i++) {
        const r = rand();
        if (r < 0.8 || iter < 10) bytes.push(alphabet.charCodeAt(Math.floor(rand() * 64)));
        else if (r < 0.9) for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) bytes.push(0x3d);
        else bytes.push([0x20, 0x0d, 0x09, 0x2d, 0x2e, 0xc3, 0xa9, 0xff, 0x80, 0x00][Math.floor(rand() * 10)]!);
      }
      const input = Uint8Array.from(bytes);
      const chunks: Uint8Array<ArrayBuffer>[] = [];
      for (let p = 0; p < input.length; ) {
        const len = rand() < 0.1 ? 0 : 1 + Math.floor(rand() * (iter < 10 ? 100_000 : 90));
        chunks.push(input.subarray(p, p + len));
        p += len;
      }
      const ref = Object.setPrototypeOf(new Base64Decoder(), originalBase64) as Base64Decoder;
      const got = new Base64Decoder();
      for (const c of chunks) {
        ref.update(c);
        got.update(c);
      }
      const want = new Uint8Array(await ref.finalize());
      const have = new Uint8Array(await got.finalize());
      expect(have.length, `case ${iter}`).toBe(want.length);
      expect(Buffer.compare(Buffer.from(have), Buffer.from(want)), `case ${iter}`).toBe(0);
    }
  });

  it('a part of `QQ==` lines decodes to one `A` per line', async () => {
    const n = 50_000;
    const raw = 'From: a@example.com\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n' + 'QQ==\r\n'.repeat(n);
    const { body, warnings } = await parseBodyOf(raw);
    expect(warnings).toEqual([]);
    expect(body.parts.map((p) => p.content)).toEqual(['A'.repeat(n)]);
  });

  it('a part of `YQ=` pieces on one line decodes every piece', async () => {
    // `YQ` is one byte ('a'); a lone character before `=` decodes to nothing, as in postal-mime.
    const raw = 'From: a@example.com\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n' + 'YQ='.repeat(200_000) + 'Y=\r\n';
    const { body } = await parseBodyOf(raw);
    expect(body.parts.map((p) => p.content)).toEqual(['a'.repeat(200_000)]);
  });
});

describe('runs of encoded words', () => {
  it('cuts a run only once it spans more than the limit', () => {
    const w = word('abc'); // 16 characters
    const fits = Math.floor(MAX_ENCODED_WORD_RUN / w.length);
    expect(cutEncodedWordRuns(w.repeat(fits), false)).toBe(w.repeat(fits));
    expect(cutEncodedWordRuns(w.repeat(fits + 100) + ' tail', false)).toBe(w.repeat(fits));
    // Linear white space continues a run; other text ends it.
    const spaced = Math.floor((MAX_ENCODED_WORD_RUN + 2) / (w.length + 2)); // separators count too
    expect(cutEncodedWordRuns(Array(spaced + 10).fill(w).join(' \t'), false) === Array(spaced).fill(w).join(' \t') + ' \t').toBe(true);
    const broken = Array(fits * 3).fill(w).join(' x ');
    expect(cutEncodedWordRuns(broken, false)).toBe(broken);
    // In address headers only a comma ends a run (the parser joins one address's text).
    expect(cutEncodedWordRuns(broken, true)).not.toBe(broken);
    const list = Array(fits * 3).fill(w + ' <a@example.com>').join(', ');
    expect(cutEncodedWordRuns(list, true)).toBe(list);
    // A single word over the limit is cut too: its decoded text could hold a run of its own.
    const big = word('x'.repeat(MAX_ENCODED_WORD_RUN));
    expect(cutEncodedWordRuns('a ' + big + ' b', false)).toBe('a ');
  });

  it('postal-mime results for mail under the limit are unchanged', async () => {
    expect(LIMITS_UNPATCHED).toBe(true);
    let long = 0;
    for (let i = 0; i < referenceMessages.length; i++) {
      const email = await PostalMime.parse(referenceMessages[i]!);
      expect(email, `message ${i}`).toEqual(references[i]);
      if (referenceMessages[i]!.length > 2 * MAX_ENCODED_WORD_RUN) long++;
    }
    // Most values are long enough to be scanned (and kept whole), so this checked the scan, not
    // the length shortcut.
    const scanned = longValues.filter((v, i) => v.length > MAX_ENCODED_WORD_RUN && cutEncodedWordRuns(v, i % 2 === 0) === v);
    expect(scanned.length).toBeGreaterThan(20);
    expect(long).toBeGreaterThan(20);
  });

  it('a 1 MB To header of adjacent words: Email fields cut, headers and body intact', async () => {
    const w = word('abc');
    const run = w.repeat(64_000);
    const raw = crlf(['From: a@example.com', `To: ${run}`, `Subject: ${run}`, 'Content-Type: text/plain', '', 'body text', '']);
    const email = await PostalMime.parse(raw);
    const kept = Math.floor(MAX_ENCODED_WORD_RUN / w.length);
    expect(email.to).toEqual([{ address: '', name: 'abc'.repeat(kept) }]);
    expect(email.subject).toBe('abc'.repeat(kept));
    expect(email.headers.find((h) => h.key === 'to')!.value).toBe(run);
    expect(email.text).toBe('body text\n');

    const { body, warnings } = await parseBodyOf(raw);
    expect(warnings).toEqual([]);
    expect(body.parts.map((p) => p.content)).toEqual(['body text\n']);
    const { analyzeMessage } = await import('../../src/message/index.js');
    const m = await analyzeMessage(raw);
    expect(m.elements('Body').map((e) => e.variable('value'))).toEqual(['body text\n']);
  });

  it('a 1 MB From of URLs: postal-mime parses only its first 16 KiB, headers and body intact', async () => {
    const v = 'http://x.com/ '.repeat(75_000);
    const raw = crlf([`From: ${v}`, 'To: b@example.com', 'Subject: hi', '', 'body text', '']);
    const email = await PostalMime.parse(raw);
    expect(email.headers.find((h) => h.key === 'from')!.value).toBe(v.trimEnd());
    expect(email.text).toBe('body text\n');
    expect(cutAddressValue(v).length).toBe(MAX_POSTAL_ADDRESS_CHARS);
    expect(cutAddressValue(`${'a@example.com, '.repeat(2_000)}`)).toMatch(/^(a@example\.com, )*a@example\.com$/);
    expect(cutAddressValue('a@example.com, b@example.com')).toBe('a@example.com, b@example.com');
    const { analyzeMessage } = await import('../../src/message/index.js');
    const m = await analyzeMessage(raw);
    expect(m.elements('Body').map((e) => e.variable('value'))).toEqual(['body text\n']);
  });

  it('attachment names and inline messages are bounded the same way', async () => {
    const w = word('n');
    const run = w.repeat(20_000);
    const raw = crlf([
      'From: a@example.com',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      `Content-Type: application/octet-stream; name="${run}"`,
      `Content-Description: ${run}`,
      '',
      'data',
      '--b',
      'Content-Type: message/rfc822',
      '',
      `Subject: ${run}`,
      `Cc: ${run}`,
      '',
      'inner text',
      '--b--',
      '',
    ]);
    const email = await PostalMime.parse(raw);
    const kept = Math.floor(MAX_ENCODED_WORD_RUN / w.length);
    expect(email.attachments[0]!.filename).toBe('n'.repeat(kept));
    expect(email.attachments[0]!.description).toBe('n'.repeat(kept));
    expect(email.text).toContain('inner text');
    expect(email.text).toContain('n'.repeat(kept));
    expect(email.text).not.toContain('n'.repeat(kept + 1));
  });
});

describe('part count', () => {
  const multipart = (n: number, part: (i: number) => string[], b = 'P'): string =>
    ['From: a@example.com', `Content-Type: multipart/mixed; boundary=${b}`, '', ...Array.from({ length: n }, (_, i) => [`--${b}`, ...part(i)]).flat(), `--${b}--`, ''].join('\n');
  const textPart = (i: number): string[] => ['Content-Type: text/plain', '', `x${i}`];

  it('a message at the limit is parsed whole, without a warning', async () => {
    // The root and its children count, as in mime-tree.ts.
    const { body, warnings } = await parseBodyOf(multipart(MAX_MIME_PARTS - 1, textPart));
    expect(warnings).toEqual([]);
    expect(body.parts.length).toBe(MAX_MIME_PARTS - 1);
    expect(body.parts.at(-1)!.content).toBe(`x${MAX_MIME_PARTS - 2}\n`);
  });

  it('parts past the limit are ignored with a warning; those before keep their content', async () => {
    const { body, warnings } = await parseBodyOf(multipart(20_000, textPart));
    expect(warnings).toEqual([`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`]);
    expect(body.parts.length).toBe(MAX_MIME_PARTS - 1);
    expect(body.parts.map((p) => p.content)).toEqual(Array.from({ length: MAX_MIME_PARTS - 1 }, (_, i) => `x${i}\n`));
  });

  it('inline messages share the budget with the message around them', async () => {
    const inner = (k: number): string[] => ['Content-Type: message/rfc822', '', multipart(2000, (i) => ['Content-Type: text/plain', '', `m${k}.${i}`], `Q${k}`)];
    // The fourth and fifth inline messages are past the limit: not parsed, no (empty) parts.
    const { body, warnings } = await parseBodyOf(multipart(5, inner));
    expect(warnings).toEqual([`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`]);
    // Outer root + 5 message parts, then each inner root and its parts, until 5,000.
    const left = MAX_MIME_PARTS - 6 - 1 - 2000 - 1 - 2000 - 1;
    expect(body.parts.length).toBe(4000 + left);
    expect(body.parts.at(-1)!.content).toBe(`m2.${left - 1}\n`);
  });
});
