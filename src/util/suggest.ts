/**
 * "Did you mean …?" for a misspelt name (an option, a session field, a module): the closest known name
 * by case-insensitive edit distance, within 1 edit for names of up to 4 letters and 2 for longer ones.
 */

/**
 * Edit distance between two strings (code units): insertions, deletions, substitutions and swaps of
 * two neighbours (`htlm` → `html` is one edit), each counting 1 (optimal string alignment).
 */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row[j] = d;
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/** The known name closest to `name`, if one is close enough; `undefined` otherwise. */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const k = name.toLowerCase();
  let best: string | undefined;
  let bestD = k.length <= 4 ? 1 : 2;
  for (const f of known) {
    const d = f.toLowerCase() === k ? 0 : editDistance(k, f.toLowerCase());
    if (d <= bestD && (best === undefined || d < bestD)) [best, bestD] = [f, d];
  }
  return best;
}
