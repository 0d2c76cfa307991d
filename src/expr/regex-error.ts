import { ExprEvalError } from './types.js';

/** Thrown for a pattern that is invalid or unsupported (backreferences, look-around), with its offset. */
export class RegexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexError';
  }
}

/**
 * Thrown, before it starts, for a search that could take more steps than allowed: the pattern's
 * cost (the instructions one step can visit, `regex-cost.ts`) × the subject's length in UTF-16
 * code units is over the limit (`EngineOptions.regexWorkLimit`, default `DEFAULT_REGEX_WORK_LIMIT`).
 * An evaluation error: the engine reports the rule as failed and applies nothing from it.
 */
export class RegexWorkError extends ExprEvalError {
  constructor(
    /** The Rust source of the pattern. */
    readonly pattern: string,
    /** The cost of the program the refused pass would run. */
    readonly cost: number,
    /** The subject's length, UTF-16 code units. */
    readonly length: number,
    /** The limit, steps. */
    readonly limit: number,
  ) {
    const shown = pattern.length > 60 ? `${pattern.slice(0, 57)}...` : pattern;
    super(`regular expression ${JSON.stringify(shown)} not run: a search of ${length} characters at cost ${cost} could take ${cost * length} steps, over the limit of ${limit} (regexWorkLimit)`);
    this.name = 'RegexWorkError';
  }
}
