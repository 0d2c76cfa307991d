/**
 * Seeded random text for the tests that check a fast path against its plain definition (the random numbers:
 * training's seeded PRNG, `prng` in src/util/prng.ts, so every run sees the same inputs).
 */

/** A random string of `min`..`max` pieces drawn from `alphabet`. */
export function randomString(rnd: () => number, alphabet: readonly string[], min: number, max: number): string {
  const n = min + Math.floor(rnd() * (max - min + 1));
  let s = '';
  for (let k = 0; k < n; k++) s += alphabet[Math.floor(rnd() * alphabet.length)]!;
  return s;
}

/** Word characters of every width: ASCII, Latin-1, Cyrillic, CJK, astral, a combining mark. */
export const WORD_CHARS = [...'abcdefghijklmnopqrstuvwxyzABCXYZ0123456789', 'é', 'ß', 'ж', '中', '文', '😀', '𝒜', '\u0301'];
/** What goes between words: spaces, punctuation, a newline, CJK, astral. */
export const FILLER = [...'  .,;!-xyz', '\n', '中', '😀'];
