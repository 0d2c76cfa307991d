/**
 * Glob matching for MemoryLookupKey entries with `isGlobPattern` (docs/message-analysis.md, Stalwart
 * `crates/utils/src/glob.rs`): `*` matches any run, `?` one character, `\` escapes; case-sensitive.
 * Implemented as a linear-time two-pointer matcher (no regular expressions, so no backtracking blow-up).
 */

/** True if `pattern` has an unescaped `*` or `?` (otherwise it is an exact key). */
export function isGlob(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '*' || c === '?') return true;
  }
  return false;
}

/** Removes escaping backslashes from a pattern that has no wildcards. */
export function unescapeGlob(pattern: string): string {
  return pattern.replace(/\\(.)/gsu, '$1');
}

type Tok = { kind: 'lit'; ch: string } | { kind: 'any' } | { kind: 'star' };

function tokenize(pattern: string): Tok[] {
  const out: Tok[] = [];
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '\\' && i + 1 < chars.length) out.push({ kind: 'lit', ch: chars[++i]! });
    else if (c === '*') out.push({ kind: 'star' });
    else if (c === '?') out.push({ kind: 'any' });
    else out.push({ kind: 'lit', ch: c });
  }
  return out;
}

/** A compiled glob pattern. */
export class Glob {
  private readonly toks: Tok[];
  constructor(readonly pattern: string) {
    this.toks = tokenize(pattern);
  }
  /** Classic greedy-star matcher with single backtrack point: O(|pattern| × |text|) worst case. */
  matches(text: string): boolean {
    const t = Array.from(text);
    const p = this.toks;
    let ti = 0;
    let pi = 0;
    let starP = -1;
    let starT = 0;
    while (ti < t.length) {
      const tok = p[pi];
      if (tok !== undefined && (tok.kind === 'any' || (tok.kind === 'lit' && tok.ch === t[ti]))) {
        ti++;
        pi++;
      } else if (tok !== undefined && tok.kind === 'star') {
        starP = pi++;
        starT = ti;
      } else if (starP >= 0) {
        pi = starP + 1;
        ti = ++starT;
      } else return false;
    }
    while (pi < p.length && p[pi]!.kind === 'star') pi++;
    return pi === p.length;
  }
}
