/**
 * SpamTag table: tag → Score / Reject / Discard (Stalwart's spam filter). Tag names may be globs
 * (`*`, `?`, `\` escapes); lookups check exact names first, then patterns in load order.
 */
import { Glob, isGlob } from '../lookup/glob.js';
import type { SpamTagInput } from './types.js';

/** What a SpamTag does to a message carrying its tag: add `score` points, or reject / discard it. */
export type TagAction = { kind: 'score'; score: number } | { kind: 'reject' } | { kind: 'discard' };

/**
 * The score table of an engine (`SpamEngine.tags`, docs/library.md): SpamTag objects by tag name.
 * A tag no entry matches scores 0.
 */
export class SpamTagTable {
  private readonly exact = new Map<string, TagAction>();
  private readonly patterns: { text: string; glob: Glob; action: TagAction }[] = [];

  /**
   * Adds SpamTag objects. A later entry for the same tag, exact or glob, replaces the earlier one
   * (so `--scores` given after a bundle overrides its scores); a replaced glob keeps its place in
   * the load order. A `Score` without `score` scores 0. Throws `TypeError` for an entry whose `tag`
   * is not a non-empty string (the entries before it stay added).
   */
  add(tags: Iterable<SpamTagInput>): this {
    for (const t of tags) {
      const action: TagAction =
        t['@type'] === 'Reject' ? { kind: 'reject' } : t['@type'] === 'Discard' ? { kind: 'discard' } : { kind: 'score', score: Number(t.score ?? 0) };
      if (typeof t.tag !== 'string' || t.tag === '') throw new TypeError('SpamTag: "tag" must be a non-empty string');
      if (isGlob(t.tag)) {
        const same = this.patterns.find((p) => p.text === t.tag);
        if (same !== undefined) same.action = action;
        else this.patterns.push({ text: t.tag, glob: new Glob(t.tag), action });
      } else this.exact.set(t.tag, action);
    }
    return this;
  }

  /** Entries: exact names and glob patterns. */
  get size(): number {
    return this.exact.size + this.patterns.length;
  }

  /** The action of a tag, or `undefined` when no entry matches (score 0). */
  lookup(tag: string): TagAction | undefined {
    const a = this.exact.get(tag);
    if (a !== undefined) return a;
    for (const p of this.patterns) if (p.glob.matches(tag)) return p.action;
    return undefined;
  }

  /** True if some entry (exact or pattern) names this tag. */
  has(tag: string): boolean {
    return this.lookup(tag) !== undefined;
  }
}

/** The largest score a SpamTag may have, either sign (the registry's `x:SpamTag` range, src/engine/schema.ts). */
export const MAX_TAG_SCORE = 999_999;

/**
 * Parses Stalwart's `lists/scores.txt` (`TAG = number|reject|discard`, `#` comments). Throws an
 * `Error` naming the line for a malformed entry, or a score outside ±{@link MAX_TAG_SCORE} (the JSON
 * form and JMAP refuse it, so the text form must too: `T = 1e9` was taken).
 */
export function parseScoresTxt(text: string): SpamTagInput[] {
  const out: SpamTagInput[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const t = line.trim();
    if (t === '' || t.startsWith('#')) return;
    const eq = t.indexOf('=');
    if (eq < 0) throw new Error(`scores line ${i + 1}: expected "TAG = score|reject|discard"`);
    const tag = t.slice(0, eq).trim();
    const v = t.slice(eq + 1).trim().toLowerCase();
    if (tag === '') throw new Error(`scores line ${i + 1}: empty tag name`);
    if (v === 'reject') out.push({ '@type': 'Reject', tag });
    else if (v === 'discard') out.push({ '@type': 'Discard', tag });
    else {
      const n = Number(v);
      if (v === '' || !Number.isFinite(n)) throw new Error(`scores line ${i + 1}: "${v}" is not a number, reject or discard`);
      if (Math.abs(n) > MAX_TAG_SCORE) throw new Error(`scores line ${i + 1}: ${v} is outside -${MAX_TAG_SCORE}..${MAX_TAG_SCORE}, the range of a score`);
      out.push({ '@type': 'Score', tag, score: n });
    }
  });
  return out;
}
