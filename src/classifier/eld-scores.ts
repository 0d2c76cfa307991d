/**
 * eld's `detect` (package `eld`, its `small` n-gram database) computed over eld's own tables, without
 * eld's per-call overhead: same text processing, same n-grams, same integer scores, same winner, same
 * reliability test and the two best scaled scores, the only parts of a detection the tokenizer reads.
 *
 * Why: eld's `detect` walks each n-gram's language scores with `for…in` over a plain object (string keys
 * per language and per call, a fresh object per n-gram set, closures per result); once per message
 * among everything else a message analysis touches, that cost ~0.3 ms per text, most of the
 * classifier's time. Here an n-gram's scores are read once into a packed array and reused, and the
 * per-call work is one pass over the text. eld stays the reference: its modules supply the tables,
 * the separator pattern and the byte dictionary, `test/classifier` checks that the results agree with
 * `eld.detect` on corpus and random texts, and when eld's files are not where this version keeps them
 * {@link loadEldScorer} resolves to `undefined` (the caller then uses `eld.detect`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** What the tokenizer reads of a detection (see `detectLanguage`). */
export interface EldDetection {
  /** ISO 639-1 code of the winner. */
  language: string;
  /** eld's `isReliable()` (threshold ratio 0.75). */
  reliable: boolean;
  /** The best and second-best scaled scores (eld's `getScores()` values; 0 when there is no second). */
  first: number;
  second: number;
}

interface EldTables {
  ngrams: Record<string, Record<string, number>>;
  languages: Record<string, string>;
  dictionary: readonly string[];
  separators: RegExp;
  avgScore: Record<string, number>;
}

/** eld's constants: scores are stored minus 53; scaled score s / (s + 25); words cut after 350/380 bytes. */
const BASE_NGRAM_SCORE = 53;
const SCALE = 25;
const CUT_AFTER = 350;
const ENFORCE_CUT_AFTER = 380;

/**
 * Loads eld's internal modules (the `small` database eld's `eld/small` entry loads, so no second copy)
 * by file URL: the package's export map names only its entries. `undefined` when a file is missing or
 * its shape is not the one this code reads.
 */
export async function loadEldScorer(): Promise<((text: string) => EldDetection | undefined) | undefined> {
  try {
    const require = createRequire(import.meta.url);
    const dir = (require.resolve.paths('eld') ?? []).map((p) => join(p, 'eld', 'src')).find((p) => existsSync(join(p, 'languageDetector.js')));
    if (dir === undefined) return undefined;
    const load = (f: string): Promise<Record<string, unknown>> => import(pathToFileURL(join(dir, f)).href) as Promise<Record<string, unknown>>;
    const [data, dict, patterns, avg] = await Promise.all([load('ngrams/small.js'), load('dictionary.js'), load('regexPatterns.js'), load('avgScore.js')]);
    const nd = data.ngramsData as { ngrams?: unknown; languages?: unknown } | undefined;
    const t = { ngrams: nd?.ngrams, languages: nd?.languages, dictionary: dict.dictionary, separators: patterns.separators, avgScore: avg.avgScore };
    if (typeof t.ngrams !== 'object' || typeof t.languages !== 'object' || !Array.isArray(t.dictionary) || t.dictionary.length !== 256) return undefined;
    if (!(t.separators instanceof RegExp) || typeof t.avgScore !== 'object') return undefined;
    return scorer(t as EldTables);
  } catch {
    return undefined;
  }
}

/** Stored scores below this are kept in an n-gram's slot with its language (eld's are 6–207). */
const SCORE_SPAN = 1024;

/** Slots of the per-call table of distinct n-grams (a text gives at most ~400: eld reads 380 bytes). */
const CALL_SLOTS = 1024;

/**
 * An n-gram (at most 6 characters, each below 256: ASCII or a dictionary character) as two int32 keys:
 * the length and the first three character codes, then the next three.
 */
function hashKeys(k1: number, k2: number, mask: number): number {
  let h = Math.imul(k1 ^ Math.imul(k2, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 15;
  return h & mask;
}

/**
 * The one-character form of eld's separator pattern (see {@link separatorReplacer}) and its answer per
 * ASCII character (1: separator); `undefined` when the pattern is not of the shape this code reads.
 */
function separatorClass(separators: RegExp): { one: RegExp; ascii: Uint8Array } | undefined {
  const src = separators.source;
  const tail = String.raw`+(?<![\x27\x60\u2019])`;
  const cls = src.endsWith(tail) && src.startsWith('[^') ? src.slice(0, -tail.length) : undefined;
  if (cls === undefined || !separators.flags.includes('u') || !separators.flags.includes('g') || cls.indexOf(']') !== cls.length - 1) return undefined;
  const one = new RegExp(`^${cls}$`, 'u');
  const ascii = new Uint8Array(128);
  for (let c = 0; c < 128; c++) ascii[c] = one.test(String.fromCharCode(c)) ? 1 : 0;
  return { one, ascii };
}

/**
 * `text.replace(separators, ' ')` for eld's separator pattern, `[^letters]+(?<![\x27\x60\u2019])` with
 * the `g` and `u` flags, without running that pattern over the text: its character class has hundreds
 * of ranges, and its compiled code is large and cold when a message needs it once. A character is a
 * letter or not by a table (ASCII) or by the class alone (others, remembered); each maximal run of
 * non-letters becomes one space, except the apostrophes that end it, which stay (the lookbehind makes
 * the regex give them back). Falls back to the regex itself when the pattern is not of that shape.
 * `sc`: the pattern's {@link separatorClass}, when the caller has it already.
 */
export function separatorReplacer(separators: RegExp, sc = separatorClass(separators)): (text: string) => string {
  if (sc === undefined) return (text) => text.replace(separators, ' ');
  const { one, ascii } = sc;
  const other = new Map<number, boolean>();
  const isSep = (cp: number): boolean => {
    if (cp < 128) return ascii[cp] === 1;
    let v = other.get(cp);
    if (v === undefined) {
      v = one.test(String.fromCodePoint(cp));
      if (other.size < 65_536) other.set(cp, v);
    }
    return v;
  };
  return (text) => {
    let out = '';
    let last = 0;
    let i = 0;
    const n = text.length;
    while (i < n) {
      const cp = text.codePointAt(i)!;
      if (!isSep(cp)) {
        i += cp > 0xffff ? 2 : 1;
        continue;
      }
      // A maximal run of separators [start, i); it is replaced up to its last non-apostrophe, e.
      const start = i;
      let e = start;
      while (i < n) {
        const c = text.codePointAt(i)!;
        if (!isSep(c)) break;
        i += c > 0xffff ? 2 : 1;
        if (c !== 0x27 && c !== 0x60 && c !== 0x2019) e = i;
      }
      if (e > start) {
        out += text.slice(last, start) + ' ';
        last = e;
      }
    }
    return last === 0 ? text : out + text.slice(last);
  };
}

/** Where the touch pass's reads go, so that they are not optimised away. */
let sink = 0;

function scorer(t: EldTables): (text: string) => EldDetection | undefined {
  const codes = Object.keys(t.languages).map(Number);
  const count = codes.length;
  if (!codes.every((c, i) => c === i)) throw new Error('eld language ids are not 0..n-1');
  const langCode = codes.map((c) => t.languages[c]!);
  const dict = Uint8Array.from(t.dictionary, (ch) => {
    if (ch.length !== 1 || ch.charCodeAt(0) > 255) throw new Error('eld dictionary character outside Latin-1');
    return ch.charCodeAt(0);
  });
  const separators = separatorClass(t.separators);
  const normalize = separatorReplacer(t.separators, separators);
  const asciiSep = separators?.ascii;

  // eld's n-gram table as open addressing over typed arrays: key (k1, k2) → its language scores. Keys that
  // eld's encoding cannot produce (longer than 6 characters, a character above 255) are left out: they
  // never match. The table is kept small (about 1.5 MB, load at most 2/3) and most n-grams need no second
  // read: a detection runs once per text among the rest of a message's analysis, when these tables are out
  // of the CPU caches and TLB, so the memory it touches, not its arithmetic, sets its cost.
  const keys = Object.keys(t.ngrams);
  let size = 1;
  while (2 * size < keys.length * 3) size <<= 1;
  const mask = size - 1;
  // One slot = [k1, k2, info], interleaved so that a probe reads one cache line, not three. info: 0 for an
  // empty slot; for an n-gram of one language (seven in ten), −1 − (language × SCORE_SPAN + stored score);
  // else 1 + the offset in `pairs` of its entry count, then language id and stored score pairs.
  const table = new Int32Array(3 * size);
  const pairList: number[] = [];
  for (const key of keys) {
    if (key.length === 0 || key.length > 6) continue;
    let k1 = 0;
    let k2 = 0;
    let ok = true;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c > 255) ok = false;
      if (i < 3) k1 = (k1 << 8) | c;
      else k2 = (k2 << 8) | c;
    }
    if (!ok) continue;
    k1 |= key.length << 24;
    const row = t.ngrams[key]!;
    const langs = Object.keys(row);
    let info: number;
    const only = langs.length === 1 ? row[langs[0]!]! : -1;
    if (Number.isInteger(only) && only >= 0 && only < SCORE_SPAN && Number(langs[0]) < count) {
      info = -1 - (Number(langs[0]) * SCORE_SPAN + only);
    } else {
      const off = pairList.length;
      pairList.push(0);
      for (const lang in row) {
        pairList.push(Number(lang), row[lang]!);
        pairList[off]!++;
      }
      info = off + 1;
    }
    let h = hashKeys(k1, k2, mask);
    while (table[3 * h + 2] !== 0) h = (h + 1) & mask;
    table[3 * h] = k1;
    table[3 * h + 1] = k2;
    table[3 * h + 2] = info;
  }
  const pairs = Int32Array.from(pairList);

  const scores = new Float64Array(count);
  /** Per-call set of the n-grams seen: [stamp, k1, k2] per slot, interleaved (one cache line per probe). */
  const calls = new Int32Array(3 * CALL_SLOTS);
  let stamp = 0;
  /** The call's distinct n-grams in order (keys, then their table slot), at most CALL_SLOTS / 2. */
  const nk1 = new Int32Array(CALL_SLOTS);
  const nk2 = new Int32Array(CALL_SLOTS);
  const nslot = new Int32Array(CALL_SLOTS);
  let numNgrams = 0;
  /** The current word's characters (eld reads the first 70 of a word). */
  const word = new Uint8Array(70);
  let wordLen = 0;

  // One n-gram: an optional leading space, word[a..b), an optional trailing space. Counted once per call;
  // its table probe waits for the end of the text (see `scoreNgrams`).
  const ngram = (lead: boolean, a: number, b: number, trail: boolean): void => {
    let k1 = 0;
    let k2 = 0;
    let n = 0;
    if (lead) {
      k1 = 32;
      n = 1;
    }
    for (let i = a; i < b; i++, n++) {
      if (n < 3) k1 = (k1 << 8) | word[i]!;
      else k2 = (k2 << 8) | word[i]!;
    }
    if (trail) {
      if (n < 3) k1 = (k1 << 8) | 32;
      else k2 = (k2 << 8) | 32;
      n++;
    }
    k1 |= n << 24;
    let h = hashKeys(k1, k2, CALL_SLOTS - 1);
    while (calls[3 * h] === stamp) {
      if (calls[3 * h + 1] === k1 && calls[3 * h + 2] === k2) return;
      h = (h + 1) & (CALL_SLOTS - 1);
    }
    calls[3 * h] = stamp;
    calls[3 * h + 1] = k1;
    calls[3 * h + 2] = k2;
    nk1[numNgrams] = k1;
    nk2[numNgrams] = k2;
    numNgrams++;
  };
  // The table probes of all the call's n-grams, in three tight passes: the first only reads each n-gram's
  // home slot. Its loads do not depend on each other, so the CPU has many cache misses in flight at once
  // instead of one per n-gram: the table is out of the caches when a message needs it (a whole detection
  // took 48–61 µs after a 16 MB sweep of the caches against 8–12 µs warm; 34–38 µs with these passes and
  // the ASCII pass below). Scores are sums of integers: the order of the additions does not change them.
  const scoreNgrams = (): void => {
    let touch = 0;
    for (let i = 0; i < numNgrams; i++) {
      const h = hashKeys(nk1[i]!, nk2[i]!, mask);
      nslot[i] = h;
      touch |= table[3 * h + 2]!;
    }
    for (let i = 0; i < numNgrams; i++) {
      const k1 = nk1[i]!;
      const k2 = nk2[i]!;
      let h = nslot[i]!;
      let info = 0;
      for (;;) {
        const q = 3 * h;
        const v = table[q + 2]!;
        if (v === 0) break;
        if (table[q] === k1 && table[q + 1] === k2) {
          info = v;
          break;
        }
        h = (h + 1) & mask;
      }
      nslot[i] = info;
      if (info > 0) touch |= pairs[info - 1]!;
    }
    for (let i = 0; i < numNgrams; i++) {
      const v = nslot[i]!;
      if (v === 0) continue;
      if (v < 0) {
        const packed = -1 - v;
        const lang = Math.floor(packed / SCORE_SPAN);
        scores[lang]! += packed - lang * SCORE_SPAN + BASE_NGRAM_SCORE;
        continue;
      }
      const end = v + 2 * pairs[v - 1]!;
      for (let j = v; j < end; j += 2) scores[pairs[j]!]! += pairs[j + 1]! + BASE_NGRAM_SCORE;
    }
    sink ^= touch;
  };
  // eld's getByteNgrams: 4-byte n-grams at a stride of 3 (the first with a leading space), then the
  // word's last 4 bytes with a trailing space (a word of 3 bytes or less: all of it, padded both sides).
  const endWord = (): void => {
    const len = wordLen > 70 ? 70 : wordLen;
    wordLen = 0;
    let j = 0;
    for (; j + 4 < len; j += 3) ngram(j === 0, j, j + 4, false);
    ngram(j === 0, len !== 3 && len > 4 ? len - 4 : 0, len, true);
  };
  const push = (c: number): void => {
    if (wordLen < 70) word[wordLen] = c;
    wordLen++;
  };

  const start = (): void => {
    numNgrams = 0;
    wordLen = 0;
    if (++stamp === 0x7fffffff) {
      stamp = 1;
      calls.fill(0);
    }
  };
  // eld's textProcessor and strToUtf8Bytes: separators → space, trim, lower-case, then each UTF-8 byte
  // as a dictionary character, words cut at spaces, the text cut after 350/380 bytes.
  const bytePass = (str: string): void => {
    start();
    let bytes = 0;
    for (let i = 0; i < str.length; i++) {
      let c = str.charCodeAt(i);
      if (c < 0x80) {
        if (c === 32) {
          if (wordLen > 0) endWord();
          if (bytes > CUT_AFTER) break;
        } else push(c);
        bytes++;
      } else if (c < 0x800) {
        push(dict[0xc0 | (c >> 6)]!);
        push(dict[0x80 | (c & 0x3f)]!);
        bytes += 2;
      } else if (c < 0xd800 || c >= 0xe000) {
        push(dict[0xe0 | (c >> 12)]!);
        push(dict[0x80 | ((c >> 6) & 0x3f)]!);
        push(dict[0x80 | (c & 0x3f)]!);
        bytes += 3;
      } else {
        i++;
        c = 0x10000 + (((c & 0x3ff) << 10) | (str.charCodeAt(i) & 0x3ff));
        push(dict[0xf0 | (c >> 18)]!);
        push(dict[0x80 | ((c >> 12) & 0x3f)]!);
        push(dict[0x80 | ((c >> 6) & 0x3f)]!);
        push(dict[0x80 | (c & 0x3f)]!);
        bytes += 4;
      }
      if (bytes > ENFORCE_CUT_AFTER) break;
    }
    if (wordLen > 0) endWord();
  };
  // The same for a text of ASCII characters only (most mail), in one pass over it without the three
  // strings normalising, trimming and lower-casing build: each maximal run of separators but the
  // apostrophes that end it is one space, spaces at either end are dropped. False (and nothing counted)
  // at the first non-ASCII character: the caller then takes the general way.
  const asciiPass = (str: string): boolean => {
    if (asciiSep === undefined) return false;
    for (let i = 0; i < str.length; i++) if (str.charCodeAt(i) >= 0x80) return false;
    start();
    let bytes = 0;
    let started = false;
    let space = false;
    const n = str.length;
    let i = 0;
    while (i < n) {
      let c = str.charCodeAt(i);
      if (asciiSep[c] === 1) {
        // A run of separators [i, j); [i, e) becomes one space, the apostrophes [e, j) stay.
        let e = i;
        let j = i;
        while (j < n && asciiSep[(c = str.charCodeAt(j))] === 1) {
          j++;
          if (c !== 0x27 && c !== 0x60) e = j;
        }
        if (e > i && started) space = true;
        i = e;
        if (i === j) continue;
        c = str.charCodeAt(i);
      }
      if (space) {
        space = false;
        if (wordLen > 0) endWord();
        if (bytes > CUT_AFTER) return true;
        bytes++;
        if (bytes > ENFORCE_CUT_AFTER) return true;
      }
      push(c >= 65 && c <= 90 ? c | 32 : c);
      started = true;
      bytes++;
      if (bytes > ENFORCE_CUT_AFTER) break;
      i++;
    }
    if (wordLen > 0) endWord();
    return true;
  };

  return (input: string): EldDetection | undefined => {
    scores.fill(0);
    const text = input.length > 1000 ? input.substring(0, 1000) : input;
    if (!asciiPass(text)) bytePass(normalize(text).trim().toLowerCase());
    scoreNgrams();
    // eld's getMaxLang (first strict maximum), then orderAndScale's two first entries: a stable sort by
    // descending scaled score is, for its head, the first maximum and then the first maximum of the rest.
    let winner = -1;
    let max = 0;
    let b1 = -1;
    let s1 = -Infinity;
    let b2 = -1;
    let s2 = -Infinity;
    for (let i = 0; i < count; i++) {
      const v = scores[i]!;
      if (v <= 0) continue;
      if (v > max) {
        max = v;
        winner = i;
      }
      const g = v / numNgrams;
      const s = g / (g + SCALE);
      if (s > s1) {
        b2 = b1;
        s2 = s1;
        b1 = i;
        s1 = s;
      } else if (s > s2) {
        b2 = i;
        s2 = s;
      }
    }
    if (winner < 0) return undefined;
    const language = langCode[winner]!;
    // eld's isReliable compares the best score with the *language id* of the second entry (as eld does).
    const nextId = b2 >= 0 ? b2 : 0;
    const reliable = numNgrams >= 3 && !(t.avgScore[language]! * 0.75 > s1 || 0.01 > Math.abs(s1 - nextId));
    return { language, reliable, first: s1, second: b2 >= 0 ? s2 : 0 };
  };
}
