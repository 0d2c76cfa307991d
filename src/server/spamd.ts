/**
 * The spamd protocol (`SPAMC/1.5`, what SpamAssassin's `spamc` and many MTAs' spamd clients speak):
 * one request per connection, `VERB SPAMC/1.x`, headers (`Content-length`, `User`, `Compress:
 * zlib`), a blank line, the message. Verbs: `CHECK`, `SYMBOLS`, `REPORT`, `REPORT_IFSPAM`,
 * `HEADERS`, `PROCESS`, `PING`, `SKIP`. Replies start `SPAMD/1.1 0 EX_OK` with
 * `Spam: True ; SCORE / THRESHOLD` (True for every action but `allow`; threshold = the spam threshold).
 *
 * Errors use spamd's sysexits codes: 76 `EX_PROTOCOL` (malformed request, Content-length that does
 * not match the body, unusable session), 65 `EX_DATAERR` (message over the size cap: not scanned),
 * 69 `EX_UNAVAILABLE` (`TELL` without a learner), 75 `EX_TEMPFAIL` (busy, time limit,
 * shutting down, the buffer budget full), 70 `EX_SOFTWARE` (worker failure). spamc then passes the message through
 * unchanged, as it does when spamd is down.
 *
 * `TELL` (`spamc -L spam|ham`: `Message-class: spam|ham`, `Set: local`) stores the message as a
 * classifier sample when the server was given a learner (`serve --model --allow-tell`, as spamd's
 * `--allow-tell`), and answers `DidSet: local`. A sample over `limits.maxLearnSize` gets 65
 * `EX_DATAERR`, a `TELL` over `limits.learnPerMinute` 75 `EX_TEMPFAIL` (before its body is read). `Remove: local` (`spamc -L forget`) removes every sample of
 * that message and retrains the model from the rest (`Learner.forgetMessage`), answering `DidRemove: local`,
 * or no `DidRemove` when the message was not learned (spamc then says "Message was already un/learned", as
 * with SpamAssassin's spamd). Remote reporting (Razor and the like) is not done: `Set: remote` or
 * `Remove: remote` alone get 69, and beside a local action (`spamc -C report|revoke`) only the local one is
 * carried out.
 *
 * The same parser serves rspamd's legacy text protocol (`CHECK RSPAMC/1.3`, on the rspamd
 * listener): its headers carry the SMTP session and the reply is rspamd's (see {@link rspamcReply}).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { ClassifyResult } from '../engine/types.js';
import { Deadlines, idleTimeout } from './deadline.js';
import { HeadCollector } from './head-collector.js';
import { inflateWithin } from './inflate.js';
import { LearnGate } from './learn-gate.js';
import { listenerCaps } from './peers.js';
import { spamAssassinHeaders, SPAMD_STRIPPED, splitMessage, withVerdictHeaders } from './headers.js';
import { RSPAMD_ACTIONS, sessionErrorForHeaders, sessionFromHeaderMap } from './rspamd-session.js';
import { BUFFERS_FULL, SHUTTING_DOWN, type NotScanned, type OpenRequest, type Scanner } from './scan.js';

const MAX_HEAD = 64 * 1024;
const VERBS = new Set(['CHECK', 'SYMBOLS', 'REPORT', 'REPORT_IFSPAM', 'HEADERS', 'PROCESS', 'PING', 'SKIP', 'TELL']);

const EX: Record<number, string> = {
  0: 'EX_OK',
  65: 'EX_DATAERR',
  69: 'EX_UNAVAILABLE',
  70: 'EX_SOFTWARE',
  75: 'EX_TEMPFAIL',
  76: 'EX_PROTOCOL',
};

const CODE: Record<NotScanned, number> = { too_large: 65, timeout: 75, busy: 75, closing: 75, session: 76, error: 70, abandoned: 75, buffer_full: 75 };

function errorReply(code: number, text: string, rspamc = false): string {
  return `${rspamc ? 'RSPAMD/1.3' : 'SPAMD/1.1'} ${code} ${EX[code]} ${text.replace(/[\r\n]+/g, ' ')}\r\n\r\n`;
}

function spamLine(r: ClassifyResult, threshold: number): string {
  return `Spam: ${r.action === 'allow' ? 'False' : 'True'} ; ${r.score.toFixed(2)} / ${threshold.toFixed(2)}`;
}

/** The `REPORT` body: one line per scored tag with the rule (or module) that set it. */
function report(r: ClassifyResult, threshold: number): string {
  const why = new Map<string, string>();
  for (const m of r.matches) if (!why.has(m.tag)) why.set(m.tag, `rule ${m.rule} on ${m.element === '' ? m.scope : `${m.scope} ${JSON.stringify(m.element)}`}`);
  const lines = [
    `spamrule verdict: ${r.action}`,
    '',
    `Content analysis details:   (${r.score.toFixed(2)} points, ${threshold.toFixed(2)} required)`,
    '',
    '   pts rule name                    description',
    '------ ---------------------------- --------------------------------------------------',
  ];
  for (const tag of scoredTags(r)) lines.push(`${(r.scores[tag] ?? 0).toFixed(2).padStart(6)} ${tag.padEnd(28)} ${why.get(tag) ?? 'message analysis'}`);
  return lines.join('\r\n') + '\r\n';
}

/** The tags the replies list, in order: all but the zero-score `X_*` header markers, as in `X-Spam-Result`. */
function scoredTags(r: ClassifyResult): string[] {
  return r.tags.filter((t) => !(t.startsWith('X_') && (r.scores[t] ?? 0) === 0));
}

/** The tags `SYMBOLS` and `X-Spam-Status` list: {@link scoredTags}, sorted as SpamAssassin's. */
function symbols(r: ClassifyResult): string[] {
  return scoredTags(r).sort();
}

/**
 * A reply with a body. `Content-length` only for clients of protocol 1.3 or later, as SpamAssassin's spamd
 * does: older clients read to the end of the connection, and Exim's spamd support (`REPORT SPAMC/1.2`)
 * parses the reply with a fixed pattern that expects `Spam:` right after the status line.
 */
function withBody(r: ClassifyResult, threshold: number, body: Buffer, protocol: number): Buffer {
  const length = protocol >= 1.3 ? `Content-length: ${body.length}\r\n` : '';
  const head = `SPAMD/1.1 0 EX_OK\r\n${length}${spamLine(r, threshold)}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/**
 * The reply to a scanned message for one verb; `protocol` is the client's `SPAMC/x.y` version (default
 * 1.5, spamc's). `SYMBOLS` lists the scored tags sorted, as SpamAssassin does. `PROCESS` gives the message
 * with our `X-Spam-Result`/`X-Spam-Score` and SpamAssassin's `X-Spam-Flag`/`X-Spam-Status`/`X-Spam-Level` in
 * front (earlier copies of all of them removed); `HEADERS` its header block and the blank line after it
 * (spamc appends the original body).
 */
export function spamdReply(verb: string, r: ClassifyResult, threshold: number, raw: Uint8Array, protocol = 1.5): Buffer {
  switch (verb) {
    case 'SYMBOLS':
      return withBody(r, threshold, Buffer.from(symbols(r).join(','), 'utf8'), protocol);
    case 'REPORT':
      return withBody(r, threshold, Buffer.from(report(r, threshold), 'utf8'), protocol);
    case 'REPORT_IFSPAM':
      return withBody(r, threshold, r.action === 'allow' ? Buffer.alloc(0) : Buffer.from(report(r, threshold), 'utf8'), protocol);
    case 'HEADERS':
    case 'PROCESS': {
      const { head, rest, eol } = splitMessage(raw);
      // SpamAssassin's headers too, which spamc users' filing rules read; earlier copies of both removed.
      const headers = { ...r.headers, ...spamAssassinHeaders(r.action !== 'allow', r.score, threshold, symbols(r)) };
      let newHead = withVerdictHeaders(head, headers, eol, SPAMD_STRIPPED);
      // A last header line without its line ending (a message that ends there) gets one.
      if (newHead.length > 0 && newHead[newHead.length - 1] !== 10) newHead = Buffer.concat([newHead, Buffer.from(eol)]);
      // A message without a blank line (headers only, or empty) gets one, as spamd's rewritten message has.
      const blank = rest.length === 0 ? Buffer.from(eol) : rest.subarray(0, rest[0] === 13 ? 2 : 1);
      return withBody(r, threshold, Buffer.concat([newHead, verb === 'HEADERS' || rest.length === 0 ? blank : rest]), protocol);
    }
    default:
      return Buffer.from(`SPAMD/1.1 0 EX_OK\r\n${spamLine(r, threshold)}\r\n\r\n`, 'latin1');
  }
}

interface Request {
  verb: string;
  /** The client's protocol version (`SPAMC/1.5` → 1.5). */
  protocol: number;
  /** `RSPAMC`: rspamd's legacy text protocol (Exim's `variant=rspamd`), answered in rspamd's format. */
  rspamc: boolean;
  headers: Map<string, string[]>;
}

/** A request line of either dialect: `CHECK SPAMC/1.5`, `CHECK RSPAMC/1.3`. */
export const REQUEST_LINE = /^([A-Z_]+) (R?SPAMC)\/(\d+\.\d+)$/;

function parseHead(text: string): Request | string {
  const lines = text.split('\r\n');
  const m = REQUEST_LINE.exec(lines[0] ?? '');
  if (!m) return `bad request line ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`;
  if (!VERBS.has(m[1]!)) return `unknown command ${m[1]}`;
  const headers = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) return `bad header line ${JSON.stringify(line.slice(0, 80))}`;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
  }
  return { verb: m[1]!, protocol: Number(m[3]), rspamc: m[2] === 'RSPAMC', headers };
}

/**
 * rspamd's legacy reply (`RSPAMD/1.3 0 EX_OK`, `Metric: default; True; S / T / R`, `Action: …`,
 * one `Symbol:` line per tag), as Exim's rspamd variant parses it.
 */
export function rspamcReply(r: ClassifyResult, threshold: number, rejectScore: number): Buffer {
  const lines = [
    'RSPAMD/1.3 0 EX_OK',
    `Metric: default; ${r.action === 'allow' ? 'False' : 'True'}; ${r.score.toFixed(2)} / ${threshold.toFixed(2)} / ${rejectScore.toFixed(2)}`,
    `Action: ${RSPAMD_ACTIONS[r.action]}`,
    ...scoredTags(r).map((t) => `Symbol: ${t}(${(r.scores[t] ?? 0).toFixed(2)})`),
  ];
  return Buffer.from(lines.join('\r\n') + '\r\n', 'utf8');
}

/** Thresholds a reply states: the spam threshold, and rspamd's reject score (0 = none). */
export interface ReplyThresholds {
  spam(): number;
  reject(): number;
}

/**
 * The connection handler of both text dialects: spamd's `SPAMC` and rspamd's legacy `RSPAMC`
 * (whose headers carry the SMTP session: `IP`, `Helo`, `From`, `Rcpt`, `User`, `Hostname`,
 * `Queue-Id`). Data already read from the socket must be `unshift`ed back before the call. The
 * listener counts the connection, sets its idle timeout and starts its `head` and `request`
 * deadlines (`deadlines`), which the handler clears as the request arrives. Refusals and protocol
 * errors are counted under the request's dialect (`spamd` or `rspamd`), or under `listener` before
 * its request line is read.
 */
export function textProtocolHandler(
  scanner: Scanner,
  thresholds: ReplyThresholds,
  listener: 'spamd' | 'rspamd' = 'spamd',
  learning?: TellLearning,
): (socket: Socket, deadlines: Deadlines) => void {
  const { limits, metrics } = scanner;
  return (socket: Socket, deadlines: Deadlines): void => {
    socket.on('error', () => undefined);
    /** The request head as it arrives: its chunks, concatenated once the blank line has come. */
    const head = new HeadCollector();
    /** The request line, kept once the whole head has come (the collector then holds nothing). */
    let requestLine: string | undefined;
    let req: Request | undefined;
    let want = -1;
    /** The largest body taken: maxSize, or maxLearnSize for a TELL that learns. */
    let cap = limits.maxSize;
    const chunks: Buffer[] = [];
    let got = 0;
    let done = false;
    /** The request, registered with the scanner from its first byte (the shutdown waits for it). */
    let open: OpenRequest | undefined;
    let answered = false;
    /** A scan of this request is under way: its outcome is counted when it ends, not here. */
    let scanning = false;
    const gone = new AbortController();
    /** The bytes this connection holds (head, body, inflated body) in the buffer budget, until its reply is sent. */
    const lease = scanner.budget.lease();
    socket.once('close', () => {
      open?.end();
      gone.abort();
      lease.end();
    });
    /**
     * Whether this is rspamd's legacy dialect, which decides the format of an error reply and the
     * metrics label of what goes wrong: the request's once parsed, else its first line's once read,
     * else the listener's (`listener`: the port the connection came in on).
     */
    const rspamc = (): boolean => {
      if (req !== undefined) return req.rspamc;
      const first = requestLine ?? head.firstLine();
      const m = first === undefined ? null : REQUEST_LINE.exec(first);
      return m ? m[2] === 'RSPAMC' : listener === 'rspamd';
    };
    const label = (): 'spamd' | 'rspamd' => (rspamc() ? 'rspamd' : 'spamd');

    /** The request is over (answered or refused): what the client does now is no longer timed. */
    const settle = (): void => {
      done = true;
      deadlines.clear('head');
      deadlines.clear('request');
    };

    /** Sends the one reply of this connection and ends it. */
    const answer = (reply: string | Buffer): void => {
      if (answered) return;
      answered = true;
      open?.end();
      // Once the reply (a PROCESS reply is the whole message again) has gone to the kernel.
      socket.end(reply, () => lease.release());
      // Read on (the data handler drops what comes, `done` being set) so that the client's end is seen and
      // the connection closes: paused with bytes unread after the request (a body longer than its
      // Content-length), the socket never emitted 'end' and held its connection slot until the idle timeout.
      socket.resume();
    };

    const fail = (code: number, text: string, protocolError = true): void => {
      if (done) return;
      settle();
      if (protocolError) metrics.protocolErrors.inc({ protocol: label() });
      answer(errorReply(code, text, rspamc()));
      // A client still sending (a 60 MB body) is not read further.
      socket.once('finish', () => socket.destroy());
    };

    /** Over `cap` (`size`: bytes announced or received): 65 EX_DATAERR, counted as a scan or a learn refused. */
    const tooBig = (size: number): void => {
      if (req?.verb === 'TELL') {
        const text = LearnGate.describe({ reason: 'too_large', maxSize: cap });
        metrics.countLearn('spamd', 'too_large');
        scanner.log.warn({ protocol: 'spamd', size, error: text }, 'not learned');
        return fail(65, text, false);
      }
      scanner.refuse(label(), 'too_large', scanner.tooLargeMessage(), size);
      fail(65, scanner.tooLargeMessage(), false);
    };

    /** The next bytes do not fit in the buffer budget: 75 EX_TEMPFAIL (spamc passes the message on unscanned). */
    const overBudget = (): void => {
      lease.release();
      scanner.overBudget(label(), head.length + got, req !== undefined && req.verb !== 'TELL');
      fail(75, BUFFERS_FULL, false);
    };

    /** The shutdown's grace period is over (or the request began after it started): 75 EX_TEMPFAIL. */
    const shuttingDown = (): void => {
      if (answered) return;
      if (!scanning) scanner.refuse(label(), 'closing', SHUTTING_DOWN, got);
      done = false;
      fail(75, SHUTTING_DOWN, false);
    };

    const finish = async (): Promise<void> => {
      settle();
      socket.pause();
      const r = req!;
      let raw: Uint8Array = Buffer.concat(chunks, got);
      // The handler's closure outlives this request's scan: the chunks must not stay alive beside their copy.
      chunks.length = 0;
      lease.resize(raw.length);
      if (want >= 0 && raw.length > want) raw = raw.subarray(0, want);
      if ((r.headers.get('compress')?.[0] ?? '').toLowerCase() === 'zlib') {
        // Inflated bytes count against maxSize and the budget as they come (160 KB can inflate to 47 MB).
        const z = await inflateWithin(raw, cap, lease);
        if (socket.destroyed) return;
        if (!z.ok) {
          // `finish` settled the request; the refusal is its answer.
          done = false;
          if (z.reason === 'buffer_full') return overBudget();
          lease.release();
          if (z.reason === 'too_large') return tooBig(cap + 1);
          return fail(76, 'the zlib-compressed body does not inflate');
        }
        raw = z.body;
        // The compressed body is dropped: only the inflated one is held now.
        lease.resize(raw.length);
      }
      // The idle timeout is for the client: it does not run while we scan (or learn).
      socket.setTimeout(0);
      if (r.verb === 'TELL') {
        try {
          if (tellActions(r, 'remove').includes('local')) {
            const removed = await learning!.learner.forgetMessage(raw);
            scanner.metrics.countLearn('spamd', removed > 0 ? 'forgotten' : 'not_learned');
            scanner.log.info({ protocol: 'spamd', removed }, removed > 0 ? 'forgot a learned message' : 'forget: message not learned');
            if (!socket.destroyed) answer(`SPAMD/1.1 0 EX_OK\r\n${removed > 0 ? 'DidRemove: local\r\n' : ''}\r\n`);
          } else {
            const cls = messageClass(r);
            const { id, already } = await learning!.learner.learnNew(raw, cls === 'spam');
            scanner.metrics.countLearn('spamd', already ? 'already' : 'learned');
            scanner.log.info({ protocol: 'spamd', class: cls, sample: id }, already ? 'already learned' : 'learned');
            // No DidSet: spamc prints "Message was already un/learned", as with spamd.
            if (!socket.destroyed) answer(`SPAMD/1.1 0 EX_OK\r\n${already ? '' : 'DidSet: local\r\n'}\r\n`);
          }
        } catch (e) {
          done = false;
          fail(75, `learning failed: ${(e as Error).message}`, false);
        }
        return;
      }
      const session = r.rspamc ? sessionFromHeaderMap((n) => r.headers.get(n)) : {};
      const queueId = r.rspamc ? r.headers.get('queue-id')?.[0] : undefined;
      scanning = true;
      const o = await scanner.scan({ protocol: r.rspamc ? 'rspamd' : 'spamd', raw, session, queueId, open, signal: gone.signal });
      scanning = false;
      socket.setTimeout(limits.idleTimeoutMs);
      if (socket.destroyed || answered) return;
      if (!o.ok) answer(errorReply(CODE[o.reason], r.rspamc && o.reason === 'session' ? sessionErrorForHeaders(o.message) : o.message, r.rspamc));
      else if (r.rspamc) answer(rspamcReply(o.result, thresholds.spam(), thresholds.reject()));
      else answer(spamdReply(r.verb, o.result, thresholds.spam(), raw, r.protocol));
    };

    const onBody = (): void => {
      if (want >= 0 && got >= want) void finish();
    };

    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      if (open === undefined) {
        open = scanner.begin(shuttingDown);
        if (!open.admitted) return shuttingDown();
      }
      // Before the bytes are kept: past the budget they are refused, not held.
      if (!lease.take(chunk.length)) return overBudget();
      if (req === undefined) {
        const whole = head.push(chunk);
        if (whole === undefined) {
          // + 3: the first bytes of the blank line may be among them, and a head of MAX_HEAD bytes is taken.
          if (head.length > MAX_HEAD + 3) fail(76, 'request headers too long');
          else if (head.length <= 32 && /^PING SPAMC\/\d+\.\d+\r\n$/.test(head.text())) {
            // Some clients send PING without the blank line.
            settle();
            answer('SPAMD/1.5 0 PONG\r\n');
          }
          return;
        }
        const nl = whole.head.indexOf('\r\n');
        requestLine = nl < 0 ? whole.head : whole.head.slice(0, nl);
        // The cap holds for the head however it arrived: one that completes in the read that takes it past
        // 64 KiB is as long as one refused while it was still coming.
        if (whole.head.length > MAX_HEAD) return fail(76, 'request headers too long');
        const parsed = parseHead(whole.head);
        const rest = whole.rest;
        if (typeof parsed === 'string') return fail(76, parsed);
        req = parsed;
        deadlines.clear('head');
        if (req.verb === 'PING') {
          settle();
          answer(req.rspamc ? 'RSPAMD/1.3 0 PONG\r\n' : 'SPAMD/1.5 0 PONG\r\n');
          return;
        }
        if (req.verb === 'SKIP') {
          settle();
          answer('');
          return;
        }
        if (req.verb === 'TELL') {
          const refused = tellRefusal(req, learning);
          if (refused !== undefined) return fail(refused.code, refused.text, refused.code === 76);
          // A sample is capped at maxLearnSize; a forget may name any message.
          if (!tellActions(req, 'remove').includes('local')) cap = learning!.gate.maxSize;
        }
        const lengths = req.headers.get('content-length') ?? [];
        // Two different lengths: which one a proxy in between believed is anyone's guess (smuggling).
        if (new Set(lengths).size > 1) return fail(76, `conflicting Content-length headers ${JSON.stringify(lengths)}`);
        const cl = lengths[0];
        if (cl !== undefined) {
          if (!/^\d+$/.test(cl)) return fail(76, `bad Content-length ${JSON.stringify(cl)}`);
          want = Number(cl);
          if (want > cap) return tooBig(want);
        }
        if (req.verb === 'TELL') {
          // Before the body is read: a flood of samples costs neither the bytes nor the store.
          const refused = learning!.gate.admit();
          if (refused !== undefined) {
            metrics.countLearn('spamd', 'rate_limited');
            scanner.log.warn({ protocol: 'spamd', error: LearnGate.describe(refused) }, 'not learned');
            return fail(75, LearnGate.describe(refused), false);
          }
        }
        chunk = rest;
      }
      // Bytes past the Content-length are not the message (only the first `want` are scanned): they neither
      // count against the size cap nor are kept, whichever read they come in.
      if (want >= 0 && got + chunk.length > want) chunk = chunk.subarray(0, Math.max(0, want - got));
      if (chunk.length > 0) {
        got += chunk.length;
        if (got > cap) return tooBig(got);
        chunks.push(chunk);
      }
      onBody();
    });
    socket.on('end', () => {
      if (done) return;
      // A connection closed before it sent anything (a TCP health check) is no protocol error, as on the
      // rspamd and milter listeners.
      if (req === undefined) return fail(76, 'connection closed before the request was complete', head.length > 0);
      if (want < 0) return void finish(); // no Content-length: the body is everything until EOF
      if (got < want) return fail(76, `Content-length says ${want} bytes but the body has ${got}`);
    });
  };
}

/** What `TELL` stores and forgets a message with: the classifier's learner (src/classifier `Learner`). */
export interface TellLearner {
  /** Stores the message unless already learned with this class (`Learner.learnNew`). */
  learnNew(raw: Uint8Array, spam: boolean): Promise<{ id: number; already: boolean }>;
  /** Removes the message's samples (and retrains); resolves with how many were removed. */
  forgetMessage(raw: Uint8Array): Promise<number>;
}

/** What `TELL` needs: the learner, and the caps on its samples (shared with rspamd's learn commands). */
export interface TellLearning {
  learner: TellLearner;
  gate: LearnGate;
}

/** The lower-cased actions of a `TELL` request's `Set` or `Remove` header (`local`, `remote`). */
function tellActions(r: Request, header: 'set' | 'remove'): string[] {
  return (r.headers.get(header) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase());
}

function messageClass(r: Request): string {
  return (r.headers.get('message-class')?.[0] ?? '').trim().toLowerCase();
}

/** Why a `TELL` request is refused before its body is read (code and text), or undefined. */
function tellRefusal(r: Request, learning: TellLearning | undefined): { code: number; text: string } | undefined {
  if (learning === undefined || r.rspamc) return { code: 69, text: 'learning (TELL) needs serve --model and --allow-tell' };
  // Only the local parts are carried out (and answered in DidSet/DidRemove): spamc -C report sends
  // Set: local, remote and -C revoke Set: local with Remove: remote, which learn locally, as spamd does
  // with no remote reporting configured. Setting and removing locally at once is refused, as spamd does.
  const setLocal = tellActions(r, 'set').includes('local');
  const removeLocal = tellActions(r, 'remove').includes('local');
  if (setLocal && removeLocal) return { code: 76, text: 'TELL with both Set: local and Remove: local: send one (spamc -L spam|ham sets, -L forget removes)' };
  // spamc sends no Message-class with -L forget; a forget needs none.
  if (removeLocal) return undefined;
  if (!setLocal) return { code: 69, text: 'only local learning (Set: local, Remove: local) is supported: no remote reporting' };
  const cls = messageClass(r);
  if (cls !== 'spam' && cls !== 'ham') return { code: 76, text: `TELL needs Message-class: spam or ham, got ${JSON.stringify(cls)}` };
  return undefined;
}

/**
 * Creates the spamd-protocol server (not yet listening). With `learning`, `TELL` stores messages as
 * classifier samples (see the module docstring), within its gate's caps.
 */
export function createSpamdServer(scanner: Scanner, thresholds: ReplyThresholds, learning?: TellLearning): Server {
  const { limits, metrics } = scanner;
  const handler = textProtocolHandler(scanner, thresholds, 'spamd', learning);
  // spamc half-closes its side after sending the message and then reads the reply.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    if (!caps.admit(socket)) return;
    metrics.countConnection('spamd', socket);
    idleTimeout(socket, limits.idleTimeoutMs, 'spamd', metrics);
    const deadlines = new Deadlines(socket, 'spamd', metrics);
    deadlines.startRequest(limits);
    handler(socket, deadlines);
  });
  const caps = listenerCaps(server, 'spamd', limits.maxConnections, limits.maxConnectionsPerPeer, metrics);
  return server;
}
