/** Thrown for a pattern that is invalid or unsupported (backreferences, look-around), with its offset. */
export class RegexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexError';
  }
}
