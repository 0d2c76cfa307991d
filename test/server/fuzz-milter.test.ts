/**
 * Fuzzing the milter listener with packet streams from a model of a Postfix session (negotiation,
 * macros, connect, HELO, transactions of MAIL, RCPT, DATA, headers, end of headers, body chunks, end of
 * message or abort, then quit, a new session on the connection (K) or nothing), sent whole or cut at
 * arbitrary byte boundaries (some messages over the server's maxSize), and with corruptions: lengths of 0 or over the packet cap, unknown commands,
 * packets cut short, packets out of order, strings without their NUL terminator.
 *
 * Invariants: every well-formed command gets the reply the protocol gives it (a verdict for end of
 * message, continue for the others, nothing for macros and abort), in order, up to a protocol error,
 * after which nothing more is sent and the connection is closed; the server closes every connection the
 * client half-closes; a valid stream cut anywhere gets exactly the replies it gets whole; a good session
 * on a fresh connection afterwards gets the baseline's replies; nothing stays open or held.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzParams } from '../helpers/fuzz.js';
import { milterOptneg, milterPacket, milterReplies, startAll, type Started } from './harness.js';
import { cutFractions, expectDrained, offsets, sendParts, splitAt, type Exchange } from './wire-fuzz.js';

/** A packet of the model and the reply the protocol gives it: `O`, `c`, a verdict (`E`) or none. */
interface Step {
  packet: Buffer;
  expect: 'O' | 'c' | 'E' | '';
}

const MAX_PACKET = 1024 * 1024 + 64;
/** The server's maxSize: small, so that messages over it come up. */
const MAX_SIZE = 4096;
/** The replies to end of message: deletions and headers then continue, reject, discard, or tempfail. */
const VERDICT = '(?:m*h+c|y|d|t)';

const step = (cmd: string, data: Buffer | string, expect: Step['expect']): Step => ({ packet: milterPacket(cmd, data), expect });
const optneg: Step = { packet: milterOptneg(), expect: 'O' };

/**
 * The MTA's negotiation: usually what the harness sends (everything offered), else a version from 2 up
 * and any actions and protocol flags (Sendmail offers fewer than Postfix), now and then with bytes after.
 */
const negotiation = fc.oneof(
  { weight: 3, arbitrary: fc.constant(optneg) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.oneof(fc.integer({ min: 2, max: 8 }), fc.constant(0xffffffff)), fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }), fc.uint8Array({ maxLength: 4 })).map(([version, actions, flags, extra]): Step => {
      const d = Buffer.alloc(12);
      d.writeUInt32BE(version, 0);
      d.writeUInt32BE(actions, 4);
      d.writeUInt32BE(flags, 8);
      return step('O', Buffer.concat([d, extra]), 'O');
    }),
  },
);

/** Text without NUL (the strings inside packets), 8-bit characters included. */
const text = (max: number): fc.Arbitrary<string> => fc.string({ unit: fc.oneof(fc.constantFrom('a', 'b', ' ', ':', '\r\n', '\n', '\t', '<', '>', '@', '.', '\xe9', '\xff'), fc.integer({ min: 1, max: 255 }).map((c) => String.fromCharCode(c))), maxLength: max }).map((s) => s.replace(/\0/g, ''));
const address = fc.oneof(fc.constantFrom('<a@example.org>', '<>', '<b@example.com>', 'c@example.net', '<d@[192.0.2.1]>', '<\xfcser@ex\xe4mple.org>'), text(20));

const macros = fc
  .tuple(
    fc.constantFrom('C', 'H', 'M', 'R', 'T', 'L', 'N', 'B', 'E'),
    fc.array(fc.tuple(fc.constantFrom('i', 'j', '{auth_authen}', '{tls_version}', '{daemon_addr}', '{client_addr}', '{client_name}', '_', '{mail_addr}'), fc.oneof(fc.constantFrom('QUEUE1', 'mx.example', '192.0.2.9', 'TLSv1.3', ''), text(12))), { maxLength: 3 }),
  )
  .map(([stage, pairs]): Step => step('D', stage + pairs.map(([n, v]) => `${n}\0${v}\0`).join(''), ''));
const maybeMacros = fc.option(macros, { nil: undefined });

const connectInfo = fc
  .tuple(fc.constantFrom('client.example.net', 'unknown', '[192.0.2.7]', ''), fc.constantFrom('4', '6', 'U', 'L'), fc.constantFrom('192.0.2.7', '2001:db8::7', 'not-an-ip', ''))
  .map(([host, family, addr]): Step => step('C', `${host}\0${family}\0\x19${addr}\0`, 'c'));

const header = fc
  .tuple(fc.oneof(fc.constantFrom('Subject', 'From', 'To', 'Date', 'Message-ID', 'Received', 'X-Spam-Score', 'X-Spam-Note', 'Content-Type'), text(10)), text(40))
  .map(([name, value]): Step => step('L', `${name}\0${value}\0`, 'c'));
/** Body chunks, now and then one that takes the message past the server's maxSize (not scanned: a note). */
const bodyChunk = fc
  .oneof({ weight: 6, arbitrary: fc.oneof(text(60), fc.constantFrom('Buy now http://example.com/x\r\n', 'hello\r\n')) }, { weight: 1, arbitrary: fc.integer({ min: MAX_SIZE - 200, max: MAX_SIZE + 200 }).map((n) => 'x'.repeat(n)) })
  .map((b): Step => step('B', Buffer.from(b, 'latin1'), 'c'));

/** One transaction: MAIL, RCPTs, maybe DATA, headers, maybe end of headers and body; then end of message, or abort. */
const transaction = fc
  .record({
    from: address,
    args: fc.subarray(['BODY=8BITMIME', 'SMTPUTF8', 'SIZE=100']),
    rcpts: fc.array(address, { maxLength: 3 }),
    data: fc.boolean(),
    macro: maybeMacros,
    headers: fc.array(header, { maxLength: 4 }),
    eoh: fc.boolean(),
    body: fc.array(bodyChunk, { maxLength: 3 }),
    abortAt: fc.option(fc.nat(12), { nil: undefined }),
  })
  .map((t): Step[] => {
    const steps: Step[] = [step('M', [t.from, ...t.args].map((x) => `${x}\0`).join(''), 'c')];
    for (const r of t.rcpts) steps.push(step('R', `${r}\0`, 'c'));
    if (t.macro) steps.push(t.macro);
    if (t.data) steps.push(step('T', '', 'c'));
    steps.push(...t.headers);
    if (t.eoh) steps.push(step('N', '', 'c'), ...t.body);
    if (t.abortAt !== undefined && t.abortAt < steps.length) return [...steps.slice(0, t.abortAt + 1), step('A', '', '')];
    return [...steps, step('E', '', 'E')];
  });

/** After the negotiation: macros, connect, HELO (each may be left out), transactions. */
const smtpSession = fc
  .record({ macro: maybeMacros, connect: fc.option(connectInfo, { nil: undefined }), helo: fc.option(text(20), { nil: undefined }), transactions: fc.array(transaction, { minLength: 1, maxLength: 2 }) })
  .map((s): Step[] => [
    ...(s.macro ? [s.macro] : []),
    ...(s.connect ? [s.connect] : []),
    ...(s.helo !== undefined ? [step('H', `${s.helo}\0`, 'c')] : []),
    ...s.transactions.flat(),
  ]);

/** A whole connection: negotiation, a session, then quit, a second session after K, or nothing (the client half-closes). */
const connection = fc
  .tuple(negotiation, smtpSession, fc.constantFrom('Q', 'K', 'none'), smtpSession)
  .map(([o, first, end, second]): Step[] => [o, ...first, ...(end === 'Q' ? [step('Q', '', '')] : end === 'K' ? [step('K', '', ''), ...second, step('Q', '', '')] : [])]);

/** The replies `steps` must get, in order, as a pattern over the reply command letters. */
function expected(steps: readonly Step[]): string {
  return steps.map((s) => (s.expect === 'E' ? VERDICT : s.expect)).join('');
}

/** The command letters of a reply stream (which must be whole packets). */
function letters(reply: Buffer): string {
  return milterReplies(reply)
    .map((r) => r[0])
    .join('');
}

/** A reply stream is whole packets: lengths that add up exactly, none empty. */
function framed(reply: Buffer): boolean {
  let o = 0;
  while (o + 4 <= reply.length) {
    const len = reply.readUInt32BE(o);
    if (len === 0) return false;
    o += 4 + len;
  }
  return o === reply.length;
}

/** Corruptions, each inserted at a packet boundary: what follows it is never answered. */
const fatal = fc.oneof(
  // A length of 0, or over the cap, with whatever follows.
  fc.tuple(fc.oneof(fc.constant(0), fc.integer({ min: MAX_PACKET + 1, max: 0xffffffff })), fc.uint8Array({ maxLength: 8 })).map(([len, junk]) => {
    const h = Buffer.alloc(4);
    h.writeUInt32BE(len, 0);
    return { kind: 'length', bytes: Buffer.concat([h, junk]) };
  }),
  // A command no milter has.
  fc.tuple(fc.integer({ min: 0, max: 255 }).filter((c) => !'OCHMRTLNBEAKQDU'.includes(String.fromCharCode(c))), fc.uint8Array({ maxLength: 8 })).map(([c, data]) => ({ kind: 'unknown', bytes: milterPacket(String.fromCharCode(c), Buffer.from(data)) })),
);

let s: Started;
let good: Buffer;
let baseline: Buffer;

async function milter(parts: readonly Buffer[]): Promise<Exchange> {
  const { host, port } = s.hostPort('milter');
  return sendParts(host, port, parts, { timeoutMs: 15_000 });
}

/** A good session on a fresh connection gets the baseline's replies. */
async function stillGood(): Promise<void> {
  const r = await milter([good]);
  expect(r.closedBy).toBe('server');
  expect(r.reply.equals(baseline)).toBe(true);
}

beforeAll(async () => {
  s = await startAll({ workers: 1, limits: { idleTimeoutMs: 2000, headTimeoutMs: 5000, maxSize: MAX_SIZE } });
  good = Buffer.concat([
    milterOptneg(),
    milterPacket('C', 'client.example.net\x004\x00\x19192.0.2.7\x00'),
    milterPacket('M', '<a@example.org>\x00'),
    milterPacket('R', '<b@example.com>\x00'),
    milterPacket('L', 'Subject\x00 hello there\x00'),
    milterPacket('L', 'From\x00 a@example.org\x00'),
    milterPacket('N'),
    milterPacket('B', 'Buy now http://example.com/x\r\n'),
    milterPacket('E'),
    milterPacket('Q'),
  ]);
  baseline = (await milter([good])).reply;
  expect(letters(baseline)).toMatch(/^Occcccccm*h+c$/);
}, 60_000);

afterAll(async () => {
  await s?.close();
});

describe('milter fuzz', () => {
  it('a session from the model gets the protocol reply to every command, cut anywhere or not', async () => {
    await fc.assert(
      fc.asyncProperty(connection, cutFractions(), async (steps, cuts) => {
        const stream = Buffer.concat(steps.map((x) => x.packet));
        const whole = await milter([stream]);
        expect(whole.closedBy).toBe('server');
        expect(framed(whole.reply)).toBe(true);
        expect(letters(whole.reply)).toMatch(new RegExp(`^${expected(steps)}$`));
        // Our negotiation: the MTA's version up to 6, of what it offered only the actions and flags we use.
        const offer = steps[0]!.packet;
        const ours = milterReplies(whole.reply)[0]![1];
        const word = (i: number): number => Buffer.from(ours, 'latin1').readUInt32BE(i);
        expect([word(0), word(4), word(8)]).toEqual([Math.min(offer.readUInt32BE(5), 6), (offer.readUInt32BE(9) & 0x11) >>> 0, (offer.readUInt32BE(13) & 0x100100) >>> 0]);
        // The same bytes in pieces: the same replies, byte for byte.
        const split = await milter(splitAt(stream, offsets(cuts, stream.length)));
        expect(split.closedBy).toBe('server');
        expect(split.reply.toString('latin1')).toBe(whole.reply.toString('latin1'));
      }),
      fuzzParams(150),
    );
    await stillGood();
  }, 120_000);

  it('strings without their NUL terminator are taken as they are', async () => {
    await fc.assert(
      fc.asyncProperty(connection, fc.array(fc.nat(), { maxLength: 4 }), async (steps, which) => {
        const stringCmds = steps.map((x, i) => [x, i] as const).filter(([x]) => 'CHMRL'.includes(String.fromCharCode(x.packet[4]!)) && x.packet.length > 5 && x.packet.at(-1) === 0);
        const cut = new Set(which.filter(() => stringCmds.length > 0).map((w) => stringCmds[w % stringCmds.length]![1]));
        const mutated = steps.map((x, i) => (cut.has(i) ? { ...x, packet: milterPacket(String.fromCharCode(x.packet[4]!), x.packet.subarray(5, -1)) } : x));
        const r = await milter([Buffer.concat(mutated.map((x) => x.packet))]);
        expect(r.closedBy).toBe('server');
        expect(letters(r.reply)).toMatch(new RegExp(`^${expected(mutated)}$`));
      }),
      fuzzParams(100),
    );
    await stillGood();
  }, 120_000);

  it('a bad length or an unknown command ends the connection after the replies to the packets before it', async () => {
    await fc.assert(
      fc.asyncProperty(connection, fc.nat(), fatal, cutFractions(), async (steps, at, bad, cuts) => {
        const k = at % (steps.length + 1);
        const stream = Buffer.concat([...steps.slice(0, k).map((x) => x.packet), bad.bytes, ...steps.slice(k).map((x) => x.packet)]);
        const r = await milter(splitAt(stream, offsets(cuts, stream.length)));
        expect(r.closedBy).toBe('server');
        expect(framed(r.reply)).toBe(true);
        expect(letters(r.reply)).toMatch(new RegExp(`^${expected(steps.slice(0, k))}$`));
        await stillGood();
      }),
      fuzzParams(150),
    );
  }, 120_000);

  it('a packet cut short is not answered; the replies before it are', async () => {
    await fc.assert(
      fc.asyncProperty(connection, fc.nat(), fc.double({ min: 0, max: 1, noNaN: true }), cutFractions(3), async (steps, at, frac, cuts) => {
        const k = at % steps.length;
        const p = steps[k]!.packet;
        // At least one byte of it, never all.
        const partial = p.subarray(0, Math.min(p.length - 1, 1 + Math.floor(frac * (p.length - 1))));
        const stream = Buffer.concat([...steps.slice(0, k).map((x) => x.packet), partial]);
        const r = await milter(splitAt(stream, offsets(cuts, stream.length)));
        expect(r.closedBy).toBe('server');
        expect(framed(r.reply)).toBe(true);
        expect(letters(r.reply)).toMatch(new RegExp(`^${expected(steps.slice(0, k))}$`));
      }),
      fuzzParams(120),
    );
    await stillGood();
  }, 120_000);

  it('a packet out of order ends the connection or is answered; the replies before it stand', async () => {
    const anyPacket = fc.oneof(connectInfo, header, bodyChunk, macros, fc.constantFrom('O', 'H', 'M', 'R', 'T', 'N', 'E', 'A', 'K', 'U').map((c) => (c === 'O' ? optneg : step(c, c === 'M' || c === 'R' || c === 'H' ? '<x@example.org>\0' : '', ''))));
    await fc.assert(
      fc.asyncProperty(connection, fc.nat(), anyPacket, async (steps, at, extra) => {
        const k = at % (steps.length + 1);
        const stream = Buffer.concat([...steps.slice(0, k).map((x) => x.packet), extra.packet, ...steps.slice(k).map((x) => x.packet)]);
        const r = await milter([stream]);
        expect(r.closedBy).toBe('server');
        expect(framed(r.reply)).toBe(true);
        expect(letters(r.reply)).toMatch(new RegExp(`^${expected(steps.slice(0, k))}`));
      }),
      fuzzParams(120),
    );
    await stillGood();
  }, 120_000);

  it('leaves no connection open and nothing held in the buffer budget', async () => {
    await expectDrained(s, 'milter');
  });
});
