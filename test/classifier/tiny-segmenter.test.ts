/**
 * tiny-segmenter.ts stands for the `tiny-segmenter` package's `segment`: the same pieces on the corpus's
 * Japanese texts, on random texts of Japanese, Latin and other characters mixed with the model's own feature
 * keys (so that most features fire), and on the padding names written as text; and it declines an instance
 * that lacks the model it reads.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { fastTinySegmenter, type TinySegmenterInstance } from '../../src/classifier/tiny-segmenter.js';
import { japaneseRuns } from '../helpers/japanese.js';

const require = createRequire(import.meta.url);
const TinySegmenter = require('tiny-segmenter') as new () => TinySegmenterInstance;
const pkg = new TinySegmenter();
const fast = fastTinySegmenter(pkg)!;

describe('fastTinySegmenter (TinySegmenter over the package\'s model)', () => {
  it('is built from the package\'s instance', () => {
    expect(fast).toBeTypeOf('function');
    expect(fast('')).toEqual([]);
    expect(fast('私は東京大学の学生です。')).toEqual(pkg.segment('私は東京大学の学生です。'));
    expect(fast('私は東京大学の学生です。').length).toBeGreaterThan(4);
  });

  it('gives the package\'s pieces for the Japanese texts of the corpus', async () => {
    const runs = await japaneseRuns();
    expect(runs.length).toBeGreaterThan(100);
    const differ = runs.filter((w) => fast(w).join('|') !== pkg.segment(w).join('|'));
    expect(differ).toEqual([]);
  });

  it('gives the package\'s pieces for random texts built from the model\'s keys, kana, kanji, Latin, digits and padding names', () => {
    const keys: string[] = [];
    for (const name of Object.keys(pkg)) if (/^[A-Z]{2}\d__$/.test(name)) keys.push(...Object.keys(pkg[name] as object));
    expect(keys.length).toBeGreaterThan(1_000);
    const chars = [
      ...'あいうえおかがきくけこさしすせそたちつてとなにのはまやらりるれろわをんっー、。「」・アイウカキクサシタツテトナニノハマラリルレロンヴｱｲｳｶﾞｰ',
      ...'一二三十百千万億兆日本語国人大学生東京都々〆ヵヶabcBE123ＡＢａｂ０１２ 　.,!?-()',
      '\ud83d\ude00', '\ud800', 'B1', 'B3', 'E1', 'E2', 'E3',
    ];
    let x = 11;
    const rnd = (): number => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0), x / 4294967296);
    const differ: string[] = [];
    for (let k = 0; k < 8_000; k++) {
      let s = '';
      for (let j = 1 + Math.floor(rnd() * 40); j > 0; j--) s += rnd() < 0.3 ? keys[Math.floor(rnd() * keys.length)] : chars[Math.floor(rnd() * chars.length)];
      if (fast(s).join('|') !== pkg.segment(s).join('|')) differ.push(s);
    }
    expect(differ).toEqual([]);
  });

  it('declines an instance without the model it reads (another version of the package)', () => {
    const partial: TinySegmenterInstance = Object.assign(Object.create(Object.getPrototypeOf(pkg)), pkg);
    delete partial['TW4__'];
    expect(fastTinySegmenter(partial)).toBeUndefined();
    expect(fastTinySegmenter({ segment: () => [] })).toBeUndefined();
  });
});
