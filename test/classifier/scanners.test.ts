/**
 * The classifier's hand-written text scanners against their plain definitions, on many seeded random
 * inputs: eld's separator replacement by character table against `text.replace(separators, ' ')`; the
 * typed-token cursor against itself (with and without Space tokens), its ranges against its texts, and
 * `typesTokenize`; the URL scanners and URL path words against the patterns they stand for; the letter
 * count of language detection; and the word memo key the tokenizer makes while reading a word. These are
 * places where an optimisation can silently change results, so each is checked against the simple form
 * it replaces.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prng } from '../../src/util/index.js';
import { foldedWordHash, WordMemo } from '../../src/classifier/word-memo.js';
import { separatorReplacer } from '../../src/classifier/eld-scores.js';
import { truncate16 } from '../../src/classifier/tokens.js';
import { urlPathWords } from '../../src/classifier/words.js';
import { compositeBudget, MAX_COMPOSITE_LOOKAHEAD, T, TypedTokens, typesTokenize, urlScanners } from '../../src/classifier/tokenizer.js';
import { randomString } from '../helpers/random-text.js';

describe('separatorReplacer', () => {
  async function eldSeparators(): Promise<RegExp> {
    const require = createRequire(import.meta.url);
    const dir = (require.resolve.paths('eld') ?? []).map((p) => join(p, 'eld', 'src')).find((p) => existsSync(join(p, 'languageDetector.js')));
    if (dir === undefined) throw new Error('eld not found');
    const { separators } = (await import(pathToFileURL(join(dir, 'regexPatterns.js')).href)) as { separators: RegExp };
    return separators;
  }

  it("equals text.replace(separators, ' ') for eld's pattern on 100,000 random strings and real sentences", async () => {
    const separators = await eldSeparators();
    const replace = separatorReplacer(separators);
    const alphabet = [...'abcXYZ', "'", '`', '’', ' ', '\t', '\n', '0', '7', '.', ',', '!', '-', '"', 'é', 'ü', '\u0301', '中', '文', 'д', 'Ж', '😀', '\u00a0', 'ª'];
    const rnd = prng(3);
    const sentences = [
      "It's the users' choice — don't `quote` me’ please.",
      'Ça va très bien, merci ! Größe: 12,5 cm.',
      'Привет, мир! Это тест…',
      '我们的产品质量很好，欢迎购买。',
      "''' leading ’’ and trailing '",
      '',
    ];
    const mismatches: { text: string; got: string; want: string }[] = [];
    const check = (text: string): void => {
      const got = replace(text);
      const want = text.replace(separators, ' ');
      if (got !== want && mismatches.length < 5) mismatches.push({ text, got, want });
    };
    sentences.forEach(check);
    for (let k = 0; k < 100_000; k++) check(randomString(rnd, alphabet, 0, 12));
    expect(mismatches).toEqual([]);
  }, 20_000);

  it('falls back to the pattern itself for a pattern of another shape', () => {
    const rnd = prng(4);
    const alphabet = [...'abzAZ09', "'", '’', ' ', '.', 'é', '😀'];
    const patterns = [/[^a-z]+/g, /[^a-z]+(?<![\x27\x60\u2019])/g, /[^a-z]+(?<![\x27\x60\u2019])/gu, /[^a-z][^b]+(?<![\x27\x60\u2019])/gu];
    for (const p of patterns) {
      const replace = separatorReplacer(p);
      const wrong: string[] = [];
      for (let k = 0; k < 5000; k++) {
        const text = randomString(rnd, alphabet, 0, 10);
        if (replace(text) !== text.replace(p, ' ')) wrong.push(text);
      }
      expect(wrong.slice(0, 5), String(p)).toEqual([]);
    }
  });
});

describe('TypedTokens', () => {
  const FRAGMENTS = [
    'a', 'example', 'com', '.', '@', ':', '//', '/', '+', '-', ' ', '\n', 'é', '中', ',', 'http', 'www', '.co.uk',
    '?q=1', '1.2', '-7', '192.168.1.1', 'foo@bar.net', '\u3000', '\u00a0',
  ];
  type Tok = { type: T; text: string; start: number; end: number };
  const WHITE = /^\s$/u;
  const SPACES = /^\s*$/u;
  const collect = (text: string, numbers: boolean, spaces: boolean, budget = compositeBudget()): Tok[] => {
    const c = new TypedTokens(text, numbers, spaces, budget);
    const out: Tok[] = [];
    if (c.src !== text) throw new Error('src is not the text');
    while (c.next()) out.push({ type: c.type, text: c.text, start: c.start, end: c.end });
    return out;
  };

  it('agrees with itself with and without spaces, with its ranges and with typesTokenize on 100,000 strings', () => {
    const rnd = prng(5);
    const failures: string[] = [];
    const key = (t: { type: T; text: string }): string => `${t.type}:${t.text}`;
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const text = randomString(rnd, FRAGMENTS, 0, 10);
      const numbers = k % 2 === 0;
      const fail = (what: string): number => failures.push(`${what} in ${JSON.stringify(text)} numbers=${numbers}`);
      const all = collect(text, numbers, true);
      // (a) No Space tokens is the same tokens without the Space ones.
      const noSpace = collect(text, numbers, false).map(key).join('|');
      if (noSpace !== all.filter((t) => t.type !== T.Space).map(key).join('|')) fail('spaces=false differs');
      // (b) Ranges in order, not overlapping, each non-Space token's text its range; only white space between.
      let prev = 0;
      for (const t of all) {
        if (t.start < prev || t.end <= t.start) fail(`range [${t.start}, ${t.end}) after ${prev}`);
        if (t.type !== T.Space ? text.slice(t.start, t.end) !== t.text : !WHITE.test(text.slice(t.start, t.end))) fail(`range of ${key(t)}`);
        if (!SPACES.test(text.slice(prev, t.start))) fail(`characters left out before ${key(t)}`);
        prev = t.end;
      }
      if (!SPACES.test(text.slice(prev))) fail('characters left out at the end');
      // (c) typesTokenize is the cursor's tokens, Space included.
      if (typesTokenize(text, numbers).map(key).join('|') !== all.map(key).join('|')) fail('typesTokenize differs');
    }
    expect(failures).toEqual([]);
  }, 20_000);

  it('finds composite tokens wherever they start in a span (its triggers are read once per span)', () => {
    const kinds = (text: string): string[] => collect(text, false, false).map((t) => `${T[t.type]} ${t.text}`);
    // Words before, between and after the triggers of one span (no white space in it).
    expect(kinds('see,x.example.com/a,then@user@mail.example.org,end.')).toEqual([
      'Alphabetic see', 'Punctuation ,', 'UrlNoScheme x.example.com/a,then@user@mail.example.org,end', 'Punctuation .',
    ]);
    expect(kinds('a,b,c,http://d.example.net/e')).toEqual([
      'Alphabetic a', 'Punctuation ,', 'Alphabetic b', 'Punctuation ,', 'Alphabetic c', 'Punctuation ,', 'Url http://d.example.net/e',
    ]);
    expect(kinds('one(two)user@example.com;three')).toEqual([
      'Alphabetic one', 'Punctuation (', 'Alphabetic two', 'Punctuation )', 'Email user@example.com', 'Punctuation ;', 'Alphabetic three',
    ]);
    // After the span's last trigger, the words are plain.
    expect(kinds('x.example.com,after,more')).toEqual(['UrlNoScheme x.example.com', 'Punctuation ,', 'Alphabetic after', 'Punctuation ,', 'Alphabetic more']);
    // A span longer than the look-ahead (600 characters): a trigger is seen only within 600 characters of a word.
    const long = `${'ab,'.repeat(250)}host.example.com`;
    const toks = kinds(long);
    expect(toks.at(-1)).toBe('UrlNoScheme host.example.com');
    expect(toks.filter((t) => t.startsWith('Alphabetic ab')).length).toBe(250);
    expect(kinds(`start,${'ab,'.repeat(250)}host.example.com`)[0]).toBe('Alphabetic start');
  });

  it('sees a trigger within 600 characters of a word, in a span of any length', () => {
    // Three atoms of 255 characters joined by `.` before an `@`: an e-mail address may start at any word
    // of them, but a word is tried only when the `@` lies less than 600 characters ahead, so the address
    // starts at the first word that close to it (the host names the words before it give are not valid).
    const atom = `${'a-'.repeat(127)}a`;
    for (const lead of ['', 'q', 'qq', 'qqq-']) {
      const text = `${lead}${atom}.${atom}.${atom}@mail.example.com`;
      const at = text.indexOf('@');
      const words = [...text.matchAll(/[a-z]+/g)].map((m) => m.index);
      const first = words.find((k) => at - k < 600)!;
      const emails = collect(text, false, false).filter((t) => t.type === T.Email);
      expect(emails.map((t) => t.start), `lead ${JSON.stringify(lead)}`).toEqual([first]);
      expect(emails[0]!.text).toBe(text.slice(first));
      expect(at - first).toBeGreaterThanOrEqual(598);
      // White space ends the span: no word before it is tried.
      const cut = at - 300;
      const spaced = `${text.slice(0, cut)} ${text.slice(cut + 1)}`;
      expect(collect(spaced, false, false).filter((t) => t.type === T.Email).map((t) => t.start)).toEqual([cut + 1]);
    }
  });

  it('spends at most MAX_COMPOSITE_LOOKAHEAD characters of look-ahead on composite tokens per budget', () => {
    const kinds = (text: string, budget = compositeBudget()): string[] => collect(text, false, false, budget).map((t) => `${T[t.type]} ${t.text}`);
    const url = ' see http://example.com/page';
    const plainUrl = [
      'Alphabetic see', 'Alphabetic http', 'Punctuation :', 'Punctuation /', 'Punctuation /',
      'Alphabetic example', 'Punctuation .', 'Alphabetic com', 'Punctuation /', 'Alphabetic page',
    ];
    // A host-like run with no host in it (every host it gives ends in a one-letter label): every word is
    // tried, each charged the rest of its span (at most 16,640 characters), until the look-ahead is spent.
    const hostile = 'a.b-'.repeat(200_000);
    const budget = compositeBudget();
    const tried = kinds(hostile, budget);
    expect(budget.lookahead).toBe(0);
    expect(tried.filter((t) => t === 'Alphabetic a').length).toBe(200_000);
    expect(tried.every((t) => t === 'Alphabetic a' || t === 'Alphabetic b' || t === 'Punctuation .' || t === 'Punctuation -')).toBe(true);
    // A URL after it is then a plain word, in the same text or in another text drawing on the same budget.
    expect(kinds(hostile + url).slice(-10)).toEqual(plainUrl);
    expect(kinds(url, budget)).toEqual(plainUrl);
    // After a run too short to spend the look-ahead, and with a budget of its own, it is a URL.
    const short = compositeBudget();
    expect(kinds('a.b-'.repeat(100) + url, short).slice(-2)).toEqual(['Alphabetic see', 'Url http://example.com/page']);
    expect(short.lookahead).toBeGreaterThan(MAX_COMPOSITE_LOOKAHEAD - 50_000);
    expect(kinds(url).at(-1)).toBe('Url http://example.com/page');
    // Each attempt is charged the rest of its span: a URL alone in its span costs its own length.
    const one = compositeBudget();
    kinds('http://example.com/page', one);
    expect(MAX_COMPOSITE_LOOKAHEAD - one.lookahead).toBe('http://example.com/page'.length);
  });
});

describe('URL scanners (the loops that stand for the tokenizer\'s URL patterns on ASCII text)', () => {
  // The patterns as they were written before the loops replaced them.
  const AUTH_RE = /(?:\[[0-9A-Fa-f:.]{2,45}\]|[\p{Alphabetic}0-9.\-_~!$&'()*+,;=:%@]{0,512})/uy;
  const PATH_RE = /[/?][^\s<>"\\^`|\x00-\x1f\x7f]{0,4096}/uy;
  const LAST_LABEL_RE = /\.\p{Alphabetic}{2,63}$/u;
  const ALPHABET = [
    ...'aZ09.-_~!$&\'()*+,;=:%@/?#[]<>"\\^`|{} \t', 'fe80::1', '\u0000', '\u007f', 'é', '中', '😀', '\u00a0', '\u2028', '\ud800',
    'example', 'com', 'x'.repeat(520), 'y'.repeat(4100),
  ];
  const match = (re: RegExp, s: string, j: number): RegExpExecArray | null => {
    re.lastIndex = j;
    return re.exec(s);
  };

  it('give the lengths of the authority and path patterns at many positions of 20,000 random strings', () => {
    const { authLength, pathLength } = urlScanners;
    const rnd = prng(11);
    const failures: string[] = [];
    for (let k = 0; k < 20_000 && failures.length < 5; k++) {
      const s = randomString(rnd, ALPHABET, 0, 12);
      // Every position of the first 40, then a few more (the long pieces make some strings 10,000 long).
      const starts = [...Array(Math.min(s.length, 40) + 1).keys(), ...Array.from({ length: 8 }, () => Math.floor(rnd() * (s.length + 1)))];
      for (const j of starts) {
        const auth = match(AUTH_RE, s, j)![0].length;
        if (authLength(s, j) !== auth) failures.push(`authLength ${JSON.stringify(s)} at ${j}: ${authLength(s, j)} ≠ ${auth}`);
        const path = match(PATH_RE, s, j)?.[0].length ?? -1;
        if (pathLength(s, j) !== path) failures.push(`pathLength ${JSON.stringify(s)} at ${j}: ${pathLength(s, j)} ≠ ${path}`);
      }
    }
    expect(failures).toEqual([]);
  }, 30_000);

  it('test a host\'s last label and drop its port as the patterns do', () => {
    const { alphaLastLabel, dropPort } = urlScanners;
    const rnd = prng(12);
    const HOST = [...'abcXYZ019.-:', 'é', '中', 'com', 'co.uk', 'x'.repeat(62), '😀'];
    const failures: string[] = [];
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const h = randomString(rnd, HOST, 0, 8);
      if (alphaLastLabel(h) !== LAST_LABEL_RE.test(h)) failures.push(`alphaLastLabel ${JSON.stringify(h)}`);
      if (dropPort(h) !== h.replace(/:[0-9]*$/, '')) failures.push(`dropPort ${JSON.stringify(h)}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('urlPathWords (the URL path words of the token builder and of host-less URLs)', () => {
  it("equals path.split(/[/._]/) kept by byte length > 2 and alphabetic, cut to 16, on 100,000 random paths", () => {
    const ALPHA = /^\p{Alphabetic}+$/u;
    const PATH = [...'ab/._-09x?', 'é', '中', '😀', 'ǅ', 'abcdefghijklmnopqrstuv', '\ud800'];
    const rnd = prng(13);
    const failures: string[] = [];
    for (let k = 0; k < 100_000 && failures.length < 5; k++) {
      const path = randomString(rnd, PATH, 0, 10);
      const want = path.split(/[/._]/).filter((p) => Buffer.byteLength(p, 'utf8') > 2 && ALPHA.test(p)).map((p) => '_' + truncate16(p));
      const got: string[] = [];
      urlPathWords(path, (w) => got.push(w));
      if (got.join('|') !== want.join('|')) failures.push(`${JSON.stringify(path)}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
    }
    expect(failures).toEqual([]);
  });
});

describe('collapsedLength (language detection\'s letter count)', () => {
  it('equals t.replace(/\\s+/g, " ").trim().length on random texts of every kind of white space', async () => {
    const { collapsedLength } = await import('../../src/classifier/language.js');
    const rnd = prng(17);
    const parts = [' ', '\t', '\n', '\r', '\v', '\f', 'a', 'é', '中', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b', '\u0085', 'x y'];
    for (let k = 0; k < 50_000; k++) {
      const t = randomString(rnd, parts, 0, 12);
      if (collapsedLength(t) !== t.replace(/\s+/g, ' ').trim().length) expect.fail(`collapsedLength(${JSON.stringify(t)})`);
    }
  });
});

describe('word memo key made by the tokenizer', () => {
  it('is the folded hash, the folded letters as bytes and the all-upper-case flag of each ASCII word, and finds what get finds', () => {
    const rnd = prng(17);
    const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const words: string[] = [];
    for (let i = 0; i < 3_000; i++) {
      let w = '';
      for (let n = 1 + Math.floor(rnd() * 14); n > 0; n--) w += letters[Math.floor(rnd() * (i % 5 === 0 ? 26 : letters.length)) + (i % 5 === 0 ? 26 : 0)];
      words.push(w);
    }
    words.push('É', 'caféS', 'ÀB', 'Straße', 'ABCD', 'abcdefgh', 'ABCDEFGHI');
    const text = words.map((w, i) => (i % 3 === 0 ? `${w}, ` : i % 3 === 1 ? `(${w}) ` : `${w}\n`)).join('');
    const memo = new WordMemo();
    let checked = 0;
    for (const t = new TypedTokens(text, false, false); t.next(); ) {
      if (t.type !== T.Alphabetic) continue;
      const w = t.text;
      const ascii = /^[\x00-\x7f]*$/.test(w);
      expect(t.ascii, w).toBe(ascii);
      if (!ascii) continue;
      checked++;
      expect(t.foldHash, w).toBe(foldedWordHash(t.src, t.start, t.end));
      expect(t.allUpper, w).toBe(/^[A-Z]+$/.test(w));
      const bytes = [...w.toLowerCase().slice(0, 8)].map((c) => c.charCodeAt(0));
      const lo = bytes.slice(0, 4).reduce((x, c, k) => x | (c << (8 * k)), 0);
      const hi = bytes.slice(4, 8).reduce((x, c, k) => x | (c << (8 * k)), 0);
      expect([t.lo, t.hi], w).toEqual([lo, hi]);
      // Kept under one spelling, found under any other by both look-ups.
      if (memo.get(t.src, t.start, t.end, t.foldHash, true) === undefined) memo.set(t.src, t.start, t.end, t.foldHash, [checked], true);
      expect(memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi)).toEqual(memo.get(t.src, t.start, t.end, t.foldHash, true));
      expect(memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi)).toBeDefined();
    }
    expect(checked).toBeGreaterThan(2_900);
    // Another spelling of a kept word is found; an unknown word is not.
    const probe = (w: string): unknown => {
      const t = new TypedTokens(w, false, false);
      t.next();
      return memo.getAscii(t.src, t.start, t.end, t.foldHash, t.lo, t.hi);
    };
    expect(probe(words[1]!.toUpperCase())).toEqual(probe(words[1]!.toLowerCase()));
    expect(probe('zzzzzzzzzzzzzzzzq')).toBeUndefined();
  });
});
