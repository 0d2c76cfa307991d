/**
 * The longest delay a Node timer takes, in ms (2^31 − 1, about 24.8 days). A longer one, as a
 * `setTimeout`, `socket.setTimeout` or `AbortSignal.timeout` delay, fires after 1 ms (with a
 * TimeoutOverflowWarning), and one over 2^32 − 1 or not whole makes `AbortSignal.timeout` throw. So a
 * timeout an operator sets "practically never" (`3000000000`) would fire at once: settings that become
 * timer delays are refused above it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
