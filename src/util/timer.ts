/**
 * The longest delay a Node timer takes, in ms (2^31 − 1, about 24.8 days). A longer one, as a
 * `setTimeout`, `socket.setTimeout` or `AbortSignal.timeout` delay, fires after 1 ms (with a
 * TimeoutOverflowWarning), and one over 2^32 − 1 or not whole makes `AbortSignal.timeout` throw. So a
 * timeout an operator sets "practically never" (`3000000000`) would fire at once: settings that become
 * timer delays are refused above it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Why `v` is not a `"timeoutMs"` setting (milliseconds, a number above 0 and at most {@link MAX_TIMER_MS}),
 * as a settings validator's message, or undefined when it is one (or is not given). Shared by the Pyzor and
 * LLM settings, whose messages it keeps.
 */
export function timeoutMsProblem(v: unknown): string | undefined {
  if (v === undefined || (typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= MAX_TIMER_MS)) return undefined;
  return `"timeoutMs" must be milliseconds (a number > 0, at most ${MAX_TIMER_MS}), got ${typeof v === 'number' ? v : JSON.stringify(v)}`;
}
