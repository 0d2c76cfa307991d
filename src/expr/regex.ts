/**
 * Translation of Stalwart (Rust `regex` crate) patterns to JavaScript, with a safety check.
 * Placeholder until implemented: see `compileRustRegex`.
 */

/** Thrown for a pattern that is invalid, unsupported, or could backtrack catastrophically. */
export class RegexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexError';
  }
}

/**
 * Compiles a Rust-syntax regular expression source into an equivalent JS `RegExp` (flag `u`, no
 * `g`/`y`, so `exec` is stateless). Throws {@link RegexError} for invalid or unsafe patterns.
 */
export function compileRustRegex(source: string): RegExp {
  try {
    return new RegExp(source, 'u');
  } catch (e) {
    throw new RegexError((e as Error).message);
  }
}
