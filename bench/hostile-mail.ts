/**
 * Hostile message bodies for the learn bench's cost table: one text part of about a megabyte whose
 * quoted-printable soft line breaks join it into a single span without white space, over patterns that
 * make every word of the span a candidate for a composite token (URL, e-mail address, host name). Before
 * the classifier's tokenizer bounded its look-ahead (`MAX_COMPOSITE_LOOKAHEAD`), each of these took 3–7 s
 * with the model against 0.04–0.12 s without it.
 */

/** Pattern name → the repeated unit of its body. */
export const HOSTILE_PATTERNS: Readonly<Record<string, string>> = {
  'words joined by -': 'a-',
  'host-like, 1-letter labels': 'a.a.',
  'host-like, hyphens': 'a.b-',
  'dots after words': 'a.',
  'local parts before @': `${'a-'.repeat(250)}@b.com,`,
  'mixed URL pieces': 'ab-cd.ef@gh.ij/kl?',
};

/** A message whose one text/plain part is `unit` repeated to `bytes` characters, quoted-printable encoded. */
export function hostileMessage(unit: string, bytes = 1_000_000): string {
  const body = unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
  const qp = body.replace(/=/g, '=3D').replace(/(.{72})/g, '$1=\r\n');
  return [
    'From: sender@example.com', 'To: rcpt@example.org', 'Subject: hostile body', 'Message-ID: <hostile@example.com>',
    'Date: Mon, 1 Jul 2002 12:00:00 +0000', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=us-ascii',
    'Content-Transfer-Encoding: quoted-printable', '', qp,
  ].join('\r\n');
}
