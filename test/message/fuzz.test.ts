/**
 * Property-based fuzzing of message analysis (analyzeMessage: header split, MIME tree, charsets, HTML
 * tokens, text parts, addresses, Received chains; docs/message-analysis.md "Limits"): mutated real mail
 * (the SpamAssassin corpus), generated MIME trees, mutated generated trees. Invariants: analyzeMessage never
 * rejects and never falls back to "analysis failed", every variable of every element of every scope reads as
 * a well-formed Value, and the time taken stays linear in the input. Semantic checks on generated input: the
 * text of text/plain and text/html parts comes back in the text parts, their URLs in the Url scope, file
 * names as attachment names, the Content-Type in the Header scope, encoded-word subjects and address lists
 * decoded, Received from-IPs and by-hosts in the Ip and Domain scopes.
 * Campaign (test/helpers/fuzz.ts; a campaign outgrows the 60 s test timeout):
 *   SPAMRULE_FUZZ_RUNS=5000 SPAMRULE_FUZZ_SEED=n npx vitest run test/message/fuzz.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyzeMessage, messageContextOf, type MimeMessage } from '../../src/message/index.js';
import { fuzzParams } from '../helpers/fuzz.js';
import { applyMutations, mutationSample, mutationsArb, SCALING_PLACES, SCALING_SNIPPETS, scalingMessage } from '../helpers/mail-mutations.js';
import { assertAnalysis } from '../helpers/message-invariants.js';
import { generatedMessageArb } from '../helpers/mime-gen.js';

const SAMPLE = mutationSample();

/** Header text: printable, with some non-ASCII, no control characters. */
const wordText = fc.string({ unit: fc.constantFrom(...'abcXYZ 019.,:;!?()<>@"\'_=?-éüßÀ€中文😀Дж'), minLength: 1, maxLength: 20 });
const latin1Charset = (cs: string): boolean => !/^utf-8$/i.test(cs);
/** What a Latin-1 charset can carry of `t`: the characters past U+00FF written as `?`. */
const latin1Safe = (t: string): string => [...t].map((c) => (c.codePointAt(0)! > 0xff ? '?' : c)).join('');

/** One RFC 2047 encoded word of `text` in charset `cs` (B or Q). */
function encodedWord(text: string, enc: string, cs: string): string {
  const bytes = latin1Charset(cs) ? Buffer.from(latin1Safe(text), 'latin1') : Buffer.from(text, 'utf8');
  if (enc.toUpperCase() === 'B') return `=?${cs}?${enc}?${bytes.toString('base64')}?=`;
  let q = '';
  for (const b of bytes) q += b === 32 ? '_' : /[a-zA-Z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return `=?${cs}?${enc}?${q}?=`;
}

/** The attachment names of every part, nested messages' parts included. */
function attachmentNames(m: MimeMessage): string[] {
  return m.parts.flatMap((p) => [...(p.attachmentName === undefined ? [] : [p.attachmentName]), ...(p.nested === undefined ? [] : attachmentNames(p.nested))]);
}

/** Analyses raw bytes, checks every invariant; returns the elapsed milliseconds. */
async function analyseChecked(raw: Buffer): Promise<number> {
  const t0 = performance.now();
  const m = await analyzeMessage(raw);
  assertAnalysis(m, raw.length);
  return performance.now() - t0;
}

describe('message analysis fuzz', () => {
  it('the sample covers multipart, HTML and encoded mail', () => {
    const has = (re: RegExp): number => SAMPLE.filter((c) => re.test(c.raw.toString('latin1'))).length;
    expect(SAMPLE.length).toBeGreaterThanOrEqual(40);
    expect(SAMPLE.some((c) => c.isSpam) && SAMPLE.some((c) => !c.isSpam)).toBe(true);
    expect(has(/^Content-Type:\s*multipart\//im)).toBeGreaterThanOrEqual(5);
    expect(has(/^Content-Type:\s*text\/html/im)).toBeGreaterThanOrEqual(5);
    expect(has(/^Content-Transfer-Encoding:\s*(base64|quoted-printable)/im)).toBeGreaterThanOrEqual(3);
  });

  it('mutated real mail: analyzeMessage keeps every invariant, in bounded time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: SAMPLE.length - 1 }), mutationsArb, async (i, ms) => {
        const raw = applyMutations(SAMPLE[i]!.raw, ms);
        const elapsed = await analyseChecked(raw);
        // Linear work: a few µs per byte at most, plus a constant (the messages here are under 1.5 MB).
        expect(elapsed).toBeLessThan(1_000 + raw.length / 200);
      }),
      fuzzParams(300),
    );
  });

  it('generated MIME trees: every invariant; text/plain and text/html text comes back in the text parts and their URLs in the Url scope, file names in the parts, the Content-Type in the Header scope', async () => {
    await fc.assert(
      fc.asyncProperty(generatedMessageArb, async ({ raw, texts, htmlTexts, names, urls, contentType }) => {
        const m = await analyzeMessage(raw);
        assertAnalysis(m, raw.length);
        const contents = messageContextOf(m).body.parts.map((p) => p.content);
        for (const t of texts) expect(contents.some((c) => c.includes(t)), `text ${JSON.stringify(t)} in ${JSON.stringify(contents)}`).toBe(true);
        expect(attachmentNames(messageContextOf(m).view.message).sort()).toEqual([...names].sort());
        const spaced = (t: string): string => t.replace(/[ \t\r\n]+/g, ' ').trim();
        const htmlText = messageContextOf(m).body.parts.filter((p) => p.isHtml).map((p) => spaced(p.text));
        for (const t of htmlTexts) expect(htmlText.some((h) => h.includes(spaced(t))), `html text ${JSON.stringify(t)} in ${JSON.stringify(htmlText)}`).toBe(true);
        const found = new Set(m.elements('Url').map((u) => u.variable('url_original')));
        for (const u of urls) expect(found.has(u), `${u} in ${JSON.stringify([...found])}`).toBe(true);
        const ct = m.elements('Header').find((h) => h.variable('name_lower') === 'content-type')!;
        expect([ct.variable('value'), ct.variable('attributes')]).toEqual([contentType.value, contentType.attributes]);
      }),
      fuzzParams(300),
    );
  });

  it('mutated generated MIME trees: every invariant, in bounded time', async () => {
    await fc.assert(
      fc.asyncProperty(generatedMessageArb, mutationsArb, async ({ raw }, ms) => {
        const mutated = applyMutations(raw, ms);
        expect(await analyseChecked(mutated)).toBeLessThan(1_000 + mutated.length / 200);
      }),
      fuzzParams(200),
    );
  });

  it('encoded-word subjects decode to the text written, however the words are split and folded', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(wordText, fc.constantFrom('B', 'Q', 'b', 'q'), fc.constantFrom('utf-8', 'UTF-8', 'iso-8859-1', 'windows-1252')), { minLength: 1, maxLength: 6 }), fc.constantFrom(' ', '\r\n ', '\r\n\t', '  ', '\n '), fc.constantFrom('\r\n', '\n'), async (words, sep, eol) => {
        const raw = Buffer.from(`From: a@example.com${eol}Subject: ${words.map(([t, e, cs]) => encodedWord(t, e, cs)).join(sep)}${eol}${eol}body${eol}`, 'latin1');
        const m = await analyzeMessage(raw);
        assertAnalysis(m, raw.length);
        const text = words.map(([t, , cs]) => (latin1Charset(cs) ? latin1Safe(t) : t)).join('');
        expect(m.elements('Any')[0]!.variable('subject')).toBe(text.trim().toLowerCase());
      }),
      fuzzParams(300),
    );
  });

  it('address lists: every recipient written comes back, in order, with its display name', async () => {
    const local = fc.string({ unit: fc.constantFrom(...'abcxyz019._+-'), minLength: 1, maxLength: 10 }).filter((l) => !/^\.|\.$|\.\./.test(l));
    const domain = fc.constantFrom('example.com', 'EXAMPLE.org', 'sub.example.net', 'xn--caf-dma.example', 'b.co.uk');
    const name = fc.option(fc.tuple(wordText, fc.constantFrom('quoted', 'encoded', 'plain')), { nil: undefined });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(local, domain, name), { minLength: 1, maxLength: 8 }), fc.constantFrom(', ', ',', ',\r\n ', ' ,  '), async (rcpts, sep) => {
        const written = rcpts.map(([l, d, n]) => {
          const addr = `${l}@${d}`;
          if (n === undefined) return addr;
          const [t, how] = n;
          const display = how === 'encoded' ? encodedWord(t, 'B', 'utf-8') : how === 'quoted' ? `"${t.replace(/["\\]/g, '\\$&')}"` : t.replace(/[^a-zA-Z0-9 ]/g, '').trim() || 'x';
          return `${display} <${addr}>`;
        });
        const raw = Buffer.from(`From: a@example.com\r\nTo: ${written.join(sep)}\r\nSubject: s\r\n\r\nbody\r\n`, 'utf8');
        const m = await analyzeMessage(raw);
        assertAnalysis(m, raw.length);
        const any = m.elements('Any')[0]!;
        expect(any.variable('to')).toEqual(rcpts.map(([l, d]) => `${l}@${d}`.toLowerCase()));
        const names = rcpts.flatMap(([, , n]) => {
          if (n === undefined) return [];
          const t = n[1] === 'plain' ? n[0].replace(/[^a-zA-Z0-9 ]/g, '').trim() || 'x' : n[0];
          const v = t.trim().toLowerCase();
          return v === '' ? [] : [v];
        });
        expect(any.variable('to.name')).toEqual(names);
      }),
      fuzzParams(300),
    );
  });

  it('Received chains: every from-IP comes back in the Ip scope, every by-host in the Domain scope', async () => {
    const octet = fc.integer({ min: 1, max: 254 });
    const ip = fc.oneof(
      fc.tuple(fc.constantFrom(8, 23, 45, 66, 91, 104, 185, 203), octet, octet, octet).map((o) => o.join('.')),
      fc.tuple(fc.integer({ min: 1, max: 0xfffe }), fc.integer({ min: 1, max: 0xfffe })).map(([a, b]) => `2001:db8:${a.toString(16)}::${b.toString(16)}`),
    );
    const host = fc.tuple(fc.constantFrom('mx', 'mail', 'smtp-out', 'relay7', 'a-b'), fc.constantFrom('example.com', 'example.org', 'example.co.uk', 'example.net')).map(([l, d]) => `${l}.${d}`);
    const bracket = (a: string): string => (a.includes(':') ? `[IPv6:${a}]` : `[${a}]`);
    const hop = fc.tuple(fc.nat({ max: 3 }), ip, host, host, fc.constantFrom(' ', '\r\n  ', '\r\n\t')).map(([form, addr, helo, by, fold]) => {
      const date = 'Mon, 1 Jan 2024 00:00:00 +0000';
      const line = [
        `from ${helo} (${helo} ${bracket(addr)})${fold}by ${by} (Postfix) with ESMTPS id ABC123 for <b@example.org>; ${date}`,
        `from ${bracket(addr)} (port=4455 helo=${helo})${fold}by ${by} with esmtpa (Exim 4.96) (envelope-from <a@example.com>) id 1abc; ${date}`,
        `from ${helo} (${bracket(addr)})${fold}by ${by}; ${date}`,
        `from unknown (HELO ${helo}) (${addr})${fold}by ${by} with SMTP; ${date}`,
      ][form]!;
      return { line: `Received: ${line}`, addr, by };
    });
    await fc.assert(
      fc.asyncProperty(fc.array(hop, { minLength: 1, maxLength: 6 }), async (hops) => {
        const raw = Buffer.from([...hops.map((h) => h.line), 'From: a@example.com', 'Subject: s', '', 'body', ''].join('\r\n'));
        const m = await analyzeMessage(raw);
        assertAnalysis(m, raw.length);
        const ips = m.elements('Ip').filter((e) => e.location === 'received').map((e) => e.variable('value'));
        expect(ips).toEqual([...new Set(hops.map((h) => h.addr))]);
        const domains = new Set(m.elements('Domain').filter((e) => e.location === 'received').map((e) => e.variable('value')));
        for (const h of hops) expect(domains.has(h.by), h.by).toBe(true);
      }),
      fuzzParams(300),
    );
  });

  it('repeating a snippet 8 times more costs at most ~linear time more', async () => {
    // A snippet repeated k and 8k times at one place; quadratic work would take ~64 times as long. The
    // floor keeps a busy machine from failing it: the slowest case takes ~80 ms on a quiet one.
    const best = async (raw: Buffer): Promise<number> => Math.min(await analyseChecked(raw), await analyseChecked(raw));
    // Every snippet at every place (a plain loop: 90 cases, all of them every run).
    for (const s of SCALING_SNIPPETS) {
      for (const where of SCALING_PLACES) {
        const small = await best(scalingMessage(s, where, 2_000));
        const large = await best(scalingMessage(s, where, 16_000));
        expect(large, `${where}: ${JSON.stringify(s)} x2000 ${small.toFixed(1)} ms, x16000 ${large.toFixed(1)} ms`).toBeLessThan(Math.max(500, 24 * small));
      }
    }
  });
});
