/**
 * Address lists (From, To, Cc, Bcc, Reply-To, …) parsed the way mail-parser (the Rust MIME parser
 * Stalwart uses) parses them, so that names and addresses match what Stalwart's analysis sees:
 *
 * - `Name <addr>` → name + address; text in `(…)` is a comment: with a name it is appended as
 *   `name (comment)`, without one it becomes the name (`a@b (Jo)` → name `Jo`);
 * - a bare word without `@` and without `<…>` (`From: test`) is a name with no address;
 * - inside `<…>` blanks are dropped (`< a@b >` → `a@b`); quoted names keep their inner blanks;
 * - RFC 2047 encoded words are decoded where a word starts, inside quoted strings and comments too;
 *   consecutive encoded words join without a space;
 * - groups (`Team: a@b, c@d;`) are flattened; an empty group yields nothing.
 *
 * Works on header text already decoded as (lossy) UTF-8. Never throws.
 */
import { capNames, type RawHeader } from './headers.js';
import { decodeEncodedWord } from './rfc2047.js';
import { MemoSlot } from '../util/index.js';

/** One mailbox: `name`/`address` are undefined when absent (not trimmed beyond mail-parser's rules). */
export interface ParsedMailbox {
  readonly name: string | undefined;
  readonly address: string | undefined;
}

/** Longest address list parsed (characters, after names are capped); longer lists are cut at a comma. */
export const MAX_ADDRESS_HEADER_CHARS = 100_000;
/** At most this many mailboxes are returned per header. */
export const MAX_MAILBOXES = 10_000;

const enum St {
  Address,
  Name,
  Quote,
  Comment,
}

class Parser {
  tokStart = -1;
  tokEnd = -1;
  isEmail = false;
  isTokenStart = true;
  isEscaped = false;
  name: string[] = [];
  mail: string[] = [];
  comment: string[] = [];
  state = St.Name;
  stack: St[] = [];
  out: ParsedMailbox[] = [];

  constructor(readonly s: string) {}

  addToken(trailSpace: boolean): void {
    if (this.tokStart < 0) return;
    const token = this.s.slice(this.tokStart, this.tokEnd);
    let addSpace = false;
    let list: string[];
    switch (this.state) {
      case St.Address:
        list = this.mail;
        break;
      case St.Name:
        if (this.isEmail) list = this.mail;
        else {
          addSpace = true;
          list = this.name;
        }
        break;
      case St.Quote:
        list = this.name;
        break;
      case St.Comment:
        addSpace = true;
        list = this.comment;
        break;
    }
    if (addSpace && list.length > 0) list.push(' ');
    list.push(token);
    if (trailSpace) list.push(' ');
    this.tokStart = -1;
    this.isEmail = false;
    this.isTokenStart = true;
    this.isEscaped = false;
  }

  addAddress(): void {
    const hasMail = this.mail.length > 0;
    const hasName = this.name.length > 0;
    const hasComment = this.comment.length > 0;
    const take = (l: string[]): string => {
      const v = l.join('');
      l.length = 0;
      return v;
    };
    let m: ParsedMailbox;
    if (hasMail && hasName && hasComment) {
      const n = take(this.name);
      m = { name: `${n} (${take(this.comment)})`, address: take(this.mail) };
    } else if (hasName && hasMail) m = { name: take(this.name), address: take(this.mail) };
    else if (hasMail && hasComment) m = { name: take(this.comment), address: take(this.mail) };
    else if (hasMail) m = { name: undefined, address: take(this.mail) };
    // mail-parser's quirk: a name and a comment without `<…>` make the name the address.
    else if (hasName && hasComment) m = { name: take(this.comment), address: take(this.name) };
    else if (hasName) m = { name: take(this.name), address: undefined };
    else if (hasComment) m = { name: take(this.comment), address: undefined };
    else return;
    if (this.out.length < MAX_MAILBOXES) this.out.push(m);
  }

  /** A group's name is discarded (lists are flattened); its pending tokens must not leak into a mailbox. */
  groupStart(): void {
    this.name.length = 0;
    this.comment.length = 0;
    this.mail.length = 0;
  }

  run(): ParsedMailbox[] {
    const s = this.s;
    const n = s.length;
    let i = 0;
    while (i < n) {
      const c = s.charCodeAt(i);
      i++;
      switch (c) {
        case 10: {
          this.addToken(false);
          const nx = s.charCodeAt(i);
          if (nx === 32 || nx === 9) {
            i++;
            this.isTokenStart = true;
            continue;
          }
          i = n; // end of the header value
          continue;
        }
        case 92: // backslash
          if (this.state !== St.Name && !this.isEscaped) {
            if (this.tokStart >= 0) {
              if (this.state === St.Quote) this.tokEnd = i - 1;
              this.addToken(false);
            }
            this.isEscaped = true;
            continue;
          }
          break;
        case 44: // ,
          if (this.state === St.Name) {
            this.addToken(false);
            this.addAddress();
            continue;
          }
          break;
        case 60: // <
          if (this.state === St.Name) {
            this.isEmail = false;
            this.addToken(false);
            this.stack.push(St.Name);
            this.state = St.Address;
            continue;
          }
          break;
        case 62: // >
          if (this.state === St.Address) {
            this.addToken(false);
            this.state = this.stack.pop() ?? St.Name;
            continue;
          }
          break;
        case 34: // "
          if (!this.isEscaped) {
            if (this.state === St.Name) {
              this.stack.push(St.Name);
              this.state = St.Quote;
              this.addToken(false);
              continue;
            }
            if (this.state === St.Quote) {
              this.addToken(false);
              this.state = this.stack.pop() ?? St.Name;
              continue;
            }
          }
          break;
        case 64: // @
          if (this.state === St.Name) this.isEmail = true;
          break;
        case 61: // =
          if (this.isTokenStart && !this.isEscaped && s.charCodeAt(i) === 63) {
            const w = decodeEncodedWord(s, i - 1);
            if (w !== undefined) {
              this.addToken(this.state !== St.Quote);
              (this.state !== St.Comment ? this.name : this.comment).push(w.text);
              i = w.end;
              continue;
            }
          }
          break;
        case 32:
        case 9:
          this.isTokenStart = true;
          this.isEscaped = false;
          if (this.state === St.Quote) {
            if (this.tokStart < 0) {
              this.tokStart = i - 1;
              this.tokEnd = i;
            } else {
              this.tokEnd = i;
            }
          }
          continue;
        case 13:
          continue;
        case 40: // (
          if (this.state !== St.Quote && !this.isEscaped) {
            this.stack.push(this.state);
            if (this.state !== St.Comment) {
              this.addToken(false);
              this.state = St.Comment;
              continue;
            }
          }
          break;
        case 41: // )
          if (this.state === St.Comment && !this.isEscaped) {
            const next = this.stack.pop() ?? St.Name;
            if (next !== St.Comment) {
              this.addToken(false);
              this.state = next;
              continue;
            }
          }
          break;
        case 58: // :
          if (this.state === St.Name && !this.isEscaped) {
            this.addToken(false);
            this.groupStart();
            continue;
          }
          break;
        case 59: // ;
          if (this.state === St.Name) {
            this.addToken(false);
            this.addAddress();
            continue;
          }
          break;
      }
      this.isEscaped = false;
      this.isTokenStart = false;
      if (this.tokStart < 0) this.tokStart = i - 1;
      this.tokEnd = i;
    }
    this.addAddress();
    return this.out;
  }
}

/**
 * Parses one address header value (the text after the colon, folding kept) into its mailboxes,
 * groups flattened, in order. Names, quoted strings and comments are first capped at
 * `MAX_NAME_LENGTH` each (`capNames`), never the addresses; a list still longer than
 * {@link MAX_ADDRESS_HEADER_CHARS} is cut at a comma.
 */
export function parseMailboxes(raw: string): ParsedMailbox[] {
  let s = capNames(raw);
  if (s.length > MAX_ADDRESS_HEADER_CHARS) {
    const comma = s.lastIndexOf(',', MAX_ADDRESS_HEADER_CHARS);
    s = s.slice(0, comma > 0 ? comma : MAX_ADDRESS_HEADER_CHARS);
  }
  try {
    return new Parser(s).run();
  } catch {
    return [];
  }
}

const mailboxMemo = new MemoSlot<RawHeader, readonly ParsedMailbox[]>();

/**
 * {@link parseMailboxes} of a header, computed once per header (the generic variables, the Email
 * scope and the analysis modules share it). The list is shared: callers must not mutate it.
 */
export function mailboxesOf(h: RawHeader): readonly ParsedMailbox[] {
  let m = mailboxMemo.get(h);
  if (m === undefined) {
    m = parseMailboxes(h.raw);
    mailboxMemo.set(h, m);
  }
  return m;
}
