/**
 * The classifier's token builder: the suite's public classifier_features cases (Stalwart's own token
 * lists), and the parts of it the cases pin down less directly (truncation, shape codes, numbers,
 * categories, language-dependent stop words and stems).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildTokens, compareTokens, tokenJson, trainFacts, type TokenMap } from '../../src/classifier/index.js';
import { randomWord, WordStemTokenizer, detectLanguage, loadLanguageDetector } from '../../src/classifier/language.js';
import { T, typesTokenize } from '../../src/classifier/tokenizer.js';
import { buildTokenCounts, withTokenCounts } from '../../src/classifier/features.js';
import { ClassifierModel, predictCounts, vectorize, vectorizeCounts } from '../../src/classifier/model.js';
import { intern, internBoundary, KIND, strToken, truncate16 } from '../../src/classifier/tokens.js';
import { isOneScript, needsCure, shapeToken } from '../../src/classifier/words.js';
import { isMixedCharset } from '../../src/message/scripts.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

interface TokenizerCase {
  id: string;
  file: string;
  input: string;
  expectTokens: Record<string, unknown>[];
}

/**
 * Cases where the npm packages (language detection, stemmers, stop words, segmenters) disagree with
 * Stalwart's crates, with the reason. Empty: every public case gives Stalwart's tokens.
 */
const DIFFERING: Record<string, string> = {};

async function tokensOf(raw: string, trusted: ReadonlySet<string> = new Set()): Promise<TokenMap> {
  const msg = await analyzeMessage(raw, undefined, { isTrustedDomain: (d) => trusted.has(d) });
  const m = messageContextOf(msg);
  return buildTokens(m, trainFacts(m), (d) => trusted.has(d));
}

const sorted = (map: TokenMap): unknown[] => [...map.keys()].sort(compareTokens).map(tokenJson);

describe.skipIf(!hasSharedData)('classifier_features (the suite\'s public tokenizer cases)', () => {
  const suite = hasSharedData ? JSON.parse(readFileSync(sharedPath('stalwart-antispam-suite', 'cases.json'), 'utf8')) : { tokenizerCases: [] };
  const rules = hasSharedData ? JSON.parse(readFileSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), 'utf8')) : { MemoryLookupKey: [] };
  const trusted = new Set<string>(
    (rules.MemoryLookupKey as { namespace: string; key: string }[]).filter((k) => k.namespace === 'trusted-domains').map((k) => k.key),
  );
  const cases = (suite.tokenizerCases as TokenizerCase[]).filter((c) => c.file === 'classifier_features');

  it('has the public cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(7);
  });

  for (const c of cases) {
    const reason = DIFFERING[c.id];
    it(`${c.id}${reason ? ` (differs: ${reason})` : ''}`, async () => {
      const got = sorted(await tokensOf(c.input, trusted));
      if (reason !== undefined) expect(got).not.toEqual(c.expectTokens);
      else expect(got).toEqual(c.expectTokens);
    });
  }
});

describe('token details', () => {
  it('truncates to 16 as Stalwart does (bytes, then characters, or all but the last character)', () => {
    expect(truncate16('bekræftelsesstempel')).toBe('bekræftelsesstem');
    expect(truncate16('французск')).toBe('французс');
    expect(truncate16('学历学位学信')).toBe('学历学位学');
    expect(truncate16('学历学位学')).toBe('学历学位学');
    expect(truncate16('short')).toBe('short');
  });

  it('shape-codes letter+digit words with the constant ratio code O', () => {
    expect(tokenJson(shapeToken('xyz123'))).toEqual({ type: 'alphanumeric', code: [77, 53, 79, 49] }); // M5O1
    expect(tokenJson(shapeToken('abc123'))).toEqual({ type: 'number', code: [88, 6] }); // all hex digits
    expect(tokenJson(shapeToken('3CB95BA83AFB5B8'))).toEqual({ type: 'number', code: [88, 15] });
    expect(tokenJson(shapeToken('09afAF'))).toEqual({ type: 'number', code: [88, 6] }); // both cases, both ends of the ranges
    expect(tokenJson(shapeToken('9g9g')).type).toBe('alphanumeric'); // g is past f
    expect(tokenJson(shapeToken('@1:1')).type).not.toBe('number'); // @ and : sit just outside A-F and 0-9
    expect(tokenJson(shapeToken('web2x'))).toEqual({ type: 'word', value: 'webx' });
    expect(tokenJson(shapeToken('mp3s'))).toEqual({ type: 'word', value: 'mps' });
  });

  it('types text: IPs, dotted numbers, URLs without hosts, numbers when asked', () => {
    const types = (s: string, numbers = false) => typesTokenize(s, numbers).filter((t) => t.type !== T.Space).map((t) => [T[t.type], t.text]);
    expect(types('at 123.123.123.123 and 01.01.1970')).toEqual([
      ['Alphabetic', 'at'], ['IpAddr', '123.123.123.123'], ['Alphabetic', 'and'],
      ['Integer', '01'], ['Punctuation', '.'], ['Integer', '01'], ['Punctuation', '.'], ['Integer', '1970'],
    ]);
    expect(types('see http://example.com/a.php, or www.example.org!')).toEqual([
      ['Alphabetic', 'see'], ['Url', 'http://example.com/a.php'], ['Punctuation', ','], ['Alphabetic', 'or'],
      ['UrlNoScheme', 'www.example.org'], ['Punctuation', '!'],
    ]);
    expect(types('mail bob@example.com')).toEqual([['Alphabetic', 'mail'], ['Email', 'bob@example.com']]);
    expect(types('-12 and 1.5', true)).toEqual([['Integer', '-12'], ['Alphabetic', 'and'], ['Float', '1.5']]);
    // A dotted quad is an IpAddr with a port too, and a UrlNoScheme only with a path or query (Stalwart's
    // `is_ip && !found_query_start`); U+FEFF is an Other character and U+0085 white space (Rust's is_whitespace).
    expect(types('1.2.3.4:25 1.2.3.4:25/x 1.2.3.4?q')).toEqual([['IpAddr', '1.2.3.4:25'], ['UrlNoScheme', '1.2.3.4:25/x'], ['UrlNoScheme', '1.2.3.4?q']]);
    expect(types('a\ufeffb\u0085c')).toEqual([['Alphabetic', 'a'], ['Other', '\ufeff'], ['Alphabetic', 'b'], ['Alphabetic', 'c']]);
  });

  it('turns numbers, symbols and all-caps words into Stalwart\'s tokens', async () => {
    const map = await tokensOf('Subject: x\r\n\r\nPay 1000 € now, FREE offer + bonus\u200b\r\n');
    const keys = sorted(map);
    expect(keys).toContainEqual({ type: 'number', code: [105, 4] });
    expect(keys).toContainEqual({ type: 'unicode_category', value: 'Sc' });
    expect(keys).toContainEqual({ type: 'unicode_category', value: 'Sm' });
    expect(keys).toContainEqual({ type: 'unicode_category', value: 'Cf' });
    expect(keys).toContainEqual({ type: 'word', value: '_allcaps' });
    expect(keys).toContainEqual({ type: 'word', value: 'offer' });
    expect(keys).not.toContainEqual({ type: 'word', value: 'now' }); // an English stop word
  });

  it('detects the language per text: stems and stop words follow it', async () => {
    await loadLanguageDetector();
    expect(detectLanguage('Der Besucher hat versucht, sich mit folgenden Daten anzumelden. Das System wurde gesperrt.')?.lang).toBe('deu');
    const de = new WordStemTokenizer('Der Besucher hat versucht, sich mit folgenden Daten anzumelden. Das System wurde gesperrt.');
    expect(de.tokenize('besucher')).toEqual(['besuch']);
    expect(de.tokenize('und')).toEqual([]);
    const en = new WordStemTokenizer('TPS Report');
    expect(en.lang).toBe('eng'); // too short to be confident: English
    expect(en.tokenize('reports')).toEqual(['report']);
    const zh = new WordStemTokenizer('独家速办学历学位');
    expect(zh.tokenize('独家速办学历学位')).toEqual(['独家', '速办', '学历', '学位']);
  });

  it('counts repeated words and merges alternative parts only where the body lacks a token', async () => {
    const raw = [
      'Subject: hello', 'Content-Type: multipart/alternative; boundary=b', '', '--b', 'Content-Type: text/plain', '',
      'apples apples pears', '--b', 'Content-Type: text/html', '', '<p>apples bananas</p>', '--b--', '',
    ].join('\r\n');
    const map = await tokensOf(raw);
    expect(map.get(strToken(KIND.word, 'appl'))).toBe(1); // the HTML body part's count wins
    expect(map.get(strToken(KIND.word, 'pear'))).toBe(1); // only in the alternative: copied
    expect(map.get(strToken(KIND.word, 'banana'))).toBe(1);
  });

  it('draws one look-ahead per message for composite tokens: a hostile part leaves a later part\'s URL a plain word', async () => {
    // Quoted-printable soft line breaks join a host-like run into one span of 600,000 characters.
    const run = 'a.b-'.repeat(150_000).replace(/(.{72})/g, '$1=\r\n');
    const message = (first: string): string => [
      'Subject: two parts', 'Content-Type: multipart/mixed; boundary=b', '', '--b', 'Content-Type: text/plain',
      'Content-Transfer-Encoding: quoted-printable', '', first, '--b', 'Content-Type: text/plain', '',
      'visit http://shop.example.com/offer today', '--b--', '',
    ].join('\r\n');
    // A URL in the text gives no word tokens (its tokens come from the message's URL set), unless the
    // look-ahead is spent: then its pieces are words.
    const urlWords = ['http', 'shop', 'exampl', 'com', 'offer'];
    const benign = await tokensOf(message('hello there'));
    expect(urlWords.map((w) => benign.get(strToken(KIND.word, w)))).toEqual(urlWords.map(() => undefined));
    const hostile = await tokensOf(message(run));
    expect(urlWords.map((w) => hostile.get(strToken(KIND.word, w)))).toEqual(urlWords.map(() => 1));
    // The URL set's tokens do not depend on the text tokenizer: both messages have the same.
    const urls = (map: TokenMap): unknown[] => sorted(map).filter((t) => (t as { type: string }).type === 'url');
    expect(urls(hostile)).toEqual(urls(benign));
    expect(urls(benign).length).toBeGreaterThan(0);
  });

  it('classifies from interned tokens with the features of buildTokens + vectorize, across an intern table restart', async () => {
    const raw = 'From: a@b.example\r\nSubject: FREE pills 1000 €\r\n\r\nBuy FREE pills now at http://x.example/buy_now ab12cd 3.5 -7 apples\r\n';
    const m = messageContextOf(await analyzeMessage(raw));
    const check = async (): Promise<void> => {
      const map = await buildTokens(m, trainFacts(m), () => false);
      const counts = await buildTokenCounts(m, trainFacts(m), () => false);
      expect(counts.toks.map((_, i) => [counts.key(i), counts.counts[i]])).toEqual([...map]);
      for (const [i, t] of counts.toks.entries()) expect(intern(counts.key(i))).toBe(t); // one id per token string
      for (const o of [{}, { accountId: 7 }, { accountId: 9, logScale: false, l2: false }]) {
        expect(vectorizeCounts(counts, 20, o)).toEqual(vectorize(map, 20, o));
        expect(vectorizeCounts(counts, 30, o)).toEqual(vectorize(map, 30, o)); // wider than the hash kept on a token
      }
      // The classify path's prediction is the model's over those features, to the last bit. A 2^30-weight
      // model is a view that repeats 2^20 weights (indexes past 29 bits take the path without kept hashes).
      for (const bits of [16, 20, 30]) {
        let seed = bits;
        const w = Float32Array.from({ length: 2 ** Math.min(bits, 20) }, () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
        const weights = bits <= 20 ? w : new Proxy(w, { get: (t, k) => (typeof k === 'string' && /^[0-9]+$/.test(k) ? t[Number(k) % t.length] : Reflect.get(t, k)) });
        const model = new ClassifierModel(bits, weights, 0.1, 0);
        for (const o of [{}, { accountId: 7 }, { logScale: false, l2: false }]) {
          expect(predictCounts(model, counts, o)).toBe(model.predict(vectorize(map, bits, o)));
        }
      }
    };
    await check();
    internBoundary(0); // memos now hold tokens of the old table: they must have been emptied
    await check();
  });

  it('hands a message its counts before another message\'s build can restart the intern table', async () => {
    const texts = ['http://a.example/x', 'http://b.example/y', 'http://c.example/z'].map(
      (u, i) => `From: s${i}@d${i}.example\r\nSubject: offer ${i}\r\n\r\nSee ${u} for cheap pills number ${i}\r\n`,
    );
    const ms = await Promise.all(texts.map(async (t) => messageContextOf(await analyzeMessage(t))));
    const expected = [];
    for (const m of ms) expected.push([...(await buildTokens(m, trainFacts(m), () => false))]);
    // Trust answers arrive asynchronously, some microtask turns later, and each restarts the intern table
    // (as a full table does): builds interleave, and for some of these delays a restart lands between one
    // message's build and its caller's next turn (reading counts after `await buildTokenCounts` then
    // gets the keys of other tokens; this test caught that).
    const stale: string[] = [];
    for (let t0 = 0; t0 < 6; t0++) {
      for (let t1 = 0; t1 < 6; t1++) {
        const ticks = [t0, t1, 0];
        const got = await Promise.all(
          ms.map((m, i) => {
            const restarting = async (): Promise<boolean> => {
              for (let k = 0; k < ticks[i]!; k++) await null;
              internBoundary(0);
              return false;
            };
            return withTokenCounts(m, trainFacts(m), restarting, (c) => c.toks.map((_, j) => [c.key(j), c.counts[j]]));
          }),
        );
        if (JSON.stringify(got) !== JSON.stringify(expected)) stale.push(`${t0},${t1}`);
      }
    }
    expect(stale).toEqual([]);
  });

  it('answers without a promise for synchronous trust answers, and asks a store for all domains at once', async () => {
    const raw =
      'From: a@sender.example\r\nSubject: offer\r\n\r\nSee http://one.example/x and http://two.example/y, ' +
      'write to b@three.com or c@trusted.net, or see http://one.example/z\r\n';
    const m = messageContextOf(await analyzeMessage(raw));
    const keys = (c: { toks: readonly number[]; key(i: number): string; counts: readonly number[] }): [string, number][] =>
      c.toks.map((_, j) => [c.key(j), c.counts[j]!]);
    await loadLanguageDetector();
    const sync = withTokenCounts(m, trainFacts(m), (d) => d === 'trusted.net', keys);
    expect(sync).not.toBeInstanceOf(Promise);
    const emailKeys = (sync as [string, number][]).map(([k]) => k).filter((k) => k.charCodeAt(0) === KIND.email);
    expect(emailKeys).toContain(strToken(KIND.email, 'b@three.com'));
    expect(emailKeys).not.toContain(strToken(KIND.email, 'c@trusted.net'));
    // A store's answers: every lookup is asked before the first answer arrives, and the counts are the
    // synchronous build's.
    const asked: string[] = [];
    let outstanding = 0;
    let most = 0;
    const store = async (d: string): Promise<boolean> => {
      asked.push(d);
      most = Math.max(most, ++outstanding);
      await new Promise((r) => setTimeout(r, 5));
      outstanding--;
      return d === 'trusted.net';
    };
    const viaStore = withTokenCounts(m, trainFacts(m), store, keys);
    expect(viaStore).toBeInstanceOf(Promise);
    expect(await viaStore).toEqual(sync);
    expect(most).toBe(asked.length);
    expect(asked).toEqual(expect.arrayContaining(['one.example', 'two.example', 'three.com', 'trusted.net']));
    // Each domain once, though the message links to one.example twice.
    expect(asked.filter((d) => d === 'one.example')).toHaveLength(1);
    // A store that fails rejects the build.
    await expect(withTokenCounts(m, trainFacts(m), () => Promise.reject(new Error('store down')), keys)).rejects.toThrow('store down');
  });

  it('keeps each token\'s weight per model, right across messages and intern table restarts', async () => {
    const texts = [
      'From: a@b.example\r\nSubject: cheap pills\r\n\r\nBuy cheap pills now, cheap cheap\r\n',
      'From: c@d.example\r\nSubject: minutes of the meeting\r\n\r\nThe meeting moved to Tuesday; pills not included\r\n',
    ];
    const ms = await Promise.all(texts.map(async (t) => messageContextOf(await analyzeMessage(t))));
    let seed = 3;
    const w = Float32Array.from({ length: 2 ** 16 }, () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5);
    const model = new ClassifierModel(16, w, -0.2, 0);
    const other = new ClassifierModel(16, w.map((x) => -x), 0.3, 0);
    // Message A, then B (sharing tokens with A), then A again; a restart between rounds, and the other
    // message first in the next round, give the ids to other tokens, which must not read the weights
    // kept for the old ones.
    for (let round = 0; round < 3; round++) {
      const [x, y] = round % 2 === 0 ? [ms[0]!, ms[1]!] : [ms[1]!, ms[0]!];
      for (const m of [x, y, x]) {
        const map = await buildTokens(m, trainFacts(m), () => false);
        const counts = await buildTokenCounts(m, trainFacts(m), () => false);
        for (const mdl of [model, other]) expect(predictCounts(mdl, counts)).toBe(mdl.predict(vectorize(map, 16)));
      }
      internBoundary(0);
    }
  });
});

describe('which words are cured (needsCure): mixed script under UTS #39, or changed by NFKC', () => {
  // The definition, character by character: augmented script sets (Script_Extensions) intersected, ASCII
  // letters as Latin, and NFC against NFKC per non-ASCII character.
  const NON_LATIN_LETTER = /(?![\p{Script_Extensions=Latin}\p{Script=Common}\p{Script=Inherited}])\p{L}/u;
  const reference = (w: string): boolean =>
    /[^\x00-\x7f]/.test(w) &&
    (isMixedCharset(w) ||
      (/[A-Za-z]/.test(w) && NON_LATIN_LETTER.test(w)) ||
      [...w].some((ch) => ch.charCodeAt(0) >= 0x80 && ch.normalize('NFC') !== ch.normalize('NFKC')));

  it('passes words of one augmented script by the fast test, and no mixed word', () => {
    for (const w of ['café', 'Straße', '日本語のテキスト', 'カタカナー', '한국어漢字', 'привет', 'Αθήνα', 'שלום', 'plain']) expect(isOneScript(w), w).toBe(true);
    for (const w of ['caféー', 'pаypal', 'é\u3099', 'ー١', 'Москва1ü']) expect(isOneScript(w), w).toBe(false);
  });

  it('cures look-alikes and compatibility forms, not words of one script', () => {
    for (const w of ['pаypal', 'ｆｕｌｌ', '𝐛𝐨𝐥𝐝', 'ﬁnance', 'caféー', 'é\u3099', 'ー١']) expect(needsCure(w), w).toBe(true);
    for (const w of ['café', 'Straße', '日本語のテキスト', 'カタカナー', '한국어漢字', 'привет', 'Αθήνα', 'plain']) expect(needsCure(w), w).toBe(false);
  });

  it('agrees with the definition on random words of Latin, kana, Han, Hangul, other scripts, marks and compatibility forms', () => {
    const alphabet = ['a', 'Z', 'é', 'ß', 'ー', '・', '、', 'か', 'カ', 'ｶ', '字', '한', 'д', 'α', 'ا', 'ש', 'ก', 'Ａ', 'ﬁ', '²', '\u0301', '\u3099', '𝐛', '😀', '1', '١', 'ǅ', 'ㄅ'];
    let x = 7;
    const rnd = (): number => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0), x / 4294967296);
    let cured = 0;
    let fast = 0;
    for (let k = 0; k < 50_000; k++) {
      let w = '';
      for (let j = 1 + Math.floor(rnd() * 6); j > 0; j--) w += alphabet[Math.floor(rnd() * alphabet.length)];
      const want = reference(w);
      if (needsCure(w) !== want) expect(needsCure(w), JSON.stringify(w)).toBe(want);
      if (isOneScript(w) && want) {
        // A word the fast test passes is never cured for its scripts, only for a compatibility form.
        expect([...w].some((ch) => ch.charCodeAt(0) >= 0x80 && ch.normalize('NFC') !== ch.normalize('NFKC')), JSON.stringify(w)).toBe(true);
      }
      if (want) cured++;
      if (isOneScript(w)) fast++;
    }
    expect(cured).toBeGreaterThan(10_000);
    expect(fast).toBeGreaterThan(1_000);
  });
});

describe('the Domain set\'s host entries (extractHostDomains) stand for the set filtered to hosts', () => {
  it('gives the same labels and locations on corpus mail, with DKIM-pass domains, HELO and PTR names among them', async () => {
    const { extractDomains, extractEmails, extractHostDomains } = await import('../../src/message/elements.js');
    const { loadCorpus } = await import('../helpers/corpus.js');
    const hosts = new Set(['received', 'message_id', 'ehlo', 'tcp']);
    let compared = 0;
    for (const [i, m] of loadCorpus({ step: 7 }).entries()) {
      const plain = messageContextOf(await analyzeMessage(m.raw));
      // The first host a message names doubles as a DKIM-pass domain (its host entry then goes) and as the HELO name.
      const first = extractHostDomains(plain)[0]?.label;
      const envelope = first === undefined ? {} : { dkimPassDomains: i % 2 === 0 ? [first.toUpperCase()] : [], heloDomain: first, iprevPtr: i % 3 === 0 ? first : undefined };
      const ctx = messageContextOf(await analyzeMessage(m.raw, envelope));
      const got = extractHostDomains(ctx).map((d) => `${d.location} ${d.label}`);
      const full = extractDomains(ctx, extractEmails(ctx, () => {})).filter((d) => hosts.has(d.location)).map((d) => `${d.location} ${d.label}`);
      expect(got).toEqual(full);
      expect(extractHostDomains(ctx).map((d) => `${d.location} ${d.label}`)).toEqual(full); // from the built set now
      if (full.length > 0) compared++;
    }
    expect(compared).toBeGreaterThan(500);
  }, 120_000);
});

describe('English stems (porter2 stands for snowball-stemmers\' english)', () => {
  it('gives the Snowball English stem for every word of the corpus (every 3rd message) and for non-ASCII words', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const snowball = (require('snowball-stemmers') as { newStemmer(n: string): { stem(w: string): string } }).newStemmer('english');
    const { loadCorpus } = await import('../helpers/corpus.js');
    const words = new Set<string>(['café', 'naïve', 'résumés', 'ﬁnancial', 'straße', 'yyyy', 'skies', 'dying', 'generously', '日本語', 'ys', 'y']);
    for (const m of loadCorpus({ step: 3 })) for (const w of m.raw.toString('latin1').toLowerCase().match(/\p{Alphabetic}+/gu) ?? []) words.add(w);
    expect(words.size).toBeGreaterThan(20_000);
    await loadLanguageDetector();
    const english = new WordStemTokenizer('this is plainly an english sentence about the weather and the markets today');
    expect(english.lang).toBe('eng');
    const differ = [...words].filter((w) => english.tokenize(w)[0] !== undefined && english.tokenize(w)[0] !== snowball.stem(w));
    expect(differ).toEqual([]);
    expect(english.tokenize('running')).toEqual(['run']);
    expect(english.tokenize('the')).toEqual([]); // a stop word
  });
});

/** The corpus's distinct lower-cased words (every 12th message), read once for the stemmer comparisons. */
let corpusWords: Promise<string[]> | undefined;
function loadCorpusWords(): Promise<string[]> {
  return (corpusWords ??= import('../helpers/corpus.js').then(({ loadCorpus }) => {
    const words = new Set<string>();
    for (const m of loadCorpus({ step: 12 })) for (const w of m.raw.toString('latin1').toLowerCase().match(/\p{Alphabetic}+/gu) ?? []) words.add(w);
    return [...words];
  }));
}

/**
 * Words to compare a stemmer with its reference on: the corpus's first 12,000, then 5,000 random words of
 * 2 to `maxLen` characters drawn from `letters` (a language's letters and common endings) by `rnd`.
 */
function stemmerSample(corpus: readonly string[], letters: string, rnd: () => number, maxLen: number): string[] {
  const chars = [...letters];
  const list = corpus.slice(0, 12_000);
  for (let i = 0; i < 5_000; i++) list.push(randomWord(chars, rnd, 2, maxLen));
  return list;
}

describe('@orama/stemmers stands for snowball-stemmers where language.ts uses it', () => {
  it('gives the same stems on the corpus\'s first 12,000 words and on random words of each language\'s letters', async () => {
    const { createRequire } = await import('node:module');
    const { ORAMA_STEMMERS, STEMMER_LETTERS: letters } = await import('../../src/classifier/language.js');
    const require = createRequire(import.meta.url);
    const snowball = require('snowball-stemmers') as { newStemmer(n: string): { stem(w: string): string } };
    const words = await loadCorpusWords();
    let seed = 1;
    const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (const lang of ORAMA_STEMMERS) {
      const list = stemmerSample(words, letters[lang]!, rnd, 13);
      const reference = snowball.newStemmer(lang);
      const { stemmer } = require(`@orama/stemmers/${lang}`) as { stemmer(w: string): string };
      expect(list.filter((w) => stemmer(w) !== reference.stem(w)), lang).toEqual([]);
    }
  }, 120_000);
});

describe('snowball-stemmer.jsx stands for snowball-stemmers where language.ts uses it', () => {
  it('gives the same stems on the corpus\'s first 12,000 words and on random words of each language\'s letters', async () => {
    const { createRequire } = await import('node:module');
    const { JSX_STEMMERS, STEMMER_LETTERS: letters } = await import('../../src/classifier/language.js');
    const require = createRequire(import.meta.url);
    const snowball = require('snowball-stemmers') as { newStemmer(n: string): { stem(w: string): string } };
    const words = await loadCorpusWords();
    for (const lang of JSX_STEMMERS) expect(letters[lang], lang).toBeDefined();
    let seed = 7;
    const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    // The stemmer language.ts builds for the language, reached through a text detected as it.
    const sample: Record<string, string> = {
      french: 'Bonjour à tous, nous vous remercions de votre confiance et de votre fidélité depuis des années',
      finnish: 'Hyvää päivää kaikille, kiitämme teitä luottamuksesta ja uskollisuudesta vuosien ajan',
      danish: 'Goddag allesammen, vi takker jer for jeres tillid og loyalitet gennem mange år her i landet',
      russian: 'Добрый день всем, мы благодарим вас за доверие и верность на протяжении многих лет',
    };
    await loadLanguageDetector();
    for (const lang of JSX_STEMMERS) {
      const list = stemmerSample(words, letters[lang]!, rnd, 15);
      const reference = snowball.newStemmer(lang);
      const tok = new WordStemTokenizer(sample[lang]!);
      expect(tok.lang, lang).toBe({ french: 'fra', finnish: 'fin', danish: 'dan', russian: 'rus' }[lang]);
      // Stop words give no stem: compare the rest.
      const differ = list.filter((w) => {
        const got = tok.tokenize(w);
        return got.length === 1 && got[0] !== reference.stem(w);
      });
      expect(differ, lang).toEqual([]);
      expect(list.filter((w) => tok.tokenize(w).length === 1).length, lang).toBeGreaterThan(16_000);
    }
  }, 120_000);
});

describe('language detection over eld\'s tables (eld-scores.ts) stands for eld.detect', () => {
  it('gives eld\'s winner, reliability and two best scores on corpus texts and random strings', async () => {
    const { loadEldScorer } = await import('../../src/classifier/eld-scores.js');
    const scorer = await loadEldScorer();
    expect(scorer).toBeTypeOf('function'); // eld's files are where this eld version keeps them
    const { eld } = (await import('eld/small')) as unknown as {
      eld: { detect(t: string): { language: string; getScores(): Record<string, number>; isReliable(): boolean } };
    };
    const { loadCorpus } = await import('../helpers/corpus.js');
    const { mimeView } = await import('../../src/message/text-parts.js');
    const texts: string[] = ['', ' ', 'a', 'ab c', "don't stop", 'İstanbul', '日本語のテキスト', '\u{1F600} emoji'];
    // ASCII texts take a one-pass way (no normalised, trimmed, lower-cased copies): apostrophes that end
    // a separator run stay, spaces at either end go, upper case folds, the 350/380-byte cuts hold.
    texts.push("'abc", "abc '", " ' abc ' ", "A'B''C", 'x `y` z', "Don'T , 'Stop' NOW!", '  \t\r\n', 'ab '.repeat(200), 'abcdefgh'.repeat(60));
    for (const m of loadCorpus({ step: 3 })) {
      const ctx = messageContextOf(await analyzeMessage(m.raw));
      texts.push(ctx.subjectText.slice(0, 256));
      for (const e of mimeView(ctx).textParts) if (e !== undefined) texts.push(e.text.slice(0, 256), e.text.slice(256, 1300));
    }
    const chars = [...'abcdefghijklmnopqrstuvwxyz    éèàüößçñ日本語中文русскийΕλληνικάعربيעברית\'’`-.,0123456789\u{1F600}'];
    let seed = 7;
    const rnd = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    for (let i = 0; i < 3000; i++) {
      let s = '';
      for (let n = Math.floor(rnd() * 400); n > 0; n--) s += chars[Math.floor(rnd() * chars.length)];
      texts.push(s);
    }
    const ascii = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ      '''``\t\n.,;:!?-_()[]\"/@#0123456789"];
    for (let i = 0; i < 3000; i++) {
      let s = '';
      for (let n = Math.floor(rnd() * 500); n > 0; n--) s += ascii[Math.floor(rnd() * ascii.length)];
      texts.push(s);
    }
    const differ: string[] = [];
    for (const t of texts) {
      const r = eld.detect(t);
      const scores = Object.values(r.getScores()).sort((a, b) => b - a);
      const expected = r.language === '' ? undefined : { language: r.language, reliable: r.isReliable(), first: scores[0] ?? 0, second: scores[1] ?? 0 };
      if (JSON.stringify(scorer!(t)) !== JSON.stringify(expected)) differ.push(t);
    }
    expect(texts.length).toBeGreaterThan(8000);
    expect(differ).toEqual([]);
  }, 120_000);
});
