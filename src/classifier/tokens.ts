/**
 * The classifier's tokens (Stalwart's `Token`, docs/classifier.md "Tokens"): a kind and a value (a
 * string, or 2/4 bytes for numbers, shape codes and ASNs), kept in a map from token to count. A token is
 * encoded as one JS string (kind as the first char, then the value; byte values as chars 0–255) so the
 * map is a plain `Map<string, number>`.
 */
import { InternTable } from './intern-table.js';
import { detach } from '../util/index.js';

/** Token kinds; the number is the 2-byte big-endian prefix of the hashed key and the sort order. */
export const KIND = {
  word: 0,
  number: 1,
  alphanumeric: 2,
  unicode_category: 3,
  sender: 4,
  asn: 5,
  url: 6,
  email: 7,
  hostname: 8,
  attachment: 9,
  mime_type: 10,
  html_image: 11,
  html_anchor: 12,
} as const;
export type KindName = keyof typeof KIND;

const KIND_NAMES = Object.keys(KIND) as KindName[];
/** Kinds whose value is bytes, and the JSON field of each kind (Stalwart's serde form). */
const BYTE_KINDS = new Set<number>([KIND.number, KIND.alphanumeric, KIND.asn]);
const FIELD: Record<KindName, string> = {
  word: 'value', number: 'code', alphanumeric: 'code', unicode_category: 'value', sender: 'value', asn: 'number',
  url: 'value', email: 'value', hostname: 'value', attachment: 'value', mime_type: 'value', html_image: 'src',
  html_anchor: 'href',
};

/** Token → count (Stalwart's token map). */
export type TokenMap = Map<string, number>;

export function strToken(kind: number, value: string): string {
  return String.fromCharCode(kind) + value;
}

export function byteToken(kind: number, bytes: readonly number[]): string {
  return String.fromCharCode(kind, ...bytes);
}

/** The bytes a token hashes: 2-byte big-endian kind, then the value (UTF-8, or the raw bytes). */
export function tokenBytes(token: string): Buffer {
  const kind = token.charCodeAt(0);
  const rest = token.slice(1);
  if (BYTE_KINDS.has(kind)) {
    const b = Buffer.allocUnsafe(2 + rest.length);
    b[0] = 0;
    b[1] = kind;
    for (let i = 0; i < rest.length; i++) b[2 + i] = rest.charCodeAt(i);
    return b;
  }
  const v = Buffer.from(rest, 'utf8');
  const b = Buffer.allocUnsafe(2 + v.length);
  b[0] = 0;
  b[1] = kind;
  v.copy(b, 2);
  return b;
}

/**
 * What XXH3 hashes for a token, as cheap as possible: for a string kind the token's bytes are the UTF-8
 * of `'\0' + token` (the kind, < 0x80, is one byte; lone surrogates become U+FFFD either way), which
 * the hash addon encodes itself without two Buffers per token; byte kinds need {@link tokenBytes}.
 */
export function hashInput(token: string): string | Buffer {
  return BYTE_KINDS.has(token.charCodeAt(0)) ? tokenBytes(token) : '\u0000' + token;
}

/** Stalwart's serde form of a token, e.g. `{"type":"number","code":[105,2]}`. */
export function tokenJson(token: string): Record<string, unknown> {
  const kind = token.charCodeAt(0);
  const name = KIND_NAMES[kind]!;
  const rest = token.slice(1);
  const value = BYTE_KINDS.has(kind) ? [...rest].map((c) => c.charCodeAt(0)) : rest;
  return { type: name, [FIELD[name]]: value };
}

/** Stalwart's token order: by kind, then by value in UTF-8 byte order. */
export function compareTokens(a: string, b: string): number {
  return Buffer.compare(tokenBytes(a), tokenBytes(b));
}

/**
 * Stalwart's truncate-to-16: unchanged when ≤ 16 UTF-8 bytes; else the first 16 characters when there
 * are more than 16, else (≤ 16 characters but > 16 bytes) all but the last character.
 */
export function truncate16(s: string): string {
  if (s.length <= 16 && Buffer.byteLength(s, 'utf8') <= 16) return s;
  if (Buffer.byteLength(s, 'utf8') <= 16) return s;
  const chars = [...s];
  if (chars.length > 16) return chars.slice(0, 16).join('');
  return chars.slice(0, -1).join('');
}

/**
 * An interned token: a small integer id per distinct token string while the intern table lasts, so a
 * memo (word → its tokens, character → its category token) hands out the final token, a message counts
 * it without a map lookup, and its feature hash is computed once. Per-token state (key, hash) lives in
 * arrays indexed by id: a message touches a few compact arrays instead of one heap object per token
 * scattered over the heap (each a likely cache and TLB miss).
 */
export type Tok = number;

/** Distinct tokens kept interned at most; past it the table restarts between messages. */
const INTERN_MAX = 300_000;
/**
 * Per kind, value → token: keyed by the value alone, a lookup needs no token string built first (a
 * concatenation per lookup) and searches a smaller table than one for all kinds.
 */
const interned: (InternTable | undefined)[] = [];
let keys: string[] = [];
/** Unsalted feature hash per id: low 29 bits × 2 + sign bit (see model.ts), −1 until first needed. */
let hashes = new Int32Array(4096).fill(-1);
const resetHooks: Array<() => void> = [];
/** Counter ids stay small integers (fast compares); past this bound every counter table is emptied. */
const MAX_COUNTER_ID = 2 ** 30;
let lastCounterId = 0;

function grow(): void {
  const h = new Int32Array(hashes.length * 2).fill(-1);
  h.set(hashes);
  hashes = h;
}

/** The interned token of kind `kind` and value `value` (the token string {@link strToken} / {@link byteToken} build). */
export function internKind(kind: number, value: string): Tok {
  const m = (interned[kind] ??= new InternTable());
  const id = keys.length;
  const t = m.getOrAdd(value, id);
  if (t === id) {
    if (t === hashes.length) grow();
    keys.push(detach(String.fromCharCode(kind) + value));
  }
  return t;
}

/** The interned token of the token string `key`. */
export function intern(key: string): Tok {
  return internKind(key.charCodeAt(0), key.slice(1));
}

/** The token string of an interned token (as {@link strToken} / {@link byteToken} build it). */
export function tokKey(t: Tok): string {
  return keys[t]!;
}

/** Tokens interned so far: every id handed out is below it. */
export function internedCount(): number {
  return keys.length;
}

/** The kept unsalted hash of a token (−1: not computed yet). */
export function keptHash(t: Tok): number {
  return hashes[t]!;
}

/** Keeps the unsalted hash of a token (computed by model.ts on first use). */
export function keepHash(t: Tok, h: number): void {
  hashes[t] = h;
}

/**
 * Registers a memo holding {@link Tok}s: `clear` runs when the intern table restarts, so no message ever
 * sees a token id of the old table (it would name another token).
 */
export function onInternReset(clear: () => void): void {
  resetHooks.push(clear);
}

/**
 * Called by the token builder before a message's synchronous part: restarts the intern table (and the
 * memos registered with {@link onInternReset}) when it is full, and {@link TokCounter} ids when they are.
 * Never called while a message is half built (that part has no await), so one message's tokens all come
 * from one table. `max`: the table's bound (tests pass 0 to force a restart).
 */
export function internBoundary(max = INTERN_MAX): void {
  if (lastCounterId >= MAX_COUNTER_ID) {
    // No counter is filling here: old entries can go, and ids start again.
    for (const t of counterTables) t.fill(0);
    lastCounterId = 0;
  }
  if (keys.length < max) return;
  for (const m of interned) m?.clear();
  keys = [];
  hashes.fill(-1);
  for (const clear of resetHooks) clear();
}

/** Slots of a counter table to start with: a message has a few hundred distinct tokens (12 bytes a slot). */
const COUNTER_SLOTS = 2048;
/**
 * Per counter slot (0, 1), an open-addressing table of `[counter id, token, index in the counter]`
 * triples. An entry whose id is not the filling counter's is free: a new counter starts with an empty
 * table without clearing it. Small and reused message after message, it stays in the CPU caches, where
 * per-token arrays over every interned token (hundreds of thousands) cost a cache miss per count.
 */
const counterTables = [new Int32Array(3 * COUNTER_SLOTS), new Int32Array(3 * COUNTER_SLOTS)];
/**
 * Slots a counter probes at most before it gives up placing tokens by id (see {@link TokCounter}): a
 * run of tokens with consecutive ids (the new words of a long text) makes a cluster that another id may
 * land in, and crafted ids could make more.
 */
const MAX_COUNTER_PROBE = 32;
/** The multiplier that scatters ids over the table (Fibonacci hashing: the product's top bits), once placing by id gave up. */
const SCATTER = 0x9e3779b1;

/** The home slot of `tok` in a table of `mask + 1` slots when scattered: the top bits of its Fibonacci hash. */
function scatterSlot(tok: Tok, mask: number): number {
  return Math.imul(tok, SCATTER) >>> Math.clz32(mask);
}

/** The home slot of `tok` in a table of `mask + 1` slots: its id's low bits, or its scattered hash's top bits. */
function homeSlot(tok: Tok, mask: number, scattered: boolean): number {
  return scattered ? scatterSlot(tok, mask) : tok & mask;
}

/**
 * Token → count of one message in insertion order (a {@link TokenMap} of interned tokens), without a
 * Map: counting is a probe of the slot's counter table (see `counterTables`). Two counters may fill at
 * once (the body and the alternative parts), in slots 0 and 1; a counter is filled synchronously (no
 * await), so no other counter of its slot can touch the table meanwhile. Create counters only after
 * {@link internBoundary}.
 *
 * A token's slot is its id modulo the table's size: ids are handed out in order of first use, so the
 * tokens most messages share (the first ones the process met, most often the most frequent) sit in a
 * few adjacent slots, and a message touches fewer cache lines than when ids are scattered (steady state
 * of the learn bench in blocks, same-process A/B over 12 passes: the classifier's step 164–187 against
 * 181–204 µs a message, about 7% less; no change on unseen mail). A probe longer than
 * {@link MAX_COUNTER_PROBE} places the counter's tokens again, scattered, for the rest of the message, so
 * a cluster of ids (a long run of new ones that others land in, or crafted ones) costs one more placing,
 * not a probe past the whole cluster per token.
 */
export class TokCounter {
  readonly toks: Tok[] = [];
  readonly counts: number[] = [];
  private readonly id: number;
  private table: Int32Array;
  private mask: number;
  /** Placed scattered rather than by id (see {@link MAX_COUNTER_PROBE}). */
  private scatter = false;

  constructor(private readonly slot: 0 | 1) {
    this.id = ++lastCounterId;
    // A table grown for a huge message goes back to its usual size (its old entries are all free now).
    if (counterTables[slot]!.length > 3 * 16 * COUNTER_SLOTS) counterTables[slot] = new Int32Array(3 * COUNTER_SLOTS);
    this.table = counterTables[slot]!;
    this.mask = this.table.length / 3 - 1;
  }

  /** Count += `n` (default 1). Kept small: V8 inlines it into the tokenizer's loop. */
  add(tok: Tok, n = 1): void {
    const t = this.table;
    const mask = this.mask;
    const id = this.id;
    // homeSlot() spelled out: called, it made add() too large for V8 to inline here (seen in a profile).
    for (let h = this.scatter ? scatterSlot(tok, mask) : tok & mask, probe = 0; ; h = (h + 1) & mask) {
      const q = 3 * h;
      if (t[q] !== id) return this.insert(q, tok, n);
      if (t[q + 1] === tok) {
        this.counts[t[q + 2]!]! += n;
        return;
      }
      if (++probe === MAX_COUNTER_PROBE && !this.scatter) return this.addScattered(tok, n);
    }
  }

  /** Enters a new token in the free slot at `q` (an index into the table). */
  private insert(q: number, tok: Tok, n: number): void {
    const t = this.table;
    t[q] = this.id;
    t[q + 1] = tok;
    t[q + 2] = this.toks.length;
    this.toks.push(tok);
    this.counts.push(n);
    if (2 * this.toks.length > this.mask) this.place(2 * (this.mask + 1));
  }

  /** A long cluster of ids: places this counter's tokens scattered (a scattered table at half load has none), then counts `tok`. */
  private addScattered(tok: Tok, n: number): void {
    this.scatter = true;
    this.place(this.mask + 1);
    this.add(tok, n);
  }

  has(tok: Tok): boolean {
    const t = this.table;
    const mask = this.mask;
    for (let h = homeSlot(tok, mask, this.scatter); ; h = (h + 1) & mask) {
      const q = 3 * h;
      if (t[q] !== this.id) return false;
      if (t[q + 1] === tok) return true;
    }
  }

  /**
   * Enters this counter's tokens again into a new table of `slots` slots (kept at half load at most);
   * placed by id, a probe longer than {@link MAX_COUNTER_PROBE} makes it place them scattered instead.
   */
  private place(slots: number): void {
    const mask = slots - 1;
    for (;;) {
      const t = new Int32Array(3 * slots);
      let clustered = false;
      for (let i = 0; i < this.toks.length && !clustered; i++) {
        let h = homeSlot(this.toks[i]!, mask, this.scatter);
        for (let probe = 0; t[3 * h] === this.id; probe++) {
          if (probe === MAX_COUNTER_PROBE && !this.scatter) clustered = true;
          h = (h + 1) & mask;
        }
        t[3 * h] = this.id;
        t[3 * h + 1] = this.toks[i]!;
        t[3 * h + 2] = i;
      }
      if (clustered) {
        this.scatter = true;
        continue;
      }
      counterTables[this.slot] = this.table = t;
      this.mask = mask;
      return;
    }
  }

  /** The token string of the `i`-th token counted. */
  key(i: number): string {
    return keys[this.toks[i]!]!;
  }

  get size(): number {
    return this.toks.length;
  }

  /** Whether this counter gave up placing tokens by id (a probe past {@link MAX_COUNTER_PROBE}). */
  get scattered(): boolean {
    return this.scatter;
  }
}
