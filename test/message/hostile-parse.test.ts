/**
 * Hostile input for the one MIME parse per message (src/message/mime-tree.ts, read by the rules and
 * the analysis modules alike): base64 parts full of padding, runs of adjacent encoded words in
 * headers, tens of thousands of parts. Each must parse quickly, keep the text parts before the limit
 * and say what it dropped.
 */
import { describe, expect, it } from 'vitest';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { MAX_MIME_PARTS } from '../../src/message/mime-tree.js';

const crlf = (lines: string[]): Buffer => Buffer.from(lines.join('\r\n'));
const word = (s: string): string => `=?utf-8?B?${Buffer.from(s).toString('base64')}?=`;

async function bodyOf(raw: Buffer | string): Promise<{ contents: string[]; warnings: readonly string[]; ms: number }> {
  const t0 = performance.now();
  const m = await analyzeMessage(typeof raw === 'string' ? Buffer.from(raw) : raw);
  const contents = messageContextOf(m).body.parts.map((p) => p.content);
  return { contents, warnings: m.warnings, ms: performance.now() - t0 };
}

describe('base64 parts full of padding', () => {
  it('a part of `QQ==` lines decodes to one `A` per line', async () => {
    const n = 50_000;
    const raw = 'From: a@example.com\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n' + 'QQ==\r\n'.repeat(n);
    const { contents, warnings } = await bodyOf(raw);
    expect(warnings).toEqual([]);
    expect(contents).toEqual(['A'.repeat(n)]);
  });

  it('a part of `YQ=` pieces on one line decodes every piece', async () => {
    const raw = 'From: a@example.com\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n' + 'YQ='.repeat(200_000) + '\r\n';
    const { contents } = await bodyOf(raw);
    expect(contents).toEqual(['a'.repeat(200_000)]);
  });
});

describe('runs of encoded words in headers', () => {
  it('a 1 MB To and Subject of adjacent words: the body is read whole', async () => {
    const run = word('abc').repeat(64_000);
    const raw = crlf(['From: a@example.com', `To: ${run}`, `Subject: ${run}`, 'Content-Type: text/plain', '', 'body text', '']);
    const m = await analyzeMessage(raw);
    expect(m.elements('Body').map((e) => e.variable('value'))).toEqual(['body text\r\n']);
  });

  it('a 1 MB From of URLs: the body is read whole', async () => {
    const raw = crlf([`From: ${'http://x.com/ '.repeat(75_000)}`, 'To: b@example.com', 'Subject: hi', '', 'body text', '']);
    const m = await analyzeMessage(raw);
    expect(m.elements('Body').map((e) => e.variable('value'))).toEqual(['body text\r\n']);
  });
});

describe('part count', () => {
  const multipart = (n: number, part: (i: number) => string[], b = 'P'): string =>
    ['From: a@example.com', `Content-Type: multipart/mixed; boundary=${b}`, '', ...Array.from({ length: n }, (_, i) => [`--${b}`, ...part(i)]).flat(), `--${b}--`, ''].join('\n');
  const textPart = (i: number): string[] => ['Content-Type: text/plain', '', `x${i}`];

  it('a message at the limit is parsed whole, without a warning', async () => {
    // The root and its children count.
    const { contents, warnings } = await bodyOf(multipart(MAX_MIME_PARTS - 1, textPart));
    expect(warnings).toEqual([]);
    expect(contents.length).toBe(MAX_MIME_PARTS - 1);
    expect(contents.at(-1)).toBe(`x${MAX_MIME_PARTS - 2}`);
  });

  it('parts past the limit are ignored with a warning; those before keep their content', async () => {
    const { contents, warnings, ms } = await bodyOf(multipart(20_000, textPart));
    expect(warnings).toEqual([`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`]);
    expect(contents).toEqual(Array.from({ length: MAX_MIME_PARTS - 1 }, (_, i) => `x${i}`));
    expect(ms).toBeLessThan(2_000);
  });

  it('inline messages share the budget with the message around them', async () => {
    const inner = (k: number): string[] => ['Content-Type: message/rfc822', '', multipart(2000, (i) => ['Content-Type: text/plain', '', `m${k}.${i}`], `Q${k}`)];
    const { contents, warnings } = await bodyOf(multipart(5, inner));
    expect(warnings).toEqual([`MIME part limit: parts beyond ${MAX_MIME_PARTS} ignored`]);
    // Outer root, then per inline message its part and, nested, its root and parts, until 5,000.
    const left = MAX_MIME_PARTS - 1 - (1 + 1 + 2000) * 2 - 1 - 1;
    expect(contents.length).toBe(4000 + left);
    expect(contents.at(-1)).toBe(`m2.${left - 1}`);
  });
});
