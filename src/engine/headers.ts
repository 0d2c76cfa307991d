/**
 * `X-Spam-Result` / `X-Spam-Score` rendering, as Stalwart's `spam_filter_finalize`
 * (Stalwart's spam filter): tags sorted by score ascending then name, two decimals, folded with
 * `,\r\n\t`; zero-score `X_*` tags (header-presence markers) are left out. Between the two, when the LLM
 * step gave a category and an explanation, `X-Spam-LLM: <category> (<explanation>)`.
 */
import type { LlmVerdict } from '../analysis/types.js';

/** `n.toFixed(2)`, remembered: a rule set has few distinct scores, and every message lists its tags' scores. */
const FIXED = new Map<number, string>();
function fixed2(n: number): string {
  let f = FIXED.get(n);
  if (f === undefined) {
    f = n.toFixed(2);
    if (FIXED.size < 4096) FIXED.set(n, f);
  }
  return f;
}

export function renderSpamHeaders(
  scores: Readonly<Record<string, number>>,
  total: number,
  isSpam: boolean,
  llm?: LlmVerdict,
): { 'X-Spam-Result': string; 'X-Spam-LLM'?: string; 'X-Spam-Score': string } {
  const listed = Object.entries(scores)
    .filter(([tag, s]) => !(s === 0 && tag.startsWith('X_')))
    .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    'X-Spam-Result': listed.map(([tag, s]) => `${tag} (${fixed2(s)})`).join(',\r\n\t'),
    ...(llm?.explanation !== undefined ? { 'X-Spam-LLM': `${llm.category} (${llm.explanation})` } : {}),
    'X-Spam-Score': `${isSpam ? 'spam' : 'ham'}, score=${total.toFixed(2)}`,
  };
}
