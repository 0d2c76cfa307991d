/**
 * The runs of Japanese text in the corpus (test/helpers/corpus.ts): the letter runs with kana or kanji in the
 * text parts of its Japanese-charset messages, parsed as the classifier sees them. For the segmenter's test
 * and bench (bench/segment.ts).
 */
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { mimeView } from '../../src/message/text-parts.js';
import { loadCorpus } from './corpus.js';

export async function japaneseRuns(): Promise<string[]> {
  const runs: string[] = [];
  for (const m of loadCorpus()) {
    if (!/iso-2022-jp|shift_jis|euc-jp/i.test(m.raw.toString('latin1', 0, Math.min(m.raw.length, 20_000)))) continue;
    const ctx = messageContextOf(await analyzeMessage(m.raw));
    for (const p of mimeView(ctx).textParts) {
      for (const w of p?.text.match(/[\p{L}\p{N}]+/gu) ?? []) if (/[\u3040-\u30ff\u4e00-\u9fff]/.test(w)) runs.push(w);
    }
  }
  return runs;
}
