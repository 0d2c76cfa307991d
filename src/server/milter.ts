/**
 * The milter protocol, version 6 (Sendmail's libmilter wire format, as Postfix's `smtpd_milters`
 * and Sendmail speak it): packets of a 4-byte big-endian length, a command byte and its data.
 * The session is built from the SMTP stages (connect, HELO, MAIL FROM with `SMTPUTF8`/`BODY=`, RCPT
 * TO) and the macros (`i` queue id, `j` host name, `{auth_authen}`, `{tls_version}`,
 * `{daemon_addr}`, `{client_addr}`, `{client_name}`); the message is rebuilt from the headers and
 * body chunks. At end of message:
 *
 * - `allow`/`spam`: ours (`X-Spam-Result`, `X-Spam-LLM` when the LLM step gave one, `X-Spam-Score`) added, continue;
 * - `reject`: `550 5.7.1` reply (the MTA rejects at end of DATA); `discard`: discard;
 * - not scanned (milter-policy.ts, {@link unscannedAnswer}): busy (every scan slot and the waiting room
 *   full): a temporary failure by default, `busyAction: 'accept'` continues with an `X-Spam-Note` header
 *   saying why (fail open lets whoever floods the filter through). The scan failed (time limit, worker
 *   failure, another error): continue with that note by default, `errorAction: 'tempfail'` a temporary
 *   failure (accept lets a message built to be slow to scan through unscanned; tempfail defers one that
 *   always times out until the sending MTA's queue lifetime bounces it). Over the size cap: always the
 *   note (a legitimate large message must not be deferred until it bounces). The MTA's
 *   `milter_default_action` covers a milter that is down;
 * - not received because its bytes did not fit in the buffer budget (`limits.maxBufferedBytes`):
 *   a temporary failure, to the first content packet that did not fit and to every later one of
 *   that message (not fail open: whoever fills the budget must not get mail through unscanned).
 *
 * Whenever the message continues, earlier copies of our headers (and of `X-Spam-Note`) are deleted first.
 * Header values are kept byte for byte (8-bit ones included). A HELO inside a transaction ends it.
 *
 * A shutdown lets a message that has begun (MAIL) finish and be scanned within the grace period;
 * one still open at its end gets a temporary failure when its content is under way (else the
 * connection just closes, see `shuttingDown`), and a MAIL after the shutdown began a temporary
 * failure, so that the MTA retries the message later rather than passing it unscanned. The idle
 * timeout is `milterIdleTimeoutMs` (libmilter's 7210 s by default); the option negotiation must come
 * within `headTimeoutMs` of the connection, each packet within it of its first byte, and a
 * message's content within `milterMessageTimeoutMs` of its first header, else the connection ends.
 *
 * A packet longer than 1 MiB, an unknown command, or a packet out of order ends the connection (a
 * protocol error for the MTA, which applies its `milter_default_action`), once the packets before it
 * are answered, wherever the stream was cut into reads. The order is the one MTAs
 * send (`ALLOWED` in milter-wire.ts); macros (`D`), `A` (abort), `K` (new session) and `Q` (quit) may come at
 * any point after the negotiation. An MTA that shuts its side of the connection down (half-close)
 * still gets the replies to every packet it sent before, a verdict included; then the connection closes.
 *
 * What the connection keeps besides the message is bounded: only the macros above, each up to
 * 1 KiB; at most 1000 recipients per message (Postfix's default `smtpd_recipient_limit`), each
 * further one answered `452 4.5.3` as Postfix itself does past that limit (the client retries it
 * later); and at most 512 KiB of connect, HELO, MAIL FROM and RCPT TO strings, past which the
 * recipient gets that 452 and a connect, HELO or MAIL FROM a temporary failure. Those strings, the
 * message and the packets being read all count against the buffer budget.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { SessionInput } from '../analysis/types.js';
import { Deadlines, idleTimeout } from './deadline.js';
import type { BudgetLease } from './budget.js';
import { PacketReader } from './milter-reader.js';
import { connectSession, keptMacro, MAX_ENVELOPE_BYTES, MAX_RECIPIENTS, newMessage, NOTE_HEADER, OUR_HEADERS, sessionWithMacros } from './milter-session.js';
import { milterPolicy, unscannedAnswer, type MilterBusyAction, type MilterErrorAction, type MilterPolicy } from './milter-policy.js';
import { listenerCaps } from './peers.js';
import { SHUTTING_DOWN, unbracket, type OpenRequest, type Scanner, type UnscannedOutcome } from './scan.js';
import {
  addHeader,
  CONTINUE,
  cstr,
  cstrings,
  deleteHeader,
  MAX_PACKET,
  negotiate,
  packet,
  TEMPFAIL,
  ALLOWED,
  type Stage,
} from './milter-wire.js';

class MilterConnection {
  /**
   * What the connection holds in the buffer budget: the data of packets being read or waiting
   * (reserved when a packet's header announces it, so a packet that does not fit is never read
   * into memory), the message, the one being scanned, the connect/HELO/envelope strings.
   */
  private readonly lease: BudgetLease;
  private readonly reader: PacketReader;
  /** Data bytes of the packet being handled, still held until its command is done. */
  private inHand = 0;
  /** Bytes of the message being scanned. */
  private scanning = 0;
  private macros = new Map<string, string>();
  private session: SessionInput = {};
  private msg = newMessage();
  private stage: Stage = 'init';
  /** Bytes of the connect and HELO strings, and of MAIL FROM and the recipients kept. */
  private sessionBytes = 0;
  private envelopeBytes = 0;
  private readonly deadlines: Deadlines;
  private leadingSpace = false;
  /** Whether the MTA let us change (delete) headers. */
  private canChange = false;
  /** Packets are handled one at a time; the end-of-message scan holds the rest back. */
  private busy = false;
  private closed = false;
  /**
   * The MTA has shut its side down (half-close): the packets it sent before are still answered,
   * a verdict under way included, and then the connection is closed.
   */
  private eof = false;
  /** A packet announced a length that cannot be (see {@link PacketReader.push}): nothing after it is read. */
  private framingError: string | undefined;
  /** The message under way (from MAIL), registered with the scanner: a shutdown waits for it. */
  private open: OpenRequest | undefined;
  /** Aborted when the connection closes: a scan still waiting for a slot is dropped. */
  private readonly gone = new AbortController();

  constructor(
    private readonly socket: Socket,
    private readonly scanner: Scanner,
    private readonly policy: MilterPolicy,
  ) {
    this.deadlines = new Deadlines(socket, 'milter', scanner.metrics);
    // An MTA negotiates as soon as it connects: a connection that sends nothing holds a slot for
    // nobody, and the idle timeout (two hours, libmilter's) would keep it that long.
    this.deadlines.start('head', scanner.limits.headTimeoutMs);
    const lease = (this.lease = scanner.budget.lease());
    this.reader = new PacketReader(MAX_PACKET, (n) => lease.take(n));
    socket.once('end', () => {
      this.eof = true;
      this.pump();
    });
    socket.once('close', () => {
      this.endMessage();
      this.gone.abort();
      lease.end();
    });
  }

  /** Bytes the connection holds now (see {@link lease}). */
  private heldBytes(): number {
    return this.reader.reserved + this.inHand + this.msg.held + this.scanning + this.sessionBytes + this.envelopeBytes;
  }

  /**
   * The message under way did not fit in the buffer budget: what it holds is dropped, it is counted
   * once, and every content packet of it is answered tempfail (the MTA answers its client 4xx and
   * the client retries later). Not fail-open: filling the budget must not let mail pass unscanned.
   */
  private refuseMessage(): void {
    const m = this.msg;
    if (m.refused) return;
    m.refused = true;
    m.parts = [];
    m.held = 0;
    this.scanner.overBudget('milter', m.size, true, this.macros.get('i'));
  }

  /**
   * A packet whose data did not fit in the buffer budget (read past, not kept): the message it
   * belongs to is refused, and a command is answered tempfail; a macro packet is dropped; a
   * negotiation too large to hold ends the connection.
   */
  private droppedPacket(cmd: string): void {
    switch (cmd) {
      case 'D':
        this.scanner.metrics.bufferRefusals.inc({ protocol: 'milter' });
        return;
      case 'L':
      case 'B':
        this.contentArrives();
        this.stage = cmd === 'L' ? 'headers' : 'body';
        this.refuseMessage();
        return this.send(TEMPFAIL);
      case 'E':
        this.deadlines.clear('request');
        this.refuseMessage();
        this.stage = 'session';
        return void this.endOfMessage();
      case 'C':
      case 'H':
      case 'M':
      case 'R':
      case 'T':
      case 'U':
        this.scanner.metrics.bufferRefusals.inc({ protocol: 'milter' });
        return this.send(TEMPFAIL);
      default:
        this.scanner.metrics.bufferRefusals.inc({ protocol: 'milter' });
        this.scanner.log.warn({ protocol: 'milter', command: cmd }, 'milter packet does not fit in the buffer budget: connection closed');
        this.closed = true;
        this.socket.destroy();
    }
  }

  /** Drops the message under way (abort, or a HELO inside it). */
  private abortMessage(): void {
    this.endMessage();
    this.msg = newMessage();
  }

  /** The message under way is answered, aborted or cut: the shutdown no longer waits for it. */
  private endMessage(): void {
    this.open?.end();
    this.open = undefined;
    this.deadlines.clear('request');
  }

  /**
   * The message's content has begun: it must be complete within `milterMessageTimeoutMs` of its
   * first content packet (the deadline keeps that first start), or the connection is closed.
   * Counted as a `request` client timeout.
   */
  private contentArrives(): void {
    this.deadlines.ensure('request', this.scanner.limits.milterMessageTimeoutMs);
  }

  /**
   * The shutdown's grace period is over with this message still open, and the connection ends. While
   * the MTA sends the message's content (or waits for the verdict) a temporary failure goes first:
   * whichever content packet the MTA reads it as the reply to, it defers the whole message, which its
   * client retries. Between SMTP commands (MAIL, RCPT) nothing is sent, since the MTA would take it as
   * the reply to its next command, e.g. one recipient's; it then meets the closed connection and
   * applies its `milter_default_action` (Postfix: tempfail). A scan under way counts its own outcome.
   */
  private shuttingDown(): void {
    if (this.closed) return;
    if (!this.busy) this.scanner.refuse('milter', 'closing', SHUTTING_DOWN, this.msg.size, this.macros.get('i'));
    if (this.busy || this.stage === 'headers' || this.stage === 'body') this.send(TEMPFAIL);
    this.closed = true;
    this.socket.end();
  }

  onData(chunk: Buffer): void {
    if (this.closed || this.framingError !== undefined) return;
    const before = this.reader.completed;
    // The packets completed before a bad length are answered first (pump), as they are when they came in
    // an earlier chunk: where TCP cut the stream must not change the replies.
    this.framingError = this.reader.push(chunk);
    // A packet completed: the head deadline restarts with the next one's first byte (pump).
    if (this.reader.completed !== before) this.deadlines.clear('head');
    this.pump();
  }

  private pump(): void {
    while (!this.busy && !this.closed && this.reader.packets.length > 0) {
      const { cmd, data, dropped } = this.reader.next()!;
      this.inHand = data.length;
      this.command(cmd, data, dropped);
      this.inHand = 0;
      // Never more than before: the packet's data was held, and what the command kept of it is no larger
      // (a header line's growth was taken in `append`).
      this.lease.resize(this.heldBytes());
    }
    // Nothing after a bad length can be read: the connection ends once the packets before it are answered.
    if (this.framingError !== undefined && !this.busy && !this.closed && this.reader.packets.length === 0) return this.protocolError(this.framingError);
    // Every packet sent before the half-close is answered: only then does our side close too (a
    // packet cut short by it is not answered, as libmilter drops one when the MTA goes away).
    if (this.eof && !this.busy && !this.closed) {
      this.closed = true;
      this.socket.end();
    }
    // A packet that has begun must be complete within headTimeoutMs, however slowly it trickles.
    // Whole packets held back while a message is scanned are not the MTA's delay.
    if (this.busy || this.closed || !this.reader.partial) this.deadlines.clear('head');
    else this.deadlines.ensure('head', this.scanner.limits.headTimeoutMs);
  }

  private send(b: Buffer): void {
    if (!this.closed && this.socket.writable) this.socket.write(b);
  }

  private protocolError(why: string): void {
    this.scanner.metrics.protocolErrors.inc({ protocol: 'milter' });
    this.scanner.log.warn({ protocol: 'milter', error: why }, 'milter protocol error');
    this.closed = true;
    this.socket.destroy();
  }

  /** Whether the envelope may grow by `bytes` more (see {@link MAX_ENVELOPE_BYTES}). */
  private fits(bytes: number): boolean {
    return this.sessionBytes + this.envelopeBytes + bytes <= MAX_ENVELOPE_BYTES;
  }

  private command(cmd: string, data: Buffer, dropped = false): void {
    const allowed = ALLOWED[cmd];
    if (allowed !== undefined ? !allowed.includes(this.stage) : this.stage === 'init' && 'DAKU'.includes(cmd)) {
      return this.protocolError(`milter command ${JSON.stringify(cmd)} out of order (after ${this.stage})`);
    }
    if (dropped) return this.droppedPacket(cmd);
    switch (cmd) {
      case 'O': {
        const o = negotiate(data);
        if (typeof o === 'string') return this.protocolError(o);
        this.leadingSpace = o.leadingSpace;
        this.canChange = o.canChange;
        this.stage = 'negotiated';
        return this.send(o.reply);
      }
      case 'D': {
        // Only what the session is built from: the MTA may send any number of macros of any size.
        const pairs = cstrings(data.subarray(1));
        for (let i = 0; i + 1 < pairs.length; i += 2) {
          const [name, value] = [pairs[i]!, pairs[i + 1]!];
          if (keptMacro(name, value)) this.macros.set(name, value);
        }
        return;
      }
      case 'C': {
        this.sessionBytes = 0;
        this.envelopeBytes = 0;
        if (!this.fits(data.length)) return this.send(TEMPFAIL);
        this.sessionBytes = data.length;
        this.stage = 'session';
        this.session = connectSession(data);
        return this.send(CONTINUE);
      }
      case 'H': {
        // A second HELO (after STARTTLS) replaces the first; one inside a transaction aborts it.
        if (this.stage === 'envelope' || this.stage === 'headers' || this.stage === 'body') this.abortMessage();
        const helo = cstrings(data)[0] ?? '';
        const bytes = Buffer.byteLength(helo);
        const before = Buffer.byteLength(this.session.heloDomain ?? '');
        if (!this.fits(bytes - before)) return this.send(TEMPFAIL);
        this.sessionBytes += bytes - before;
        this.session.heloDomain = helo;
        this.stage = 'session';
        return this.send(CONTINUE);
      }
      case 'M': {
        this.envelopeBytes = 0;
        this.endMessage();
        const open = this.scanner.begin(() => this.shuttingDown());
        if (!open.admitted) {
          this.scanner.refuse('milter', 'closing', SHUTTING_DOWN, 0, this.macros.get('i'));
          return this.send(TEMPFAIL);
        }
        this.open = open;
        if (!this.fits(data.length)) {
          this.endMessage();
          return this.send(TEMPFAIL);
        }
        this.envelopeBytes = data.length;
        const [from = '', ...args] = cstrings(data);
        this.msg = newMessage();
        this.stage = 'envelope';
        this.session.mailFrom = unbracket(from);
        this.session.rcptTo = [];
        const up = args.map((a) => a.toUpperCase());
        this.session.smtputf8 = up.includes('SMTPUTF8');
        this.session.eightBitMime = up.includes('BODY=8BITMIME');
        this.session.binaryMime = up.includes('BODY=BINARYMIME');
        return this.send(CONTINUE);
      }
      case 'R': {
        const to = unbracket(cstrings(data)[0] ?? '');
        const rcpts = (this.session.rcptTo ??= []);
        const bytes = Buffer.byteLength(to);
        if (rcpts.length >= MAX_RECIPIENTS || !this.fits(bytes)) return this.send(packet('y', cstr('452 4.5.3 Too many recipients')));
        if (to !== '') rcpts.push(to);
        this.envelopeBytes += bytes;
        return this.send(CONTINUE);
      }
      case 'T':
      case 'U':
        return this.send(CONTINUE);
      case 'L': {
        this.contentArrives();
        // Byte for byte: an 8-bit header value (Latin-1 from a careless client) must reach the analysis as
        // sent, as it does through spamd or a file, not as U+FFFD (INVALID_FROM_8BIT and the like read it).
        const [name = '', value = ''] = cstrings(data, 'latin1');
        const known = OUR_HEADERS.find((h) => h.toLowerCase() === name.toLowerCase());
        if (known !== undefined) this.msg.forged.set(known, (this.msg.forged.get(known) ?? 0) + 1);
        const line = `${name}:${this.leadingSpace ? '' : ' '}${value.replace(/\r?\n/g, '\r\n')}\r\n`;
        this.stage = 'headers';
        return this.send(this.append(Buffer.from(line, 'latin1')) ? CONTINUE : TEMPFAIL);
      }
      case 'N':
        this.contentArrives();
        this.stage = 'body';
        this.msg.inBody = true;
        return this.send(this.append(Buffer.from('\r\n')) ? CONTINUE : TEMPFAIL);
      case 'B':
        this.contentArrives();
        return this.send(this.append(data) ? CONTINUE : TEMPFAIL);
      case 'E':
        // The content is complete: the scan's time is not the MTA's.
        this.deadlines.clear('request');
        if (data.length > 0) this.append(data);
        this.stage = 'session';
        return void this.endOfMessage();
      case 'A':
        this.abortMessage();
        if (this.stage !== 'negotiated') this.stage = 'session';
        return;
      case 'K':
        // QUIT_NC: the MTA reuses this connection for a new SMTP session.
        this.abortMessage();
        this.macros = new Map();
        this.session = {};
        this.sessionBytes = 0;
        this.envelopeBytes = 0;
        this.stage = 'negotiated';
        return;
      case 'Q':
        this.closed = true;
        this.socket.end();
        return;
      default:
        return this.protocolError(`unknown milter command ${JSON.stringify(cmd)}`);
    }
  }

  /**
   * Adds bytes to the message under way, unless it is over maxSize (then only counted) or refused.
   * False when the message is refused (now, because the bytes do not fit in the buffer budget, or
   * before): the packet is to be answered tempfail.
   */
  private append(b: Buffer): boolean {
    const m = this.msg;
    if (m.refused) return false;
    if (m.tooLarge) return true;
    m.size += b.length;
    if (m.size > this.scanner.limits.maxSize) {
      m.tooLarge = true;
      m.parts = [];
      m.held = 0;
      return true;
    }
    // The packet's data is held already; the copy is held beside it until the command is done.
    if (!this.lease.resize(this.heldBytes() + b.length)) {
      this.refuseMessage();
      return false;
    }
    // Body chunks are views of the receive buffer: copy so that buffer can be freed.
    m.parts.push(Buffer.from(b));
    m.held += b.length;
    return true;
  }

  /**
   * The replies to a message that was not scanned (`o`, already counted and logged under its reason by
   * the scanner): tempfail alone (the MTA defers the message and its client retries), or the deletions of
   * forged copies of our headers, `X-Spam-Note` saying why, and continue ({@link unscannedAnswer}).
   */
  private unscanned(o: UnscannedOutcome, deletions: Buffer[]): Buffer[] {
    if (unscannedAnswer(o.reason, this.policy) === 'tempfail') return [TEMPFAIL];
    const note = o.reason === 'too_large' ? o.message : `not scanned: ${o.message}`;
    return [...deletions, addHeader(NOTE_HEADER, note, this.leadingSpace), CONTINUE];
  }

  private async endOfMessage(): Promise<void> {
    this.busy = true;
    this.socket.pause();
    const m = this.msg;
    this.msg = newMessage();
    const queueId = this.macros.get('i');
    const scanner = this.scanner;
    // Upstream copies of our headers go whether the message was scanned or not: a message built to be
    // too large or too slow to scan must not keep a forged verdict.
    const deletions: Buffer[] = [];
    if (this.canChange) for (const [name, count] of m.forged) for (let i = count; i >= 1; i--) deletions.push(deleteHeader(name, i));
    let replies: Buffer[];
    if (m.refused) {
      // Counted when it was refused; the MTA defers the message.
      replies = [TEMPFAIL];
    } else if (m.tooLarge) {
      replies = this.unscanned(scanner.refuse('milter', 'too_large', scanner.tooLargeMessage(), m.size, queueId), deletions);
    } else {
      const raw = Buffer.concat(m.parts, m.size);
      // `m` lives until the reply is sent: the parts must not stay alive beside their copy.
      m.parts = [];
      this.scanning = m.held;
      // The idle timeout is for the MTA: it does not run while we scan.
      this.socket.setTimeout(0);
      const o = await scanner.scan({ protocol: 'milter', raw, session: sessionWithMacros(this.session, this.macros), queueId, open: this.open, signal: this.gone.signal });
      this.socket.setTimeout(scanner.limits.milterIdleTimeoutMs);
      if (!o.ok) replies = this.unscanned(o, deletions);
      else if (o.result.action === 'reject') replies = [packet('y', cstr('550 5.7.1 Message rejected as spam'))];
      else if (o.result.action === 'discard') replies = [packet('d')];
      else {
        replies = [...deletions];
        // Stalwart's order: X-Spam-Result, X-Spam-LLM (when the LLM step gave one), X-Spam-Score.
        for (const [name, value] of Object.entries(o.result.headers)) if (value !== undefined) replies.push(addHeader(name, value, this.leadingSpace));
        replies.push(CONTINUE);
      }
    }
    for (const r of replies) this.send(r);
    this.scanning = 0;
    this.lease.resize(this.heldBytes());
    this.endMessage();
    this.busy = false;
    if (!this.closed) {
      this.socket.resume();
      this.pump();
    }
  }
}

/**
 * Creates the milter server (not yet listening; `listen` on a TCP port or a unix socket path).
 * `busyAction`: the answer to a message refused as busy (default `tempfail`, {@link MilterBusyAction});
 * `errorAction`: the answer to a message whose scan timed out or failed (default `accept`,
 * {@link MilterErrorAction}).
 * @throws TypeError for a `busyAction` or `errorAction` that is not one of the choices.
 */
export function createMilterServer(scanner: Scanner, opts: { busyAction?: MilterBusyAction; errorAction?: MilterErrorAction } = {}): Server {
  const { limits, metrics } = scanner;
  const policy = milterPolicy(opts);
  // Half-open: an MTA (or a test client) that shuts its side down after its last packet still gets
  // the replies it is owed, the verdict of a scan under way included; the connection then closes
  // (MilterConnection's `eof`). Without it Node ended our side at the client's FIN and the verdict was lost.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    if (!caps.admit(socket)) return;
    metrics.countConnection('milter', socket);
    idleTimeout(socket, limits.milterIdleTimeoutMs, 'milter', metrics);
    socket.on('error', () => undefined);
    const conn = new MilterConnection(socket, scanner, policy);
    socket.on('data', (c: Buffer) => conn.onData(c));
  });
  const caps = listenerCaps(server, 'milter', limits.maxConnections, limits.maxConnectionsPerPeer, metrics);
  return server;
}
