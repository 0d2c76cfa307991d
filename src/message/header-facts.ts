/**
 * Per-message header facts the built-in analysis reads (docs/analysis.md): headers by name (ASCII,
 * case-insensitive), and the byte-level facts of a header's raw value (does it hold non-ASCII bytes, is it
 * valid UTF-8) that the lossy-UTF-8 header text alone cannot answer, computed once per header.
 */
import type { MessageContext } from './context.js';
import { isNamed, type RawHeader } from './headers.js';
import { MemoSlot } from '../util/index.js';

// The modules ask for a dozen names per message: a scan that compares lengths first costs less
// than grouping every header by its lower-cased name (a copy and a Map entry per header).

/** The first header named `nameLower` (lower case, ASCII), or undefined. */
export function firstHeader(ctx: MessageContext, nameLower: string): RawHeader | undefined {
  for (const h of ctx.headers) if (isNamed(h.name, nameLower)) return h;
  return undefined;
}

/** The last header named `nameLower` (lower case, ASCII; mail-parser's `header(name)`), or undefined. */
export function lastHeader(ctx: MessageContext, nameLower: string): RawHeader | undefined {
  const all = ctx.headers;
  for (let i = all.length - 1; i >= 0; i--) if (isNamed(all[i]!.name, nameLower)) return all[i];
  return undefined;
}

/** Every header named `nameLower` (lower case, ASCII), in message order. */
export function headersNamed(ctx: MessageContext, nameLower: string): RawHeader[] {
  const out: RawHeader[] = [];
  for (const h of ctx.headers) if (isNamed(h.name, nameLower)) out.push(h);
  return out;
}

/** Byte-level facts of one header's raw value (the bytes after the colon through the final line break). */
export interface RawValueInfo {
  /** A byte ≥ 0x80 occurs. */
  readonly nonAscii: boolean;
  /** The bytes are valid UTF-8. */
  readonly validUtf8: boolean;
  /** The value as text, or `""` when it is not valid UTF-8 (Stalwart reads it that way). */
  readonly text: string;
}

const NON_ASCII_RE = /[^\x00-\x7f]/;
const infoMemo = new MemoSlot<RawHeader, RawValueInfo>();
const utf8Fatal = new TextDecoder('utf-8', { fatal: true });

/**
 * {@link RawValueInfo} of header `h` of `ctx`, computed once per header. The header text is lossy
 * UTF-8: without U+FFFD it is exactly the bytes; with one, the original bytes decide (a literal
 * U+FFFD is valid UTF-8, an invalid sequence is not).
 */
export function rawValueInfo(ctx: MessageContext, h: RawHeader): RawValueInfo {
  let info = infoMemo.get(h);
  if (info !== undefined) return info;
  const nonAscii = NON_ASCII_RE.test(h.raw);
  if (!nonAscii || !h.raw.includes('\ufffd')) info = { nonAscii, validUtf8: true, text: h.raw };
  else {
    const bytes = headerBytes(ctx, h);
    let valid = false;
    if (bytes !== undefined) {
      try {
        utf8Fatal.decode(bytes);
        valid = true;
      } catch {
        valid = false;
      }
    }
    info = { nonAscii, validUtf8: valid, text: valid ? h.raw : '' };
  }
  infoMemo.set(h, info);
  return info;
}

/**
 * {@link RawValueInfo}'s `text` of header `h`: the header text itself unless it holds a U+FFFD (only
 * then can the bytes be invalid UTF-8), so most headers need neither the byte check nor its memo.
 */
export function rawValueText(ctx: MessageContext, h: RawHeader): string {
  return h.raw.includes('\ufffd') ? rawValueInfo(ctx, h).text : h.raw;
}

/** {@link RawValueInfo}'s `nonAscii` of header `h` (the same test, without the memo). */
export function rawValueNonAscii(h: RawHeader): boolean {
  return NON_ASCII_RE.test(h.raw);
}

const rangesMemo = new MemoSlot<MessageContext, ({ start: number; end: number } | undefined)[]>();
const utf8 = new TextDecoder('utf-8');

/**
 * The raw bytes of header `h`'s value, found by splitting the header block's bytes the way
 * `splitHeaders` splits its text and checking that the bytes decode to `h.raw`. Undefined when the
 * two splits disagree (then the caller treats U+FFFD as an invalid sequence).
 */
function headerBytes(ctx: MessageContext, h: RawHeader): Uint8Array | undefined {
  const idx = ctx.headers.indexOf(h);
  if (idx < 0) return undefined;
  let ranges = rangesMemo.get(ctx);
  if (ranges === undefined) {
    ranges = splitHeaderBytes(ctx.raw, ctx.headers.length);
    rangesMemo.set(ctx, ranges);
  }
  const r = ranges[idx];
  if (r === undefined) return undefined;
  const bytes = ctx.raw.subarray(r.start, r.end);
  return utf8.decode(bytes) === h.raw ? bytes : undefined;
}

/** Byte ranges of header values, in order (same line rules as `splitHeaders`, on bytes). */
function splitHeaderBytes(raw: Uint8Array, max: number): ({ start: number; end: number } | undefined)[] {
  const out: ({ start: number; end: number } | undefined)[] = [];
  const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  let pos = 0;
  let open: { start: number } | undefined;
  const close = (end: number): void => {
    if (open !== undefined) out.push({ start: open.start, end });
    open = undefined;
  };
  while (pos < b.length && out.length < max) {
    const nl = b.indexOf(10, pos);
    const lineEnd = nl < 0 ? b.length : nl + 1;
    const c = b[pos];
    if (c === 32 || c === 9) {
      pos = lineEnd;
      continue;
    }
    close(pos);
    // The blank line ends the header block.
    if (c === 10 || (c === 13 && b[pos + 1] === 10)) break;
    const colon = b.indexOf(58, pos);
    if (colon >= 0 && colon < lineEnd) {
      // Names are ASCII in practice: decode as UTF-8 (as splitHeaders saw them) only when needed.
      let name = b.toString('latin1', pos, colon);
      if (NON_ASCII_RE.test(name)) name = utf8.decode(b.subarray(pos, colon));
      name = name.replace(/[ \t]+$/, '');
      if (name.length > 0 && !/\s/.test(name)) open = { start: colon + 1 };
    }
    pos = lineEnd;
  }
  close(pos);
  return out;
}
