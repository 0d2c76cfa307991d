/**
 * Bounds on the work postal-mime does for hostile input (docs/message-analysis.md, "Limits").
 * Both are process-wide patches of postal-mime's parser prototype (nested message/rfc822 parsers
 * are created inside postal-mime), opt-in through {@link installPostalLimits}, applied only when
 * the patched methods look as expected, and leave mail under the limits parsed exactly as before.
 *
 * Encoded-word runs. postal-mime 4's `decodeWords` decodes adjacent encoded words as one unit and
 * decides whether the next word may join by testing `/=$/` on the text joined so far
 * (`canJoinWords` in decode-strings.js), which is quadratic in a run of words: a 1 MB To header
 * of `=?utf-8?B?YWJj?=` repeated without spaces held the event loop ~10 s. That function is
 * internal to an ES module, so it cannot be replaced; it is reached from `buildMessage`
 * (From/Sender/Delivered-To/Return-Path/To/Cc/Bcc/Reply-To through the address parser;
 * Subject/Message-ID/In-Reply-To/References) and `collectAttachment` (filename, description),
 * whose results `parseBody` discards (spamrule decodes headers itself, src/message/headers.ts).
 * While those two methods run, a value in which encoded words run over
 * {@link MAX_ENCODED_WORD_RUN} characters is cut before the word that crosses the limit; the
 * originals are put back afterwards (`Email.headers` keeps them). Only values longer than the
 * limit are scanned. Address values are also cut to {@link MAX_POSTAL_ADDRESS_CHARS} there (its
 * address tokenizer costs about 3 µs a character whatever the text). The MIME structure, text parts
 * and attachment contents never change.
 *
 * Part count. postal-mime parses every part (~20–80 µs each: 20,000 one-line parts took
 * 0.3–0.65 s, 36,000 took 2–4 s) where spamrule's own MIME tree stops at {@link MAX_MIME_PARTS}.
 * `processLine` counts the parts postal-mime opens (the root, every part a boundary opens, the
 * roots of inline message/rfc822 messages, shared across them as in mime-tree.ts); the part past
 * the limit is dropped, the rest of the message is not read, and inline messages past it are not
 * parsed. {@link postalPartsCapped} tells.
 */
import PostalMime from 'postal-mime';
import { MAX_MIME_PARTS } from './mime-tree.js';

/**
 * Longest run of RFC 2047 encoded words, in characters from the first word's `=?` to the last
 * word's `?=`, that postal-mime is left to decode in a header value it only decodes for the
 * `Email` fields spamrule discards. Longer runs (and single longer words) are cut there.
 * 8 KiB is ~110 words of 75 characters: ~4,000 UTF-8 bytes of text.
 */
export const MAX_ENCODED_WORD_RUN = 8192;

/**
 * Longest address-header value (From, To, Cc, …) postal-mime's address parser is given for the
 * `Email` fields `parseBody` discards; longer ones are cut at the last comma before it. Its
 * tokenizer took 7 s on a 1 MB From of URLs (a fuzz campaign's message); spamrule reads addresses
 * with its own parser (addresses.ts, up to MAX_ADDRESS_HEADER_CHARS).
 */
export const MAX_POSTAL_ADDRESS_CHARS = 16_384;

/** `value` within {@link MAX_POSTAL_ADDRESS_CHARS}, cut at the last comma before the limit when there is one. */
export function cutAddressValue(value: string, max = MAX_POSTAL_ADDRESS_CHARS): string {
  if (value.length <= max) return value;
  const comma = value.lastIndexOf(',', max);
  return value.slice(0, comma > 0 ? comma : max);
}

// postal-mime's encoded-word grammar (decode-strings.js ENCODED_WORD_PATTERN).
const ENCODED_WORD = /=\?[^?\s]+\?[QqBb]\?[^?]*\?=/g;

/** Headers `buildMessage` decodes with the address parser (words may join across anything but a comma). */
const ADDRESS_HEADERS = new Set(['from', 'sender', 'delivered-to', 'return-path', 'to', 'cc', 'bcc', 'reply-to']);
/** Headers `buildMessage` decodes as text (words join across linear white space only). */
const TEXT_HEADERS = new Set(['subject', 'message-id', 'in-reply-to', 'references']);

function onlyWsp(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c !== 32 && c !== 9 && c !== 13 && c !== 10) return false;
  }
  return true;
}

/**
 * `value` cut before the first encoded word whose run (with the adjacent words before it) spans
 * more than `max` characters; `value` itself when there is none. A run continues across text
 * that is only linear white space (`address` false: how `decodeWords` joins words) or, for
 * `address` true, across any text without a comma: postal-mime's address parser joins the text
 * of one address, dropping comments, quotes and brackets, before decoding it.
 */
export function cutEncodedWordRuns(value: string, address: boolean, max = MAX_ENCODED_WORD_RUN): string {
  if (value.length <= max) return value;
  const re = new RegExp(ENCODED_WORD.source, 'g');
  let runStart = -1;
  let lastEnd = 0;
  // The first comma at or after lastEnd (value.length: none), found once per comma so that
  // searching stays linear.
  let comma = -1;
  for (let m = re.exec(value); m !== null; m = re.exec(value)) {
    const start = m.index;
    if (address && comma < lastEnd) {
      comma = value.indexOf(',', lastEnd);
      if (comma < 0) comma = value.length;
    }
    const joins = runStart >= 0 && (address ? comma >= start : onlyWsp(value, lastEnd, start));
    if (!joins) runStart = start;
    lastEnd = start + m[0].length;
    if (lastEnd - runStart > max) return value.slice(0, start);
  }
  return value;
}

interface HeaderEntry {
  key: string;
  value: string;
}
interface NodeLike {
  state?: string;
  parentNode?: NodeLike;
  childNodes: NodeLike[];
  finalizedChildCount?: number;
  contentType?: { parsed?: { params?: Record<string, string> } };
  contentDisposition?: { parsed?: { params?: Record<string, string> } };
  contentDescription?: string;
}
interface ParserLike {
  root: NodeLike & { headers: HeaderEntry[] };
  currentNode: NodeLike;
  options?: Record<symbol, unknown>;
  mimeOptions?: Record<symbol, unknown>;
  readPos?: number;
  av?: Uint8Array;
  [BUDGET]?: PartBudget;
  buildMessage(): { headers?: HeaderEntry[] };
  collectAttachment(node: NodeLike, ...rest: unknown[]): void;
  processLine(line: Uint8Array, isFinal: boolean): Promise<void>;
  collectSubMessage?: (node: NodeLike) => Promise<void>;
  finalize(): Promise<void>;
}

/** Parts opened by one top-level parse, shared with the parsers of its inline messages. */
interface PartBudget {
  parts: number;
  capped: boolean;
}

const PATCHED = Symbol.for('spamrule.postalLimits');
// Own symbol of this module instance: the budget travels to nested parsers in the options
// postal-mime spreads into them (`{ ...this.mimeOptions }`).
const BUDGET = Symbol('spamrule.partBudget');
/** Set on a parser that stopped reading at the part limit. */
const STOPPED = Symbol('spamrule.partsStopped');
let installed = false;

/**
 * Whether `parser` (a `PostalMime` after `parse()`), or a parser of one of its inline messages,
 * stopped at {@link MAX_MIME_PARTS}; false when the limits are not installed.
 */
export function postalPartsCapped(parser: object): boolean {
  return (parser as ParserLike)[BUDGET]?.capped === true;
}

const src = (f: unknown): string => (typeof f === 'function' ? Function.prototype.toString.call(f) : '');

function limitWordRuns(proto: ParserLike): void {
  const build = proto.buildMessage;
  const collect = proto.collectAttachment;
  // The versions this was written against: root.headers decoded by key; filename/description decoded.
  if (!/this\.root\.headers/.test(src(build)) || !/decodeWords\(filename\)/.test(src(collect))) return;

  proto.buildMessage = function (this: ParserLike) {
    const headers = this.root.headers;
    const saved: [number, string][] = [];
    for (let i = 0; i < headers.length; i++) {
      const h = headers[i]!;
      const address = ADDRESS_HEADERS.has(h.key);
      if (!address && !TEXT_HEADERS.has(h.key)) continue;
      const runs = cutEncodedWordRuns(h.value, address);
      const cut = address ? cutAddressValue(runs) : runs;
      if (cut !== h.value) {
        saved.push([i, h.value]);
        h.value = cut;
      }
    }
    if (saved.length === 0) return build.call(this);
    try {
      const message = build.call(this);
      // Email.headers is built from root.headers in order: it keeps the full values.
      for (const [i, v] of saved) {
        const e = message.headers?.[i];
        if (e !== undefined) e.value = v;
      }
      return message;
    } finally {
      for (const [i, v] of saved) headers[i]!.value = v;
    }
  };

  proto.collectAttachment = function (this: ParserLike, node: NodeLike, ...rest: unknown[]) {
    const restore: (() => void)[] = [];
    const bound = (params: Record<string, string> | undefined, key: string): void => {
      const v = params?.[key];
      if (params === undefined || typeof v !== 'string') return;
      const cut = cutEncodedWordRuns(v, false);
      if (cut === v) return;
      params[key] = cut;
      restore.push(() => (params[key] = v));
    };
    bound(node.contentDisposition?.parsed?.params, 'filename');
    bound(node.contentType?.parsed?.params, 'name');
    const d = node.contentDescription;
    if (typeof d === 'string') {
      const cut = cutEncodedWordRuns(d, false);
      if (cut !== d) {
        node.contentDescription = cut;
        restore.push(() => (node.contentDescription = d));
      }
    }
    try {
      collect.call(this, node, ...rest);
    } finally {
      for (const r of restore) r();
    }
  };
}

function limitParts(proto: ParserLike): void {
  const processLine = proto.processLine;
  // The version this was written against: a boundary line makes a new MimeNode the current node.
  if (!/this\.currentNode = new MimeNode/.test(src(processLine))) return;

  // Stops reading: postal-mime finishes the parts opened so far as at the end of the input.
  const stop = async (p: ParserLike, b: PartBudget, finalized: boolean): Promise<void> => {
    b.capped = true;
    (p as unknown as Record<symbol, boolean>)[STOPPED] = true;
    if (!finalized) await p.finalize();
    // parse() reads lines while readPos < av.length: skip the rest instead of reading it line by line.
    if (typeof p.readPos === 'number' && p.av instanceof Uint8Array) p.readPos = p.av.length;
  };

  // Called for every line: only lines that can be a boundary (postal-mime's own test: more than
  // two bytes, starting with `--`) pay for an extra await.
  proto.processLine = function (this: ParserLike, line: Uint8Array, isFinal: boolean): Promise<void> {
    if ((this as unknown as Record<symbol, boolean>)[STOPPED]) return Promise.resolve();
    let b = this[BUDGET];
    if (b === undefined) {
      b = (this.options?.[BUDGET] as PartBudget | undefined) ?? { parts: 0, capped: false };
      this[BUDGET] = b;
      if (this.mimeOptions !== undefined) this.mimeOptions[BUDGET] = b;
      // This parser's root part (a nested message's root comes out of the parent's budget too).
      if (++b.parts > MAX_MIME_PARTS) return stop(this, b, false);
    }
    if (line.length <= 2 || line[0] !== 0x2d || line[1] !== 0x2d) return processLine.call(this, line, isFinal);
    return boundaryLine(this, b, line, isFinal);
  };

  const boundaryLine = async (p: ParserLike, b: PartBudget, line: Uint8Array, isFinal: boolean): Promise<void> => {
    const before = p.currentNode;
    await processLine.call(p, line, isFinal);
    const cur = p.currentNode;
    // A boundary opened a part: a new current node still reading headers (a terminator moves
    // back to a parent, which is past its headers since its boundary came from them).
    if (cur === before || cur.state !== 'header' || ++b.parts <= MAX_MIME_PARTS) return;
    const parent = cur.parentNode;
    if (parent !== undefined && parent.childNodes[parent.childNodes.length - 1] === cur) {
      parent.childNodes.pop();
      if (parent.finalizedChildCount !== undefined && parent.finalizedChildCount > parent.childNodes.length) {
        parent.finalizedChildCount = parent.childNodes.length;
      }
      p.currentNode = parent;
    }
    return stop(p, b, isFinal);
  };

  // An inline message whose root would be past the limit is not parsed at all (rather than
  // parsed into an empty message that would still give an empty text part).
  const collectSubMessage = proto.collectSubMessage;
  if (typeof collectSubMessage !== 'function') return;
  proto.collectSubMessage = async function (this: ParserLike, node: NodeLike): Promise<void> {
    const b = this[BUDGET];
    if (b !== undefined && b.parts >= MAX_MIME_PARTS) {
      b.capped = true;
      return;
    }
    return collectSubMessage.call(this, node);
  };
}

/**
 * Installs the encoded-word run limit and the part limit on postal-mime's parser (idempotent;
 * see the module comment). Never throws: if postal-mime's internals are not as expected, the
 * affected method is left alone.
 */
export function installPostalLimits(): void {
  if (installed) return;
  installed = true;
  try {
    const proto = PostalMime.prototype as unknown as ParserLike & Record<symbol, unknown>;
    if (proto[PATCHED] !== undefined) return;
    proto[PATCHED] = true;
    limitWordRuns(proto);
    limitParts(proto);
  } catch {
    // postal-mime's shape changed: keep its own methods.
  }
}
