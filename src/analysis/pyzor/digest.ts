/**
 * The Pyzor digest of a message as Stalwart computes it (`stalwart:crates/spam-filter/src/modules/pyzor.rs`,
 * `pyzor_digest` and `html_to_text`), which follows pyzor's own `DataDigester` (pyzor/digest.py, 1.0.0):
 *
 * 1. The texts: every `text/*` part of the message in part order (the decoded text as is; a `text/html` part
 *    reduced to its text by {@link htmlToText}); attachments of other types and the parts of attached
 *    messages are not read.
 * 2. Each text is split into lines (at LF; a CR before it is dropped). A line is normalised: its white-space
 *    separated runs, less the URL, e-mail and IP address tokens in them (Stalwart's `TypesTokenizer`), are
 *    kept when shorter than 10 bytes (UTF-8, NULs removed) and concatenated without separators; the line is
 *    kept when the result has at least 8 bytes.
 * 3. Four kept lines or fewer: all of them are hashed. More: three lines from 20% of the way and three from
 *    60% (`digest_spec` 20,3 and 60,3).
 * 4. The digest is the lowercase hexadecimal SHA-1 of the chosen lines' UTF-8 bytes, concatenated.
 *
 * Where this differs from pyzor's regular expressions (`\S{10,}`, `\S+@\S+`, `[a-z]+:\S+` removed, then all
 * white space), the two digests differ too: lengths are counted in bytes, not characters (a non-ASCII word
 * of 5 letters is kept by pyzor, dropped here), a URL or address is cut out of its run rather than removing
 * the whole run, lines break at LF only, and HTML text is one line. docs/analysis.md ("pyzor") gives the
 * agreement measured on the SpamAssassin corpus.
 */
import { createHash } from 'node:crypto';
import { compositeBudget, T, TypedTokens, type CompositeBudget } from '../../classifier/tokenizer.js';
import { decodeEntity } from '../../message/html-tokens.js';
import type { MimeMessage } from '../../message/mime-tree.js';

/** A normalised line shorter than this (bytes) is not part of the digest (pyzor's `min_line_length`). */
export const MIN_LINE_BYTES = 8;
/** A run of this many bytes or more is left out (pyzor's `\S{10,}`: "possibly a unique identifier"). */
export const MAX_RUN_BYTES = 10;
/** With at most this many kept lines, all of them are hashed (pyzor's `atomic_num_lines`). */
export const ATOMIC_NUM_LINES = 4;
/** Otherwise `[percent, count]`: `count` lines from `percent`% of the way in (pyzor's `digest_spec`). */
export const DIGEST_SPEC: readonly (readonly [number, number])[] = [[20, 3], [60, 3]];

/** UTF-8 length of `s` in bytes, NUL characters not counted. */
function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) continue;
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Stalwart's `add_span`: a run shorter than {@link MAX_RUN_BYTES} bytes (NULs not counted) is kept, without its NULs. */
function addRun(out: string[], run: string): void {
  if (utf8Bytes(run) >= MAX_RUN_BYTES) return;
  out.push(run.includes('\0') ? run.replaceAll('\0', '') : run);
}

/** Token types that end a run (Stalwart: white space, URLs with or without a scheme or host, IP addresses, e-mail addresses). */
function endsRun(t: T): boolean {
  return t === T.Space || t === T.Url || t === T.UrlNoScheme || t === T.UrlNoHost || t === T.IpAddr || t === T.Email;
}

/**
 * One line normalised (step 2 above): its kept runs concatenated; `''` when nothing is kept. `budget`
 * bounds the tokenizer's look-ahead for the whole message (src/classifier/tokenizer.ts).
 */
export function normalizeLine(line: string, budget: CompositeBudget = compositeBudget()): string {
  const out: string[] = [];
  const tok = new TypedTokens(line, true, true, budget);
  let start = -1;
  let end = -1;
  while (tok.next()) {
    if (endsRun(tok.type)) {
      if (start >= 0) addRun(out, line.slice(start, end));
      start = -1;
    } else {
      if (start < 0) start = tok.start;
      end = tok.end;
    }
  }
  if (start >= 0) addRun(out, line.slice(start, end));
  return out.join('');
}

/** Rust's `str::lines`: split at LF, one CR before it dropped, no empty last line after a final LF. */
function* lines(text: string): Generator<string> {
  let pos = 0;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    const end = nl > pos && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
    yield text.slice(pos, end);
    pos = nl + 1;
  }
}

/**
 * The lines that count (steps 2 and 3 above, what `pyzor predigest` prints), in digest order: every kept
 * line when there are at most {@link ATOMIC_NUM_LINES}, else those {@link DIGEST_SPEC} picks.
 */
export function digestLines(texts: Iterable<string>): string[] {
  const budget = compositeBudget();
  const kept: string[] = [];
  for (const text of texts) {
    for (const line of lines(text)) {
      const clean = normalizeLine(line, budget);
      if (utf8Bytes(clean) >= MIN_LINE_BYTES) kept.push(clean);
    }
  }
  return sampleLines(kept);
}

/**
 * The lines pyzor's `DataDigester` hashes of the lines it kept: all of them when there are at most
 * {@link ATOMIC_NUM_LINES}, else {@link DIGEST_SPEC}'s picks (3 lines from 20%, 3 from 60%). Both digest modes.
 */
export function sampleLines(kept: readonly string[]): string[] {
  if (kept.length <= ATOMIC_NUM_LINES) return [...kept];
  const out: string[] = [];
  for (const [percent, count] of DIGEST_SPEC) {
    const from = Math.floor((percent * kept.length) / 100);
    for (let i = 0; i < count; i++) {
      const line = kept[from + i];
      if (line !== undefined) out.push(line);
    }
  }
  return out;
}

/** SHA-1 (lowercase hex) of the chosen lines' UTF-8 bytes, concatenated (step 4 above). */
export function digestOfTexts(texts: Iterable<string>): string {
  const h = createHash('sha1');
  for (const line of digestLines(texts)) h.update(line, 'utf8');
  return h.digest('hex');
}

/**
 * The texts of a message that the digest reads (step 1 above), in part order; empty when the message has
 * no `text/*` part, in which case Stalwart sends no request at all.
 */
export function messageTexts(message: MimeMessage): string[] {
  const out: string[] = [];
  for (const p of message.parts) {
    if (p.text === undefined) continue;
    if (p.kind === 'text') out.push(p.text);
    else if (p.kind === 'html') out.push(htmlToText(p.text));
  }
  return out;
}

/** The Pyzor digest of a message (lowercase hex SHA-1); `undefined` when it has no `text/*` part. */
export function pyzorDigest(message: MimeMessage): string | undefined {
  const texts = messageTexts(message);
  return texts.length === 0 ? undefined : digestOfTexts(texts);
}

/** Stalwart's `push_span` / mail-parser's `add_html_token`: a word, an `&…;` reference decoded, after a space when asked. */
function pushWord(out: string[], word: string, space: boolean): void {
  if (space) out.push(' ');
  out.push(decodeEntity(word) ?? word);
}

/**
 * The text of an HTML document as Stalwart's Pyzor digest reads it (`html_to_text`): the words outside
 * tags, comments, `<style>` and `<script>`, joined by single spaces (so the result is one line), with
 * `&…;` references decoded. Not an HTML5 parser: a `<` always opens a tag, `<!--` a comment that only
 * `-->` (exactly two dashes before it) closes, and a tag whose first word is `style` or `script` switches
 * that mode on (`</style>`: off). Linear in the input.
 */
export function htmlToText(input: string): string {
  const out: string[] = [];
  let inTag = false;
  let inComment = false;
  let inStyle = false;
  let inScript = false;
  let tokenStart0 = true; // no word in progress
  let afterSpace = false;
  let tagClose = false;
  let tokenStart = 0;
  let tokenEnd = 0;
  let tagTokenPos = 0;
  let commentDashes = 0;
  const hidden = (): boolean => inTag || inStyle || inScript;
  for (let pos = 0; pos < input.length; pos++) {
    const ch = input.charCodeAt(pos);
    if (inComment) {
      if (ch === 45 /* - */) commentDashes++;
      else if (ch === 62 /* > */ && commentDashes === 2) {
        commentDashes = 0;
        inComment = false;
        inTag = false;
        tokenStart0 = true;
      } else commentDashes = 0;
      continue;
    }
    if (ch === 60 /* < */) {
      if (!(hidden() || tokenStart0)) {
        pushWord(out, input.slice(tokenStart, tokenEnd + 1), afterSpace);
        afterSpace = false;
      }
      tagTokenPos = 0;
      inTag = true;
      tokenStart0 = true;
      tagClose = false;
      continue;
    }
    if (ch === 62 /* > */ && inTag) {
      if (tagTokenPos === 1) {
        // ASCII case folding only, as Rust's `eq_ignore_ascii_case`.
        const tag = input.slice(tokenStart, tokenEnd + 1).replace(/[A-Z]+/g, (m) => m.toLowerCase());
        if (tag === 'style') inStyle = !tagClose;
        else if (tag === 'script') inScript = !tagClose;
      }
      inTag = false;
      tokenStart0 = true;
      afterSpace = out.length > 0;
      continue;
    }
    if (ch === 47 /* / */ && inTag) {
      if (tagTokenPos === 0) tagClose = true;
      continue;
    }
    if (ch === 33 /* ! */ && inTag && tagTokenPos === 0 && input.startsWith('--', pos + 1)) {
      inComment = true;
      continue;
    }
    if (ch === 32 || ch === 9 || ch === 13 || ch === 10) {
      if (!hidden()) {
        if (!tokenStart0) pushWord(out, input.slice(tokenStart, tokenEnd + 1), afterSpace);
        afterSpace = true;
      }
      tokenStart0 = true;
      continue;
    }
    if (ch === 38 /* & */ && !(hidden() || tokenStart0)) {
      // A reference starts a new word (the `&` falls through to start it below).
      pushWord(out, input.slice(tokenStart, tokenEnd + 1), afterSpace);
      tokenStart0 = true;
      afterSpace = false;
    } else if (ch === 59 /* ; */ && !(hidden() || tokenStart0)) {
      pushWord(out, input.slice(tokenStart, pos + 1), afterSpace);
      tokenStart0 = true;
      afterSpace = false;
      continue;
    }
    if (tokenStart0) {
      tokenStart = pos;
      tokenStart0 = false;
      if (inTag) tagTokenPos++;
    }
    tokenEnd = pos;
  }
  if (!(hidden() || tokenStart0)) pushWord(out, input.slice(tokenStart, tokenEnd + 1), afterSpace);
  return out.join('');
}
