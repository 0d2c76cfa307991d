/**
 * Adding our verdict headers to a raw message (spamd `PROCESS`/`HEADERS`): copies of `X-Spam-Result`
 * and `X-Spam-Score` already in the message are removed (they could be forged upstream), ours go
 * first, and the message's own line ending (CRLF or LF) is kept.
 */

const OURS = new Set(['x-spam-result', 'x-spam-score']);

/** Offset of the blank line that ends the header block, and the length of the line ending before it. */
function headerEnd(buf: Buffer): number {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return crlf + 2;
  if (lf >= 0) return lf + 1;
  return buf.length;
}

/** The header block (up to and including its last line ending) and the rest (blank line and body). */
export function splitMessage(raw: Uint8Array): { head: Buffer; rest: Buffer; eol: string } {
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const end = headerEnd(buf);
  const firstNl = buf.indexOf('\n');
  const eol = firstNl > 0 && buf[firstNl - 1] === 13 ? '\r\n' : '\n';
  return { head: buf.subarray(0, end), rest: buf.subarray(end), eol };
}

/**
 * The header block with ours in front and any earlier copies of them removed. An mbox separator line
 * (`From sender date`, which procmail and other local delivery agents pass to spamc) stays first.
 */
export function withVerdictHeaders(head: Buffer, headers: Readonly<Record<string, string>>, eol: string): Buffer {
  const lines = head.toString('latin1').split(/(?<=\n)/);
  const separator = lines[0]?.startsWith('From ') === true ? lines.shift()! : '';
  const kept: string[] = [];
  let dropping = false;
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      if (!dropping) kept.push(line);
      continue;
    }
    const colon = line.indexOf(':');
    dropping = colon > 0 && OURS.has(line.slice(0, colon).trim().toLowerCase());
    if (!dropping) kept.push(line);
  }
  const ours = Object.entries(headers).map(([k, v]) => `${k}: ${v.replace(/\r?\n/g, eol)}${eol}`);
  return Buffer.concat([Buffer.from(separator, 'latin1'), Buffer.from(ours.join(''), 'utf8'), Buffer.from(kept.join(''), 'latin1')]);
}
