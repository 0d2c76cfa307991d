/**
 * The arithmetic and layout of SpamAssassin's `masses/hit-frequencies` (its `-x -p` output), for
 * `spamrule mass-check`: per tag, the share of all messages, of spam and of ham that carry it, S/O
 * and RANK, and the `spam.log`/`ham.log` lines of SpamAssassin's `masses/mass-check`.
 *
 * Definitions, as in SpamAssassin's masses/hit-frequencies and its wiki page
 * (https://cwiki.apache.org/confluence/display/SPAMASSASSIN/HitFrequencies):
 * - SPAM% and HAM%: hits among spam (ham) messages × 100 / spam (ham) messages; OVERALL%: all hits
 *   × 100 / all messages.
 * - S/O: SPAM% / (SPAM% + HAM%), the probability that a message the tag hits is spam once both
 *   corpora are weighed alike; 0.5 for a tag with no hit.
 * - RANK: `S/O³ × 2000 + SPAM% × 3`, then scaled to [0, 1] over every tag of the table (the lowest
 *   raw value 0, the highest 1; 0.001 for all when they are equal). For a "nice" rule (SpamAssassin's
 *   `tflags nice`; here a tag whose score is below 0) S/O is taken as 1 − S/O and SPAM% as HAM%, so
 *   that a good ham rule ranks high too.
 */

/** A tag's score in the rule set: points, or the action a Reject/Discard SpamTag forces. */
export type TagScore = number | 'reject' | 'discard';

/** The counts behind one row. */
export interface TagCounts {
  name: string;
  /** Spam (ham) messages that carry the tag. */
  spamHits: number;
  hamHits: number;
  /** The tag's score in the loaded rule set (0 for a tag no SpamTag scores). */
  score: TagScore;
}

/** One row of the table. Percentages are 0–100; `so` and `rank` 0–1. */
export interface TagRow extends TagCounts {
  overall: number;
  spamPercent: number;
  hamPercent: number;
  so: number;
  rank: number;
}

/** Orders of the table: RANK (SpamAssassin's order), OVERALL%, S/O, SPAM%, HAM% (all highest first), or name. */
export const SORT_KEYS = ['rank', 'overall', 'so', 'spam', 'ham', 'name'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

/** S/O of two hit rates (or counts): `s / (s + h)`, 0.5 when both are 0 (hit-frequencies' `soratio`). */
export function soRatio(s: number, h: number): number {
  return s + h > 0 ? s / (s + h) : 0.5;
}

/**
 * The rows of `tags` for a corpus of `spam` and `ham` messages, RANK scaled over all of them (pass
 * every tag of the rule set, hit or not, as hit-frequencies does, so that RANK does not depend on
 * which rows are shown), in no particular order.
 */
export function hitFrequencies(tags: readonly TagCounts[], spam: number, ham: number): TagRow[] {
  const all = spam + ham;
  const raw = tags.map((t) => {
    const spamPercent = spam === 0 ? 0 : (t.spamHits / spam) * 100;
    const hamPercent = ham === 0 ? 0 : (t.hamHits / ham) * 100;
    const so = soRatio(spamPercent, hamPercent);
    const nice = typeof t.score === 'number' && t.score < 0;
    const rank = (nice ? 1 - so : so) ** 3 * 2000 + (nice ? hamPercent : spamPercent) * 3;
    const overall = all === 0 ? 0 : ((t.spamHits + t.hamHits) / all) * 100;
    return { ...t, overall, spamPercent, hamPercent, so, rank };
  });
  const hi = Math.max(...raw.map((r) => r.rank));
  const lo = Math.min(...raw.map((r) => r.rank));
  const span = hi - lo;
  for (const r of raw) r.rank = span === 0 ? 0.001 : (r.rank - lo) / span;
  return raw;
}

/** Sorts rows in place by `key` (highest first, except `name`); ties by name. Returns them. */
export function sortRows(rows: TagRow[], key: SortKey): TagRow[] {
  const field = { rank: 'rank', overall: 'overall', so: 'so', spam: 'spamPercent', ham: 'hamPercent' } as const;
  const byName = (a: TagRow, b: TagRow): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return rows.sort(key === 'name' ? byName : (a, b) => b[field[key]] - a[field[key]] || byName(a, b));
}

/** Perl's `%N.Mf`: `n` with `decimals` decimals, right-aligned to `width`. */
function f(n: number, width: number, decimals: number): string {
  return n.toFixed(decimals).padStart(width);
}

function scoreText(s: TagScore): string {
  return typeof s === 'number' ? f(s, 6, 2) : s.padStart(6);
}

/**
 * The table in hit-frequencies' `-p` layout: its header, the `(all messages)` line (counts and the
 * corpus's S/O), the `(all messages as %)` line, then one line per row. Ends with a newline.
 */
export function renderTable(rows: readonly TagRow[], spam: number, ham: number): string {
  const all = spam + ham;
  const so = soRatio(spam, ham);
  const lines = [
    `${'OVERALL%'.padStart(7)} ${'SPAM%'.padStart(7)}  ${'HAM%'.padStart(7)}  ${'S/O'.padStart(6)}  ${'RANK'.padStart(6)}  ${'SCORE'.padStart(6)}  NAME`,
    `${String(all).padStart(7)}  ${String(spam).padStart(7)}  ${String(ham).padStart(7)}  ${f(so, 7, 3)} ${f(0, 6, 2)}  ${f(0, 6, 2)}  (all messages)`,
    `${f(all === 0 ? 0 : 100, 7, 3)}  ${f(all === 0 ? 0 : (spam / all) * 100, 7, 4)}  ${f(all === 0 ? 0 : (ham / all) * 100, 7, 4)}  ${f(so, 7, 3)} ${f(0, 6, 2)}  ${f(0, 6, 2)}  (all messages as %)`,
  ];
  for (const r of rows) {
    lines.push(`${f(r.overall, 7, 3)}  ${f(r.spamPercent, 7, 4)}  ${f(r.hamPercent, 7, 4)}  ${f(r.so, 7, 3)} ${f(r.rank, 6, 2)}  ${scoreText(r.score)}  ${r.name}`);
  }
  return lines.join('\n') + '\n';
}

/** A log field: whitespace and commas (the log's separators) become `_`, as mass-check does for ids. */
function field(s: string): string {
  return s.replace(/[\s,]/g, '_');
}

/**
 * One line of SpamAssassin's mass-check log (`spam.log`, `ham.log`): `Y` (flagged) or `.`, the score
 * as Perl's `%2d` prints it (truncated towards zero, at least two characters), the message's id (its
 * path, `path#N` for the N-th message of an mbox; whitespace made `_`), and its tags sorted and
 * comma-separated, as hit-frequencies reads it (`/^(.)\s+(-?\d+)\s+(\S+)\s*(\S*)/`). Ends with a newline.
 */
export function logLine(flagged: boolean, score: number, id: string, tags: readonly string[]): string {
  const names = [...new Set(tags.map(field))].sort();
  const line = `${flagged ? 'Y' : '.'} ${String(Math.trunc(score)).padStart(2)} ${field(id) || '_'}`;
  return (names.length > 0 ? `${line} ${names.join(',')}` : line) + '\n';
}
