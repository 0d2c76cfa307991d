/**
 * Adding our verdict headers to a raw message (spamd `PROCESS`/`HEADERS`): copies of `X-Spam-Result`,
 * `X-Spam-LLM` and `X-Spam-Score` (and, for spamd, SpamAssassin's `X-Spam-Flag`/`-Status`/`-Level`) already in the
 * message are removed (they could be forged upstream), ours go first, and the message's own line ending
 * (CRLF or LF) is kept.
 */

const OURS = new Set(['x-spam-result', 'x-spam-llm', 'x-spam-score']);
/** SpamAssassin's own headers, which spamd clients' filing rules read (procmail, Sieve, MUAs). */
const SPAMASSASSIN = ['x-spam-flag', 'x-spam-status', 'x-spam-level', 'x-spam-checker-version'];
/** What the spamd listener removes from a message before adding its headers (forged upstream copies). */
export const SPAMD_STRIPPED: ReadonlySet<string> = new Set([...OURS, ...SPAMASSASSIN]);

/**
 * SpamAssassin's verdict headers for a result, as spamd adds them: `X-Spam-Flag: YES` (spam only),
 * `X-Spam-Status: Yes|No, score=S required=T tests=A,B,… version=spamrule` (scores to one decimal, tests as
 * given, folded with a newline and a tab so that no line passes 78 columns, as SpamAssassin folds it) and
 * `X-Spam-Level` (one `*` per whole point, at most 50).
 */
export function spamAssassinHeaders(spam: boolean, score: number, threshold: number, tests: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (spam) out['X-Spam-Flag'] = 'YES';
  // Pieces of the value, each after a space or (the tests after the first) straight after a comma.
  const names = tests.length === 0 ? ['none'] : tests;
  const pieces: { text: string; space: boolean }[] = [
    { text: `${spam ? 'Yes' : 'No'},`, space: true },
    { text: `score=${score.toFixed(1)}`, space: true },
    { text: `required=${threshold.toFixed(1)}`, space: true },
    ...names.map((n, i) => ({ text: `${i === 0 ? 'tests=' : ''}${n}${i < names.length - 1 ? ',' : ''}`, space: i === 0 })),
    { text: 'version=spamrule', space: true },
  ];
  const name = 'X-Spam-Status:';
  const lines: string[] = [];
  let line = name;
  for (const p of pieces) {
    const add = (p.space ? ' ' : '') + p.text;
    if (line.length + add.length > 78 && line !== name) {
      lines.push(line);
      line = '\t' + p.text;
    } else line += add;
  }
  lines.push(line);
  out['X-Spam-Status'] = lines.join('\n').slice(name.length + 1);
  out['X-Spam-Level'] = '*'.repeat(Math.max(0, Math.min(50, Math.floor(score))));
  return out;
}

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
 * The header block with ours in front and any earlier copies of the `strip` headers (default: ours)
 * removed. An mbox separator line (`From sender date`, which procmail and other local delivery agents
 * pass to spamc) stays first.
 */
export function withVerdictHeaders(head: Buffer, headers: Readonly<Record<string, string>>, eol: string, strip: ReadonlySet<string> = OURS): Buffer {
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
    dropping = colon > 0 && strip.has(line.slice(0, colon).trim().toLowerCase());
    if (!dropping) kept.push(line);
  }
  const ours = Object.entries(headers).map(([k, v]) => `${k}: ${v.replace(/\r?\n/g, eol)}${eol}`);
  return Buffer.concat([Buffer.from(separator, 'latin1'), Buffer.from(ours.join(''), 'utf8'), Buffer.from(kept.join(''), 'latin1')]);
}
