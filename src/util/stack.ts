/** Is `e` V8's "Maximum call stack size exceeded" (a RangeError: input nested deeper than the stack)? */
export function isStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /call stack/i.test(e.message);
}
