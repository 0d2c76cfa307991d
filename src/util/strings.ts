/**
 * Strings kept by caches that outlive a message.
 *
 * V8 represents a cut of 13 or more characters (`slice`, `substring`, regex captures, `split` parts)
 * as a view into the string it was cut from, and a concatenation of 13 or more characters as a pair of
 * its parts. A process-wide cache that keeps such a string as a key or a value keeps the whole string
 * behind it alive: a 14-character host name or tracking id cut from a 1 MB message body holds that body
 * for as long as the entry lives (measured: 0.6 MB kept per message classified, up to the caches'
 * bounds of tens of thousands of entries). Such caches store {@link detach}ed copies.
 */

/** Shorter strings are always copies in V8 (a slice or a concatenation this short is built flat). */
const MIN_SHARED_LENGTH = 13;

/**
 * A copy of `s` that shares no memory with the string it was cut from (the same UTF-16 code units).
 * Costs a copy of `s` (about 0.2 µs for a host name): use it where an entry is stored, not on lookups.
 * The test that classifies large messages with unique host names, ids and words checks that the caches
 * keep none of them (test/util/strings.test.ts).
 */
export function detach(s: string): string {
  if (s.length < MIN_SHARED_LENGTH) return s;
  // Cutting a character off a new concatenation makes V8 flatten it into a new string first: the result
  // is a view into that copy (one character longer than `s`), never into what `s` was cut from. Twice as
  // fast as a round trip through a Buffer, which the caches' miss paths pay per new entry.
  return (' ' + s).slice(1);
}
