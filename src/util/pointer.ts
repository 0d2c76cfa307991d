/**
 * JSON-pointer segments (RFC 6901 §3, §4): one property name written into a pointer and read back. Shared by
 * every place that names a property in a problem or SetError path (the registry and lookup-store schemas, the
 * JMAP objects) so that a name holding `/` or `~` is escaped the same way everywhere.
 */

/** One property name as a pointer segment: `~` as `~0`, `/` as `~1` (`a/b` would otherwise be `b` inside `a`). */
export function pointerSegment(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** One pointer segment back to its property name (`~1` first, then `~0`, as RFC 6901 §4 orders it). */
export function unescapePointerSegment(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
