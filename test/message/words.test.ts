import { describe, expect, it } from 'vitest';
import { asciiWords, tokenize } from '../../src/message/tokenizer.js';
import { loadCorpus } from '../helpers/corpus.js';

const WORD_RE = /\p{N}+\.\p{N}+|[\p{L}\p{N}]+/gu;
const byRegex = (s: string): string[] => [...s.matchAll(WORD_RE)].map((m) => m[0]);
const byScanner = (s: string): string[] => {
  const out: string[] = [];
  asciiWords(s, out);
  return out;
};

describe('ASCII word scanner', () => {
  it('splits words, integers and floats as the Unicode word pattern does', () => {
    const s = 'abc 3.14 a3.14 1.2.3 x1.5y 12. .5 3..4 foo_bar-baz 007 1.a';
    expect(byScanner(s)).toEqual(['abc', '3.14', 'a3', '14', '1.2', '3', 'x1', '5y', '12', '5', '3', '4', 'foo', 'bar', 'baz', '007', '1', 'a']);
    expect(byScanner(s)).toEqual(byRegex(s));
  });

  it('agrees with the pattern on pseudo-random ASCII and on ASCII text of the corpus', () => {
    let seed = 12345;
    const rnd = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const alphabet = 'ab9Z0.. ,-_\t\n1';
    for (let k = 0; k < 2000; k++) {
      let s = '';
      for (let i = 0; i < 40; i++) s += alphabet[Math.floor(rnd() * alphabet.length)];
      expect(byScanner(s)).toEqual(byRegex(s));
    }
    let checked = 0;
    for (const m of loadCorpus({ step: 50 })) {
      const s = m.raw.toString('latin1').replace(/[^\x00-\x7f]/g, ' ').slice(0, 50_000);
      expect(byScanner(s)).toEqual(byRegex(s));
      checked++;
    }
    expect(checked).toBe(121);
  });

  it('falls back to the Unicode pattern for non-ASCII text', () => {
    expect(tokenize('Grüße ١٢ 3.5€', true).words).toEqual(['Grüße', '١٢', '3.5']);
  });
});
