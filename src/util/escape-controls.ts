/**
 * What a peer sent, made safe to quote in an error message or a warning. Replies of the Pyzor server and the LLM
 * endpoint (a status line's reason, a reply body, a certificate's names in a TLS error) reach logs and terminals
 * in the result's warnings; there a C1 control (U+009B is a terminal's CSI, U+0085 a line break for some readers),
 * DEL or a line separator must not start a line or a terminal escape. `JSON.stringify` escapes only C0 controls.
 */

/** Every control character (C0, DEL, C1) and line or paragraph separator. */
const CONTROLS = /[\p{Cc}\u2028\u2029]/gu;

/** `s` with every control character (C0, DEL, C1) and line or paragraph separator written as a `\uXXXX` escape. */
export function escapeControls(s: string): string {
  return s.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A peer's text for a message: at most `max` (200) characters, then `…`, JSON-quoted, control characters escaped. */
export function quotedExcerpt(s: string, max = 200): string {
  return escapeControls(JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s));
}
