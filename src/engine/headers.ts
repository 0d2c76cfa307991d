/**
 * `X-Spam-Result` / `X-Spam-Score` rendering, as Stalwart's `spam_filter_finalize`
 * (Stalwart's spam filter): tags sorted by score ascending then name, two decimals, folded with
 * `,\r\n\t`; zero-score `X_*` tags (header-presence markers) are left out.
 */
export function renderSpamHeaders(
  scores: Readonly<Record<string, number>>,
  total: number,
  isSpam: boolean,
): { 'X-Spam-Result': string; 'X-Spam-Score': string } {
  const listed = Object.entries(scores)
    .filter(([tag, s]) => !(s === 0 && tag.startsWith('X_')))
    .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    'X-Spam-Result': listed.map(([tag, s]) => `${tag} (${s.toFixed(2)})`).join(',\r\n\t'),
    'X-Spam-Score': `${isSpam ? 'spam' : 'ham'}, score=${total.toFixed(2)}`,
  };
}
