/**
 * Property-based fuzzing of the classifier's tokenizer and token builder (docs/classifier.md "Tokens",
 * "Limits (hostile input)") on generated hostile text: every script, lone surrogates, zero-width and
 * bidi characters, huge words, URLs, e-mail addresses and host names glued to punctuation, HTML soup.
 *
 * Invariants:
 * - the typed-token cursor never throws, covers its text (ranges in order, each token its range, only
 *   white space left out) and agrees with `typesTokenize`; the URL scanners give the lengths of the
 *   patterns they replace (the plain definitions of scanners.test.ts);
 * - the token map of a message never throws, has positive integer counts, and does not depend on memo
 *   state: the same after the intern table and word memos restart (a cold process), after other texts
 *   have warmed them, and when built twice in a row;
 * - bounded time: a hostile text repeated to ~200 KB tokenizes within a generous wall-clock bound.
 * Campaign (test/helpers/fuzz.ts):
 *   SPAMRULE_FUZZ_RUNS=5000 SPAMRULE_FUZZ_SEED=n npx vitest run test/classifier/fuzz.test.ts --testTimeout=1800000
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildTokens, trainFacts, type TokenMap } from '../../src/classifier/index.js';
import { internBoundary, truncate16 } from '../../src/classifier/tokens.js';
import { T, TypedTokens, typesTokenize, urlScanners } from '../../src/classifier/tokenizer.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { fuzzParams, runs } from '../helpers/fuzz.js';

/** A test's timeout: 60 s, or `ms` per run when a campaign (SPAMRULE_FUZZ_RUNS) asks for more runs than `n`. */
const timeoutFor = (n: number, ms: number): number => Math.max(60_000, runs(n) * ms);

/** Pieces that exercise the tokenizer's branches: composite triggers, scripts, invisible characters. */
const PIECES = [
  'http://', 'https://x.example.com/a?b=c#d', 'www.', '.com', '.co.uk', '@', 'user@mail.example.org', '192.168.0.1', '[::1]', ':8080',
  '//', '/', '.', '-', '_', ',', ';', '(', ')', '<', '>', '"', "'", '’', '`', '%', '=', '?', '#', '&amp;', '&#x41;', '&nbsp;',
  '<a href="http://evil.example/x">', '</a>', '<img src="cid:x">', '<p>', '<!--', '-->', '<script>', '<style>b{}</style>', '<br/>',
  ' ', '\t', '\n', '\r\n', '\u00a0', '\u3000', '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u202e', '\u2028', '\u0085', '\u0301',
  '\ud800', '\udc00', '\ud83d', '😀', '👍🏽', 'é', 'Straße', 'İ', 'ǅ', 'ß', 'ﬁ', '中文', '我们的产品', 'カタカナ', 'ひらがな', '한국어',
  'Привет', 'مرحبا', 'שלום', 'नमस्ते', 'ไทย', 'Ελληνικά', '１２３', '٣', '€', '$', '½', '™',
  'a', 'A', 'Hello', 'WORLD', 'the', 'und', 'M5O1', '0', '12345', '3.14', '-7', '1e9', 'x'.repeat(64), 'y'.repeat(65), 'z'.repeat(300),
];

/** A code unit of any value, lone surrogates and controls included. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** Generated hostile text: pieces, random code units, full Unicode, and runs of one piece (huge words, long spans). */
export const hostileText = fc
  .array(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...PIECES) },
      { weight: 2, arbitrary: fc.string({ unit: anyUnit, maxLength: 8 }) },
      { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PIECES), fc.integer({ min: 2, max: 400 })).map(([p, n]) => p.repeat(n)) },
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

type Tok = { type: T; text: string; start: number; end: number };
function collect(text: string, numbers: boolean, spaces: boolean): Tok[] {
  const c = new TypedTokens(text, numbers, spaces);
  const out: Tok[] = [];
  while (c.next()) out.push({ type: c.type, text: c.text, start: c.start, end: c.end });
  return out;
}
const key = (t: { type: T; text: string }): string => `${t.type}:${t.text}`;
/** Rust's white space (`char::is_whitespace`), which the tokenizer uses: JavaScript's `\s` adds U+FEFF and lacks U+0085. */
const WHITE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u;
const SPACES = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/u;

describe('typed-token cursor on hostile text', () => {
  it('covers its text, agrees with itself without spaces and with typesTokenize', () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (text, numbers) => {
        const all = collect(text, numbers, true);
        expect(collect(text, numbers, false).map(key)).toEqual(all.filter((t) => t.type !== T.Space).map(key));
        let prev = 0;
        for (const t of all) {
          expect(t.start).toBeGreaterThanOrEqual(prev);
          expect(t.end).toBeGreaterThan(t.start);
          if (t.type === T.Space) expect(WHITE.test(text.slice(t.start, t.end))).toBe(true);
          else expect(text.slice(t.start, t.end)).toBe(t.text);
          expect(SPACES.test(text.slice(prev, t.start))).toBe(true);
          prev = t.end;
        }
        expect(SPACES.test(text.slice(prev))).toBe(true);
        expect(typesTokenize(text, numbers).map(key)).toEqual(all.map(key));
      }),
      fuzzParams(400),
    );
  }, timeoutFor(400, 30));

  it('URL scanners give the lengths of the patterns they replace', () => {
    const AUTH_RE = /(?:\[[0-9A-Fa-f:.]{2,45}\]|[\p{Alphabetic}0-9.\-_~!$&'()*+,;=:%@]{0,512})/uy;
    // White space as Rust's char::is_whitespace has it (U+0085 in, U+FEFF out), as the tokenizer reads it.
    const PATH_RE = /[/?][^\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000<>"\\^`|\x00-\x1f\x7f]{0,4096}/uy;
    const LAST_LABEL_RE = /\.\p{Alphabetic}{2,63}$/u;
    const at = (re: RegExp, s: string, j: number): RegExpExecArray | null => {
      re.lastIndex = j;
      return re.exec(s);
    };
    fc.assert(
      fc.property(hostileText, fc.nat(), (s, pick) => {
        const j = s.length === 0 ? 0 : pick % (s.length + 1);
        expect(urlScanners.authLength(s, j)).toBe(at(AUTH_RE, s, j)![0].length);
        expect(urlScanners.pathLength(s, j)).toBe(at(PATH_RE, s, j)?.[0].length ?? -1);
        const h = s.slice(j, j + 80);
        expect(urlScanners.alphaLastLabel(h)).toBe(LAST_LABEL_RE.test(h));
        expect(urlScanners.dropPort(h)).toBe(h.replace(/:[0-9]*$/, ''));
      }),
      fuzzParams(400),
    );
  }, timeoutFor(400, 30));
});

/** A message whose subject and body (plain text, HTML or both) carry the generated texts. */
function mail(subject: string, body: string, kind: 'plain' | 'html' | 'alt'): string {
  const subj = subject.replace(/[\r\n]/g, ' ');
  const head = `From: a@example.com\r\nTo: b@example.org\r\nSubject: ${subj}\r\nMIME-Version: 1.0\r\n`;
  if (kind === 'plain') return `${head}Content-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n`;
  if (kind === 'html') return `${head}Content-Type: text/html; charset=utf-8\r\n\r\n<html><body>${body}</body></html>\r\n`;
  return (
    `${head}Content-Type: multipart/alternative; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${body}\r\n` +
    `--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<div>${body}</div>\r\n--b--\r\n`
  );
}

async function tokensOf(raw: string): Promise<TokenMap> {
  const m = messageContextOf(await analyzeMessage(raw));
  return buildTokens(m, trainFacts(m), () => false);
}

const sortedEntries = (m: TokenMap): [string, number][] => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

const mailArb = fc.tuple(hostileText, hostileText, fc.constantFrom<'plain' | 'html' | 'alt'>('plain', 'html', 'alt')).map(([s, b, k]) => mail(s, b, k));

describe('token builder on hostile mail', () => {
  it('never throws, counts positive integers, and gives the same tokens cold, warmed and twice', async () => {
    await fc.assert(
      fc.asyncProperty(mailArb, fc.array(mailArb, { minLength: 1, maxLength: 3 }), async (raw, others) => {
        // Cold: the intern table and every word memo restart (what a fresh process starts with).
        internBoundary(0);
        const cold = sortedEntries(await tokensOf(raw));
        for (const [k, n] of cold) {
          expect(k.length).toBeGreaterThan(0);
          expect(Number.isInteger(n) && n > 0).toBe(true);
        }
        // Warmed by other texts (which fill the memos with their words), then the same text twice.
        for (const o of others) await tokensOf(o);
        expect(sortedEntries(await tokensOf(raw))).toEqual(cold);
        expect(sortedEntries(await tokensOf(raw))).toEqual(cold);
      }),
      fuzzParams(150),
    );
  }, timeoutFor(150, 100));

  it('takes time linear in the input: a hostile text repeated to ~200 KB builds within 3 s', async () => {
    await fc.assert(
      fc.asyncProperty(hostileText.filter((t) => t.length > 0), async (text) => {
        const big = text.repeat(Math.ceil(200_000 / text.length)).slice(0, 200_000);
        const raw = mail('x', big, 'plain');
        const t0 = performance.now();
        const map = await tokensOf(raw);
        const ms = performance.now() - t0;
        expect(map.size).toBeGreaterThan(0);
        expect(ms).toBeLessThan(3_000);
      }),
      fuzzParams(15),
    );
  }, timeoutFor(15, 1000));
});

describe('stemming of huge words', () => {
  it('gives from a word\'s first MAX_STEM_INPUT code units the token of the whole word, in every stemmer', async () => {
    const { MAX_STEM_INPUT, STEMMER_LETTERS, stemInput, stemmer } = await import('../../src/classifier/language.js');
    const names = Object.keys(STEMMER_LETTERS);
    const wordArb = fc.tuple(fc.constantFrom(...names), fc.integer({ min: MAX_STEM_INPUT + 1, max: 1500 }), fc.array(fc.nat(), { minLength: 1500, maxLength: 1500 }));
    fc.assert(
      fc.property(wordArb, ([name, len, picks]) => {
        const letters = [...STEMMER_LETTERS[name]!];
        const w = picks.slice(0, len).map((k) => letters[k % letters.length]).join('');
        const s = stemmer(name);
        expect(truncate16(s.stem(stemInput(w))), `${name} ${w}`).toBe(truncate16(s.stem(w)));
      }),
      fuzzParams(300),
    );
  }, timeoutFor(300, 30));

  it('a German word of 200,000 letters with ß ("Straße" repeated) tokenizes in linear time, as its start', async () => {
    // Was 5.5 s (7 s in the stemmer alone; 50 s at 800,000 letters): the stemmer took quadratic time.
    const short = await tokensOf(mail('x', 'Straße'.repeat(50), 'plain'));
    const t0 = performance.now();
    const map = await tokensOf(mail('x', 'Straße'.repeat(33_334), 'plain'));
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect([...map.keys()].sort()).toEqual([...short.keys()].sort());
  });
});
