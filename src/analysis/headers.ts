/**
 * The `headers` module (Stalwart's generic header checks, docs/analysis.md): one `X_HDR_<NAME>` tag
 * per top-level header name present (for rules such as `$X_HDR_DKIM_SIGNATURE`), repeated or badly
 * delimited "unique" headers, a mailing-list score, X-Priority levels and missing essentials.
 */
import { isNamed, unfold } from '../message/headers.js';
import type { AnalysisContext } from './types.js';

/** Headers a message carries at most once (RFC 5322 §3.6 and RFC 2045 §3), lower case. */
const UNIQUE: readonly string[] = [
  'content-type', 'content-transfer-encoding', 'date', 'from', 'sender', 'to', 'cc', 'bcc', 'reply-to',
  'subject', 'message-id', 'references', 'in-reply-to',
];

/** Weight of each list header (lower case) in the mailing-list score; `MAILLIST` at ≥ 1.0. */
const LIST_WEIGHT: ReadonlyMap<string, number> = new Map([
  ['list-archive', 0.125], ['list-owner', 0.125], ['list-help', 0.125], ['list-post', 0.125],
  ['list-id', 0.5125], ['list-subscribe', 0.25], ['list-unsubscribe', 0.25], ['x-loop', 0.125],
]);

/** A header name the module treats specially (unique, list, Precedence, X-Priority). */
interface NameRule {
  readonly lower: string;
  /** Bit of the name in {@link UNIQUE} (0 when it is not one of them). */
  readonly uniqueBit: number;
  /** Mailing-list weight, or undefined. */
  readonly weight: number | undefined;
}

/**
 * The special names by length: a header is matched against the few of its length with a
 * comparison that makes no lower-cased copy (most headers have no candidate, or fail on the
 * first characters), instead of a Map lookup that hashes every header name of every message.
 */
const RULES_BY_LENGTH: NameRule[][] = [];
for (const r of [
  ...UNIQUE.map((lower, u) => ({ lower, uniqueBit: 1 << u, weight: undefined })),
  ...[...LIST_WEIGHT].map(([lower, weight]) => ({ lower, uniqueBit: 0, weight })),
  { lower: 'precedence', uniqueBit: 0, weight: undefined },
  { lower: 'x-priority', uniqueBit: 0, weight: undefined },
]) (RULES_BY_LENGTH[r.lower.length] ??= []).push(r);

/** The special name `name` is (compared as lower case), or undefined. */
function ruleOf(name: string): NameRule | undefined {
  const candidates = RULES_BY_LENGTH[name.length];
  if (candidates !== undefined) for (const r of candidates) if (isNamed(name, r.lower)) return r;
  return undefined;
}

/** Rust's `str::parse::<i32>`: optional sign, ASCII digits only, in range; else undefined. */
const I32_RE = /^[+-]?[0-9]+$/;
function parseI32(s: string): number | undefined {
  if (!I32_RE.test(s)) return undefined;
  const n = Number(s);
  return n >= -2147483648 && n <= 2147483647 ? n : undefined;
}

/**
 * Per header occurrence, in order: `X_HDR_<NAME>` (letters and digits upper-cased, `-` → `_`, any
 * other character → a space); for the 13 unique headers `MULTIPLE_UNIQUE_HEADERS` on a repeat and
 * `HEADER_EMPTY_DELIMITER` when the value does not start with a space or tab (line breaks skipped);
 * list headers add to the list score (`HAS_LIST_UNSUB` for List-Unsubscribe, `PRECEDENCE_BULK` for
 * `Precedence: bulk`); `X-Priority` 0/1/2/3–4/5–10000 → `HAS_X_PRIO_ZERO/ONE/TWO/THREE/FIVE`.
 * After the loop: `MAILLIST` when the list score is ≥ 1.0, `MISSING_ESSENTIAL_HEADERS` when none of
 * the unique headers occurred. Inputs: the top-level headers only.
 */
export function headers(ctx: AnalysisContext): void {
  let listScore = 0;
  let seen = 0; // bits of the unique headers met
  const all = ctx.message.headers;
  const tags = ctx.message.headerTags;
  for (let i = 0; i < all.length; i++) {
    const h = all[i]!;
    ctx.tag(tags[i]!);
    const info = ruleOf(h.name);
    if (info === undefined) continue;
    if (info.uniqueBit !== 0) {
      if ((seen & info.uniqueBit) !== 0) ctx.tag('MULTIPLE_UNIQUE_HEADERS');
      else seen |= info.uniqueBit;
      const first = firstByte(h.raw);
      // A value of line breaks only: Stalwart reads on into what follows. After a header that is
      // the next header's name (never a blank); after the last one, the blank line and the body.
      const next = first !== -1 ? first : i + 1 < all.length ? 0 : bodyFirstByte(ctx.message.raw);
      if (next !== 32 && next !== 9) ctx.tag('HEADER_EMPTY_DELIMITER');
      continue;
    }
    const name = info.lower;
    if (info.weight !== undefined) {
      listScore += info.weight;
      if (name === 'list-unsubscribe') ctx.tag('HAS_LIST_UNSUB');
    } else if (name === 'precedence') {
      const v = unfold(h.raw).trim().toLowerCase();
      if (v === 'bulk') {
        listScore += 0.25;
        ctx.tag('PRECEDENCE_BULK');
      } else if (v === 'list') {
        listScore += 0.25;
      }
    } else if (name === 'x-priority') {
      const p = parseI32(unfold(h.raw).trim());
      if (p === undefined) continue;
      if (p === 0) ctx.tag('HAS_X_PRIO_ZERO');
      else if (p === 1) ctx.tag('HAS_X_PRIO_ONE');
      else if (p === 2) ctx.tag('HAS_X_PRIO_TWO');
      else if (p === 3 || p === 4) ctx.tag('HAS_X_PRIO_THREE');
      else if (p >= 5 && p <= 10000) ctx.tag('HAS_X_PRIO_FIVE');
    }
  }
  if (listScore >= 1.0) ctx.tag('MAILLIST');
  if (seen === 0) ctx.tag('MISSING_ESSENTIAL_HEADERS');
}

/** The first character of a value that is not CR or LF, or -1 when there is none. */
function firstByte(raw: string): number {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c !== 13 && c !== 10) return c;
  }
  return -1;
}

/** The first byte after the header block's end that is not CR or LF (-1 at the end of the message). */
function bodyFirstByte(raw: Uint8Array): number {
  const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  const lf = b.indexOf('\n\n');
  const crlf = b.indexOf('\n\r\n');
  let i = lf < 0 ? crlf : crlf < 0 ? lf : Math.min(lf, crlf);
  if (i < 0) return -1;
  for (; i < b.length; i++) if (b[i] !== 13 && b[i] !== 10) return b[i]!;
  return -1;
}
